"""CPU benchmark: single-thread perft nodes/s beside Stockfish's `go perft` in the same run.

    python ci/bench_cpu.py [--runs 3] [--stockfish PATH] [--json out.json]

Both engines count without transposition tables and bulk-count the last ply. Stockfish (Debian
package `stockfish`, 15.1 here) is timed from sending `go perft N` to reading `Nodes searched`,
so its process start is excluded. Prints a table with the median of the runs and the ratio.
"""
from __future__ import annotations

import importlib.util
import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import perft_core  # noqa: E402

WORKLOADS = [
    ("startpos-7", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 7, 3195901860),
    ("kiwipete-5", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 5, 193690690),
]


def stockfish_perft(path: str, fen: str, depth: int) -> tuple[int, float]:
    """(nodes, seconds) of Stockfish's `go perft depth` on one thread."""
    p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        p.stdin.write("uci\nsetoption name Threads value 1\nisready\n")
        p.stdin.flush()
        for line in p.stdout:
            if line.strip() == "readyok":
                break
        p.stdin.write(f"position fen {fen}\n")
        t = time.perf_counter()
        p.stdin.write(f"go perft {depth}\n")
        p.stdin.flush()
        for line in p.stdout:
            if line.startswith("Nodes searched"):
                return int(line.split(":")[1]), time.perf_counter() - t
        raise RuntimeError("stockfish ended without 'Nodes searched'")
    finally:
        p.kill()
        p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stockfish", default=shutil.which("stockfish") or "/usr/games/stockfish")
    ap.add_argument("--json")
    args = ap.parse_args()
    have_sf = Path(args.stockfish).exists()
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    print(f"machine: {cpu}, {platform.machine()}; stockfish: {args.stockfish if have_sf else 'not found'}")
    rows = []
    for name, fen, depth, expected in WORKLOADS:
        ours, theirs = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            n = perft_core.perft(fen, depth)
            ours.append(time.perf_counter() - t)
            assert n == expected, (name, n)
            if have_sf:
                sn, st = stockfish_perft(args.stockfish, fen, depth)
                assert sn == expected, (name, "stockfish", sn)
                theirs.append(st)
        o = statistics.median(ours)
        s = statistics.median(theirs) if theirs else None
        rows.append({"workload": name, "nodes": expected, "ours_s": o, "ours_mnps": expected / o / 1e6,
                     "stockfish_s": s, "stockfish_mnps": expected / s / 1e6 if s else None,
                     "ratio": s / o if s else None})
    print("\n| workload | nodes | ours s | ours M nodes/s | Stockfish s | Stockfish M nodes/s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        sf = f"{r['stockfish_s']:.2f} | {r['stockfish_mnps']:.0f} | {r['ratio']:.2f}x" if r["stockfish_s"] else "- | - | -"
        print(f"| {r['workload']} | {r['nodes']:,} | {r['ours_s']:.2f} | {r['ours_mnps']:.0f} | {sf} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": cpu, "date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
