#!/usr/bin/env bash
# The exactness checks of the GPU backend in one device call on a machine of four GPUs, one check a
# GPU, all at once (each fits one 10-minute call alone; together they take the longest one's time):
#   GPU 0  stats-tt   ci/stats_tt_gpu_check.sh (statistics with tables: CPW and Grand Chess Tree's
#                     13 counters at startpos 10 and 11, tables == no tables == CPU; its timing
#                     ratio is within one process, but the host is shared: not a benchmark here)
#   GPU 1  stats      ci/stats_gpu_check.sh (the statistics leaf: every CPW column, GPU == CPU)
#   GPU 2  oom        pytest -m gpu suites/ -k oom (the out-of-memory fault injection)
#   GPU 3  gpu        pytest -m gpu suites/ but for the three above (the GPU backend, its tables,
#                     prebuilt kernels, deep runs on the GPU)
# Builds nothing: carry the py3.12 extension, kernels/pc_kernels.sm_90.cubin + .cubin.json and .whl/
# as for the scripts it runs. The wheels are installed once, before the checks start (concurrent
# pip installs into one target would race). Logs (<check>.log and each script's folder) are
# tarred into $OUT/checks.tgz, and the table of exit codes and seconds is $OUT/checks.md: two files,
# as the device tool brings back at most eight. Exit 0: every check 0.
# Usage: OUT=/some/folder bash ci/gpu_checks_parallel.sh [CHECK...]   (default: all four; each CHECK
#        one of stats-tt stats oom gpu, run on the GPU its place in the list gives). DRY=1 runs the
#        two statistics scripts with their small gpu-emulated arguments (a CPU machine's dry run);
#        TT_ARGS / STATS_ARGS replace the arguments of ci/stats_tt_gpu_check.py / stats_gpu_check.py.
set -uo pipefail
cd "$(dirname "$0")/.."
checks=("$@")
[ ${#checks[@]} -eq 0 ] && checks=(stats-tt stats oom gpu)
for c in "${checks[@]}"; do  # every name known before any check starts
    case $c in stats-tt|stats|oom|gpu) ;; *) echo "unknown check $c (stats-tt, stats, oom, gpu)" >&2; exit 2 ;; esac
done
. ci/gpu-env.sh
export PERFT_WHEELS=/nonexistent PYTHONUNBUFFERED=1  # installed above; the scripts must not install again
top="${OUT:-out}"
out="$top/checks"
mkdir -p "$out"
pytest_gpu=(python3 -m pytest -o "addopts=-ra --strict-markers" -m gpu -q -p no:cacheprovider)
tt_args=() st_args=()
if [ -n "${DRY:-}" ]; then
    tt_args=(--backend gpu-emulated --startpos-depth 4 --positions kiwipete:3 --random 2 --deep 5)
    st_args=(--backend gpu-emulated --startpos-depth 5 --positions kiwipete:3 --random 4 --timing startpos:5)
fi
[ -n "${TT_ARGS:-}" ] && read -ra tt_args <<< "$TT_ARGS"
[ -n "${STATS_ARGS:-}" ] && read -ra st_args <<< "$STATS_ARGS"
t0=$(date +%s)
for i in "${!checks[@]}"; do
    c=${checks[$i]}
    case $c in
        stats-tt) cmd=(bash ci/stats_tt_gpu_check.sh "${tt_args[@]}") ;;
        stats) cmd=(bash ci/stats_gpu_check.sh "${st_args[@]}") ;;
        oom) cmd=("${pytest_gpu[@]}" suites/ -k oom) ;;
        gpu) cmd=("${pytest_gpu[@]}" suites/ -k "not oom" --ignore suites/test_stats_gpu.py
                  --ignore suites/test_stats_gpu_tt.py) ;;
    esac
    ( export CUDA_VISIBLE_DEVICES=$i OUT="$out"
      s=$(date +%s); timeout 570 "${cmd[@]}" > "$out/$c.log" 2>&1; rc=$?
      echo "$c $i $rc $(( $(date +%s) - s ))" > "$out/$c.rc" ) &
done
wait
printf '| check | GPU | exit | seconds |\n|---|---:|---:|---:|\n' | tee "$top/checks.md"
ok=0
for c in "${checks[@]}"; do
    read -r name gpu rc secs < "$out/$c.rc"
    printf '| %s | %s | %s | %s |\n' "$name" "$gpu" "$rc" "$secs" | tee -a "$top/checks.md"
    [ "$rc" = 0 ] || ok=1
    tail -3 "$out/$c.log"
done
echo "$(( $(date +%s) - t0 )) s in all"
tar czf "$top/checks.tgz" -C "$top" checks && rm -rf "$out"
exit $ok
