"""Benchmark against perft_gpu_2026 in the same run: ours and the peer, each in its own process.

    python ci/bench_vs_peer.py [--peer .peer/perft_gpu] [--runs 1] [--only "CPW 6 d8" ...] [--tables both|no|yes]
                               [--api [--no-progress]] [--walks N [--seed S]] [--json out.json]

``--api`` times ours through the public API (``perft_core.perft``: the estimate's guard, limits,
the process's driver), each call with and without the run-time estimate and, with tables, once
more answered from the tables (issue 27's per-call figures), and the median time of the default call
outside kernels (its wall time less its kernels' device time: Python, launches, synchronising
reads); without it, the drivers alone. ``--no-progress`` makes those calls with ``progress=False``
(as the oracle does): with the default ``progress=None`` and no terminal, a count the estimate puts
over ``watch.LINES_SECONDS`` goes root move by root move with progress lines.

The peer is not part of the project (MIT, Ankan Banerjee; /work/shared/peers/perft_gpu_2026): copy
its binary into the git-ignored ``.peer/`` folder so it travels with the working tree. Rows: the
issue's positions, without tables (startpos 9, Kiwipete 7, CPW 3 d10, CPW 4 d8, CPW 5 d8, CPW 6 d8)
and with them (the same and startpos 10); ``--walks N`` adds N positions nobody tuned on: random
games from the start position (python-chess, ``--seed``), each at the depth whose extrapolated
count (perft_core.estimate.extrapolate of CPU counts to depth 4) is nearest 3e11 nodes.

Ours: one process counts every row (BfsDriver without tables, then TTBfsDriver), each after a
warm-up count at depth - 1; with tables every timed count starts cold (new device tables, empty
host cache). The peer: one process per row, ``perft_gpu FEN DEPTH -nott`` or ``-htt 16384`` (it
counts depths 1..DEPTH with warm tables); its time is its own line for DEPTH. Our process ends
before the peer's start, so neither holds the other's GPU memory.

Counts: a published count (CPW table, OEIS A048987) where one exists, else our bundled computed
count (oracle/data/deep_counts.csv, each confirmed by MPerft); otherwise our two counting paths
(with and without tables) must agree. The peer's counts are shown, not trusted.
Prints a table with peer/ours ratios (> 1: we are faster) against the issue's targets (1.2x with and
without tables, issue 27). Exit 1 on a wrong count of ours, 0 otherwise. About 3 minutes on an H200.
"""
from __future__ import annotations

import importlib.util
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(ROOT))

from perfgate.table import markdown  # noqa: E402
from perfgate.workloads import KIWIPETE, STARTPOS, published  # noqa: E402

CPW3, CPW4 = published("pos3", 1)[0], published("pos4", 1)[0]
CPW5, CPW6 = published("pos5", 1)[0], published("pos6", 1)[0]
# (row, FEN, depth); Kiwipete 7's count is CPW's text (its table stops at 6).
ROWS = [
    ("startpos 9", STARTPOS, 9), ("Kiwipete 7", KIWIPETE, 7), ("CPW 3 d10", CPW3, 10),
    ("CPW 4 d8", CPW4, 8), ("CPW 5 d8", CPW5, 8), ("CPW 6 d8", CPW6, 8),
]
TT_ROWS = ROWS[:1] + [("startpos 10", STARTPOS, 10)] + ROWS[1:]
KNOWN = {(KIWIPETE, 7): 374_190_009_323}
TARGET = {False: 1.2, True: 1.2}  # issue 27: 1.2x with and without tables
PEER_LINE = re.compile(r"Perft\s*\(\s*(\d+)\s*\)\s*:\s*([\d,]+)\s*,\s*time\s*:\s*([\d.eE+-]+)\s*s")


WALK_NODES = 3e11  # a walk row's count: about a second of ours without tables


