"""GPU benchmark with transposition tables (TTBfsDriver), beside perft_gpu_2026's TT figures on an H200.

    python ci/bench_gpu_tt.py [--runs 2] [--only tt-startpos-9 ...] [--chunk-leaf-moves N] [--min-roots N]
                              [--define NAME[=VALUE] ...] [--iterative]

After a warm-up count at depth - 1 (the issue's protocol; since issue 12 nothing is compiled at
first use when the precompiled cubin fits), each run is a cold count: the device TTs and the host
cache are new for every run. perft_gpu_2026 counts depths 1..N in turn with warm TTs and reports
the last depth's own time; with --iterative each run does that too (TTBfsDriver.perft_iterative:
tables planned for N, kept from depth to depth) and the time reported is depth N's own.
Prints per workload the median wall time (min..max), G nodes/s, the peer's time, TT probes, hits
and hit rate, merged roots, GPU calls, and the ratio peer/ours (> 1: faster than the peer).
"""
from __future__ import annotations

import importlib.util
import argparse
import statistics
import sys
import time
from pathlib import Path

if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import perft_core  # noqa: E402

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
# (name, fen, depth, nodes (OEIS A048987 / CPW), perft_gpu_2026 seconds with TTs on an H200)
TT_WORKLOADS = [
    ("tt-startpos-9", STARTPOS, 9, 2439530234167, 0.335),
    ("tt-kiwipete-7", KIWIPETE, 7, 374190009323, 0.118),
    ("tt-startpos-10", STARTPOS, 10, 69352859712417, 3.68),
    ("tt-startpos-11", STARTPOS, 11, 2097651003696806, 40.5),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--chunk-leaf-moves", type=int, default=None, help="cap on leaf moves per GPU call (default: memory alone)")
    ap.add_argument("--min-roots", type=int, default=1)
    ap.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]",
                    help="a preprocessor define for the kernels (NVRTC -D); repeatable")
    ap.add_argument("--iterative", action="store_true",
                    help="count depths 1..N in turn with warm tables (perft_gpu_2026's schedule) and time "
                         "the last depth, as the peer reports it; also prints the schedule's total")
    args = ap.parse_args()

    from perft_core.gpu.kernels import CupyKernels
    from perft_core.gpu.ttdriver import TTBfsDriver

    drv = TTBfsDriver(CupyKernels(options=tuple(f"-D{d}" for d in args.define)), chunk_leaf_moves=args.chunk_leaf_moves, min_roots=args.min_roots)
    print(f"TT driver: chunk_leaf_moves={args.chunk_leaf_moves} min_roots={args.min_roots} "
          f"arena={drv.arena.capacity >> 20} MiB tt={drv.tt_arena.capacity >> 20} MiB")
    rows = []
    for name, fen, depth, expected, peer in TT_WORKLOADS:
        if args.only and name not in args.only:
            continue
        pos = perft_core.Position.from_fen(fen)
        drv.perft(pos, depth - 1)  # warm-up at depth - 1
        times, totals = [], []
        for _ in range(args.runs):
            drv.host_cache.clear()  # cold: device TTs are rebuilt by every count, the host cache here
            for key in drv.tt_stats:
                drv.tt_stats[key] = 0
            t = time.perf_counter()
            if args.iterative:  # the tables stay warm from depth 1 to depth N; time depth N alone
                schedule = drv.perft_iterative(pos, depth)
                _, nodes, last = schedule[-1]
                times.append(last)
                totals.append(time.perf_counter() - t)
            else:
                nodes = drv.perft(pos, depth)
                times.append(time.perf_counter() - t)
            if nodes != expected:
                print(f"WRONG COUNT {name}: {nodes} != {expected}")
                return 1
        med = statistics.median(times)
        s, t = drv.stats, dict(drv.tt_stats)
        rows.append((name, expected, med, min(times), max(times), peer, s, t))
        print(f"  {name}: {med:.3f} s ({min(times):.3f}..{max(times):.3f}); calls={s.gpu_calls} launch={s.launch_depth} "
              f"gpu_depth={s.gpu_depth} probes={t['probes']} hits={t['hits']} "
              f"({t['hits'] / max(t['probes'], 1):.1%}) roots={t['roots']} unique={t['unique_roots']} "
              f"tables={ {r: tt.slots for r, tt in drv.tts.items()} } overhead={s.overhead_share:.1%}"
              + (f" schedule 1..{depth} total={statistics.median(totals):.3f} s (hits counted over the schedule)"
                 if totals else ""), flush=True)
    print("\n| workload | nodes | median s (min..max) | G nodes/s | perft_gpu_2026 s | peer/ours | TT hit rate |")
    print("|---|---|---|---|---|---|---|")
    for name, nodes, med, lo, hi, peer, s, t in rows:
        print(f"| {name} | {nodes:,} | {med:.3f} ({lo:.3f}..{hi:.3f}) | {nodes / med / 1e9:.0f} | {peer} | "
              f"{peer / med:.2f} | {t['hits'] / max(t['probes'], 1):.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
