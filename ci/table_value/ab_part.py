"""One arm of an A/B of the GPU table rule on a deep run's real work, one GPU per arm, arms in parallel.

    PYTHONPATH=$PWD:$PWD/ci/table_value CUDA_VISIBLE_DEVICES=0 \\
        PERFT_EXPERIMENT_TABLE_VALUE=10 PERFT_EXPERIMENT_LOWEST_FLOOR=0.5 \\
        python ci/table_value/ab_part.py STORE --part 0 --units 3 [--merged] --json OUT.json

Reads a deep run's store (never writes it), takes the first ``--units`` units that the store has
counted in part ``--part``, and counts that part of them in this process exactly as a
``perft deep`` worker does (``perft_core.deep.worker.run_task``: the run's key seed, its parts, its
tables kept warm across the tasks): one task per unit, or with ``--merged`` one task of them all
(one ``count_roots``, equal positions below different units merged). Each count must equal the
store's (the script exits 1 if any differs), so every arm does the same, checked work; the arms
differ only in the table rule that ``sitecustomize.py`` (this folder) sets from the environment.
Writes per task: seconds, counts, and the table statistics per remaining depth (probes, hits,
stores, slots, occupied, evictions).
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--part", type=int, default=0)
    ap.add_argument("--units", type=int, default=3)
    ap.add_argument("--merged", action="store_true")
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--backend", default="gpu", help="gpu, or gpu-emulated to try the script without a GPU")
    args = ap.parse_args()

    from perft_core.deep import worker
    from perft_core.gpu import tables

    con = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    run = dict(zip(("fen", "depth", "parts", "seed", "started"),
                   con.execute("SELECT fen, depth, parts, seed, started FROM run").fetchone()))
    rows = con.execute("SELECT unit, fen, depth, count FROM units WHERE part = ? AND count IS NOT NULL "
                       "ORDER BY idx LIMIT ?", (args.part, args.units)).fetchall()
    con.close()
    if len(rows) < args.units:
        print(f"the store has {len(rows)} counted units of part {args.part}, not {args.units}", file=sys.stderr)
        return 2
    seed = int(run["seed"], 16)
    run_key = f"ab:{args.store.name}:{run['started']}"
    t = time.perf_counter()
    worker.warm_up(run["fen"], run["depth"], args.backend, True, seed)
    out = {"arm": {"table_value": tables.LEVEL_VALUE, "lowest_floor": tables.LOWEST_FLOOR, "merged": args.merged,
                   "env": {k: v for k, v in os.environ.items() if k.startswith("PERFT_EXPERIMENT")}},
           "store": str(args.store), "part": args.part, "parts": run["parts"], "warm_up_s": time.perf_counter() - t,
           "tasks": []}
    groups = [rows] if args.merged else [[r] for r in rows]
    ok = True
    for group in groups:
        res = worker.run_task([r[1] for r in group], group[0][2], args.backend, True, seed, run_key, run["fen"],
                              run["depth"], args.part, run["parts"])
        want = [int(r[3]) for r in group]
        ok &= res["counts"] == want
        out["tasks"].append({"units": [r[0] for r in group], "seconds": res["seconds"], "counts": res["counts"],
                             "want": want, "equal": res["counts"] == want, "tables": res["tables"]})
        print(json.dumps({"units": [r[0] for r in group], "seconds": round(res["seconds"], 2),
                          "equal": res["counts"] == want}), flush=True)
    out["seconds"] = sum(t["seconds"] for t in out["tasks"])
    out["all_equal"] = ok
    args.json.write_text(json.dumps(out, indent=1, default=str))
    print(f"arm {out['arm']}: {out['seconds']:.2f} s, counts {'equal' if ok else 'DIFFER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
