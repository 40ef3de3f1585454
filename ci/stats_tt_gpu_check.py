"""Perft statistics with transposition tables on one GPU (issue 36): exactness against independent
counts, and startpos perft 10 and 11 with statistics timed against the plain count with tables in the
same process. Run by ci/stats_tt_gpu_check.sh on the GPU machine (it builds nothing).

    python3 ci/stats_tt_gpu_check.py [--out DIR] [--budget-seconds S] [--backend gpu|gpu-emulated] ...

Sections, each into the JSON (``DIR/stats_tt_gpu_check.json``, rewritten after every section, so a
run cut short keeps what it finished) and the log:

1. ``cpw_startpos``: startpos perft 1..``--startpos-depth`` (default 9) with statistics and tables,
   every published column compared (Grand Chess Tree's thirteen counters, else the CPW detail
   table's columns: ci/stats_gpu_check.published_rows) and the internal rules.
2. ``positions``: CPW positions 2-6 (``--positions``) and ``--random`` seeded random walks (half
   Chess960): GPU statistics with tables == GPU statistics without tables == the CPU backend's, and
   the published columns where the table has them.
3. ``deep``: startpos ``--deep`` (default 10,11): the plain count with tables, then the statistics
   with tables, same process (the tables rebuilt for each count), their times and ratio; all
   thirteen counters against Grand Chess Tree's row (published to depth 12; else the node count
   against OEIS A048987) and the node count against the plain count; the internal rules (e.p. <=
   captures, the CPW columns the sums of their kinds, mates <= checks, no counter over nodes). At the first of these depths the statistics are
   counted again with ``stats_lowest_table`` 2 (a table also at the leaf parents' parents;
   ``--lowest-variant``), compared, and the faster setting counts the deeper ones (both times in the
   JSON). A statistics count predicted (from the last ratio measured) to overrun the budget is skipped
   and said so.

Exit 0 when every comparison made agrees, 1 otherwise (2: bad arguments).
"""
from __future__ import annotations

import importlib.util
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import perft_core
from oracle.strategies import seeded_walk

_spec = importlib.util.spec_from_file_location("stats_gpu_check", ROOT / "ci" / "stats_gpu_check.py")
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)

START = base.START
A048987 = {10: 69_352_859_712_417, 11: 2_097_651_003_696_806, 12: 62_854_969_236_701_747}
"""Perft of the start position (OEIS A048987, "Number of possible chess games at the end of the n-th ply")."""


def rules(s) -> list[str]:
    """stats_gpu_check's rules, and mates within checks."""
    bad = base.rules(s)
    if s.checkmates > s.checks:
        bad.append("checkmates > checks")
    return bad


class Check(base.Check):
    """stats_gpu_check's Check, its counts through tables unless asked otherwise, its JSON saved
    after every section."""

    def stats(self, fen: str, depth: int, tt: bool = True):
        return super().stats(fen, depth, tt)

    def plain(self, fen: str, depth: int, tt: bool = True):
        return super().plain(fen, depth, tt)

    def save(self) -> None:
        self.result["ok"] = self.ok
        self.result["seconds"] = time.perf_counter() - self.t0
        out = Path(self.args.out)
        (out / "stats_tt_gpu_check.json").write_text(json.dumps(self.result, indent=1) + "\n")


def cpw_startpos(c: Check, table: dict) -> list[dict]:
    rows = []
    key = " ".join(START.split()[:4])
    for depth in range(1, c.args.startpos_depth + 1):
        if c.left() < 20:
            rows.append({"depth": depth, "skipped": "over the budget"})
            continue
        s, dt = c.stats(START, depth)
        want = table.get((key, depth))
        row = {"depth": depth, "seconds": dt, "stats": s.to_json(), "published": want, "rules": rules(s)}
        if want is not None:
            row["agree"] = base.agrees(s, want)
            if not row["agree"]:
                c.fail(f"startpos {depth} with tables: {s.to_json()} against the published row {want}")
        if row["rules"]:
            c.fail(f"startpos {depth}: {row['rules']}")
        print(f"startpos {depth} (tables): {s.nodes:,} nodes in {dt:.2f} s, published row "
              f"{'agrees' if row.get('agree') else 'DIFFERS' if want else 'not published'}", flush=True)
        rows.append(row)
    return rows


