#!/usr/bin/env bash
# One device call of a deep run resumed on four GPUs, as a paired A/B of the table plan (NOTES.md
# "Session 18"): the workers on the devices in ARM (default 2,3) plan their tables with the
# experiment's settings (SPP: SLOTS_PER_POSITION, FLOOR: LOWEST_FLOOR, VALUE: LEVEL_VALUE, COMPACT:
# 1 or 0 for the drivers' part_compact; see sitecustomize.py here), the others with the shipped ones; every count is exact and stored
# whatever its arm. ARM= (empty) with no settings resumes the run with the shipped plan everywhere.
#
#   ST=ci/stores/perft13-h200x4-s17.sqlite NAME=c1 LEFT=545 SPP=1 bash ci/table_value/paired_call.sh
#
# GPUS: the GPUs of the run (default 4). NEW: start a new run into ST instead of resuming it, e.g.
# NEW="startpos 13" GPUS=1 (then --backend gpu --tt; refused when ST exists); take_back.py then
# takes the call's store as ST's first version.
# EXTRA: more arguments for perft deep, e.g. EXTRA="--verify-seed 0x5EED2026 --verify-sample 0.05" to
# add a verify pass to a run made without one (the same seed and sample on every later call).
#
# Copies ST into $OUT/NAME, resumes it with --max-seconds (LEFT less the seconds spent before the
# count), writes the run's JSON, stderr and paired_summary.py's JSON beside it, and tars the folder
# to $OUT/NAME.tgz. After the call, and before the next one, take the store back into ST:
#   python ci/table_value/take_back.py FILES_AT/NAME.tgz ST
# (it refuses a store that would lose counted rows; a call resumed from a stale ST counts the same
# units again: session 21 lost one call that way).
set -uo pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
T0=$(date +%s)
. ci/gpu-env.sh
export PYTHONPATH="$PWD:$PWD/ci/table_value:$PYTHONPATH"
N=${NAME:-call}; O=$OUT/$N; mkdir -p "$O"
nvidia-smi -L > "$O/info.txt"; free -g >> "$O/info.txt"
ST=${ST:-ci/stores/perft13-h200x4-s17.sqlite}
if [ -n "${NEW:-}" ]; then
    [ -e "$ST" ] && { echo "NEW=$NEW: $ST exists; resume it without NEW" >&2; exit 2; }
    read -ra run <<< "$NEW"; run+=(--backend gpu --tt --store "$O/store.sqlite")
else
    cp "$ST" "$O/store.sqlite"; run=(--resume "$O/store.sqlite")
fi
[ -e "$O/store.sqlite" ] && python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print('== store at start: %d of %d unit rows counted' % c.execute('SELECT COUNT(count), COUNT(*) FROM units').fetchone())" "$O/store.sqlite" | tee -a "$O/info.txt"
env=()
[ -n "${SPP:-}" ] && env+=("PERFT_EXPERIMENT_SLOTS_PER_POSITION=$SPP")
[ -n "${FLOOR:-}" ] && env+=("PERFT_EXPERIMENT_LOWEST_FLOOR=$FLOOR")
[ -n "${VALUE:-}" ] && env+=("PERFT_EXPERIMENT_TABLE_VALUE=$VALUE")
[ -n "${COMPACT:-}" ] && env+=("PERFT_EXPERIMENT_PART_COMPACT=$COMPACT")
[ ${#env[@]} -gt 0 ] && env+=("PERFT_EXPERIMENT_ARM_DEVICES=${ARM-2,3}")
left=$(( ${LEFT:-545} - ($(date +%s) - T0) ))
echo "== resumed for ${left} s: ${env[*]:-the shipped plan}" | tee -a "$O/info.txt"
t=$(date +%s)
env "${env[@]}" timeout -s INT $(( left + 45 )) python3 -m perft_cli deep "${run[@]}" --gpus "${GPUS:-4}" \
    --max-seconds "$left" ${EXTRA:-} --json > "$O/run.json" 2> "$O/err.txt"
echo "rc=$? whole=$(( $(date +%s) - t )) s"; head -c 1200 "$O/run.json"; echo
grep -v '^\[table_value\]' "$O/err.txt" | tail -3; grep '^\[table_value\]' "$O/err.txt" | sort -u | head -8
python3 ci/table_value/paired_summary.py "$O/store.sqlite" --log "$O/err.txt" > "$O/paired.json" && head -c 2000 "$O/paired.json"
rm -f "$O"/*.img  # table images (session 24) stay on the device: a 13.5 GB one kept session 26's tar past the limit
tar czf "$OUT/$N.tgz" -C "$OUT" "$N" && rm -rf "$O"
