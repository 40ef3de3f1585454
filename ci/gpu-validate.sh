#!/usr/bin/env bash
# Issue 12 (no cold start, a timing gate that never cries wolf) in one device call. Steps, each
# logged to $OUT/gpu-validate/<step>.log, then a table of exit codes against the expected ones:
#   build     python3 setup.py build_ext --inplace (the extension; cubins when nvcc is here, else the
#             carried kernels/pc_kernels.*.cubin + pc_kernels.cubin.json are used if they fit)
#   tests     pytest -m gpu suites/test_gpu_prebuilt.py suites/test_gpu_tt.py (cubin == NVRTC counts,
#             device scan and merge == NumPy, the TT driver on its new kernels)
#   cold      ci/cold_start.py (first counts with an empty CuPy cache vs warm; target <= 2 s)
#   gate      ci/perf_gate.py timing (against the committed baseline: new workloads say "no
#             baseline"), timing --update (writes ci/baselines/<gpu>.json, copied to $OUT), timing
#             twice (must PASS), timing --slow 5 (a planted 5 % kernel slowdown: must FAIL)
#   peer      ci/bench_vs_peer.py --walks 4 (needs .peer/perft_gpu; the issue's rows and four random
#             games; about 4 min)
#   runner    bash ci/gpu-runner.sh -q (what a GPU CI runner does: GPU suites, static and timing gates
#             against the committed baseline; must PASS); name it several times for reruns on one
#             machine (issue 12: five in a row, on two machines at least)
#   deep      ci/bench_deep.py scaling --depth 11 --gpus 1: perft_gpu_2026 (.peer/perft_gpu), the
#             plain TT count and `perft deep --gpus 1`, each in its own process (issue 14; ~2.5 min)
# Usage: bash ci/gpu-validate.sh [build] [tests] [cold] [gate] [peer] [runner ...] [deep]
#        (default: build tests cold gate). Under $OUT the logs end up in gpu-validate/logs.tgz (the
#        device tool returns at most 8 files); summary.md and the baselines stay beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
. ci/gpu-env.sh
out="${OUT:-out}/gpu-validate"
mkdir -p "$out"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build tests cold gate)
summary="$out/summary.md"
printf '| step | exit | expected | seconds | verdict |\n|---|---:|---:|---:|---|\n' > "$summary"
failed=0
runs=0

run() {  # run NAME EXPECTED(0|1|any) COMMAND...
    local name=$1 want=$2 t0 rc verdict
    shift 2
    t0=$(date +%s)
    echo "== $name: $*"
    "$@" > "$out/$name.log" 2>&1
    rc=$?
    tail -n 25 "$out/$name.log"
    if [ "$want" = any ] || [ "$rc" = "$want" ]; then verdict=ok; else verdict=UNEXPECTED; failed=1; fi
    printf '| %s | %s | %s | %s | %s |\n' "$name" "$rc" "$want" "$(( $(date +%s) - t0 ))" "$verdict" >> "$summary"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "nvcc: $(command -v nvcc || echo none) | python3: $(python3 -c 'import cupy, sys; print(sys.version.split()[0], "cupy", cupy.__version__)')"
for step in "${steps[@]}"; do
    case $step in
    build)
        run build 0 python3 setup.py -q build_ext --inplace
        python3 -c 'import cupy; from perft_core.gpu import prebuilt, kernels
found = prebuilt.find(kernels.kernel_source_dir(), f"sm_{cupy.cuda.Device().compute_capability}")
print("precompiled kernels:", found[0] if isinstance(found, tuple) else "none: " + found)' | tee -a "$out/build.log"
        ;;
    tests) run tests 0 python3 -m pytest -o "addopts=-ra --strict-markers" -m gpu -q -p no:cacheprovider suites/test_gpu_prebuilt.py suites/test_gpu_tt.py ;;
    cold) run cold_start 0 python3 ci/cold_start.py --json "$out/cold_start.json" ;;
    gate)
        run gate-old-baseline any python3 ci/perf_gate.py timing
        run gate-update 0 python3 ci/perf_gate.py timing --update
        cp ci/baselines/*.json "$out/" 2>/dev/null
        run gate-rerun-1 0 python3 ci/perf_gate.py timing
        run gate-rerun-2 0 python3 ci/perf_gate.py timing
        run gate-slow-5 1 python3 ci/perf_gate.py timing --slow 5
        ;;
    peer) run bench-vs-peer 0 python3 ci/bench_vs_peer.py --walks 4 --json "$out/bench_vs_peer.json" ;;
    runner) runs=$((runs + 1)); run "runner-$runs" 0 bash ci/gpu-runner.sh -q ;;
    deep) run bench-deep 0 python3 ci/bench_deep.py --out "$out/deep" scaling --depth 11 --gpus 1
          cp "$out/deep/bench_deep_scaling.json" "$out/" 2>/dev/null; rm -rf "$out/deep" ;;
    *) echo "gpu-validate: unknown step $step (build tests cold gate peer runner deep)"; exit 2 ;;
    esac
done
echo
cat "$summary"
for f in cold_start gate-update gate-rerun-1 gate-rerun-2 gate-slow-5 bench-vs-peer $(seq -f 'runner-%g' 1 "$runs"); do
    [ -f "$out/$f.log" ] && { echo; echo "### $f"; grep -E '^\|' "$out/$f.log"; grep -E '^(FAIL|timing gate|cold start|bench_vs_peer)' "$out/$f.log"; }
done
if [ -n "${OUT:-}" ] && compgen -G "$out/*.log" > /dev/null; then  # one file back instead of one per step
    tar czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls *.log) && rm -f "$out"/*.log
fi
exit $failed
