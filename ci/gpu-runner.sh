#!/usr/bin/env bash
# What a GPU CI runner executes: install the wheels the runner lacks (python-chess, tox and tox's
# needs) offline from $PERFT_WHEELS (default .whl/, see NOTES.md for how to fetch them), show the
# GPU, then `tox -e gpu`: build the extension in place (and the precompiled kernels where nvcc is
# found, else carry kernels/pc_kernels.*.cubin + .cubin.json built elsewhere), run the gpu-marked suites, then the
# performance gates (ci/perf_gate.py static --cupy, then timing against ci/baselines/<gpu>.json).
# Usage: ci/gpu-runner.sh [pytest args...]   (the args go to pytest only, not to the gates)
set -euo pipefail
cd "$(dirname "$0")/.."
. ci/gpu-env.sh
python3 -c 'import chess, cupy, tox; print("python-chess", chess.__version__, "| cupy", cupy.__version__, "| tox", tox.__version__)'
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -m tox -e gpu -- "$@"
