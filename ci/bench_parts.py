"""What a deep run's split by key costs and saves, on one GPU: the prediction of multi-GPU scaling
with transposition tables, measured without a second GPU.

    python ci/bench_parts.py --depth 11 [--fen FEN] [--split-ply 2] [--parts 1 2] [--cut board key] [--batches 16]
                             [--units N [--skip K] [--store FILE]] [--json FILE]

In one process on one GPU (the gpu backend's driver):
  1. the plain ``perft_core.perft(startpos, depth, backend="gpu", tt=True)`` (after a warm-up);
  2. the run's units (``perft_core.deep.units.split`` at the split ply) counted as a deep run's
     worker counts them: ``TTBfsDriver.count_roots`` over ``--batches`` batches in turn with the
     tables kept warm (``keep_tables``), once per part ``c`` of ``P`` (``set_part(c, P)``: a fresh
     set of tables per part, as each GPU of a P-GPU run has its own), for each ``--cut`` of the
     split level (``kernels.Split``: board, the default, or key; P = 1 has no cut).
The position is startpos unless ``--fen`` names another; its plain count is checked against the
bundled tables (``oracle.tables.published_nodes``) where they have it, and every P's total against
the plain count. Per P: each part's seconds, the slowest part, and the predicted scaling = (P = 1 seconds) /
(slowest part's seconds), and the device seconds of each kernel summed over the parts (where the
parts' extra work goes: the levels above the split that every part expands); the total of every P
must equal the plain count, and that the table's (the script fails if not).
With P GPUs the parts run at once, one per GPU, so the slowest part is the run's count time.

``--units N`` counts only the split's N largest units (after the K largest with ``--skip K``; for
counts too long to run whole: startpos perft 13's units on one GPU, parts against whole units with
the same batches), with no plain
count: every P's total must equal the first P's, and with ``--store FILE`` (a finished deep store of
the same count and key seed, e.g. ``ci/stores/perft13-h200x4-s17.sqlite``) each unit's count must
equal the sum of that store's parts of the unit.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(ROOT))

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=11)
    ap.add_argument("--fen", default=STARTPOS)
    ap.add_argument("--split-ply", type=int, default=2)
    ap.add_argument("--parts", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batches", type=int, default=16)
    ap.add_argument("--cut", nargs="+", choices=("board", "key"), default=["board"])
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--units", type=int, help="count only the N largest units (no plain count)")
    ap.add_argument("--skip", type=int, default=0, help="with --units: after the K largest")
    ap.add_argument("--store", type=Path, help="with --units: a finished store of the same count whose units' counts "
                    "each P's must equal")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if (args.store is not None or args.skip) and args.units is None:
        ap.error("--store and --skip need --units")

    import perft_core
    from perft_core import _core
    from perft_core.deep import units as units_mod
    from perft_core.gpu.registry import get_driver
    from perft_core.position import Position
    from oracle import tables

    known = tables.published_nodes(args.fen, args.depth)
    root = Position.from_fen(args.fen)
    perft_core.perft(STARTPOS, 3, backend=args.backend, tt=True)  # warm-up: kernels loaded, arena made
    drv = get_driver(args.backend)
    units = units_mod.split(root, args.depth, args.split_ply, _core.ZOBRIST_DEFAULT_SEED)
    drv.k.synchronize()
    k0 = dict(getattr(drv.k, "kernel_seconds_by_name", {}))
    t = time.perf_counter()
    if args.units is None:
        plain = perft_core.perft(args.fen, args.depth, backend=args.backend, tt=True)
    else:  # a part of the count: no plain count, the units' own references
        units = units[args.skip:args.skip + args.units]
        plain = None
    drv.k.synchronize()
    plain_s = time.perf_counter() - t
    plain_by_name = {n: v - k0.get(n, 0.0) for n, v in getattr(drv.k, "kernel_seconds_by_name", {}).items()}
    positions = [Position.from_fen(u.fen) for u in units]
    rest = args.depth - args.split_ply
    drv.tt_enabled = True
    want_units = (_store_counts(args.store, units, root.fen(), args.depth, _core.ZOBRIST_DEFAULT_SEED)
                  if args.store is not None else None)
    plain_ok = plain is None or known is None or plain == known
    want = plain if plain is not None else None if want_units is None else \
        sum(u.multiplicity * want_units[u.key] for u in units)
    out = {"fen": args.fen, "depth": args.depth, "split_ply": args.split_ply, "units": len(units),
           "batches": args.batches, "plain_seconds": plain_s if plain is not None else None, "plain_ok": plain_ok,
           "known": known, "plain_kernel_seconds_by_name": plain_by_name, "runs": [],
           "reference": "plain count" if plain is not None else f"store {args.store}" if want_units else "first P"}
    if plain is None:
        print(f"perft {args.depth} of {args.fen}: the {len(units)} largest units at ply {args.split_ply}"
              f"{f' after the {args.skip} largest' if args.skip else ''} "
              f"(reference: {out['reference']})", flush=True)
        plain_s = None
    else:
        verdict = "no table has it" if known is None else "ok" if plain_ok else f"WRONG: the table says {known}"
        print(f"plain perft {args.depth} of {args.fen}: {plain} in {plain_s:.3f} s ({verdict}); "
              f"{len(units)} units at ply {args.split_ply}", flush=True)
    ok = plain_ok
    base = None
    for parts, cut in [(p, c) for p in args.parts for c in (args.cut if p > 1 else ["board"])]:
        secs, total, probes, hits, part_leaf = [], 0, 0, 0, []
        leaf0 = (drv.tt_stats["leaf_moves"], drv.tt_stats["leaf_positions"])
        by_name: dict[str, float] = {}  # device seconds per kernel, summed over the parts
        for c in range(parts):
            drv.set_part(c, parts, cut=cut)
            drv.keep_tables(f"bench-parts-{parts}-{c}-{cut}-{time.time()}", args.depth, root)
            p0, h0 = drv.tt_stats["probes"], drv.tt_stats["hits"]
            lp0 = drv.tt_stats["leaf_positions"]
            drv.k.synchronize()
            k0 = dict(getattr(drv.k, "kernel_seconds_by_name", {}))
            t = time.perf_counter()
            step = -(-len(positions) // args.batches)
            for i in range(0, len(positions), step):
                vals = drv.count_roots(positions[i:i + step], rest, root)
                total += sum(u.multiplicity * v for u, v in zip(units[i:i + step], vals))
            drv.k.synchronize()
            secs.append(time.perf_counter() - t)
            part_leaf.append(drv.tt_stats["leaf_positions"] - lp0)
            for name, v in getattr(drv.k, "kernel_seconds_by_name", {}).items():
                by_name[name] = by_name.get(name, 0.0) + v - k0.get(name, 0.0)
            probes += drv.tt_stats["probes"] - p0
            hits += drv.tt_stats["hits"] - h0
        drv.set_part(0, 1)
        drv.keep_tables(None)
        slowest = max(secs)
        base = slowest if parts == 1 else base
        want = total if want is None else want  # --units alone: the first P is the reference
        run = {"parts": parts, "cut": cut, "part_seconds": secs, "slowest": slowest, "sum": sum(secs), "nodes": total,
               "ok": total == want, "probes": probes, "hits": hits,
               "vs_plain": slowest / plain_s if plain_s else None, "predicted_scaling": (base / slowest) if base else None,
               "kernel_seconds": sum(by_name.values()), "kernel_seconds_by_name": by_name,
               "leaf_moves": drv.tt_stats["leaf_moves"] - leaf0[0], "leaf_positions": drv.tt_stats["leaf_positions"] - leaf0[1],
               "part_leaf_positions": part_leaf}
        out["runs"].append(run)
        ok &= total == want
        print(f"parts {parts} ({cut if parts > 1 else 'whole'}): " + ", ".join(f"{s:.3f}" for s in secs) + f" s; slowest {slowest:.3f} s "
              + (f"({slowest / plain_s:.3f}x plain)" if plain_s else f"(sum {sum(secs):.3f} s)")
              + f", scaling {run['predicted_scaling'] or 0:.2f}, "
              f"hits {hits / max(probes, 1):.1%}, leaf merge {run['leaf_moves']:,} moves -> {run['leaf_positions']:,} "
              f"positions, {'ok' if total == want else 'WRONG ' + str(total)}", flush=True)
    runs = out["runs"]
    if runs and runs[0]["kernel_seconds_by_name"]:  # where the parts' extra device time goes
        one = runs[0]["kernel_seconds_by_name"]
        names = sorted(set().union(*(r["kernel_seconds_by_name"] for r in runs)), key=lambda n: -one.get(n, 0.0))
        print("device seconds per kernel, summed over the parts: plain | "
              + " | ".join(f"P={r['parts']}" + (f" {r['cut']}" if r["parts"] > 1 else "") for r in runs))
        for n in names:
            vals = [plain_by_name.get(n, 0.0)] + [r["kernel_seconds_by_name"].get(n, 0.0) for r in runs]
            if max(vals) >= 0.01:
                print(f"  {n:32s} " + " ".join(f"{v:9.3f}" for v in vals))
        print(f"  {'all':32s} {sum(plain_by_name.values()):9.3f} " + " ".join(f"{r['kernel_seconds']:9.3f}" for r in runs))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0 if ok else 1


def _store_counts(path: Path, units, fen: str, depth: int, seed: int) -> dict:
    """Each unit's count (its parts' sum) from the deep store at ``path``, by key, for the ``units``
    asked (SystemExit for a store of another count or key seed, a row failing its checksum, or a
    unit the store does not hold whole)."""
    from perft_core.deep.store import Store
    from perft_core.position import Position

    with Store.open(path, repair=False) as st:
        run = st.run
        if (Position.from_fen(run["fen"]).fen(), run["depth"], run["seed"]) != (fen, depth, seed):
            raise SystemExit(f"store {path} is perft {run['depth']} of {run['fen']} keyed by {run['seed']:#x}, not "
                             f"perft {depth} of {fen} keyed by {seed:#x}")
        rows = st.checked_rows()
    counts: dict[int, int] = {}
    missing: set[int] = set()
    for r in rows:
        key = int(r["key"], 16)
        if r["count"] is None:
            missing.add(key)
        else:
            counts[key] = counts.get(key, 0) + int(r["recount"] if r["recount"] is not None else r["count"])
    for u in units:
        if u.key not in counts or u.key in missing:
            raise SystemExit(f"store {path} does not hold unit {u.fen} (key {u.key:032x}) whole")
    return counts


if __name__ == "__main__":
    sys.exit(main())
