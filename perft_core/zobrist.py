"""128-bit Zobrist keys and transposition-table perft on the CPU.

Keys (``kernels/pc_zobrist.h``): two 64-bit halves from splitmix64 with a selectable seed,
returned here as one Python int ``hi << 64 | lo``. They cover the pieces, the side to move, each
castling right (by its rook's square) and the en passant file, the latter only when the side to
move has a pawn beside the pawn that just made the double push (a pseudo-legal en passant capture
exists). After other double pushes no en passant capture can follow, so the key ignores the en
passant square there: the same position reached without the double push has the same key.

Transposition tables (``perft_core/src/tt.h``): one table per remaining depth; lossless chained
tables (full key, 128-bit counts) for the levels up to three plies below the root, lossy 16-byte
XOR-checked entries in two-entry buckets below; probed and stored at remaining depth >= 2.
Threads share them (lossy: lock-free; lossless: a mutex). Counts accumulate in 128 bits, so
perft past 2**64 comes out exact.

``verify_seed`` runs a count twice, with the default key seed and with another one, and raises
:class:`HashVerificationError` if the two differ: this catches what depends on key values (true
collisions, weak keys, table indexing bugs). A structural key bug (two positions that hash alike
under every seed, e.g. a piece left out of the key) is caught by comparing with ``tt=False`` and by
the audit (:meth:`TranspositionTable.entries` with ``record_positions=True``).
"""
from __future__ import annotations

import contextlib

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

from . import _core, limits
from .errors import HashVerificationError
from .position import Position, as_position, zobrist_seed

__all__ = [
    "DEFAULT_SEED", "DEFAULT_TT_MB", "PLANTED_BUGS", "HashVerificationError", "TTEntry",
    "TranspositionTable", "zobrist", "zobrist_path", "perft_tt", "divide_tt", "fitted_mb", "new_tables",
    "check_verify_seed", "check_same",
]

DEFAULT_SEED: int = _core.ZOBRIST_DEFAULT_SEED
"""The key seed used when none is given (splitmix64 state; see kernels/pc_zobrist.h)."""

DEFAULT_TT_MB: float = 256
"""Default memory budget of the transposition tables, MiB (2**20 bytes)."""

PLANTED_BUGS: dict[str, int] = {"weak_capture_key": 1, "drop_captured_piece": 2}
"""Test-only key bugs for ``_planted_bug``: ``weak_capture_key`` keeps 8 bits of each key half after
a capture (collisions that depend on the seed); ``drop_captured_piece`` leaves the captured piece in
the key (a structural bug: the same collisions under every seed)."""

_U64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class TTEntry:
    """One stored transposition-table entry, as the audit walk returns it.

    ``key`` is the full 128-bit key for lossless entries; lossy entries keep only ``key_hi`` (the
    check half) and their ``bucket`` (a function of the key's low half), so ``key`` is None there.
    ``core_args`` is the position the entry was stored for (the ``_core`` argument tuple B,
    chess960 False) when the table records positions, else None.
    """

    depth: int
    kind: str
    count: int
    key: int | None
    key_hi: int
    bucket: int
    core_args: tuple | None


def _seed(seed: int | None) -> int:
    return zobrist_seed(seed)




def _depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    return depth


def check_tt_mb(mb: object) -> float:
    """``mb`` (a tables' budget, MiB) if it is a finite positive number up to
    :data:`perft_core.limits.MAX_TT_MB`; the one check of ``tt_mb`` for every backend (the API, the
    GPU driver registry, the CPU tables).

    Raises ValueError naming the value otherwise."""
    if isinstance(mb, bool) or not isinstance(mb, (int, float)) or not math.isfinite(mb) or not 0 < mb <= limits.MAX_TT_MB:
        raise ValueError(f"tt_mb must be a positive number of MiB, at most {limits.MAX_TT_MB:,}, got {mb!r}")
    return mb


def _budget_bytes(mb: object) -> int:
    return int(check_tt_mb(mb) * 2**20)


def zobrist(position: str | Position, seed: int | None = None) -> int:
    """The 128-bit Zobrist key (``hi << 64 | lo``) of a position, computed from scratch.

    Raises:
        ValueError: seed outside 0..2**64-1 (or a FenError for a bad FEN string).
    """
    return as_position(position).zobrist(seed)


