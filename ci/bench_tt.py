#!/usr/bin/env python3
"""Benchmark: CPU perft with and without transposition tables (a script, not a test).

    python ci/bench_tt.py                 # startpos perft 8, one thread, tables of 256 MiB
    python ci/bench_tt.py --depth 7 --tt-mb 64 --min-speedup 3
    python ci/bench_tt.py --json          # one JSON object instead of the table

Each measurement runs in a fresh interpreter (so the peak resident memory of a run is its own):
the plain template recursion, then the TT recursion. Prints nodes, seconds, M nodes/s, speedup,
peak-RSS growth over the process's resident memory before counting, the tables' allocation, and
per-level hit rates. Exit status 1 if the counts differ, if the tables' memory exceeds --tt-mb,
or if the speedup is below --min-speedup (default 0: report only; the issue's target is 5x).
"""
from __future__ import annotations

import importlib.util
import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def _rss_kib() -> int:
    """Current resident set size of this process, KiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _child(mode: str, fen: str, depth: int, tt_mb: float, threads: int) -> dict:
    if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
        sys.path.insert(0, str(ROOT))
    import perft_core
    from perft_core import zobrist

    pos = perft_core.Position.from_fen(fen)
    perft_core.perft(pos, 2)  # warm up: the extension is loaded and its tables built
    rss0 = _rss_kib()
    out: dict = {"mode": mode}
    t0 = time.perf_counter()
    if mode == "plain":
        out["nodes"] = perft_core.perft(pos, depth, threads=threads)
    else:
        table = zobrist.TranspositionTable(depth, tt_mb)
        out["nodes"] = zobrist.perft_tt(pos, depth, threads=threads, table=table)
        out["allocated_bytes"] = table.allocated_bytes
        out["budget_bytes"] = table.budget_bytes
        out["levels"] = [
            {"depth": s["depth"], "kind": s["kind"], "probes": s["probes"], "hits": s["hits"],
             "replaced": s["replaced"], "full": s["full"]}
            for s in table.stats()
        ]
    out["seconds"] = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out["rss_growth_bytes"] = max(0, peak - rss0) * 1024
    return out


def _run(mode: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--fen", args.fen, "--depth", str(args.depth),
           "--tt-mb", str(args.tt_mb), "--threads", str(args.threads)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fen", default=START)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--tt-mb", type=float, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1, help="runs of each mode; the fastest is kept")
    p.add_argument("--min-speedup", type=float, default=0.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", choices=("plain", "tt"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.fen, args.depth, args.tt_mb, args.threads)))
        return 0

    best: dict[str, dict] = {}
    for _ in range(args.repeat):
        for mode in ("plain", "tt"):
            r = _run(mode, args)
            if mode not in best or r["seconds"] < best[mode]["seconds"]:
                best[mode] = r
    plain, tt = best["plain"], best["tt"]
    speedup = plain["seconds"] / tt["seconds"]
    budget = int(args.tt_mb * 2**20)
    problems = []
    if plain["nodes"] != tt["nodes"]:
        problems.append(f"counts differ: plain {plain['nodes']}, tt {tt['nodes']}")
    if tt["allocated_bytes"] > budget:
        problems.append(f"tables allocated {tt['allocated_bytes']} bytes > budget {budget}")
    if tt["rss_growth_bytes"] > budget + 8 * 2**20:  # + the interpreter's own noise
        problems.append(f"resident memory grew {tt['rss_growth_bytes']} bytes > budget {budget}")
    if speedup < args.min_speedup:
        problems.append(f"speedup {speedup:.2f}x < {args.min_speedup}x")
    summary = {
        "fen": args.fen, "depth": args.depth, "threads": args.threads, "tt_mb": args.tt_mb,
        "cpu": _cpu_name(), "date": time.strftime("%Y-%m-%d"), "plain": plain, "tt": tt,
        "speedup": speedup, "problems": problems,
    }
    if args.json:
        print(json.dumps(summary))
        return 1 if problems else 0

    mib = 2**20
    print(f"perft {args.depth} of {args.fen}, {args.threads} thread(s), {summary['cpu']}, {summary['date']}")
    print()
    print(f"| {'mode':<12} | {'nodes':>14} | {'seconds':>8} | {'M nodes/s':>10} | {'speedup':>7} | "
          f"{'RSS growth MiB':>14} | {'TT MiB':>7} |")
    print(f"|{'-' * 14}|{'-' * 16}|{'-' * 10}|{'-' * 12}|{'-' * 9}|{'-' * 16}|{'-' * 9}|")
    for name, r, sp in (("plain", plain, 1.0), (f"tt {args.tt_mb:g} MiB", tt, speedup)):
        alloc = f"{r['allocated_bytes'] / mib:.1f}" if "allocated_bytes" in r else "-"
        print(f"| {name:<12} | {r['nodes']:>14} | {r['seconds']:>8.2f} | {r['nodes'] / r['seconds'] / 1e6:>10.0f} | "
              f"{sp:>6.2f}x | {r['rss_growth_bytes'] / mib:>14.1f} | {alloc:>7} |")
    print()
    print("| level (remaining depth) | kind     |      probes |   hit rate |   replaced | pool full |")
    print("|-------------------------|----------|-------------|------------|------------|-----------|")
    for s in tt["levels"]:
        rate = s["hits"] / s["probes"] if s["probes"] else 0.0
        print(f"| {s['depth']:>23} | {s['kind']:<8} | {s['probes']:>11} | {rate:>9.1%} | {s['replaced']:>10} | "
              f"{s['full']:>9} |")
    print()
    print(f"target: with TT >= 5x faster -> {'met' if speedup >= 5 else 'NOT met'} ({speedup:.2f}x)")
    for msg in problems:
        print(f"PROBLEM: {msg}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
