#!/usr/bin/env bash
# Issue 36, GPU statistics WITH transposition tables, in one device call on one GPU (an H200: at
# most 8 minutes: the check's budget is 360 s, the tests get what is left of 465 s, at least 30 s).
# Builds nothing: carry the extension built for the machine's python3
# (`PERFT_CUDA_ARCHS=sm_90 /work/v312/bin/python setup.py build_ext --inplace`: the
# perft_core/_core_*.cpython-312-*.so and kernels/pc_kernels.sm_90.cubin + pc_kernels.cubin.json; a
# cubin whose sources differ is not used, CuPy's NVRTC compiles instead) and .whl/ (python-chess).
# Steps, logs and results under $OUT/stats-tt-gpu/:
#   info.txt     the GPU, the commit, the extension and how the kernels were loaded
#   tests.log    (after the check) pytest -m gpu suites/test_stats_gpu_tt.py (statistics with tables == without == CPU on
#                the CPW positions and random walks, every CPW detail row up to 2e10 nodes, faults
#                at every allocation site with every stored entry audited)
#   check.log,   ci/stats_tt_gpu_check.py: startpos perft 1..9 statistics with tables against every
#   stats_tt_gpu_check.json   CPW column; CPW 2-6 and random positions tables == no tables == CPU;
#                startpos perft 10 and 11 with statistics and tables, timed against the plain count
#                with tables, nodes against OEIS A048987, the internal rules
# Usage: OUT=/some/folder bash ci/stats_tt_gpu_check.sh [ARGS]   (exit 0: every comparison agrees; ARGS
#        go to ci/stats_tt_gpu_check.py, e.g. `--backend gpu-emulated --startpos-depth 4 --positions
#        kiwipete:3 --random 2 --deep 5` for a dry run on a CPU machine)
set -uo pipefail
cd "$(dirname "$0")/.."
. ci/gpu-env.sh
. ci/gpu-info.sh
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
out="${OUT:-out}/stats-tt-gpu"
mkdir -p "$out"
t0=$(date +%s)
gpu_info "$out/info.txt"
# The check first (its perft 11 is the measurement asked for), then the gpu tests in the time left.
echo "== statistics with tables check (budget 360 s)"
timeout 390 python3 ci/stats_tt_gpu_check.py --out "$out" --budget-seconds 360 "$@" 2>&1 | tee "$out/check.log"
check_rc=${PIPESTATUS[0]}
left=$(( 465 - ($(date +%s) - t0) ))
(( left < 30 )) && left=30
echo "== GPU statistics tests with tables (timeout ${left} s)"
timeout "$left" python3 -m pytest -o "addopts=-ra --strict-markers" -m gpu -q -p no:cacheprovider --durations=15 \
    suites/test_stats_gpu_tt.py 2>&1 | tee "$out/tests.log"
tests_rc=${PIPESTATUS[0]}
echo "check exit $check_rc, tests exit $tests_rc, $(( $(date +%s) - t0 )) s in all" | tee -a "$out/check.log"
[ "$tests_rc" = 0 ] && [ "$check_rc" = 0 ]