def three_ways(c: Check, name: str, fen: str, depth: int, table: dict) -> dict:
    """GPU with tables, GPU without, CPU: one row."""
    s, dt = c.stats(fen, depth, tt=True)
    plain, plain_dt = c.stats(fen, depth, tt=False)
    t = time.perf_counter()
    cpu = perft_core.perft_stats(fen, depth, max_estimate_seconds=None)
    cpu_dt = time.perf_counter() - t
    row = {"position": name, "fen": fen, "depth": depth, "seconds_tt": dt, "seconds_no_tt": plain_dt,
           "cpu_seconds": cpu_dt, "stats": s.to_json(), "agree": s == plain == cpu}
    if not row["agree"]:
        row.update(no_tt=plain.to_json(), cpu=cpu.to_json())
        c.fail(f"{name} {depth}: tables {s.to_json()}, no tables {plain.to_json()}, CPU {cpu.to_json()}")
    want = table.get((" ".join(fen.split()[:4]), depth))
    if want:
        row["agree_published"] = base.agrees(s, want)
        if not row["agree_published"]:
            c.fail(f"{name} {depth}: {s.to_json()} against the published row {want}")
    return row


def positions(c: Check, table: dict) -> list[dict]:
    rows = []
    for item in c.args.positions.split(","):
        name, depth = item.split(":")
        if c.left() < 30:
            rows.append({"position": name, "depth": int(depth), "skipped": "over the budget"})
            continue
        row = three_ways(c, name, base.POSITIONS[name], int(depth), table)
        print(f"{name} {depth}: tables {row['seconds_tt']:.2f} s, no tables {row['seconds_no_tt']:.2f} s, "
              f"CPU {row['cpu_seconds']:.2f} s: {'agree' if row['agree'] else 'DIFFER'}", flush=True)
        rows.append(row)
    rng = random.Random(c.args.seed)
    bad = 0
    for i in range(c.args.random):
        fen = seeded_walk(rng, chess960=i % 2 == 1)
        depth = 1
        while depth < 6 and perft_core.perft(fen, depth + 1, backend=c.args.backend,
                                             max_estimate_seconds=None) <= c.args.random_nodes:
            depth += 1
        if c.left() < 30:
            rows.append({"position": f"random {i}", "fen": fen, "skipped": "over the budget"})
            continue
        row = three_ways(c, f"random {i}", fen, depth, {})
        bad += not row["agree"]
        rows.append(row)
    print(f"random positions: {c.args.random}, {bad} differ", flush=True)
    return rows


