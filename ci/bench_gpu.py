"""GPU benchmark (no transposition tables): median wall time of several runs after a warm-up, beside
the perft_gpu_2026 figures recorded on an H200. Not a test: run it on a GPU machine, one at a time.

    python ci/bench_gpu.py [--runs 5] [--json out.json] [--only startpos-9 kiwipete-7] [--leaf3 stream]
                           [--leaf-threads 64] [--define PC_LEAF_MIN_BLOCKS=0 ...]

Prints a table: workload, nodes, median seconds (spread min..max), G nodes/s, the peer's seconds,
the ratio (peer time / ours: > 1 means faster than the peer), and Python/launch overhead share.
The workloads, the timing loop and the kernel variants are the timing gate's (ci/perfgate/workloads.py).
"""
from __future__ import annotations

import importlib.util
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(HERE.parent))

import perft_core  # noqa: E402
from perfgate.table import markdown  # noqa: E402
from perfgate.workloads import (  # noqa: E402
    STARTPOS, Variant, WrongNodeCount, build_driver, gpu_info, measure, select)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="workload names to run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--leaf3", choices=("list", "stream"), default="list", help="fused-leaf variant")
    ap.add_argument("--leaf-threads", type=int, default=128, help="threads per block of the leaf kernels")
    ap.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]",
                    help="a preprocessor define for the kernels (NVRTC -D); repeatable")
    args = ap.parse_args()

    gpu = gpu_info()["name"]
    t = time.perf_counter()
    variant = Variant(args.leaf3, args.leaf_threads, tuple(f"-D{d}" for d in args.define))
    drv = build_driver(variant)
    print(f"variant: {variant.describe()}")
    drv.perft(perft_core.Position.from_fen(STARTPOS), 3)  # compile + upload tables
    print(f"GPU: {gpu}; NVRTC build + table upload {time.perf_counter() - t:.1f} s; arena {drv.arena.capacity >> 20} MiB")
    for name, a in sorted(drv.k.attributes().items()):
        print(f"  {name:24s} regs={a['registers']:3d} local={a['local_bytes']:4d} B shared={a['shared_bytes']} B")

    results = []
    for w in (w for w in select(args.only) if not w.tt):  # the TT workloads: ci/bench_gpu_tt.py
        try:
            m = measure(drv, w, args.runs)
        except WrongNodeCount as exc:
            print(exc)
            return 1
        med = m.median
        results.append({
            "workload": w.name, "nodes": w.nodes, "median_s": med, "min_s": min(m.times), "max_s": max(m.times),
            "gnps": w.nodes / med / 1e9, "peer_s": w.peer_s, "speedup_vs_peer": (w.peer_s / med) if w.peer_s else None,
            "overhead_share": statistics.median(m.overhead), "gpu_calls": drv.stats.gpu_calls,
            "gpu_depth": drv.stats.gpu_depth, "launch_depth": drv.stats.launch_depth,
            "peak_gib": drv.stats.peak_bytes / 2**30, "levels": drv.stats.level_positions[:1],
        })
        r = results[-1]
        print(f"  {w.name}: {med:.3f} s (runs {r['min_s']:.3f}..{r['max_s']:.3f}), calls={r['gpu_calls']}, "
              f"gpu_depth={r['gpu_depth']}, peak={r['peak_gib']:.1f} GiB, overhead={r['overhead_share']:.1%}",
              flush=True)

    print()
    print(markdown(
        ["workload", "nodes", "median s (min..max)", "G nodes/s", "perft_gpu_2026 H200 s", "peer/ours", "overhead"],
        [[r["workload"], f"{r['nodes']:,}", f"{r['median_s']:.3f} ({r['min_s']:.3f}..{r['max_s']:.3f})",
          f"{r['gnps']:.1f}", f"{r['peer_s']:.3f}" if r["peer_s"] else None,
          f"{r['speedup_vs_peer']:.2f}" if r["speedup_vs_peer"] else None, f"{r['overhead_share']:.1%}"]
         for r in results]))
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": gpu, "date": time.strftime("%Y-%m-%d"), "results": results},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
