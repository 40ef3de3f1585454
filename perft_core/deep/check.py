"""``perft deep --check STORE``: prove a deep run's store: re-read every row, re-count a sample.

The run row's and every unit row's checksum (:func:`perft_core.deep.store.run_checksum`,
:func:`~perft_core.deep.store.row_checksum`) are re-computed: a row that fails was changed after it
was written (by accident, or by an edit that left its checksum alone). Then a sample of the counted
units is counted again on this machine, each unit as a whole (the sum over its parts), and compared
with its stored count (in a statistics run its 13 counters): by default max(5 %, 20) of them (all
of a small store), with ``sample`` f the fraction f (at least one; 1: every unit), chosen by key
(its low 32 bits, uniform). A row edited with its checksum recomputed (the rule is public) is
found by its plan fields (compared with the run's split when the store is opened) or its status
(derived again from its counts); only a recount finds a changed count or counter, and the sample
bounds what such an edit can hide. Nothing is written, but an older store gains what its schema lacks when it is
opened (``Store.open``).

:func:`store_statistics` (``perft deep --stats STORE``) reads what a store says about its run's
speed, without counting and without the store's lock.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

import math
from fractions import Fraction

from .store import TAMPERED_WHY, Store, StoreError, StoreTampered, stats_values, sum_stats_texts

DEFAULT_SAMPLE = 0.05
"""The default recount: this fraction of the counted units, and at least DEFAULT_MIN_UNITS of them."""
DEFAULT_MIN_UNITS = 20


@dataclass
class CheckResult:
    """What :func:`check_store` found.

    rows: unit rows read; tampered: rows found changed (dicts: idx, unit, part, fen, count, why:
    ``store.TAMPERED_WHY``'s key: the checksum fails, or one made again over a change that the
    unit's verify status or the run's split shows);
    recounted: units counted again, of ``counted`` units with every part counted; differ: units
    whose new count differs from the store's (dicts: unit, fen, depth, stored, counted);
    run_tampered: the run row's checksum fails (the error's text; then nothing else is read).
    """

    store: str
    rows: int
    tampered: list[dict] = field(default_factory=list)
    recounted: int = 0
    differ: list[dict] = field(default_factory=list)
    counted: int = 0
    run_tampered: str | None = None

    @property
    def ok(self) -> bool:
        return not self.tampered and not self.differ and self.run_tampered is None

    def lines(self) -> list[str]:
        """The report, one fact a line."""
        if self.run_tampered is not None:
            return [self.run_tampered]
        checksum = sum(r.get("why", "checksum") == "checksum" for r in self.tampered)
        out = [f"store {self.store}: {self.rows} unit rows read, {checksum} fail their checksum, "
               f"{len(self.tampered) - checksum} found changed otherwise; "
               f"{self.recounted} of {self.counted} counted units counted again, {len(self.differ)} differ"]
        out += [f"tampered: unit {r['unit']} part {r['part']} {r['fen']}: count {r['count']}: the row "
                f"{TAMPERED_WHY[r.get('why', 'checksum')]}" for r in self.tampered]
        out += [f"differs: unit {d['unit']} {d['fen']} depth {d['depth']}: stored {d['stored']}, counted {d['counted']}"
                for d in self.differ]
        return out


def sample_size(units: int, sample: float | None) -> int:
    """How many of ``units`` counted units a check counts again: ``ceil(sample * units)`` (at least
    one), or by default (None) max(ceil(5 % of them), 20), never more than there are."""
    if units == 0:
        return 0
    if sample is None:
        return min(units, max(math.ceil(Fraction(repr(DEFAULT_SAMPLE)) * units), DEFAULT_MIN_UNITS))
    # the fraction as written (0.07 x 400 = 28, not the float product's 28.000000000000004 -> 29)
    return min(units, max(math.ceil(Fraction(repr(sample)) * units), 1))


def check_store(path: str | os.PathLike, sample: float | None = None, backend: str = "cpu",
                threads: int = 1) -> CheckResult:
    """Re-read every row of the store at ``path`` and count again a sample of its finished units
    with ``perft_core.perft`` (``backend``, ``threads``): :func:`sample_size` of them (``sample``: a
    fraction 0 < f <= 1, 1 = all; None: the default, max(5 %, 20 units)), those of the lowest low
    32 key bits.

    Returns a :class:`CheckResult` (a run row that fails its checksum: ``run_tampered``, not ok).
    Raises StoreError for a store that is missing, corrupt or in use, ValueError for a bad sample.
    """
    from .. import perft, perft_stats

    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, (int, float))
                               or not 0 < sample <= 1):
        raise ValueError(f"check sample must be a fraction in (0, 1], got {sample!r}")
    try:
        st = Store.open(path, repair=False)
    except StoreTampered as exc:
        return CheckResult(store=str(path), rows=0, run_tampered=str(exc))
    with st:
        rows = st.units()
        result = CheckResult(store=str(st.path), rows=len(rows),
                             tampered=[{k: r[k] for k in ("idx", "unit", "part", "fen", "count", "why")}
                                       for r in st.tampered])
        bad = {r["unit"] for r in st.tampered}
        by_unit: dict[int, list[dict]] = {}
        for r in rows:
            by_unit.setdefault(r["unit"], []).append(r)
        done = {u: parts for u, parts in by_unit.items()
                if u not in bad and all(p["count"] is not None for p in parts)}
        result.counted = len(done)
        chosen = sorted(done, key=lambda u: (int(done[u][0]["key"][-8:], 16), u))[:sample_size(len(done), sample)]
        for u in chosen:
            parts = done[u]
            fen, depth = parts[0]["fen"], parts[0]["depth"]
            if st.run["stats"]:  # all 13 counters: a changed counter keeps the node count
                texts = [p["recount_stats"] if p["recount"] is not None else p["stats"] for p in parts]
                # a row resealed with no counters, or not 13 decimals: a difference, named, not a traceback
                readable = all(stats_values(t) is not None for t in texts)
                stored = sum_stats_texts(texts) if readable else f"unreadable statistics {texts!r}"
                counted = perft_stats(fen, depth, backend=backend, threads=threads, force=True).as_tuple()
            else:
                stored = sum(int(p["recount"] if p["recount"] is not None else p["count"]) for p in parts)
                counted = perft(fen, depth, backend=backend, threads=threads, force=True)
            result.recounted += 1
            if counted != stored:
                result.differ.append({"unit": u, "fen": fen, "depth": depth,
                                      "stored": stored, "counted": counted})
    return result


def store_statistics(path: str | os.PathLike) -> dict:
    """What a store says about its run's speed, read without its lock and without counting
    (``perft deep --stats``; a run may be writing it): ``{"store": path, "fen", "depth", "backend",
    "tt", "schema": its schema version as stored, "rows": unit rows, "counted": rows with a count,
    "unit_seconds": the workers' seconds over them, "tt_probes" / "tt_hits": device TT probes and
    hits of those counts (summed over the unit rows, every schema), "tables" / "verify_tables":
    per remaining depth (``Store.table_statistics``'s ``count`` / ``verify`` phase; {} when none
    were recorded: the cpu backend, no tables, or counts made before schema 4), "parts", "part_cut",
    "part_depth": how its units are split, "sessions": each command that worked on it, in order,
    ``{"started", "ended" (None: still running, or killed), "host", "cluster", "counted": rows}``},
    "run_row_holds": whether the run row holds its checksum (``Store.run_row_holds``: False when it
    was changed outside perft deep; None before schema 5)``.

    Raises StoreError for a store that is missing or not a readable deep-perft store.
    """
    with Store.read(path) as st:
        run = st.run
        try:
            # one read transaction: every figure from one snapshot of a store a run may be writing
            # (the rows counted and the sessions' sum of them were read apart, and could differ)
            st.conn.execute("BEGIN")
            rows, counted, seconds, probes, hits = st.conn.execute(
                "SELECT COUNT(*), COUNT(count), TOTAL(seconds), TOTAL(probes), TOTAL(hits) FROM units").fetchone()
            tables = st.table_statistics()
            sessions = [dict(zip(("started", "ended", "host", "cluster", "counted"), r)) for r in st.conn.execute(
                "SELECT started, ended, host, cluster, counted FROM sessions ORDER BY id")]
            st.conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {st.path} is not a readable deep-perft store: {exc}") from None
        return {"store": str(st.path), **{k: run[k] for k in ("fen", "depth", "backend", "tt", "schema")},
                "rows": rows, "counted": counted, "unit_seconds": seconds, "tt_probes": int(probes),
                "tt_hits": int(hits), "tables": tables.get("count", {}), "verify_tables": tables.get("verify", {}),
                **{k: run.get(k) for k in ("parts", "part_cut", "part_depth")}, "sessions": sessions,
                "run_row_holds": st.run_row_holds()}