def deep(c: Check) -> list[dict]:
    from perft_core.gpu import get_driver

    published = base.published_rows()
    out, ratio = [], None
    for depth in [int(d) for d in c.args.deep.split(",") if d.strip()]:
        n, plain_dt = c.plain(START, depth)
        row = {"depth": depth, "plain_nodes": n, "plain_seconds": plain_dt, "published_nodes": A048987.get(depth)}
        if A048987.get(depth) is not None and n != A048987[depth]:
            c.fail(f"startpos {depth} plain count with tables {n:,} against A048987 {A048987[depth]:,}")
        predicted = None if ratio is None else ratio * plain_dt
        row["predicted_stats_seconds"] = predicted
        print(f"startpos {depth}: plain count with tables {n:,} in {plain_dt:.2f} s"
              + ("" if predicted is None else f"; statistics predicted {predicted:.0f} s, {c.left():.0f} s left"),
              flush=True)
        if predicted is not None and predicted > c.left():
            row["skipped"] = f"statistics predicted {predicted:.0f} s, over the budget ({c.left():.0f} s left)"
            out.append(row)
            continue
        drv = get_driver(c.args.backend)
        k0 = dict(getattr(drv.k, "kernel_seconds_by_name", {}))
        s, dt = c.stats(START, depth)
        kernels = {name: round(v - k0.get(name, 0.0), 3) for name, v in getattr(drv.k, "kernel_seconds_by_name", {}).items()
                   if v - k0.get(name, 0.0) > 0.01}
        if c.args.lowest_variant and not out and c.left() > 3 * dt:
            lowest = drv.stats_lowest_table
            drv.stats_lowest_table = 2
            # the same count again would find its own result in the tables and host cache kept from
            # the first (session 15's call H timed 0.02 s against 14.68 s that way): start it cold
            drv._reset_tables()
            try:
                s2, dt2 = c.stats(START, depth)
            finally:
                drv.stats_lowest_table = lowest
            row["lowest_table_2"] = {"seconds": dt2, "agree": s2 == s, "tt": dict(drv.tt_stats)}
            print(f"startpos {depth}: statistics with a table at remaining depth 2 too: {dt2:.2f} s against {dt:.2f} s",
                  flush=True)
            if s2 != s:
                c.fail(f"startpos {depth}: statistics with the table of remaining depth 2 {s2.to_json()} against {s.to_json()}")
            elif dt2 < dt:
                drv.stats_lowest_table = 2  # the deeper counts with the faster setting
                dt = dt2
        row["stats_lowest_table"] = drv.stats_lowest_table
        ratio = dt / plain_dt if plain_dt > 0 else None
        row.update(stats=s.to_json(), cpw=s.cpw(), stats_seconds=dt, ratio=ratio, rules=rules(s),
                   nodes_agree=s.nodes == n, kernel_seconds=kernels, gpu_calls=drv.stats.gpu_calls,
                   tt=dict(drv.tt_stats), stats_nodes_per_second=s.nodes / dt if dt > 0 else None)
        want = published.get((" ".join(START.split()[:4]), depth), {"nodes": A048987[depth]} if depth in A048987 else None)
        if want is not None:  # Grand Chess Tree's thirteen counters to depth 12, else A048987's nodes
            row["published"] = want
            row["agree_published"] = base.agrees(s, want)
            if not row["agree_published"]:
                c.fail(f"startpos {depth} statistics {s.to_json()} against the published row {want}")
        if not row["nodes_agree"]:
            c.fail(f"startpos {depth}: statistics nodes {s.nodes:,} against the plain count {n:,}")
        if row["rules"]:
            c.fail(f"startpos {depth}: {row['rules']}")
        print(f"startpos {depth}: statistics with tables in {dt:.2f} s ({s.nodes / max(dt, 1e-9) / 1e9:.0f} G/s), "
              f"{ratio:.2f}x the plain count with tables; {json.dumps(s.cpw())}", flush=True)
        out.append(row)
        c.result["deep"] = out
        c.save()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = base.common_arguments(__doc__, "stats-tt-gpu", 330.0, "kiwipete:5,pos3:6,pos4:5,pos5:5,pos6:5", 20, 1e8)
    ap.add_argument("--seed", type=int, default=3636)
    ap.add_argument("--deep", default="10,11", help="startpos depths counted with statistics and tables, timed")
    ap.add_argument("--lowest-variant", type=int, default=1, help="1: time the first --deep depth with a table "
                    "at remaining depth 2 too (and count the deeper ones with the faster); 0: do not")
    args = ap.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    c = Check(args)
    c.result["device"] = base.device_info(args.backend)
    print(json.dumps(c.result["device"]), flush=True)
    table = base.published_rows()
    c.result["cpw_startpos"] = cpw_startpos(c, table)
    c.save()
    c.result["positions"] = positions(c, table)
    c.save()
    c.result["deep"] = deep(c)
    c.save()
    print(f"stats_tt_gpu_check: {'PASS' if c.ok else 'FAIL'} in {c.result['seconds']:.0f} s; "
          f"{Path(args.out) / 'stats_tt_gpu_check.json'}", flush=True)
    return 0 if c.ok else 1


if __name__ == "__main__":
    sys.exit(main())
