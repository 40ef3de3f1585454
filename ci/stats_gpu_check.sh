#!/usr/bin/env bash
# Issue 36, the GPU statistics leaf, in one device call on one GPU (an H200: well under 4 minutes).
# Builds nothing: carry the extension built for the machine's python3 (e.g. `PERFT_CUDA_ARCHS=sm_90
# /work/v312/bin/python setup.py build_ext --inplace`: perft_core/_core_*.cpython-312-*.so and
# kernels/pc_kernels.sm_90.cubin + pc_kernels.cubin.json; a cubin whose sources differ is not used,
# CuPy's NVRTC compiles instead, about 10 s) and .whl/ (python-chess; ci/gpu-env.sh installs it).
# Steps, logs and results under $OUT/stats-gpu/:
#   info.txt     the GPU, the commit, the extension and how the kernels were loaded
#   tests.log    pytest -m gpu suites/test_stats_gpu.py (GPU statistics == CPU on random walks,
#                every CPW detail row up to 2e10 nodes, divides, small arenas and faults)
#   check.log,   ci/stats_gpu_check.py: startpos perft 1..9 statistics against every CPW column,
#   stats_gpu_check.json   CPW positions 2-6 and 50 random positions GPU == CPU, and statistics
#                against the plain count (same depth, same process): startpos 8/9, Kiwipete 6/7
# Usage: OUT=/some/folder bash ci/stats_gpu_check.sh [ARGS]   (exit 0: every comparison agrees; ARGS go
#        to ci/stats_gpu_check.py, e.g. `--backend gpu-emulated --startpos-depth 5 --positions kiwipete:3
#        --random 4 --timing startpos:5` for a dry run on a CPU machine)
set -uo pipefail
cd "$(dirname "$0")/.."
. ci/gpu-env.sh
. ci/gpu-info.sh
export PYTHONPATH="$PWD:$PYTHONPATH" PYTHONUNBUFFERED=1
out="${OUT:-out}/stats-gpu"
mkdir -p "$out"
t0=$(date +%s)
gpu_info "$out/info.txt"
echo "== GPU statistics tests"
timeout 100 python3 -m pytest -o "addopts=-ra --strict-markers" -m gpu -q -p no:cacheprovider \
    suites/test_stats_gpu.py 2>&1 | tee "$out/tests.log"
tests_rc=${PIPESTATUS[0]}
left=$(( 195 - ($(date +%s) - t0) ))
echo "== statistics check (budget ${left} s)"
timeout $(( left + 30 )) python3 ci/stats_gpu_check.py --out "$out" --budget-seconds "$left" "$@" 2>&1 | tee "$out/check.log"
check_rc=${PIPESTATUS[0]}
echo "tests exit $tests_rc, check exit $check_rc, $(( $(date +%s) - t0 )) s in all" | tee -a "$out/check.log"
[ "$tests_rc" = 0 ] && [ "$check_rc" = 0 ]