def zobrist_path(position: str | Position, moves: Iterable[str], seed: int | None = None) -> list[int]:
    """Keys along a UCI move sequence, updated incrementally move by move.

    Returns ``len(moves) + 1`` keys: ``[zobrist(position), key after moves[0], ...]``; each key
    after the first comes from the previous one by ``update_hash`` alone, never from scratch.

    Raises:
        IllegalMoveError: a move is not legal where it is played.
        ValueError: bad seed.
    """
    return as_position(position).zobrist_path(moves, seed)


class TranspositionTable:
    """CPU transposition tables for searches up to ``max_depth`` plies, bound to one key seed.

    One table per remaining depth ``min_depth .. max_depth - 1``: lossless for remaining depth
    ``>= lossless_from`` (default ``max_depth - 3``: the three plies below the root), lossy below.
    Every allocation, records included, fits in ``mb`` MiB (``allocated_bytes``). A table can
    serve several searches (any root position, same seed): entries depend only on the position.

    ``record_positions=True`` (tests) keeps the position of every entry for the audit; such a
    table serves single-threaded searches only (``threads=None`` then means 1).

    Raises:
        ValueError: bad depth, budget or seed; perft_core.limits.LimitError (a ValueError) for a
            budget over the memory available (``limits.check_table_bytes``: the pages are made at once).
    """

    _NATIVE = "TTable"
    """The extension's table class (perft_core.stats_tt's subclass: ``StatsTTable``)."""

    def __init__(self, max_depth: int, mb: float = DEFAULT_TT_MB, *, seed: int | None = None,
                 min_depth: int = 2, lossless_from: int | None = None, record_positions: bool = False):
        self.record_positions = bool(record_positions)
        max_depth = _depth(max_depth)
        if max_depth > 64:
            raise ValueError(f"max_depth must be <= 64, got {max_depth}")
        if isinstance(min_depth, bool) or not isinstance(min_depth, int) or min_depth < 2:
            raise ValueError(f"min_depth must be an integer >= 2, got {min_depth!r}")
        if lossless_from is None:
            lossless_from = max(max_depth - 3, 0)
        budget = _budget_bytes(mb)
        limits.check_table_bytes(budget)  # the pages are made at once: more than there is would be killed
        self._native = getattr(_core, self._NATIVE)(max_depth, budget, _seed(seed), min_depth=min_depth,
                                                    lossless_from=int(lossless_from), record=bool(record_positions))

    @property
    def seed(self) -> int:
        return self._native.seed

    @property
    def max_depth(self) -> int:
        return self._native.max_depth

    @property
    def budget_bytes(self) -> int:
        return self._native.budget_bytes

    @property
    def allocated_bytes(self) -> int:
        """Bytes the tables allocated (<= budget_bytes), all resident from the tables' creation (their pages are
        made at once, perft_core/src/tt.h)."""
        return self._native.allocated_bytes

    def levels(self) -> list[tuple[int, str, int]]:
        """``[(remaining depth, "lossy" | "lossless", slots)]``; lossless levels share one node pool."""
        return [tuple(x) for x in self._native.levels()]

    def stats(self) -> list[dict[str, int | str]]:
        """Per level: depth, kind, probes, hits, stores, replaced (lossy), full (lossless pool full:
        not stored), unstorable (lossy: count 0 or >= 2**64, not stored)."""
        return list(self._native.stats())

    def entries(self) -> list[TTEntry]:
        """The audit walk: every stored entry. Call it between searches, not during one."""
        out = []
        for depth, kind, bucket, lo, hi, known, count, args in self._native.entries():
            out.append(TTEntry(depth, kind, count, (hi << 64 | lo) if known else None, hi, bucket, args))
        return out

    def lookup(self, key: int, depth: int) -> int | None:
        """The stored count of a 128-bit key at a remaining depth, or None (not stored)."""
        return self._native.lookup(key & _U64, (key >> 64) & _U64, depth)

    def bucket(self, key: int, depth: int) -> int:
        """The bucket a key maps to in a level (``TTEntry.bucket``); ValueError: no table there."""
        return self._native.bucket(key & _U64, depth)

    def clear(self) -> None:
        """Forget every entry and statistic."""
        self._native.clear()


