"""Where the time of a deep count with transposition tables goes, and how its tables do per
remaining depth; perft_gpu_2026 beside it in the same run.

    python ci/bench_tt_depth.py [--fen FEN] --depth 11 [--tt-mb default 60000 ...] [--max-seconds S]
                                [--table-value default 1 1e9 ...] [--peer .peer/perft_gpu] [--json FILE]

Each ``--tt-mb`` and ``--table-value`` variant (``TTBfsDriver.table_value``: how the table budget is
shared between remaining depths, ``perft_core.gpu.tables.plan_slots``) runs in a process of its own (the process's GPU driver fixes its table
budget when it is made): one warm-up count at depth - 2, then ``perft_core.perft(fen, depth,
backend=backend, tt=True, max_estimate_seconds=None)`` (with ``--max-seconds`` the count stops there
and reports the root moves it finished; with ``--stop-after`` the plain count, one driver count, stops
after its first chunk past that time and reports the nodes counted). Reported: wall seconds, device seconds per kernel (CUDA
events), GPU calls and launch depth, and the tables per remaining depth
(``TTBfsDriver.tt_statistics``: probes, hits, host cache probes and hits, slots, occupied, stores,
evictions). Then the peer (``-htt 16384``, depth's own time), in its own process after ours ends.
Counts are checked against OEIS A048987 for the start position.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(ROOT))

from perfgate.workloads import STARTPOS  # noqa: E402

A048987 = {9: 2_439_530_234_167, 10: 69_352_859_712_417, 11: 2_097_651_003_696_806,
           12: 62_854_969_236_701_747, 13: 1_981_066_775_000_396_239}


def worker(fen: str, depth: int, tt_mb: float | None, max_seconds: float | None, backend: str = "gpu",
           stop_after: float | None = None, leaf_merge: bool = True, table_value: float | None = None) -> dict:
    """One count in this process (see the module docstring); returns the figures as a dict."""
    import perft_core
    from perft_core.errors import CountInterrupted
    from perft_core.gpu import get_driver
    from perft_core.gpu.registry import table_statistics

    pos = perft_core.Position.from_fen(fen)
    drv = get_driver(backend, tt_mb)
    drv.leaf_merge = leaf_merge
    if table_value is not None:
        drv.table_value = table_value
    perft_core.perft(pos, depth - 2, backend=backend, tt=True, tt_mb=tt_mb, max_estimate_seconds=None)
    k = drv.k
    before = dict(getattr(k, "kernel_seconds_by_name", {}))
    stats0 = {r: dict(v) for r, v in drv.depth_stats.items()}
    leaf0 = (drv.tt_stats["leaf_moves"], drv.tt_stats["leaf_positions"])
    t = time.perf_counter()
    nodes, partial, samples = None, None, []
    if stop_after is not None:  # the plain count (one driver count), stopped after a chunk past the time

        def hook(done: int) -> None:
            samples.append((time.perf_counter() - t, (samples[-1][1] if samples else 0) + done))
            if samples[-1][0] > stop_after:
                raise StopIteration

        drv.whole_counts()
        drv.tt_enabled, drv.progress = True, hook
        try:
            nodes = drv.perft(pos, depth)
        except StopIteration:
            partial = {"nodes_done": samples[-1][1], "seconds": samples[-1][0]}
        finally:
            drv.tt_enabled, drv.progress = False, None
    else:
        try:
            nodes = perft_core.perft(pos, depth, backend=backend, tt=True, tt_mb=tt_mb, max_estimate_seconds=None,
                                     max_seconds=max_seconds)
        except CountInterrupted as exc:
            partial = {"moves_done": len(exc.partial), "nodes_done": sum(exc.partial.values())}
    wall = time.perf_counter() - t
    if hasattr(k, "synchronize"):
        k.synchronize()
    by_name = {n: s - before.get(n, 0.0) for n, s in getattr(k, "kernel_seconds_by_name", {}).items()}
    by_name = dict(sorted(((n, s) for n, s in by_name.items() if s > 0), key=lambda x: -x[1]))
    tables = table_statistics(backend, {"by_depth": stats0})  # this count's figures (not the warm-up's)
    return {"fen": fen, "depth": depth, "tt_mb": tt_mb, "table_value": drv.table_value, "tt_bytes": drv.tt_arena.capacity,
            "arena_bytes": drv.arena.capacity, "nodes": nodes, "partial": partial, "wall_s": wall,
            "kernel_s": sum(by_name.values()), "kernel_s_by_name": by_name, "gpu_calls": drv.stats.gpu_calls,
            "launch_depth": drv.stats.launch_depth, "gpu_depth": drv.stats.gpu_depth, "tables": tables,
            "progress": samples, "leaf_merge": leaf_merge, "oom_retries": len(drv.stats.oom_sites),
            "oom_sites": sorted(set(drv.stats.oom_sites)),
            "leaf_moves": drv.tt_stats["leaf_moves"] - leaf0[0],
            "leaf_positions": drv.tt_stats["leaf_positions"] - leaf0[1]}


def show(r: dict) -> None:
    ok = A048987.get(r["depth"]) if r["fen"] == STARTPOS else None
    verdict = "" if r["nodes"] is None or ok is None else (" exact" if r["nodes"] == ok else f" WRONG (A048987 {ok:,})")
    print(f"ours perft {r['depth']} tt_mb={r['tt_mb']} table_value={r.get('table_value')} (tables {r['tt_bytes'] / 2**30:.1f} GiB, arena "
          f"{r['arena_bytes'] / 2**30:.1f} GiB): {r['nodes'] if r['nodes'] is None else format(r['nodes'], ',')}"
          f"{verdict} in {r['wall_s']:.2f} s; kernels {r['kernel_s']:.2f} s; {r['gpu_calls']} GPU calls, launch "
          f"depth {r['launch_depth']}, GPU depth {r['gpu_depth']}" + (f"; stopped: {r['partial']}" if r["partial"] else ""))
    if r.get("oom_retries"):
        print(f"    out-of-memory retries: {r['oom_retries']} (sites: {', '.join(r.get('oom_sites', []))})")
    if r.get("leaf_moves"):
        print(f"    leaf merge: {r['leaf_moves']:,} moves of remaining-depth-3 positions, {r['leaf_positions']:,} "
              f"distinct children counted ({r['leaf_moves'] / max(r['leaf_positions'], 1):.2f}x)")
    elif not r.get("leaf_merge", True):
        print("    leaf merge off")
    for name, s in list(r["kernel_s_by_name"].items())[:10]:
        print(f"    {name:40s} {s:9.3f} s")
    print("    r  probes          hits            rate    host probes  host hits  slots          occupied       "
          "stores          evictions")
    for rr, row in r["tables"]["by_depth"].items():
        rate = row["hits"] / row["probes"] if row["probes"] else 0.0
        print(f"    {rr:<2} {row['probes']:<15,} {row['hits']:<15,} {rate:6.1%}  {row['host_probes']:<12,} "
              f"{row['host_hits']:<10,} {row.get('slots', 0):<14,} {row.get('occupied', 0):<14,} "
              f"{row.get('stores', 0):<15,} {row.get('evictions', 0):,}")
    p = sum(v["probes"] for v in r["tables"]["by_depth"].values())
    h = sum(v["hits"] for v in r["tables"]["by_depth"].values())
    print(f"    device hit rate {h / p if p else 0:.1%} ({h:,} of {p:,})", flush=True)
    ok = A048987.get(r["depth"]) if r["fen"] == STARTPOS else None
    if r["partial"] and ok and "seconds" in r["partial"]:
        share = r["partial"]["nodes_done"] / ok
        print(f"    stopped at {r['partial']['seconds']:.1f} s with {share:.1%} of A048987({r['depth']}): "
              f"{r['partial']['seconds'] / share:.0f} s projected at that pace", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fen", default=STARTPOS)
    ap.add_argument("--depth", type=int, default=11)
    ap.add_argument("--tt-mb", nargs="+", default=["default"], help="table budgets, MiB ('default': the driver's)")
    ap.add_argument("--max-seconds", type=float)
    ap.add_argument("--stop-after", type=float,
                    help="count through the driver alone (one count, no root-move split) and stop after the "
                         "first chunk that ends past this many seconds; reports the nodes counted by then")
    ap.add_argument("--backend", default="gpu", help="gpu, or gpu-emulated (a check of this script on the CPU)")
    ap.add_argument("--peer", type=Path, default=ROOT / ".peer" / "perft_gpu")
    ap.add_argument("--peer-timeout", type=float, default=300)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-leaf-merge", action="store_true",
                    help="count each move of the fused leaf (no merge of its children by key): the A/B of issue 27")
    ap.add_argument("--table-value", nargs="+", default=["default"],
                    help="TTBfsDriver.table_value variants ('default': the driver's; 1: in proportion to positions)")
    ap.add_argument("--worker", type=json.loads, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(*args.worker)))
        return 0
    results, bad = [], False
    for mb, value in [(mb, v) for mb in args.tt_mb for v in args.table_value]:
        tt_mb = None if mb == "default" else float(mb)
        table_value = None if value == "default" else float(value)
        cmd = [sys.executable, __file__, "--worker", json.dumps([args.fen, args.depth, tt_mb, args.max_seconds, args.backend,
                                                              args.stop_after, not args.no_leaf_merge, table_value])]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            print(f"bench_tt_depth: worker for tt_mb={mb} table_value={value} failed (exit {proc.returncode})")
            bad = True
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        show(r)
        results.append(r)
        ok = A048987.get(args.depth) if args.fen == STARTPOS else None
        bad |= r["nodes"] is not None and ok is not None and r["nodes"] != ok
    if args.peer.exists():
        from bench_vs_peer import peer

        p = peer(args.peer, args.fen, args.depth, True, args.peer_timeout)
        print(f"perft_gpu_2026 perft {args.depth} -htt 16384: {p.get('nodes')} nodes, {p.get('seconds')} s "
              f"(process {p['wall_s']:.1f} s)", flush=True)
        results.append({"peer": p})
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
