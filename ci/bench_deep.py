"""Deep perft on GPUs (``perft deep``): scaling over 1 and 2 GPUs beside the plain count, and a
perft 12 that resumes its store across commands. For a host with two GPUs (2x H200).

    python ci/bench_deep.py --out DIR scaling [--depth 11] [--split-ply 2] [--gpus 1 2] [--peer .peer/perft_gpu]
    python ci/bench_deep.py --out DIR resume  [--depth 12] [--gpus 2] [--split-ply 2] [--limit 540]

``scaling`` runs, each in its own process (one GPU driver per GPU and process):
  0. perft_gpu_2026 (``--peer``, default .peer/perft_gpu when it is there; a copy of
     /work/shared/peers/perft_gpu_2026/perft_gpu, never part of the project):
     ``perft_gpu FEN DEPTH -htt 16384``, its own time for DEPTH (ci/bench_vs_peer.py's rule; its
     count is shown, not trusted), before ours so that no process of ours holds the GPU's memory;
  1. the plain ``perft_core.perft(startpos, depth, backend="gpu", tt=True)``, after an untimed
     depth-2 warm-up (kernels compiled and cached on disk, so the deep runs find them cached);
  2. ``perft deep startpos depth --backend gpu --tt --gpus 1`` with a new store;
  3. the same with ``--gpus 2``;
and writes DIR/bench_deep_scaling.json: per run the command, wall seconds of the whole command,
the count phase's seconds (first unit submitted to last unit back: what the units and the store
cost beside the plain count), nodes, whether they equal OEIS A048987 (oracle/data), the scaling
(gpus 1 / gpus 2, count phase and whole command) and the peer's seconds over ours (> 1: we are
faster; plain and ``--gpus 1``). Logs: DIR/<run>.log.

``resume`` runs ``perft deep startpos depth --backend gpu --tt --gpus N --store DIR/perft<depth>.sqlite``,
or ``--resume`` that store when it exists, and stops its client after ``--limit`` seconds (SIGKILL to
the process group it started: finished units are in the store, the rest are counted by the next
call). Run the same command again until it prints ``finished``. It appends a line per call to
DIR/bench_deep_resume.jsonl: units done/total, nodes so far, seconds, and at the end the total and
whether it equals A048987; the device TT hit rate over the units counted so far (hits / probes).
"""
from __future__ import annotations

import importlib.util
import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "ci"))  # bench_vs_peer: the peer's command and its line for a depth
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(ROOT))

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

PLAIN = """
import json, sys, time
import perft_core
fen, depth, backend = sys.argv[1], int(sys.argv[2]), sys.argv[3]
perft_core.perft(fen, 2, backend=backend, tt=True)  # warm-up: NVRTC / CuPy kernels compiled and cached
t = time.perf_counter()
n = perft_core.perft(fen, depth, backend=backend, tt=True)
print(json.dumps({"nodes": n, "seconds": time.perf_counter() - t}))
"""


def expected(depth: int) -> int:
    """perft(startpos, depth) from oracle/data/startpos_A048987.csv (OEIS A048987)."""
    from oracle import tables

    (row,) = [r for r in tables.load("startpos") if r.depth == depth]
    return row.nodes


def run_logged(name: str, cmd: list[str], out: Path, timeout: float | None = None) -> tuple[int | None, str, float]:
    """Run ``cmd`` in its own process group, in ``out`` (so that a source tree in the current
    folder never shadows the perft_core this script imported: a source checkout without its built
    extension would), with that perft_core's folder first on PYTHONPATH; stdout+stderr to
    out/<name>.log; (rc or None if it was stopped at ``timeout``, stdout, wall seconds)."""
    import perft_core

    where = str(Path(perft_core.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (where, os.environ.get("PYTHONPATH")) if p))
    log = out / f"{name}.log"
    t = time.perf_counter()
    with open(log, "w") as err:
        err.write("$ " + " ".join(cmd) + "\n")
        err.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True, cwd=out,
                                env=env)
        try:
            stdout, _ = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the client and the cluster it started
            stdout, _ = proc.communicate()
            rc = None
    wall = time.perf_counter() - t
    with open(log, "a") as f:
        f.write(stdout + f"\n# rc={rc} wall={wall:.2f} s\n")
    return rc, stdout, wall


def deep_cmd(depth: int, gpus: int, split_ply: int | None, store: Path, resume: bool, backend: str) -> list[str]:
    """The ``perft deep`` command line; backends other than gpu (a smoke test on a CPU machine)
    run ``--workers N`` processes in place of ``--gpus N``."""
    cmd = [sys.executable, "-m", "perft_cli", "deep"]
    if resume:
        cmd += ["--resume", str(store)]
    else:
        cmd += [STARTPOS, str(depth), "--backend", backend, "--tt", "--store", str(store)]
        if split_ply is not None:
            cmd += ["--split-ply", str(split_ply)]
    return cmd + ["--gpus" if backend == "gpu" else "--workers", str(gpus), "--json"]