def walk_rows(n: int, seed: int) -> list[tuple[str, str, int]]:
    """``n`` rows (name, FEN, depth) from random games: 8-60 plies of uniformly random legal moves from the
    start position (``random.Random(seed)``), games that ended skipped; depth from the extrapolated count."""
    import random

    import chess

    import perft_core
    from perft_core.estimate import extrapolate

    rng, rows = random.Random(seed), []
    while len(rows) < n:
        b = chess.Board()
        for _ in range(rng.randrange(8, 61)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        if b.is_game_over():
            continue
        pos = perft_core.Position.from_fen(b.fen())
        measured = [perft_core.perft(pos, d) for d in range(1, 5)]
        depth = min(range(5, 13), key=lambda d: abs(math.log(extrapolate(measured, d) / WALK_NODES)))
        rows.append((f"walk {seed}.{len(rows) + 1} d{depth}", b.fen(), depth))
    return rows


def computed_count(fen: str, depth: int) -> int | None:
    """Our bundled computed count of (fen, depth) (oracle/data/deep_counts.csv: without tables,
    with tables and under a second key seed in agreement, each row confirmed by MPerft), or None."""
    from oracle import tables

    key = (" ".join(fen.split()[:4]), depth)
    for row in tables.load("deep"):
        if (" ".join(row.fen.split()[:4]), row.depth) == key:
            return row.nodes
    return None


def published_count(fen: str, depth: int) -> int | None:
    if (fen, depth) in KNOWN:
        return KNOWN[(fen, depth)]
    ids = {STARTPOS: "pos1_initial", CPW3: "pos3", CPW4: "pos4", CPW5: "pos5", CPW6: "pos6"}
    try:
        return published(ids[fen], depth)[1] if fen in ids else None
    except KeyError:
        return None


def ours_api(runs: int, only: set[str] | None, tables: str = "both", walks: list | None = None,
             progress: bool | None = None) -> list[dict]:
    """Runs inside the worker process (``--api``): every row through the public API
    (``perft_core.perft(..., backend="gpu", tt=...)``), each after one warm-up count at depth - 1.
    Each run times the default call (with the run-time estimate's guard) and the call with
    ``max_estimate_seconds=None`` (no estimate), alternately, with tables cold each time (the host
    cache cleared, as in the driver mode); with tables, ``repeat_s`` is the default call once more
    with the tables as the last call left them (answered from the host cache)."""
    import perft_core
    from perft_core.gpu import get_driver

    out = []
    walks = [tuple(w) for w in walks or []]
    drv = get_driver("gpu")
    for tt, rows in ((False, ROWS + walks), (True, TT_ROWS + walks)):
        if tables != "both" and tt != (tables == "yes"):
            continue
        for name, fen, depth in rows:
            if only and name not in only:
                continue
            pos = perft_core.Position.from_fen(fen)
            perft_core.perft(pos, depth - 1, backend="gpu", tt=tt, progress=progress)  # warm-up at depth - 1
            times, bare, host, nodes, kernel = [], [], [], None, 0.0
            for _ in range(runs):
                drv.host_cache.clear()
                t = time.perf_counter()
                nodes = perft_core.perft(pos, depth, backend="gpu", tt=tt, progress=progress)
                times.append(time.perf_counter() - t)
                kernel = drv.stats.kernel_seconds
                host.append(times[-1] - kernel)  # the call's time outside kernels: Python, launches, reads
                drv.host_cache.clear()
                t = time.perf_counter()
                again = perft_core.perft(pos, depth, backend="gpu", tt=tt, max_estimate_seconds=None, progress=progress)
                bare.append(time.perf_counter() - t)
                if again != nodes:
                    nodes = -1  # flagged WRONG below
            repeat = None
            if tt:
                t = time.perf_counter()
                if perft_core.perft(pos, depth, backend="gpu", tt=tt, progress=progress) != nodes:
                    nodes = -1
                repeat = time.perf_counter() - t
            s = drv.stats
            out.append({"row": name, "fen": fen, "depth": depth, "tt": tt, "nodes": nodes,
                        "seconds": statistics.median(times), "times": times, "no_estimate_s": statistics.median(bare),
                        "no_estimate_times": bare, "repeat_s": repeat, "kernel_s": kernel,
                        "host_s": statistics.median(host), "gpu_depth": s.gpu_depth,
                        "gpu_calls": s.gpu_calls})
            print(f"  ours API {'TT' if tt else 'no-TT'} {name}: {nodes:,} nodes {statistics.median(times):.4f} s, "
                  f"without the estimate {statistics.median(bare):.4f} s (kernels {kernel:.4f} s, "
                  f"outside kernels {statistics.median(host) * 1e3:.2f} ms)"
                  + (f", again from the tables {repeat * 1e3:.2f} ms" if tt else ""), file=sys.stderr, flush=True)
    return out


def ours(runs: int, only: set[str] | None, tables: str = "both", walks: list | None = None) -> list[dict]:
    """Runs inside the worker process: every row of ours (and the walk rows), no-TT then TT."""
    import cupy

    import perft_core
    from perft_core.gpu.driver import BfsDriver
    from perft_core.gpu.kernels import CupyKernels
    from perft_core.gpu.ttdriver import TTBfsDriver

    k = CupyKernels()
    print(f"our kernels: {k.build} ({k.build_reason})", file=sys.stderr, flush=True)
    out = []
    walks = [tuple(w) for w in walks or []]
    for tt, rows in ((False, ROWS + walks), (True, TT_ROWS + walks)):
        if tables != "both" and tt != (tables == "yes"):
            continue
        drv = TTBfsDriver(k) if tt else BfsDriver(k)
        for name, fen, depth in rows:
            if only and name not in only:
                continue
            pos = perft_core.Position.from_fen(fen)
            drv.perft(pos, depth - 1)  # warm-up at depth - 1
            times, nodes, extra = [], None, {}
            for _ in range(runs):
                if tt:
                    drv.host_cache.clear()
                    before = dict(drv.tt_stats)
                t = time.perf_counter()
                nodes = drv.perft(pos, depth)
                times.append(time.perf_counter() - t)
                if tt:  # the table counters of this count (the driver's are cumulative)
                    extra = {key: v - before.get(key, 0) for key, v in drv.tt_stats.items()}
            s = drv.stats
            out.append({"row": name, "fen": fen, "depth": depth, "tt": tt, "nodes": nodes,
                        "seconds": statistics.median(times), "times": times, "kernel_s": s.kernel_seconds,
                        "gpu_depth": s.gpu_depth, "gpu_calls": s.gpu_calls, **extra})
            print(f"  ours {'TT' if tt else 'no-TT'} {name}: {nodes:,} nodes {statistics.median(times):.3f} s"
                  f" (kernels {s.kernel_seconds:.3f} s, GPU depth {s.gpu_depth}, {s.gpu_calls} calls"
                  + (f", device TT hits {extra['hits']:,} of {extra['probes']:,} probes, "
                     f"{sum(t.slots for t in drv.tts.values()):,} slots" if tt else "") + ")",
                  file=sys.stderr, flush=True)
        del drv
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def peer(binary: Path, fen: str, depth: int, tt: bool, timeout: float) -> dict:
    """One peer process; its count and time for ``depth`` (None when it failed or printed no such line)."""
    if len(fen.split()) == 4:
        fen += " 0 1"
    cmd = [str(binary), fen, str(depth)] + (["-htt", "16384"] if tt else ["-nott"])
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        text = f"timed out after {timeout:.0f} s: {exc}"
    wall = time.perf_counter() - t
    for d, count, seconds in PEER_LINE.findall(text):
        if int(d) == depth:
            return {"nodes": int(count.replace(",", "")), "seconds": float(seconds), "wall_s": wall}
    return {"nodes": None, "seconds": None, "wall_s": wall, "output": text[-500:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, default=ROOT / ".peer" / "perft_gpu", help="perft_gpu_2026's binary")
    ap.add_argument("--runs", type=int, default=1, help="timed counts of ours per row (median)")
    ap.add_argument("--only", nargs="*", help="row names to run, e.g. 'CPW 6 d8'")
    ap.add_argument("--tables", choices=("both", "no", "yes"), default="both",
                    help="rows without tables, with them, or both (default)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one peer process may take")
    ap.add_argument("--walks", type=int, default=0, help="add this many random-game positions (see above)")
    ap.add_argument("--seed", type=int, default=1, help="the random games' seed")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--api", action="store_true",
                    help="time ours through the public API (perft_core.perft: estimate, limits, driver), "
                         "with and without the run-time estimate, instead of the driver alone")
    ap.add_argument("--no-progress", action="store_true",
                    help="--api: count with progress=False (no progress lines or bar, as the oracle counts) "
                         "instead of the default progress=None")
    ap.add_argument("--worker", type=json.loads, help=argparse.SUPPRESS)  # the walk rows
    args = ap.parse_args()
    only = set(args.only) if args.only else None
    if args.worker is not None:
        if args.api:
            print(json.dumps(ours_api(args.runs, only, args.tables, args.worker, False if args.no_progress else None)))
        else:
            print(json.dumps(ours(args.runs, only, args.tables, args.worker)))
        return 0

    t0 = time.perf_counter()
    walks = walk_rows(args.walks, args.seed) if args.walks else []
    if only:
        only |= {name for name, _fen, _depth in walks}
    cmd = [sys.executable, __file__, "--worker", json.dumps(walks), "--runs", str(args.runs), "--tables",
           args.tables] + (["--only", *only] if only else []) + (["--api"] if args.api else []) \
        + (["--no-progress"] if args.no_progress else [])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print(f"bench_vs_peer: our worker failed (exit {proc.returncode})", file=sys.stderr)
        return 1
    mine = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"ours: {time.perf_counter() - t0:.0f} s in one process", flush=True)

    have_peer = args.peer.exists() and os.access(args.peer, os.X_OK)
    if not have_peer:
        print(f"bench_vs_peer: no peer binary at {args.peer}: copy /work/shared/peers/perft_gpu_2026/perft_gpu "
              f"to .peer/ (git-ignored); showing ours only")
    for r in mine:
        r["peer"] = peer(args.peer, r["fen"], r["depth"], r["tt"], args.timeout) if have_peer else {}
        p = r["peer"]
        if have_peer:
            print(f"  peer {'TT' if r['tt'] else 'no-TT'} {r['row']}: {p.get('nodes')} nodes {p.get('seconds')} s "
                  f"(process {p['wall_s']:.1f} s)", flush=True)

    wrong = []
    by_row = {(r["row"], r["tt"]): r for r in mine}
    rows = []
    for r in mine:
        pub = published_count(r["fen"], r["depth"])
        other = by_row.get((r["row"], not r["tt"]))
        computed = computed_count(r["fen"], r["depth"]) if pub is None else None
        if pub is not None:
            check = "published" if r["nodes"] == pub else f"WRONG (published {pub:,})"
        elif computed is not None:
            check = "deep_counts.csv" if r["nodes"] == computed else f"WRONG (deep_counts.csv {computed:,})"
        elif other is not None:
            check = "no-TT = TT" if other["nodes"] == r["nodes"] else "no-TT != TT"
        else:
            check = "unchecked"
        if check.startswith("WRONG") or check == "no-TT != TT":
            wrong.append(r["row"])
        p = r["peer"]
        ratio = p["seconds"] / r["seconds"] if p.get("seconds") else None
        peer_check = None if p.get("nodes") is None else ("same" if p["nodes"] == r["nodes"] else "differs")
        target = TARGET[r["tt"]]
        rows.append([r["row"], "TT" if r["tt"] else "no TT", f"{r['nodes']:,}", check, f"{r['seconds']:.3f}",
                     f"{r['no_estimate_s']:.3f}" if "no_estimate_s" in r else None,
                     f"{r['host_s'] * 1e3:.1f}" if "host_s" in r else None,
                     f"{p['seconds']:.3f}" if p.get("seconds") else None, peer_check,
                     f"{ratio:.2f}" if ratio else None,
                     None if ratio is None else ("ok" if ratio >= target else f"below {target:.1f}x")])
    print()
    print(markdown(["row", "tables", "nodes", "our count", "ours s", "ours s, no estimate", "ours outside kernels ms",
                    "perft_gpu_2026 s", "peer count", "peer/ours", "target"], rows, "llrlrrrrlrl"))
    print(f"\nbench_vs_peer: {time.perf_counter() - t0:.0f} s in all")
    if args.json:
        Path(args.json).write_text(json.dumps(mine, indent=2))
    if wrong:
        print(f"WRONG COUNT of ours: {', '.join(wrong)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
