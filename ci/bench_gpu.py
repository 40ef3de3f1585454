"""GPU benchmark (no transposition tables): median wall time of several runs after a warm-up, beside
the perft_gpu_2026 figures recorded on an H200. Not a test: run it on a GPU machine, one at a time.

    python ci/bench_gpu.py [--runs 5] [--json out.json] [--only startpos-9]

Prints a table: workload, nodes, median seconds (spread min..max), G nodes/s, the peer's seconds,
the ratio (peer time / ours: > 1 means faster than the peer), and Python/launch overhead share.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import perft_core  # noqa: E402
from perft_core.gpu import get_driver  # noqa: E402

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
# (name, fen, depth, expected nodes (CPW / OEIS A048987), perft_gpu_2026 seconds on an H200 or None)
WORKLOADS = [
    ("startpos-8", STARTPOS, 8, 84998978956, None),
    ("startpos-9", STARTPOS, 9, 2439530234167, 3.67),
    ("kiwipete-6", KIWIPETE, 6, 8031647685, None),
    ("kiwipete-7", KIWIPETE, 7, 374190009323, 0.355),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="workload names to run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--leaf3", choices=("list", "stream"), default=None, help="fused-leaf variant")
    ap.add_argument("--leaf-threads", type=int, default=None, help="threads per block of the leaf kernels")
    args = ap.parse_args()

    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    t = time.perf_counter()
    if args.leaf3 or args.leaf_threads:
        from perft_core.gpu.driver import BfsDriver
        from perft_core.gpu.kernels import CupyKernels

        lt = args.leaf_threads or 128
        drv = BfsDriver(CupyKernels(options=(f"-DPC_LEAF_THREADS={lt}",), leaf_threads=lt,
                                    leaf3=args.leaf3 or "list"))
    else:
        drv = get_driver("gpu")
    print(f"variant: leaf3={drv.k.leaf3_variant} leaf_threads={drv.k.leaf_threads}")
    drv.perft(perft_core.Position.from_fen(STARTPOS), 3)  # compile + upload tables
    print(f"GPU: {gpu}; NVRTC build + table upload {time.perf_counter() - t:.1f} s; arena {drv.arena.capacity >> 20} MiB")
    for name, a in sorted(drv.k.attributes().items()):
        print(f"  {name:24s} regs={a['registers']:3d} local={a['local_bytes']:4d} B shared={a['shared_bytes']} B")

    results = []
    for name, fen, depth, expected, peer in WORKLOADS:
        if args.only and name not in args.only:
            continue
        pos = perft_core.Position.from_fen(fen)
        drv.perft(pos, depth - 1)  # warm-up at one ply less
        times, overhead = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            nodes = drv.perft(pos, depth)
            times.append(time.perf_counter() - t)
            overhead.append(drv.stats.overhead_share)
            if nodes != expected:
                print(f"WRONG COUNT {name}: {nodes} != {expected}")
                return 1
        med = statistics.median(times)
        results.append({
            "workload": name, "nodes": expected, "median_s": med, "min_s": min(times), "max_s": max(times),
            "gnps": expected / med / 1e9, "peer_s": peer, "speedup_vs_peer": (peer / med) if peer else None,
            "overhead_share": statistics.median(overhead), "gpu_calls": drv.stats.gpu_calls,
            "gpu_depth": drv.stats.gpu_depth, "launch_depth": drv.stats.launch_depth,
            "peak_gib": drv.stats.peak_bytes / 2**30, "levels": drv.stats.level_positions[:1],
        })
        r = results[-1]
        print(f"  {name}: {med:.3f} s (runs {min(times):.3f}..{max(times):.3f}), calls={r['gpu_calls']}, "
              f"gpu_depth={r['gpu_depth']}, peak={r['peak_gib']:.1f} GiB, overhead={r['overhead_share']:.1%}",
              flush=True)

    print(f"\n| workload | nodes | median s (min..max) | G nodes/s | perft_gpu_2026 H200 s | peer/ours | overhead |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        peer = f"{r['peer_s']:.3f}" if r["peer_s"] else "-"
        ratio = f"{r['speedup_vs_peer']:.2f}" if r["speedup_vs_peer"] else "-"
        print(f"| {r['workload']} | {r['nodes']:,} | {r['median_s']:.3f} ({r['min_s']:.3f}..{r['max_s']:.3f}) | "
              f"{r['gnps']:.1f} | {peer} | {ratio} | {r['overhead_share']:.1%} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": gpu, "date": time.strftime("%Y-%m-%d"), "results": results},
                                              indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
