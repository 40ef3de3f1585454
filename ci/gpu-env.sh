# Sourced by the GPU scripts (ci/gpu-runner.sh, ci/gpu-validate.sh): install the wheels the runner
# lacks (python-chess, tox and tox's needs) offline from $PERFT_WHEELS (default .whl/, see NOTES.md
# for how to fetch them) into $PERFT_SITE, and put them and this interpreter's site-packages on
# PYTHONPATH: the runner's python3 may itself live in a venv, which tox's system_site_packages alone
# would not reach.
wheels="${PERFT_WHEELS:-.whl}"
site="${PERFT_SITE:-/tmp/perft-site}"
if compgen -G "$wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl
fi
base_site=$(python3 -c 'import site; print(":".join(site.getsitepackages()))')
export PYTHONPATH="$site:$base_site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH"
