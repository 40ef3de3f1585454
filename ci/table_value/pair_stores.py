"""Compare two new deep runs of one count, each on its own GPU with its own table plan
(``one_gpu_pair.sh``): the units both stores counted, seconds per arm, and each store's tables.

    python ci/table_value/pair_stores.py A.sqlite B.sqlite

Reads the stores (never writes them). Both must be the same run (position, depth, split ply,
backend, tables), so that unit idx i is the same position in both. Over the units counted in both:
their seconds summed per store and B's time over A's (a ratio under 1: B faster), and whether the
counts agree (they must: a table plan changes the time, never a count). Per store and remaining
depth: probes, hits, hit rate and slots (the tables' last reading). ``--base STORE``: both arms
resumed copies of STORE (``one_gpu_pair.sh ST=STORE``): only the units pending in STORE are
compared, and the tables' figures are those of the sessions after STORE's. ``--base`` may be
given twice (each arm's store after the previous link of ``one_gpu_pair.sh LINKS=``): only
units pending in both are compared, and the tables of the sessions after the later one. Prints JSON; exits 1
when a shared unit's counts differ, 2 when the stores are not the same run.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

SAME = ("fen", "depth", "split_ply", "backend", "tt")


def _open(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    return con


def compare(a: Path, b: Path, base: Path | list[Path] | None = None) -> dict:
    """The comparison above as a dict (JSON-ready); ``base``: the store (or stores) both resumed,
    or None. Raises ValueError when the stores are not the same run (bases included)."""
    ca, cb = _open(a), _open(b)
    done, after = set(), 0
    bases = [] if base is None else [base] if isinstance(base, (str, Path)) else list(base)
    for one in bases:
        cbase = _open(one)
        try:
            rbase = dict(cbase.execute("SELECT * FROM run").fetchone())
            done |= {r[0] for r in cbase.execute("SELECT idx FROM units WHERE count IS NOT NULL")}
            after = max(after, cbase.execute("SELECT COALESCE(MAX(session), 0) FROM tables").fetchone()[0])
        finally:
            cbase.close()
        if any(dict(ca.execute("SELECT * FROM run").fetchone())[k] != rbase[k] for k in SAME):
            raise ValueError(f"{a} is not a resumed copy of {one}")
    try:
        ra, rb = dict(ca.execute("SELECT * FROM run").fetchone()), dict(cb.execute("SELECT * FROM run").fetchone())
        if any(ra[k] != rb[k] for k in SAME):
            raise ValueError(f"{a} and {b} are not the same run: "
                             + ", ".join(f"{k} {ra[k]!r} / {rb[k]!r}" for k in SAME if ra[k] != rb[k]))
        q = "SELECT idx, count, seconds FROM units WHERE count IS NOT NULL"
        ua = {r["idx"]: (r["count"], r["seconds"]) for r in ca.execute(q)}
        ub = {r["idx"]: (r["count"], r["seconds"]) for r in cb.execute(q)}
        common = sorted((ua.keys() & ub.keys()) - done)
        sa, sb = sum(ua[i][1] for i in common), sum(ub[i][1] for i in common)
        out = {"units_a": len(ua), "units_b": len(ub), "units_both": len(common),
               "seconds_a": round(sa, 2), "seconds_b": round(sb, 2),
               "b_over_a": round(sb / sa, 4) if sa else None,
               "counts_differ": [i for i in common if ua[i][0] != ub[i][0]], "tables": {}}
        for name, con in (("a", ca), ("b", cb)):
            rows = con.execute("SELECT r, sum(probes) AS probes, sum(hits) AS hits, max(slots) AS slots FROM tables "
                               "WHERE phase = 'count' AND COALESCE(session, 0) > ? GROUP BY r ORDER BY r",
                               (after,)).fetchall()
            out["tables"][name] = {r["r"]: {"probes": r["probes"], "hits": r["hits"], "slots": r["slots"],
                                            "hit_rate": round(r["hits"] / r["probes"], 4) if r["probes"] else None}
                                   for r in rows}
        return out
    finally:
        ca.close()
        cb.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--base", type=Path, action="append",
                    help="the store both arms resumed a copy of (twice: each arm's own, after a link)")
    args = ap.parse_args(argv)
    try:
        out = compare(args.a, args.b, args.base)
    except ValueError as exc:
        print(f"pair_stores: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=1))
    return 1 if out["counts_differ"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