def fitted_mb(position: str | Position, depth: int, tt_mb: float = DEFAULT_TT_MB) -> float:
    """Tables' MiB for ``perft(position, depth)``: ``tt_mb``, or less for a small tree: ~64 bytes per
    position estimated above the last two plies (at least 1 MiB; 1 MiB up to depth 3).

    The estimate grows the root's perft(2) / perft(1) branching by half again per ply, so it
    overshoots the positions a table can hold; a smaller table would cost hits, never counts.
    Small searches thus do not pay for zeroing hundreds of MiB they never use.
    """
    if depth <= 3:
        return min(tt_mb, 1.0)
    args = as_position(position).core_args()
    n1 = max(_core.perft(args, 1, 1), 1)
    branching = 1.5 * max(_core.perft(args, 2, 1) / n1, 1.0)
    positions = sum(n1 * branching ** (p - 1) for p in range(1, depth - 1))
    return min(tt_mb, max(1.0, 64 * positions / 2**20))


def big_subtree_depth(position: str | Position, depth: int) -> int | None:
    """The lowest remaining depth below ``position`` whose subtrees may count 2^63 nodes or more, when
    a count of ``depth`` plies reaches it under its three lossless levels (else None).

    A lossy entry holds a 64-bit count, so a subtree of 2^64 nodes or more is never stored there
    (src/tt.h) and is counted again at every visit: king against king at depth 36 did not finish
    in 40 s (depth 30: 0.24 s). The lossless levels hold 128-bit counts. The estimate: the root's
    branching from perft 4 / perft 2, a quarter more for the tree's growth (it only moves which
    levels are lossless: a count stays exact either way). Counts of fewer than 9 plies: None.
    """
    if depth < 9:
        return None
    args = as_position(position).core_args()
    n2, n4 = _core.perft(args, 2, 1), _core.perft(args, 4, 1)
    branching = 1.25 * max((n4 / max(n2, 1)) ** 0.5, 2.0)
    r = int(63 / math.log2(branching))
    return r if r < depth - 3 else None


def new_tables(position: str | Position, depth: int, tt_mb: float = DEFAULT_TT_MB,
               seed: int | None = None) -> TranspositionTable:
    """Empty tables for counts of ``position`` (and positions below it) up to ``depth`` plies, keyed
    by ``seed``, of :func:`fitted_mb` MiB (at most ``tt_mb``); lossless (128-bit counts) from
    :func:`big_subtree_depth` up where subtrees may pass 2^64, else the three top levels.

    Raises ValueError: bad budget or seed.
    """
    _budget_bytes(tt_mb)
    return TranspositionTable(max(depth, 2), fitted_mb(position, depth, tt_mb), seed=seed,
                              lossless_from=big_subtree_depth(position, depth))


def _tables(depth: int, table: TranspositionTable | None, tt_mb: float, seed: int | None,
            position: Position) -> TranspositionTable:
    if table is None:
        return new_tables(position, depth, tt_mb, seed)
    if seed is not None and _seed(seed) != table.seed:
        raise ValueError("seed differs from the table's seed")
    if depth > table.max_depth:
        raise ValueError(f"depth {depth} exceeds the table's max_depth {table.max_depth}")
    return table


def _threads(threads: object, table: TranspositionTable | None = None) -> int:
    """The thread count (perft_core.threads); None with a recording table: 1."""
    from .threads import resolve_threads

    if threads is None and table is not None and table.record_positions:
        return 1
    return resolve_threads(threads)


def _fault(planted_bug: str | None) -> int:
    if planted_bug is None:
        return 0
    if planted_bug not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug {planted_bug!r}; choose one of {', '.join(PLANTED_BUGS)}")
    return PLANTED_BUGS[planted_bug]


def check_verify_seed(verify_seed: int | None, seed: int | None = None) -> None:
    """Raise ValueError unless ``verify_seed`` is None or a key seed (0..2**64-1) other than ``seed``
    (None: DEFAULT_SEED): a second count keyed alike would check nothing."""
    if verify_seed is not None and _seed(verify_seed) == _seed(seed):
        raise ValueError(f"verify_seed must differ from the key seed {_seed(seed):#x}")


def check_same(first: int | dict[str, int], again: int | dict[str, int], depth: int, seed: int | None,
               verify_seed: int) -> None:
    """Compare a count (nodes or a perft_core.Stats, or a divide ``{uci: nodes or Stats}``) made with
    key ``seed`` (None: DEFAULT_SEED) with the same count made with ``verify_seed``.

    Raises HashVerificationError naming the count (and the first root move that differs).
    """
    if isinstance(first, dict):
        bad = sorted(m for m in first if first[m] != again.get(m))
        if bad:
            m = bad[0]
            more = f" ({len(bad)} moves differ)" if len(bad) > 1 else ""
            raise HashVerificationError(
                f"divide {depth}: {m} has {_what(first[m], ' nodes')} with key seed {_seed(seed):#x} but "
                f"{_what(again.get(m), ' nodes')} "
                f"with seed {verify_seed:#x}{more}")
    elif first != again:
        raise HashVerificationError(
            f"perft {depth}: {_what(first, '')} with key seed {_seed(seed):#x} but {_what(again, '')} with seed "
            f"{verify_seed:#x}")


