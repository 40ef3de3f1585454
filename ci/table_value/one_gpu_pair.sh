#!/usr/bin/env bash
# A paired A/B of the table plan on one GPU (NOTES.md "Session 22"): on a machine of two GPUs, two
# new runs of the same count, each `perft deep --gpus 1 --tt` on its own GPU with its own store;
# GPU 0 plans its tables with the shipped rule (arm A), GPU 1 with B_ENV (arm B: sitecustomize.py's
# PERFT_EXPERIMENT_* settings, e.g. B_ENV="PERFT_EXPERIMENT_TABLE_VALUE=3"). Both split at the same
# ply and dispatch largest first, so they count the same first units; pair_stores.py compares the
# units both counted. SWAP=1 gives arm B GPU 0 (a second call with SWAP=1 cancels the GPUs' own
# difference, up to 11 % in session 19).
#
#   B_ENV="PERFT_EXPERIMENT_TABLE_VALUE=3" LEFT=540 bash ci/table_value/one_gpu_pair.sh
#
# ST=STORE: both arms resume a copy of this one-GPU run's store instead (each counts the same
# largest pending units, from empty tables); arm A's copy (the shipped plan) is NAME/store.sqlite,
# which take_back.py takes back into STORE, so the call also carries the run forward, and pair.json
# compares only the units this call counted (pair_stores.py --base STORE).
#
# LINKS=N (default 1): each arm resumes its store N times in turn (without ST the first link makes
# it), each command with 1/N of the time (`--max-seconds`), as a run carried across commands is; a pair per link
# (pair.linkI.json) compares the units both arms counted in that link (pair_stores.py with both
# arms' stores after the previous link as bases), and each arm's JSON per link is ARM.I.json.
# With LINKS, arm A saves its tables at each link's limit and the next link loads them (the
# table images, perft_core/gpu/tableimage.py); B_ENV="PERFT_TABLE_IMAGE_BYTES=0" makes arm B
# start every link with empty tables (NOTES.md, session 24). Table images are deleted before the
# archive is made. A_ENV: settings of arm A's commands (e.g. PERFT_TABLE_IMAGE_BYTES=N).
#
# FEN (default startpos), DEPTH (13), SPLIT (2), LEFT (seconds for the whole call, 540), NAME
# (pair). Writes $OUT/NAME.tgz (both stores, store.sqlite being arm A's, their JSON and stderr,
# pair.json). DRY=1: the gpu-emulated backend, one worker each, no GPUs (a CPU machine's check of
# the script).
set -uo pipefail
export PYTHONUNBUFFERED=1
T0=$(date +%s)
read -ra b_env <<< "${B_ENV:-}"
read -ra a_env <<< "${A_ENV:-}"
[ ${#b_env[@]} -eq 0 ] && { echo "B_ENV is empty: arm B would be arm A" >&2; exit 2; }
. ci/gpu-env.sh
export PYTHONPATH="$PWD:$PWD/ci/table_value:$PYTHONPATH"
N=${NAME:-pair}; O=${OUT:-out}/$N; mkdir -p "$O"
{ nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"; } > "$O/info.txt"
left=$(( ${LEFT:-540} - ($(date +%s) - T0) - 20 ))
echo "== ${FEN:-startpos} ${DEPTH:-13}, split ${SPLIT:-2}, ${left} s; arm B: ${b_env[*]}" | tee -a "$O/info.txt"
pids=(); base=()
declare -A db=([A]="$O/store.sqlite" [B]="$O/B.sqlite")
if [ -n "${ST:-}" ]; then
    cp "$ST" "${db[A]}"; cp "$ST" "${db[B]}"; base=(--base "$ST")
    python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print('== store at start: %d of %d unit rows counted' % c.execute('SELECT COUNT(count), COUNT(*) FROM units').fetchone())" "$ST" | tee -a "$O/info.txt"
fi
links=${LINKS:-1}
snapshot() { python3 -c "import sqlite3, sys; s = sqlite3.connect(sys.argv[1]); d = sqlite3.connect(sys.argv[2]); s.backup(d); d.close(); s.close()" "$1" "$2"; }
for arm in A B; do
    gpu=0; [ "$arm" = B ] && gpu=1; [ -n "${SWAP:-}" ] && gpu=$(( 1 - gpu ))
    env=(CUDA_VISIBLE_DEVICES=$gpu)
    [ "$arm" = B ] && env+=("${b_env[@]}")
    [ "$arm" = A ] && env+=("${a_env[@]}")
    if [ -n "${DRY:-}" ]; then how=(--backend gpu-emulated --workers 1); else how=(--backend gpu --gpus 1); fi
    echo "arm $arm on GPU $gpu: ${env[*]}" >> "$O/info.txt"
    if [ -n "${ST:-}" ]; then run=(--resume "${db[$arm]}")
    else run=("${FEN:-startpos}" "${DEPTH:-13}" --tt --split-ply "${SPLIT:-2}" --store "${db[$arm]}" --force); fi
    (
        for i in $(seq 1 "$links"); do
            end=$(( T0 + ${LEFT:-540} - 20 - (links - i) * (left / links) ))
            s=$(( end - $(date +%s) - 5 )); [ "$s" -lt 10 ] && s=10
            sfx=""; [ "$links" -gt 1 ] && sfx=".$i"
            [ "$i" -gt 1 ] && run=(--resume "${db[$arm]}")  # a new run's later links resume it
            env "${env[@]}" timeout -s INT $(( s + 90 )) python3 -m perft_cli deep "${run[@]}" \
                "${how[@]}" --max-seconds "$s" --json > "$O/$arm$sfx.json" 2> "$O/$arm$sfx.err"
            echo "arm $arm link $i: rc=$? ($s s)" >> "$O/info.txt"
            [ "$links" -gt 1 ] && snapshot "${db[$arm]}" "$O/$arm.link$i.sqlite"
        done
    ) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; echo "rc=$?"; done
rm -f "$O"/*.img
python3 ci/table_value/pair_stores.py "${db[A]}" "${db[B]}" "${base[@]}" > "$O/pair.json"; rc=$?
if [ "$links" -gt 1 ]; then
    prev=(); [ -n "${ST:-}" ] && prev=(--base "$ST")
    for i in $(seq 1 "$links"); do
        python3 ci/table_value/pair_stores.py "$O/A.link$i.sqlite" "$O/B.link$i.sqlite" "${prev[@]}" \
            > "$O/pair.link$i.json" || rc=1
        echo "== link $i: $(python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print({k: d[k] for k in ('units_both', 'seconds_a', 'seconds_b', 'b_over_a', 'counts_differ')})" "$O/pair.link$i.json")"
        prev=(--base "$O/A.link$i.sqlite" --base "$O/B.link$i.sqlite")
    done
fi
cat "$O/pair.json"; grep -h '^\[table_value\]' "$O"/*.err | sort -u | head -4
tar czf "${OUT:-out}/$N.tgz" -C "${OUT:-out}" "$N" && rm -rf "$O"
exit $rc
