"""``perft deep --check STORE``: prove a deep run's store: re-read every row, re-count a sample.

Every unit row's checksum (:func:`perft_core.deep.store.row_checksum`) is re-computed: a row that
fails it was changed after it was written. Then a sample of the counted units (chosen by key, as
the verify sample is: a fraction of them, at least one) is counted again on this machine, each unit
as a whole (the sum over its parts), and compared with its stored count. Nothing is written, but
an older store gains what its schema lacks when it is opened (``Store.open``).

:func:`store_statistics` (``perft deep --stats STORE``) reads what a store says about its run's
speed, without counting and without the store's lock.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

from .run import sampled
from .store import Store, StoreError


@dataclass
class CheckResult:
    """What :func:`check_store` found.

    rows: unit rows read; tampered: rows whose checksum fails (dicts: idx, unit, part, fen, count);
    recounted: units counted again; differ: units whose new count differs from the store's (dicts:
    unit, fen, depth, stored, counted).
    """

    store: str
    rows: int
    tampered: list[dict] = field(default_factory=list)
    recounted: int = 0
    differ: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.tampered and not self.differ

    def lines(self) -> list[str]:
        """The report, one fact a line."""
        out = [f"store {self.store}: {self.rows} unit rows read, {len(self.tampered)} fail their checksum; "
               f"{self.recounted} units counted again, {len(self.differ)} differ"]
        out += [f"tampered: unit {r['unit']} part {r['part']} {r['fen']}: count {r['count']}" for r in self.tampered]
        out += [f"differs: unit {d['unit']} {d['fen']} depth {d['depth']}: stored {d['stored']}, counted {d['counted']}"
                for d in self.differ]
        return out


def check_store(path: str | os.PathLike, sample: float = 0.01, backend: str = "cpu", threads: int = 1) -> CheckResult:
    """Re-read every row of the store at ``path`` and count again a ``sample`` fraction (0 < f <= 1;
    at least one unit) of its finished units with ``perft_core.perft`` (``backend``, ``threads``).

    Returns a :class:`CheckResult`. Raises StoreError for a store that is missing, corrupt or in use,
    ValueError for a bad sample.
    """
    from .. import perft

    if isinstance(sample, bool) or not isinstance(sample, (int, float)) or not 0 < sample <= 1:
        raise ValueError(f"check sample must be a fraction in (0, 1], got {sample!r}")
    with Store.open(path, repair=False) as st:
        rows = st.units()
        result = CheckResult(store=str(st.path), rows=len(rows),
                             tampered=[{k: r[k] for k in ("idx", "unit", "part", "fen", "count")} for r in st.tampered])
        bad = {r["unit"] for r in st.tampered}
        by_unit: dict[int, list[dict]] = {}
        for r in rows:
            by_unit.setdefault(r["unit"], []).append(r)
        done = {u: parts for u, parts in by_unit.items()
                if u not in bad and all(p["count"] is not None for p in parts)}
        chosen = [u for u, parts in done.items() if sampled(parts[0]["key"], sample)]
        if not chosen and done:  # a small store or a small fraction: still count one
            chosen = [min(done, key=lambda u: done[u][0]["estimate"])]
        for u in chosen:
            parts = done[u]
            stored = sum(int(p["recount"] if p["recount"] is not None else p["count"]) for p in parts)
            counted = perft(parts[0]["fen"], parts[0]["depth"], backend=backend, threads=threads, force=True)
            result.recounted += 1
            if counted != stored:
                result.differ.append({"unit": u, "fen": parts[0]["fen"], "depth": parts[0]["depth"],
                                      "stored": stored, "counted": counted})
    return result


def store_statistics(path: str | os.PathLike) -> dict:
    """What a store says about its run's speed, read without its lock and without counting
    (``perft deep --stats``; a run may be writing it): ``{"store": path, "fen", "depth", "backend",
    "tt", "schema": its schema version as stored, "rows": unit rows, "counted": rows with a count,
    "unit_seconds": the workers' seconds over them, "tt_probes" / "tt_hits": device TT probes and
    hits of those counts (summed over the unit rows, every schema), "tables" / "verify_tables":
    per remaining depth (``Store.table_statistics``'s ``count`` / ``verify`` phase; {} when none
    were recorded: the cpu backend, no tables, or counts made before schema 4)}``.

    Raises StoreError for a store that is missing or not a readable deep-perft store.
    """
    with Store.read(path) as st:
        run = st.run
        try:
            rows, counted, seconds, probes, hits = st.conn.execute(
                "SELECT COUNT(*), COUNT(count), TOTAL(seconds), TOTAL(probes), TOTAL(hits) FROM units").fetchone()
            tables = st.table_statistics()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {st.path} is not a readable deep-perft store: {exc}") from None
        return {"store": str(st.path), **{k: run[k] for k in ("fen", "depth", "backend", "tt", "schema")},
                "rows": rows, "counted": counted, "unit_seconds": seconds, "tt_probes": int(probes),
                "tt_hits": int(hits), "tables": tables.get("count", {}), "verify_tables": tables.get("verify", {})}