def _what(count, unit: str) -> str:
    """A count for a message: the number followed by ``unit``, or a Stats as its counters
    (name=value, the ones that differ from zero)."""
    if isinstance(count, int) or count is None:
        return f"{count}{unit}"
    return ", ".join(f"{k}={v}" for k, v in count.to_json().items() if v) or "all counters 0"


def _check_verify(verify_seed: int | None, seed: int | None, table: TranspositionTable | None) -> None:
    if verify_seed is not None and table is not None:
        raise ValueError("verify_seed builds its own tables; do not pass table=")
    check_verify_seed(verify_seed, seed)


def perft_tt(position: str | Position, depth: int, *, threads: int | None = None, tt_mb: float = DEFAULT_TT_MB,
             seed: int | None = None, verify_seed: int | None = None,
             table: TranspositionTable | None = None, max_seconds: float = 0.0,
             _planted_bug: str | None = None) -> int:
    """Perft through transposition tables: the same count as ``perft_core.perft``, faster.

    Tables: ``table`` if given (reused, keeps its entries), else new ones of at most ``tt_mb`` MiB
    (less for a small tree) with key ``seed``. ``verify_seed``: count again with new tables keyed
    by that seed, and raise if the two counts differ. ``threads``: None (default) uses every
    available core (perft_core.threads). ``max_seconds`` > 0: each pass stops after that many wall
    seconds, the first counted from the call, its tables' making included (the extension polls its
    deadline inside the count; what it stored stays exact).
    ``_planted_bug`` (tests only) plants a key bug, see PLANTED_BUGS.

    Raises:
        HashVerificationError: the two counts of ``verify_seed`` differ.
        ValueError: bad depth, threads, budget or seed; depth above the table's max_depth.
        perft_core._core.CountStopped: ``max_seconds`` passed.
        CountOverflow (a ValueError): the count passes 2^128 - 1 (the sums are 128 bits).
    """
    t0 = time.perf_counter()
    depth = _depth(depth)
    threads = _threads(threads, table)
    _check_verify(verify_seed, seed, table)
    position = as_position(position)
    args = position.core_args()
    fault = _fault(_planted_bug)
    tables = _tables(depth, table, tt_mb, seed, position)
    with _refused_past_u128():
        nodes = _core.perft_tt(args, depth, threads, tables._native, fault, limits.seconds_left(max_seconds, t0))
        if verify_seed is not None:
            again = _core.perft_tt(args, depth, threads, new_tables(position, depth, tt_mb, verify_seed)._native,
                                   fault, max_seconds)
            check_same(nodes, again, depth, seed, verify_seed)
    return nodes


def divide_tt(position: str | Position, depth: int, *, threads: int | None = None, tt_mb: float = DEFAULT_TT_MB,
              seed: int | None = None, verify_seed: int | None = None,
              table: TranspositionTable | None = None, _planted_bug: str | None = None) -> dict[str, int]:
    """Divide through transposition tables: ``{uci: nodes}`` as ``perft_core.divide`` (``{}`` at depth 0).

    Arguments and errors as for :func:`perft_tt`; ``verify_seed`` compares the whole split.
    """
    depth = _depth(depth)
    threads = _threads(threads, table)
    _check_verify(verify_seed, seed, table)
    if depth == 0:
        return {}
    position = as_position(position)
    args = position.core_args()
    fault = _fault(_planted_bug)
    with _refused_past_u128():
        split = dict(sorted(_core.divide_tt(args, depth, threads,
                                             _tables(depth, table, tt_mb, seed, position)._native, fault)))
        if verify_seed is not None:
            again = dict(_core.divide_tt(args, depth, threads, new_tables(position, depth, tt_mb, verify_seed)._native,
                                          fault))
            check_same(split, again, depth, seed, verify_seed)
    return split


@contextlib.contextmanager
def _refused_past_u128():
    """The extension's OverflowError (a count through the tables past 2^128 - 1, whose sums
    saturate: src/tt.h ``add_sat``) as CountOverflow, the error of a count too large for its backend."""
    try:
        yield
    except OverflowError as exc:
        from .errors import CountOverflow

        raise CountOverflow(str(exc)) from None
