"""Kernel experiments on a GPU machine: time one perft with a kernel build variant, or run it once
under Nsight Compute. Not a test and not a benchmark of record (ci/bench_gpu.py is): counts are
printed but not checked, so builds that leave work out on purpose (a temporary ``#if`` you add to
kernels/, switched with ``--define``) can be timed to find where the time goes (NOTES.md, session 2).

    python ci/profile_gpu.py kiwipete:7 startpos:8 [--runs 3] [--define NAME[=VALUE] ...] [--lineinfo]
    ncu --clock-control none --kernel-name regex:leaf_kernel --launch-count 1 --set full \\
        -o out python ci/profile_gpu.py kiwipete:6 --runs 0 --lineinfo

Prints: the variant, the leaf kernels' registers and local memory, then per workload each timed
run's seconds, the median, G nodes/s, the node count and the number of GPU calls.
"""
from __future__ import annotations

import importlib.util
import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(HERE.parent))

import perft_core  # noqa: E402
from perfgate.workloads import KIWIPETE, STARTPOS, Variant, build_driver  # noqa: E402

POSITIONS = {"startpos": STARTPOS, "kiwipete": KIWIPETE}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", nargs="+", help="POSITION:DEPTH, POSITION = startpos, kiwipete or a FEN")
    ap.add_argument("--runs", type=int, default=3, help="timed runs after one warm-up (0: one untimed run)")
    ap.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]")
    ap.add_argument("--lineinfo", action="store_true", help="NVRTC -lineinfo (source lines in ncu)")
    args = ap.parse_args()

    options = tuple(f"-D{d}" for d in args.define) + (("-lineinfo",) if args.lineinfo else ())
    t = time.perf_counter()
    drv = build_driver(Variant(options=options))
    print(f"variant: {' '.join(options) or 'default'}", flush=True)
    for n, w in enumerate(args.work):
        name, _, depth = w.rpartition(":")
        run(drv, name, int(depth), args.runs, show_resources=n == 0, t0=t)
    return 0


def run(drv, name: str, depth: int, runs: int, show_resources: bool, t0: float) -> None:
    pos = perft_core.Position.from_fen(POSITIONS.get(name, name))
    if runs == 0:
        print(f"{name} perft {depth}: nodes {drv.perft(pos, depth):,}")
        return
    if show_resources:
        for kname, a in sorted(drv.k.attributes().items()):
            if kname.startswith("leaf_kernel"):
                print(f"  {kname:24s} regs={a['registers']:3d} local={a['local_bytes']:4d} B")
    nodes = drv.perft(pos, depth)
    print(f"{name} perft {depth}: warm-up done at {time.perf_counter() - t0:.1f} s, nodes {nodes:,}")
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        nodes = drv.perft(pos, depth)
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    print(f"  runs {' '.join(f'{x:.4f}' for x in times)} s; median {med:.4f} s; "
          f"{nodes / med / 1e9:.0f} G nodes/s; nodes {nodes:,}; calls {drv.stats.gpu_calls}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
