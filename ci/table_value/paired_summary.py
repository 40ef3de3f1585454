"""Summarise one call of a paired A/B of the table plan (``paired_call.sh``) from a deep run's store.

    python ci/table_value/paired_summary.py STORE [--session N] [--threshold SLOTS] [--log STDERR]

Reads the store (never writes it). For the session (default: the last one, i.e. the call just
made): each worker's arm, from the call's stderr (``--log``: the lines sitecustomize.py writes,
"[table_value] worker ADDRESS ... arm B: ..."), else told by its r = 5 table's slots (arm B: fewer
than ``--threshold``, default 1.2e9, the shipped plan's 2.02 G at startpos perft 13 on an H200
against 1.08 G for the arms of NOTES.md "Session 18"; a worker with neither is "?"); per part, the seconds
summed over the units whose every part finished in the session (each GPU counts its own part of
every unit, and the parts of a unit cost alike, so the parts compare in pairs); and per arm and
remaining depth the tables' probes, hits, stores, slots and occupied slots. Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import re
import sqlite3
from pathlib import Path



ARM_LINE = re.compile(r"\[table_value\] worker (\S+) pid \d+ device \S+ arm ([AB]):")


def arms_from_log(text: str) -> dict[str, str]:
    """{worker address: arm} from sitecustomize.py's stderr lines (the last line of a worker wins).
    Each line is matched where it starts, not at a line start: two workers' lines written into one
    pipe at once can share a line (session 19's call A), and a greedy match over such a line gave
    the first worker the second's arm."""
    return {m.group(1): m.group(2) for m in ARM_LINE.finditer(text)}


def summarise(path: Path, session: int | None = None, threshold: float = 1.2e9, log: str | None = None) -> dict:
    """The summary above as a dict (JSON-ready); ``log``: the call's stderr text. Raises ValueError
    if the store has no such session."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sid = session or con.execute("SELECT max(id) FROM sessions").fetchone()[0]
        got = con.execute("SELECT started, ended FROM sessions WHERE id = ?", (sid,)).fetchone()
        if got is None:
            raise ValueError(f"store {path} has no session {session}")
        start, end = got
        end = end or "9999"
        rows = con.execute("SELECT unit, part, seconds, worker FROM units WHERE count IS NOT NULL AND finished >= ? "
                           "AND finished <= ?", (start, end)).fetchall()
        slots5 = dict(con.execute("SELECT worker, max(slots) FROM tables WHERE session = ? AND r = 5 GROUP BY worker",
                                  (sid,)).fetchall())
        arm = {w: ("?" if s is None else "B" if s < threshold else "A") for w, s in slots5.items()}
        arm.update(arms_from_log(log or ""))
        by_unit: dict[int, dict[int, tuple]] = {}
        for unit, part, seconds, worker in rows:
            by_unit.setdefault(unit, {})[part] = (seconds, worker)
        parts = sorted({p for d in by_unit.values() for p in d})
        common = [u for u, d in by_unit.items() if len(d) == len(parts)]
        out = {"session": sid, "rows": len(rows), "units_every_part": len(common), "per_part": {}, "tables": {}}
        for p in parts:
            out["per_part"][p] = {"seconds": round(sum(by_unit[u][p][0] for u in common), 2),
                                  "arms": sorted({arm.get(by_unit[u][p][1], "?") for u in common}),
                                  "rows": sum(1 for d in by_unit.values() if p in d)}
        for worker, r, probes, hits, stores, slots, occupied in con.execute(
                "SELECT worker, r, sum(probes), sum(hits), sum(stores), max(slots), max(occupied) FROM tables "
                "WHERE session = ? AND phase = 'count' GROUP BY worker, r", (sid,)):
            t = out["tables"].setdefault(arm.get(worker, "?"), {}).setdefault(
                r, {"probes": 0, "hits": 0, "stores": 0, "slots": 0, "occupied": 0})
            t["probes"] += probes
            t["hits"] += hits
            t["stores"] += stores
            t["slots"] = max(t["slots"], slots or 0)
            t["occupied"] = max(t["occupied"], occupied or 0)
        for by_r in out["tables"].values():
            for t in by_r.values():
                t["hit_rate"] = round(t["hits"] / t["probes"], 4) if t["probes"] else None
        counted, nodes = con.execute("SELECT count(*), sum(CAST(count AS REAL) * CAST(multiplicity AS REAL)) "
                                     "FROM units WHERE count IS NOT NULL").fetchone()
        fen, depth = con.execute("SELECT fen, depth FROM run").fetchone()
        from oracle.tables import published_nodes

        total = published_nodes(fen, depth)
        out["store"] = {"rows_counted": counted, "depth": depth, "published_nodes": total,
                        "share_of_published": None if total is None else (nodes or 0) / total}
        return out
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--session", type=int)
    ap.add_argument("--threshold", type=float, default=1.2e9)
    ap.add_argument("--log", type=Path, help="the call's stderr: the arms sitecustomize.py says each worker used")
    args = ap.parse_args()
    log = args.log.read_text(errors="replace") if args.log else None
    print(json.dumps(summarise(args.store, args.session, args.threshold, log), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
