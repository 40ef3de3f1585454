#!/usr/bin/env bash
# What a GPU CI runner executes: install the wheels the runner lacks (python-chess, tox and tox's
# needs) offline from $PERFT_WHEELS (default .whl/, see NOTES.md for how to fetch them), show the
# GPU, then `tox -e gpu`: build the extension in place, run the gpu-marked suites, then the
# performance gates (ci/perf_gate.py static --cupy, then timing against ci/baselines/<gpu>.json).
# Usage: ci/gpu-runner.sh [pytest args...]   (the args go to pytest only, not to the gates)
set -euo pipefail
cd "$(dirname "$0")/.."
wheels="${PERFT_WHEELS:-.whl}"
site="${PERFT_SITE:-/tmp/perft-site}"
if compgen -G "$wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl
fi
# tox's virtual environment must see this interpreter's packages (CuPy, NumPy, pytest, pybind11):
# the runner's python3 may itself live in a venv, which system_site_packages alone would not reach.
base_site=$(python3 -c 'import site; print(":".join(site.getsitepackages()))')
export PYTHONPATH="$site:$base_site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH"
python3 -c 'import chess, cupy, tox; print("python-chess", chess.__version__, "| cupy", cupy.__version__, "| tox", tox.__version__)'
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -m tox -e gpu -- "$@"