def scaling(args, out: Path) -> dict:
    want = expected(args.depth)
    report = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "depth": args.depth,
              "expected": want, "split_ply": args.split_ply, "runs": {}}
    if args.peer is not None and args.peer.exists():
        from bench_vs_peer import peer

        got = peer(args.peer, STARTPOS, args.depth, True, timeout=600)
        report["peer"] = {"program": "perft_gpu_2026", "binary": str(args.peer), **got}
        print(f"peer: {report['peer']}", flush=True)
    else:
        report["peer"] = {"program": "perft_gpu_2026", "binary": str(args.peer), "skipped": "no binary there"}
    rc, stdout, wall = run_logged("plain", [sys.executable, "-c", PLAIN, STARTPOS, str(args.depth), args.backend], out)
    plain = json.loads(stdout.strip().splitlines()[-1]) if rc == 0 else {}
    report["runs"]["plain"] = {"rc": rc, "wall_seconds": wall, "count_seconds": plain.get("seconds"),
                               "nodes": plain.get("nodes"), "exact": plain.get("nodes") == want}
    for gpus in args.gpus:
        store = out / f"scaling_d{args.depth}_g{gpus}.sqlite"
        for f in out.glob(store.name + "*"):
            f.unlink()
        cmd = deep_cmd(args.depth, gpus, args.split_ply, store, False, args.backend)
        rc, stdout, wall = run_logged(f"deep_gpus{gpus}", cmd, out)
        res = json.loads(stdout.strip().splitlines()[-1]) if rc == 0 else {}
        report["runs"][f"gpus{gpus}"] = {"rc": rc, "wall_seconds": wall, "count_seconds": res.get("count_seconds"),
                                         "run_seconds": res.get("seconds"), "unit_seconds": res.get("unit_seconds"),
                                         "units": res.get("units"), "split_ply": res.get("split_ply"),
                                         "tt_probes": res.get("tt_probes"), "tt_hits": res.get("tt_hits"),
                                         "nodes": res.get("nodes"), "exact": res.get("nodes") == want,
                                         "store": str(store)}
        print(f"gpus {gpus}: {report['runs'][f'gpus{gpus}']}", flush=True)
    r = report["runs"]
    if r.get("gpus1", {}).get("count_seconds") and r.get("gpus2", {}).get("count_seconds"):
        report["scaling_count_phase"] = r["gpus1"]["count_seconds"] / r["gpus2"]["count_seconds"]
        report["scaling_whole_command"] = r["gpus1"]["wall_seconds"] / r["gpus2"]["wall_seconds"]
    if r["plain"]["count_seconds"] and r.get("gpus1", {}).get("count_seconds"):
        report["deep1_over_plain_count_phase"] = r["gpus1"]["count_seconds"] / r["plain"]["count_seconds"]
    peer_s = report["peer"].get("seconds")
    if peer_s:
        for run in ("plain", "gpus1"):
            if r.get(run, {}).get("count_seconds"):
                report[f"peer_over_{run}"] = peer_s / r[run]["count_seconds"]
    (out / "bench_deep_scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def resume(args, out: Path) -> dict:
    store = out / f"perft{args.depth}.sqlite"
    again = store.exists() and store.stat().st_size > 0
    cmd = deep_cmd(args.depth, args.gpus, args.split_ply, store, again, args.backend)
    rc, stdout, wall = run_logged(f"resume_d{args.depth}_{time.strftime('%H%M%S')}", cmd, out, timeout=args.limit)
    line = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "command": " ".join(cmd), "rc": rc,
            "wall_seconds": wall, "resumed": again}
    if store.exists() and store.stat().st_size > 0:
        conn = sqlite3.connect(store, timeout=30)
        try:
            done, total, secs, probes, hits = conn.execute(
                "SELECT SUM(count IS NOT NULL), COUNT(*), SUM(seconds), SUM(probes), SUM(hits) FROM units").fetchone()
            nodes = sum(int(m) * int(c) for m, c in conn.execute(
                "SELECT multiplicity, count FROM units WHERE count IS NOT NULL"))
        except sqlite3.DatabaseError:  # stopped before the store was written: nothing to report yet
            done = total = secs = nodes = probes = hits = None
        finally:
            conn.close()
        line.update(units_done=done, units=total, nodes_so_far=nodes, unit_seconds=secs, tt_probes=probes,
                    tt_hits=hits, tt_hit_rate=hits / probes if probes else None)
    if rc == 0:
        res = json.loads(stdout.strip().splitlines()[-1])
        line.update(finished=True, nodes=res["nodes"], exact=res["nodes"] == expected(args.depth),
                    count_seconds=res["count_seconds"])
    else:
        line["finished"] = False
    with open(out / "bench_deep_resume.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for JSON, logs and stores")
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("scaling")
    s.add_argument("--depth", type=int, default=11)
    s.add_argument("--gpus", type=int, nargs="+", default=[1, 2], help="worker counts to run (default 1 2)")
    s.add_argument("--split-ply", type=int, default=2, help="the same units for 1 and 2 GPUs (default 2: "
                   "the 400 depth-9 subtrees the plain perft 11 sends to the GPU one call each)")
    s.add_argument("--peer", type=Path, default=ROOT / ".peer" / "perft_gpu",
                   help="perft_gpu_2026's binary, run first in its own process (skipped when missing)")
    r = sub.add_parser("resume")
    r.add_argument("--depth", type=int, default=12)
    r.add_argument("--gpus", type=int, default=2)
    r.add_argument("--split-ply", type=int, default=2)
    r.add_argument("--limit", type=float, default=540.0, help="stop the client after this many seconds")
    for p in (s, r):
        p.add_argument("--backend", choices=("gpu", "gpu-emulated", "cpu"), default="gpu",
                       help="gpu (default); the others smoke-test this script on a CPU machine")
    args = ap.parse_args()
    args.out = args.out.resolve()  # the runs start in it: their paths must not be relative to it
    args.out.mkdir(parents=True, exist_ok=True)
    result = scaling(args, args.out) if args.mode == "scaling" else resume(args, args.out)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
