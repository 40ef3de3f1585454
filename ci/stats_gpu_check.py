"""Perft statistics on one GPU (issue 36): exactness against independent counts, and the cost
against the plain count in the same process. Run by ci/stats_gpu_check.sh on the GPU machine (it
builds nothing: it uses the carried extension and cubin, or NVRTC where the cubin does not fit).

    python3 ci/stats_gpu_check.py [--out DIR] [--budget-seconds S] [--backend gpu|gpu-emulated] ...

Sections, each into the JSON (``DIR/stats_gpu_check.json``) and the log:

1. ``cpw_startpos``: startpos perft 1..``--startpos-depth`` (default 9) with statistics, every
   published column compared (oracle.stats.statistics_rows: Grand Chess Tree's thirteen counters,
   oracle/data/gct_perft_stats.csv, else the CPW detail table's columns), and the internal rules
   (e.p. <= captures, each CPW column the sum of its kinds, nodes = the plain count where it is timed).
2. ``cpw_positions``: CPW positions 2-6 at moderate depths, GPU statistics against the CPU
   backend's (every core) and against the published columns where the table has them.
3. ``random``: ``--random`` (default 50) seeded random legal walks, half of them Chess960, GPU
   against CPU at the deepest depth <= 6 with at most ``--random-nodes`` leaf moves; and divides
   (``divide_stats``) of a few of them at depth 3 against the CPU's.
4. ``timing``: statistics against the plain count (no tables), same depth, same process, after a
   warm-up: startpos 8 and 9, Kiwipete 6 and 7 (``--timing``); the best of ``--plain-repeats``
   plain counts (they are short), one statistics count (startpos's reused from section 1); device
   seconds per kernel of the statistics count.
5. ``variants`` (``--backend gpu`` only, when the budget allows): the statistics kernels built by
   NVRTC with ``-DPC_STATS_MIN_BLOCKS=B`` for each B of ``--variants`` (register caps: 6 blocks a
   multiprocessor = 80 registers, 8 = 64; the default build has no cap, 120-122 registers): startpos
   ``--variant-depth`` statistics in a driver of ``--variant-mb`` MiB, each against the default
   build in a driver of the same size (exact counts, time, registers and local bytes).

A count predicted (from the last measured statistics speed) to overrun ``--budget-seconds`` is not
started and is recorded as skipped, so the script ends in time on a slower GPU. Exit 0 when every
comparison made agrees, 1 otherwise (2: bad arguments).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import chess

import perft_core
from perft_core import _core
from oracle.strategies import seeded_walk
from oracle.stats import statistics_rows
from perft_core.stats import Stats

START = chess.STARTING_FEN
POSITIONS = {  # the Chess Programming Wiki's "Perft Results" positions 2-6
    "kiwipete": "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "pos3": "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "pos4": "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "pos5": "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "pos6": "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "startpos": START,
}


def published_rows() -> dict[tuple[str, int], dict[str, int]]:
    """{(FEN's first four fields, depth): {Stats attribute: value}} of every published statistics row
    (oracle.stats.statistics_rows: Grand Chess Tree's thirteen counters where it has the row, startpos
    to 12 and Kiwipete to 9, else the CPW detail row's columns)."""
    return {(" ".join(r["fen"].split()[:4]), r["depth"]): r["columns"] for r in statistics_rows()}


def agrees(s: Stats, want: dict[str, int]) -> bool:
    """Does ``s`` give every published column of ``want`` (a value of :func:`published_rows`)?"""
    return {name: getattr(s, name) for name in want} == want


def rules(s: Stats) -> list[str]:
    """Internal rules every Stats keeps; returns the broken ones."""
    bad = []
    if s.en_passant > s.captures:
        bad.append("en_passant > captures")
    if s.checks != sum(getattr(s, f"{k}_{c}") for k in ("direct", "single_discovered", "direct_discovered",
                                                          "double_discovered") for c in ("checks", "mates")):
        bad.append("checks != the sum of the kinds")
    if max(s.captures, s.castles, s.promotions, s.checks) > s.nodes:
        bad.append("a counter over nodes")
    return bad


class Check:
    """The run's state: the budget, the last statistics speed, the results and the log."""

    def __init__(self, args):
        self.args = args
        self.t0 = time.perf_counter()
        self.speed = None  # statistics nodes/s of the last count of >= 1e8 nodes
        self.ok = True
        self.result: dict = {"backend": args.backend, "budget_seconds": args.budget_seconds}

    def left(self) -> float:
        return self.args.budget_seconds - (time.perf_counter() - self.t0)

    def affordable(self, nodes: int | None, factor: float = 1.0) -> bool:
        """Whether a statistics count of ``nodes`` (x ``factor`` for extra counts) fits the budget."""
        if self.left() <= 0:
            return False
        if nodes is None or self.speed is None:
            return True
        return nodes / self.speed * factor < self.left()

    def stats(self, fen: str, depth: int, tt: bool = False) -> tuple[Stats, float]:
        t = time.perf_counter()
        s = perft_core.perft_stats(fen, depth, backend=self.args.backend, tt=tt, max_estimate_seconds=None)
        dt = time.perf_counter() - t
        if s.nodes >= 1e8 and dt > 0:
            self.speed = s.nodes / dt
        return s, dt

    def plain(self, fen: str, depth: int, tt: bool = False) -> tuple[int, float]:
        t = time.perf_counter()
        n = perft_core.perft(fen, depth, backend=self.args.backend, tt=tt, max_estimate_seconds=None)
        return n, time.perf_counter() - t

    def fail(self, what: str) -> None:
        self.ok = False
        print(f"MISMATCH {what}", flush=True)


def device_info(backend: str) -> dict:
    info = {"python": sys.version.split()[0], "extension": _core.__name__, "cpus": os.cpu_count()}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        info["nvidia_smi"] = f"unavailable: {exc}"
    try:
        info["commit"] = subprocess.run(["git", "-C", str(ROOT), "log", "--oneline", "-1"], capture_output=True,
                                        text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["commit"] = None
    from perft_core.gpu import get_driver

    k = get_driver(backend).k
    info["kernels"] = {"name": k.name, "build": getattr(k, "build", None), "why": getattr(k, "build_reason", None)}
    if backend == "gpu":
        import cupy

        info["cupy"] = cupy.__version__
    return info


def cpw_startpos(c: Check, table: dict) -> list[dict]:
    rows = []
    key = " ".join(START.split()[:4])
    for depth in range(1, c.args.startpos_depth + 1):
        want = table.get((key, depth))
        nodes = want["nodes"] if want else None
        if not c.affordable(nodes):
            rows.append({"depth": depth, "skipped": f"over the budget ({c.left():.0f} s left)"})
            print(f"startpos {depth}: skipped, over the budget", flush=True)
            continue
        s, dt = c.stats(START, depth)
        row = {"depth": depth, "seconds": dt, "stats": s.to_json(), "cpw": s.cpw(),
               "nodes_per_second": s.nodes / dt if dt > 0 else None}
        if want is None:
            row["published"] = None
        else:
            row["published"] = want
            row["agree"] = agrees(s, want)
            if not row["agree"]:
                c.fail(f"startpos {depth}: {s.to_json()} against the published row {want}")
        row["rules"] = rules(s)
        if row["rules"]:
            c.fail(f"startpos {depth}: {row['rules']}")
        print(f"startpos {depth}: {s.nodes:,} nodes in {dt:.2f} s ({s.nodes / max(dt, 1e-9) / 1e9:.1f} G/s), "
              f"published row {'agrees' if row.get('agree') else 'DIFFERS' if want else 'not published'}", flush=True)
        rows.append(row)
    return rows


def against_cpu(c: Check, name: str, fen: str, depth: int, table: dict) -> dict:
    s, dt = c.stats(fen, depth)
    t = time.perf_counter()
    cpu = perft_core.perft_stats(fen, depth, max_estimate_seconds=None)
    cpu_dt = time.perf_counter() - t
    row = {"position": name, "fen": fen, "depth": depth, "seconds": dt, "cpu_seconds": cpu_dt,
           "stats": s.to_json(), "agree_cpu": s == cpu}
    if not row["agree_cpu"]:
        row["cpu"] = cpu.to_json()
        c.fail(f"{name} {depth}: GPU {s.to_json()} against CPU {cpu.to_json()}")
    want = table.get((" ".join(fen.split()[:4]), depth))
    if want:
        row["agree_published"] = agrees(s, want)
        if not row["agree_published"]:
            c.fail(f"{name} {depth}: {s.to_json()} against the published row {want}")
    return row




def random_positions(c: Check) -> dict:
    rng = random.Random(c.args.seed)
    rows, bad = [], 0
    for i in range(c.args.random):
        fen = seeded_walk(rng, chess960=i % 2 == 1)
        depth = 1  # the deepest depth <= 6 within --random-nodes (the probes are plain counts on the backend)
        while depth < 6 and perft_core.perft(fen, depth + 1, backend=c.args.backend,
                                             max_estimate_seconds=None) <= c.args.random_nodes:
            depth += 1
        if c.left() < 5:
            rows.append({"fen": fen, "skipped": "over the budget"})
            continue
        row = against_cpu(c, f"random {i}", fen, depth, {})
        bad += not row["agree_cpu"]
        rows.append(row)
    divides = []
    for row in rows[:c.args.divides]:
        if "skipped" in row or c.left() < 5:
            continue
        got = perft_core.divide_stats(row["fen"], 3, backend=c.args.backend, max_estimate_seconds=None)
        same = got == perft_core.divide_stats(row["fen"], 3, max_estimate_seconds=None)
        divides.append({"fen": row["fen"], "depth": 3, "agree_cpu": same})
        if not same:
            c.fail(f"divide_stats {row['fen']} 3")
    print(f"random positions: {sum('skipped' not in r for r in rows)} counted, {bad} differ; "
          f"{len(divides)} divides, {sum(not d['agree_cpu'] for d in divides)} differ", flush=True)
    return {"rows": rows, "divides": divides}


def timing(c: Check, startpos_rows: list[dict]) -> list[dict]:
    from perft_core.gpu import get_driver

    k = get_driver(c.args.backend).k
    c.plain(START, 5)  # warm-up: first launches of the plain kernels
    c.stats(START, 4)
    out = []
    by_depth = {r["depth"]: r for r in startpos_rows if "stats" in r}
    for item in c.args.timing.split(","):
        name, depth = item.split(":")
        fen, depth = POSITIONS[name], int(depth)
        plain_n, plain_dt = c.plain(fen, depth)
        for _ in range(c.args.plain_repeats - 1):
            plain_dt = min(plain_dt, c.plain(fen, depth)[1])
        row = {"position": name, "depth": depth, "nodes": plain_n, "plain_seconds": plain_dt}
        if name == "startpos" and depth in by_depth:
            r = by_depth[depth]
            s, dt, kernels = Stats.from_json(r["stats"]), r["seconds"], None
        elif c.affordable(plain_n):
            before = dict(getattr(k, "kernel_seconds_by_name", {}))
            s, dt = c.stats(fen, depth)
            kernels = {n: round(v - before.get(n, 0.0), 4) for n, v in getattr(k, "kernel_seconds_by_name", {}).items()
                       if v - before.get(n, 0.0) > 0}
        else:
            row["skipped"] = f"statistics over the budget ({c.left():.0f} s left)"
            print(f"timing {name} {depth}: plain {plain_dt:.3f} s; statistics skipped, over the budget", flush=True)
            out.append(row)
            continue
        row.update({"stats_seconds": dt, "ratio": dt / plain_dt if plain_dt > 0 else None,
                    "plain_nodes_per_second": plain_n / plain_dt if plain_dt > 0 else None,
                    "stats_nodes_per_second": s.nodes / dt if dt > 0 else None, "kernel_seconds": kernels,
                    "nodes_agree": s.nodes == plain_n})
        if not row["nodes_agree"]:
            c.fail(f"timing {name} {depth}: statistics nodes {s.nodes} against the plain count {plain_n}")
        print(f"timing {name} {depth}: {plain_n:,} nodes; plain {plain_dt:.3f} s ({plain_n / plain_dt / 1e9:.0f} G/s), "
              f"statistics {dt:.3f} s ({s.nodes / dt / 1e9:.1f} G/s), ratio {dt / plain_dt:.2f}", flush=True)
        out.append(row)
    return out


def variants(c: Check) -> list[dict]:
    import cupy

    from perft_core.gpu.driver import BfsDriver
    from perft_core.gpu.kernels import CupyKernels

    pos = perft_core.Position.from_fen(START)
    out = []
    want = None
    for blocks in [0] + [int(b) for b in c.args.variants.split(",") if b.strip()]:
        if c.left() < 45:
            out.append({"min_blocks": blocks, "skipped": f"over the budget ({c.left():.0f} s left)"})
            continue
        t = time.perf_counter()
        k = CupyKernels(options=(f"-DPC_STATS_MIN_BLOCKS={blocks}",) if blocks else ())
        build_seconds = time.perf_counter() - t
        drv = BfsDriver(k, memory_bytes=c.args.variant_mb << 20)
        drv.perft_stats(pos, 4)  # warm-up
        t = time.perf_counter()
        s = drv.perft_stats(pos, c.args.variant_depth)
        dt = time.perf_counter() - t
        attrs = {n: a for n, a in k.attributes().items() if n.startswith("stats_")}
        want = s if want is None else want
        row = {"min_blocks": blocks, "build": k.build, "build_seconds": build_seconds, "depth": c.args.variant_depth,
               "seconds": dt, "nodes_per_second": s.nodes / dt if dt > 0 else None, "agree": s == want,
               "attributes": attrs, "gpu_calls": drv.stats.gpu_calls}
        if not row["agree"]:
            c.fail(f"variant PC_STATS_MIN_BLOCKS={blocks}: {s.to_json()} against the default build's {want.to_json()}")
        leaf = attrs.get("stats_leaf_kernel<0>", {})
        print(f"variant PC_STATS_MIN_BLOCKS={blocks} ({k.build}, {build_seconds:.1f} s to load): startpos "
              f"{c.args.variant_depth} statistics {dt:.3f} s ({s.nodes / dt / 1e9:.1f} G/s), registers "
              f"{leaf.get('registers')}, local {leaf.get('local_bytes')} B, {'agrees' if row['agree'] else 'DIFFERS'}",
              flush=True)
        out.append(row)
        del drv, k
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def common_arguments(doc: str, out: str, budget: float, positions: str, random_count: int,
                     random_nodes: float) -> argparse.ArgumentParser:
    """The options this script and ci/stats_tt_gpu_check.py share, with each one's defaults."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "out"), out), help="output folder")
    ap.add_argument("--budget-seconds", type=float, default=budget, help="no count is started that would overrun it")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "gpu-emulated"],
                    help="gpu-emulated: a dry run of this script on a CPU machine (use small depths)")
    ap.add_argument("--startpos-depth", type=int, default=9)
    ap.add_argument("--positions", default=positions,
                    help="NAME:DEPTH,... counted on the GPU and the CPU (names: kiwipete, pos3 .. pos6)")
    ap.add_argument("--random", type=int, default=random_count, help="random positions (half Chess960)")
    ap.add_argument("--random-nodes", type=float, default=random_nodes, help="leaf moves per random position at most")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = common_arguments(__doc__, "stats-gpu", 180.0, "kiwipete:5,pos3:7,pos4:5,pos5:5,pos6:5", 50, 3e8)
    ap.add_argument("--divides", type=int, default=5, help="random positions also compared by divide_stats at depth 3")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--timing", default="startpos:8,startpos:9,kiwipete:6,kiwipete:7", help="NAME:DEPTH,...")
    ap.add_argument("--plain-repeats", type=int, default=2)
    ap.add_argument("--variants", default="6,8", help="PC_STATS_MIN_BLOCKS values to build and time ('': none)")
    ap.add_argument("--variant-depth", type=int, default=8)
    ap.add_argument("--variant-mb", type=int, default=4096, help="arena of each variant's driver, MiB")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    c = Check(args)
    c.result["device"] = device_info(args.backend)
    print(json.dumps(c.result["device"]), flush=True)
    table = published_rows()
    c.result["cpw_startpos"] = cpw_startpos(c, table)
    c.result["cpw_positions"] = []
    for item in args.positions.split(","):
        name, depth = item.split(":")
        if c.left() < 10:
            c.result["cpw_positions"].append({"position": name, "depth": int(depth), "skipped": "over the budget"})
            continue
        row = against_cpu(c, name, POSITIONS[name], int(depth), table)
        print(f"{name} {depth}: GPU {row['seconds']:.2f} s, CPU {row['cpu_seconds']:.2f} s, "
              f"{'agree' if row['agree_cpu'] else 'DIFFER'}"
              + ("" if "agree_published" not in row else f"; published row {'agrees' if row['agree_published'] else 'DIFFERS'}"),
              flush=True)
        c.result["cpw_positions"].append(row)
    c.result["random"] = random_positions(c)
    c.result["timing"] = timing(c, c.result["cpw_startpos"])
    c.result["variants"] = variants(c) if args.backend == "gpu" and args.variants.strip() else []
    c.result["ok"] = c.ok
    c.result["seconds"] = time.perf_counter() - c.t0
    (out / "stats_gpu_check.json").write_text(json.dumps(c.result, indent=1) + "\n")
    print(f"stats_gpu_check: {'PASS' if c.ok else 'FAIL'} in {c.result['seconds']:.0f} s; "
          f"{out / 'stats_gpu_check.json'}", flush=True)
    return 0 if c.ok else 1


if __name__ == "__main__":
    sys.exit(main())
