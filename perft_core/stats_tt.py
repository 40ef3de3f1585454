"""Perft statistics through CPU transposition tables (issue 36): the CPU backend's ``tt=True`` for
:func:`perft_core.perft_stats` and :func:`perft_core.divide_stats`.

Tables (``perft_core/src/tt_stats.h``): the levels of the node-count tables
(:class:`perft_core.zobrist.TranspositionTable`: one table per remaining depth, lossless chained
levels for the three plies below the root, lossy two-entry buckets below, probed and stored at
remaining depth >= 2), each entry holding the 13 counters of a :class:`perft_core.Stats`. An
entry is 128 bytes (the node-count tables' 16), its check word ``key.hi ^ mix(13 counters)`` (the
GPU's rule, kernels/pc_tt_stats.h): a probe takes an entry only when its key (128 bits: the bucket
by the low half, the check by the high half; the whole key in a lossless level) and every counter
agree, so a torn or damaged entry is refused (a miss), never counted. The node-count tables and
their recursion are untouched: a plain count costs what it did.

``verify_seed`` counts again through tables keyed by another seed and compares all 13 counters
(:func:`perft_core.zobrist.check_same`), as for node counts. Record mode and the audit walk work as
the node-count tables' (:meth:`StatsTranspositionTable.entries`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from . import _core
from .limits import seconds_left
from .position import Position, as_position
from .stats import Stats
from .zobrist import (DEFAULT_TT_MB, TranspositionTable, _budget_bytes, _check_verify, _depth, _seed, _threads,
                      check_same, fitted_mb)

__all__ = ["StatsTranspositionTable", "StatsTTEntry", "new_stats_tables", "perft_stats_tt", "divide_stats_tt",
           "STATS_ENTRY_BYTES"]

STATS_ENTRY_BYTES = 128
"""Bytes of a lossy statistics entry (a node-count entry has 16)."""

_U64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class StatsTTEntry:
    """One stored statistics entry, as the audit walk returns it.

    ``key_hi`` is the high key half the entry answers for (its check word xor the digest of its
    counters): an entry whose counters changed after its store answers for a key that is not its
    position's. ``key`` is the full 128-bit key for lossless entries (the stored low half with
    ``key_hi``), None for lossy ones (their ``bucket`` is a function of the low half).
    ``core_args``: the position stored (the ``_core`` argument tuple, chess960 False) when the
    table records positions, else None.
    """

    depth: int
    kind: str
    stats: Stats
    key: int | None
    key_hi: int
    bucket: int
    core_args: tuple | None


class StatsTranspositionTable(TranspositionTable):
    """CPU statistics tables for searches up to ``max_depth`` plies, bound to one key seed: the
    levels, budget, record mode and errors of :class:`perft_core.zobrist.TranspositionTable`, with
    128-byte entries (8x fewer slots for the same MiB)."""

    _NATIVE = "StatsTTable"

    def entries(self) -> list[StatsTTEntry]:  # type: ignore[override]
        """The audit walk: every stored entry. Call it between searches, not during one."""
        out = []
        for depth, kind, bucket, lo, hi, known, counters, args in self._native.entries():
            out.append(StatsTTEntry(depth, kind, Stats.from_tuple(counters), (hi << 64 | lo) if known else None, hi,
                                    bucket, args))
        return out

    def lookup(self, key: int, depth: int) -> Stats | None:  # type: ignore[override]
        """The stored Stats of a 128-bit key at a remaining depth, or None (not stored, or refused
        by its check)."""
        t = self._native.lookup(key & _U64, (key >> 64) & _U64, depth)
        return None if t is None else Stats.from_tuple(t)

    def _poison(self, counter: int) -> int:
        """Tests only: counter number ``counter`` (an index of STATS_FIELDS) one more in every stored
        entry, its check word unchanged (a damaged entry). Returns how many entries were changed;
        each must now be refused by a probe. Raises ValueError: no such counter."""
        return self._native.poison(counter)


def new_stats_tables(position: str | Position, depth: int, tt_mb: float = DEFAULT_TT_MB,
                     seed: int | None = None) -> StatsTranspositionTable:
    """Empty statistics tables for counts of ``position`` up to ``depth`` plies, keyed by ``seed``:
    :func:`perft_core.zobrist.fitted_mb`'s estimate of the tree's positions at 8x the bytes (the
    entries are 8x larger), at least 1 MiB, at most ``tt_mb`` MiB.

    Raises ValueError: bad budget or seed.
    """
    _budget_bytes(tt_mb)
    mb = min(tt_mb, max(1.0, 8 * fitted_mb(position, depth, float("inf")))) if depth > 3 else min(tt_mb, 1.0)
    return StatsTranspositionTable(max(depth, 2), mb, seed=seed)


def _tables(depth: int, table: StatsTranspositionTable | None, tt_mb: float, seed: int | None,
            position: Position) -> StatsTranspositionTable:
    if table is None:
        return new_stats_tables(position, depth, tt_mb, seed)
    if not isinstance(table, StatsTranspositionTable):
        raise ValueError("statistics count through a StatsTranspositionTable, not node-count tables")
    if seed is not None and _seed(seed) != table.seed:
        raise ValueError("seed differs from the table's seed")
    if depth > table.max_depth:
        raise ValueError(f"depth {depth} exceeds the table's max_depth {table.max_depth}")
    return table


def perft_stats_tt(position: str | Position, depth: int, *, threads: int | None = None, tt_mb: float = DEFAULT_TT_MB,
                   seed: int | None = None, verify_seed: int | None = None,
                   table: StatsTranspositionTable | None = None, max_seconds: float = 0.0) -> Stats:
    """Perft statistics through CPU statistics tables: the same Stats as ``perft_core.perft_stats``.

    Tables: ``table`` if given (reused, keeps its entries), else new ones (:func:`new_stats_tables`,
    at most ``tt_mb`` MiB) keyed by ``seed``. ``verify_seed``: count again through new tables keyed by
    it and compare all 13 counters. ``threads``: None uses every available core (1 with a recording
    table). ``max_seconds`` > 0: stop after that many seconds from the call, the tables' making
    included (``_core.CountStopped``).

    Raises:
        HashVerificationError: the two key seeds' statistics differ.
        ValueError: bad depth, threads, budget or seed; depth above the table's max_depth.
    """
    t0 = time.perf_counter()
    depth = _depth(depth)
    threads = _threads(threads, table)
    _check_verify(verify_seed, seed, table)
    position = as_position(position)
    args = position.core_args()
    tables = _tables(depth, table, tt_mb, seed, position)
    first = Stats.from_tuple(_core.perft_stats_tt(args, depth, threads, tables._native, seconds_left(max_seconds, t0)))
    if verify_seed is not None:
        again = Stats.from_tuple(_core.perft_stats_tt(args, depth, threads,
                                                      new_stats_tables(position, depth, tt_mb, verify_seed)._native))
        check_same(first, again, depth, seed, verify_seed)
    return first


def divide_stats_tt(position: str | Position, depth: int, *, threads: int | None = None,
                    tt_mb: float = DEFAULT_TT_MB, seed: int | None = None, verify_seed: int | None = None,
                    table: StatsTranspositionTable | None = None, max_seconds: float = 0.0) -> dict[str, Stats]:
    """:func:`perft_stats_tt` split by root move: ``{uci: Stats}`` sorted by UCI (``{}`` at depth 0).

    Arguments and errors as for :func:`perft_stats_tt`; ``verify_seed`` compares every root move's
    13 counters. With ``max_seconds``, ``_core.CountStopped``'s second argument is ``[(uci, 13-tuple)]``
    of the root moves counted in full.
    """
    t0 = time.perf_counter()
    depth = _depth(depth)
    threads = _threads(threads, table)
    _check_verify(verify_seed, seed, table)
    if depth == 0:
        return {}
    position = as_position(position)
    args = position.core_args()

    def split(t: StatsTranspositionTable, seconds: float = 0.0) -> dict[str, Stats]:
        return {m: Stats.from_tuple(c) for m, c in sorted(_core.divide_stats_tt(args, depth, threads, t._native,
                                                                                 seconds))}

    tables = _tables(depth, table, tt_mb, seed, position)
    first = split(tables, seconds_left(max_seconds, t0))
    if verify_seed is not None:
        check_same(first, split(new_stats_tables(position, depth, tt_mb, verify_seed)), depth, seed, verify_seed)
    return first
