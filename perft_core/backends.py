"""The counting backends behind :func:`perft_core.perft` and :func:`perft_core.divide`.

A backend object counts one way, chosen when it is made: ``cpu`` (the C++ extension, with or
without the CPU transposition tables of :mod:`perft_core.zobrist`), ``gpu`` (the CuPy BFS driver)
or ``gpu-emulated`` (the same driver on NumPy and the extension's host kernels; the two GPU
backends differ only by the process's driver, :func:`perft_core.gpu.get_driver`). Every backend
has the same four ways to count:

- :meth:`Backend.count` (perft) and :meth:`Backend.divide`: one call, nothing watched;
- :meth:`Backend.count_moves`: root move by root move, reporting each finished root move (and, on
  the GPU, each finished BFS chunk) to a :class:`perft_core.watch.Watch` that draws the progress
  and raises at the deadline;
- :meth:`Backend.speed`: nodes/s of the backend, for :func:`perft_core.estimate.estimate`.

The verify-seed pass is the same for every backend and lives here once (:meth:`Backend._verified`):
with ``verify_seed``, each count is made twice, with tables keyed by the default Zobrist seed and
by ``verify_seed``, and :func:`perft_core.zobrist.check_same` raises HashVerificationError when the
two differ. The API (:mod:`perft_core.api`) validates the arguments and wraps a count in the
estimate and the limits; it knows no backend by name.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import limits
from .errors import StatsUnsupported
from .position import Position

# The extension (and zobrist, which needs it at import) is imported where a count needs it, as
# api.py always did: ``import perft_core`` works without a built extension (a source checkout, the
# tests' subprocesses on a clean clone), and fails only when a count is asked for.

__all__ = ["Backend", "CpuBackend", "GpuBackend", "EmulatedGpuBackend", "BACKENDS", "CALL_SECONDS", "get_backend"]

CALL_SECONDS = 0.25
"""With a time limit, a CPU call should take about this long at most, so the limit is kept to
about this much (a root move of startpos perft 9 is one 100 s call otherwise)."""

OnMove = Callable[[str, int], None]

if TYPE_CHECKING:
    from .stats import Stats


class Backend:
    """One way to count, with its options; see the module docstring.

    Args:
        threads: CPU threads of the count (an int, already checked; the GPU backends' host work is
            single-threaded).
        tt: count through transposition tables (same counts).
        tt_mb: the tables' memory budget, MiB (None: the backend's default).
        verify_seed: with ``tt``, count again with tables keyed by this Zobrist seed and raise
            HashVerificationError if the two counts differ.

    Class attributes: ``name`` (the API's backend name), ``speed_floor`` (nodes/s no machine of
    this kind falls under: the estimate's cheap bound divides by it).

    Raises ValueError: a verify_seed that is not a key seed (0..2**64-1) or equals the default one.
    """

    name: str = ""
    speed_floor: float = 0.0

    def __init__(self, *, threads: int = 1, tt: bool = False, tt_mb: float | None = None,
                 verify_seed: int | None = None):
        from . import zobrist
        zobrist.check_verify_seed(verify_seed)
        self.threads, self.tt, self.tt_mb, self.verify_seed = threads, tt, tt_mb, verify_seed

    @property
    def passes(self) -> int:
        """How many times each count walks the tree: 2 with a verify seed, else 1."""
        return 1 if self.verify_seed is None else 2

    @property
    def seed(self) -> int:
        """The Zobrist key seed of the first pass (its tables)."""
        from . import zobrist
        return zobrist.DEFAULT_SEED

    @property
    def splits_by_estimate(self) -> bool:
        """True when a time-limited :meth:`count_moves` needs the count's estimate to keep the
        limit (it splits root moves into calls of about CALL_SECONDS); False when the backend
        checks the deadline often enough by itself."""
        return False

    # ----- the four ways to count ---------------------------------------------------------------
    def count(self, pos: Position, depth: int) -> int:
        """perft(pos, depth): leaf nodes (a Python int; 1 at depth 0).

        Raises HashVerificationError: the verify-seed pass differs.
        """
        return self._verified(depth, lambda seed: self._count(pos, depth, seed))

    def divide(self, pos: Position, depth: int) -> dict[str, int]:
        """``{uci: nodes}`` below each legal root move, sorted by UCI (``{}`` at depth 0).

        Raises HashVerificationError: the verify-seed pass differs.
        """
        if depth == 0:
            return {}
        return self._verified(depth, lambda seed: self._divide(pos, depth, seed))

    def count_moves(self, pos: Position, depth: int, moves: list[str], watch, counted: dict[str, int],
                    estimate=None) -> None:
        """Count the subtrees of the root ``moves`` (UCI) of ``pos`` at ``depth`` >= 1 one by one
        into ``counted`` (``{uci: nodes}``), reporting to ``watch`` (a :class:`perft_core.watch.Watch`:
        progress, and :class:`perft_core.watch.Deadline` once its ``max_seconds`` passed).

        With a time limit the smallest subtrees go first (their size three plies down), so that a
        stopped count keeps as many root moves as the limit allowed. ``counted`` holds exactly the
        root moves counted in full, with a verify seed only those whose two passes agree, also when
        Deadline stops the count. ``estimate``: the count's :class:`perft_core.estimate.Estimate`
        or None (the CPU splits a time-limited count from it).

        Raises Deadline, HashVerificationError.
        """
        moves = sorted(moves)
        if watch.max_seconds is not None:
            moves = _smallest_first(pos, depth, moves)
        if self.verify_seed is None:
            self._count_moves(pos, depth, moves, watch, counted.__setitem__, None, estimate)
            return
        first: dict[str, int] = {}
        self._count_moves(pos, depth, moves, watch, first.__setitem__, None, estimate)

        def checked(move: str, nodes: int) -> None:
            from . import zobrist
            zobrist.check_same({move: first[move]}, {move: nodes}, depth, self.seed, self.verify_seed)
            counted[move] = nodes

        self._count_moves(pos, depth, moves, watch, checked, self.verify_seed, estimate)

    def speed(self, pos: Position, depth: int, nodes: int, probe_speed: float) -> tuple[float, bool]:
        """This backend's nodes/s on ``perft(pos, depth) == nodes``, and whether that speed is only a
        lower bound; ``probe_speed``: the nodes/s of that very count made by the estimate on the
        CPU extension with ``probe_threads`` threads."""
        return probe_speed, False

    @property
    def probe_threads(self) -> int:
        """Threads of the estimate's CPU probe counts (their speed is the cpu backend's own)."""
        return 1

    # ----- statistics (perft_core.stats.Stats) ------------------------------------------------------
    stats_cost: float = 0.0
    """Time of a statistics count over the plain count's, on this backend (0: it counts none)."""
    stats_tables: bool = False
    """True when this backend counts statistics through its transposition tables (``tt``)."""

    def divide_stats(self, pos: Position, depth: int, max_seconds: float | None = None) -> dict[str, "Stats"]:
        """``{uci: Stats}`` below each legal root move of ``pos`` at ``depth`` >= 1, sorted by UCI.

        ``max_seconds``: stop after that many wall seconds.

        Raises:
            StatsUnsupported: this backend counts no statistics, or not with its options (tables).
            CountInterrupted: ``max_seconds`` passed; ``partial``: ``{uci: Stats}`` of the root
                moves counted in full.
        """
        raise StatsUnsupported(f"backend {self.name!r} counts no statistics: use backend 'cpu', 'gpu' or "
                               f"'gpu-emulated'")

    def count_stats(self, pos: Position, depth: int) -> "Stats":
        """The Stats of the leaf moves ``depth`` plies below ``pos`` (nodes 1, nothing else, at depth 0).

        Raises StatsUnsupported: as :meth:`divide_stats`.
        """
        raise StatsUnsupported(f"backend {self.name!r} counts no statistics: use backend 'cpu', 'gpu' or "
                               f"'gpu-emulated'")

    # ----- what each backend provides -------------------------------------------------------------
    def _count(self, pos: Position, depth: int, seed: int | None) -> int:
        raise NotImplementedError

    def _divide(self, pos: Position, depth: int, seed: int | None) -> dict[str, int]:
        raise NotImplementedError

    def _count_moves(self, pos: Position, depth: int, moves: list[str], watch, on_move: OnMove,
                     seed: int | None, estimate) -> None:
        raise NotImplementedError

    def _verified(self, depth: int, count):
        """``count(seed)`` with the first pass's key seed (None), and, with a verify seed, again with it."""
        from . import zobrist
        first = count(None)
        if self.verify_seed is not None:
            zobrist.check_same(first, count(self.verify_seed), depth, self.seed, self.verify_seed)
        return first


class _StatsDeadline(Exception):
    """A time-limited GPU statistics count passed its limit (GpuBackend.divide_stats turns it into
    CountInterrupted; watch.Deadline is not imported here: watch imports estimate, which imports this)."""


class CpuBackend(Backend):
    """The C++ extension; with ``tt``, through CPU tables (:mod:`perft_core.zobrist`, ``tt_mb``
    default ``zobrist.DEFAULT_TT_MB``, fitted to the tree)."""

    name = "cpu"
    speed_floor = 5e7  # nodes/s: 450-700 M on one core of this project's 2-core VM under load (NOTES "CPU benchmark")

    @property
    def splits_by_estimate(self) -> bool:
        return not self.tt  # a call through tables counts a root move; a plain one stops at the deadline itself

    @property
    def probe_threads(self) -> int:
        return self.threads

    def _budget(self) -> float:
        from . import zobrist
        return zobrist.DEFAULT_TT_MB if self.tt_mb is None else self.tt_mb

    # 2.43x and 2.42x: one thread, startpos 7 and Kiwipete 6 on this project's 2-core VM (NOTES.md,
    # session 14, ci/bench_stats.py); the estimate's refusal multiplies the plain count's time by it.
    stats_cost = 2.5

    stats_tables = True

    def divide_stats(self, pos, depth, max_seconds=None):
        """``{uci: Stats}`` of each root move: the extension's statistics recursion, with ``tt``
        through statistics tables shared by the root moves (:mod:`perft_core.stats_tt`) and, with a
        ``verify_seed``, counted again through tables keyed by it, every counter compared.
        ``max_seconds``: the extension stops at the deadline; CountInterrupted keeps the root moves
        counted in full.

        Raises HashVerificationError: the two key seeds' statistics of a root move differ;
        StatsUnsupported: a ``verify_seed`` with ``max_seconds``; CountInterrupted."""
        from . import _core, stats_tt
        from .errors import CountInterrupted
        from .stats import Stats
        if self.tt and max_seconds is None:
            return self._verified(depth, lambda seed: stats_tt.divide_stats_tt(
                pos, depth, threads=self.threads, tt_mb=self._budget(), seed=seed))
        if self.verify_seed is not None:
            raise StatsUnsupported("a time-limited statistics count has no verify pass: leave out verify_seed or "
                                   "max_seconds")
        t0 = time.perf_counter()
        try:
            if self.tt:
                return stats_tt.divide_stats_tt(pos, depth, threads=self.threads, tt_mb=self._budget(),
                                                max_seconds=max_seconds)
            if max_seconds is not None and depth >= 2:
                return self._stats_smallest_first(pos, depth, max_seconds, t0)
            parts = _core.divide_stats(pos.core_args(), depth, self.threads, max_seconds or 0.0)
        except _core.CountStopped as exc:
            partial = {m: Stats.from_tuple(t) for m, t in exc.args[1]}
            raise CountInterrupted(partial, len(pos.legal_moves()), depth, time.perf_counter() - t0) from None
        return {m: Stats.from_tuple(t) for m, t in sorted(parts)}

    def _stats_smallest_first(self, pos, depth, max_seconds, t0):
        """A time-limited statistics divide, root move by root move with the smallest subtrees first
        (``_smallest_first``, as a plain count does), each subtree through the extension's statistics
        divide of the child at ``depth - 1`` summed (all threads on it, stopped at the deadline), so
        that a stopped count keeps the root moves counted in full (README: its partial is not empty
        whenever the limit allows one root move's subtree). Raises _core.CountStopped with them."""
        from . import _core
        from .stats import Stats
        done: dict[str, Stats] = {}
        for move in _smallest_first(pos, depth, sorted(pos.legal_moves())):
            left = max_seconds - (time.perf_counter() - t0)
            if left <= 0:
                raise _core.CountStopped("stopped", [(m, s.as_tuple()) for m, s in done.items()])
            try:
                parts = _core.divide_stats(pos.push(move).core_args(), depth - 1, self.threads, left)
            except _core.CountStopped:
                raise _core.CountStopped("stopped", [(m, s.as_tuple()) for m, s in done.items()]) from None
            done[move] = sum((Stats.from_tuple(t) for _, t in parts), Stats())
        return dict(sorted(done.items()))

    def count_stats(self, pos, depth):
        """The Stats of the leaf moves ``depth`` plies below ``pos``; with ``tt`` through statistics
        tables (and a ``verify_seed``'s second pass, as :meth:`divide_stats`).

        Raises HashVerificationError: the two key seeds' statistics differ."""
        from . import _core, stats_tt
        from .stats import Stats
        if self.tt:
            return self._verified(depth, lambda seed: stats_tt.perft_stats_tt(
                pos, depth, threads=self.threads, tt_mb=self._budget(), seed=seed))
        return Stats.from_tuple(_core.perft_stats(pos.core_args(), depth, self.threads))

    def _count(self, pos, depth, seed):
        from . import _core, zobrist
        if self.tt:
            return zobrist.perft_tt(pos, depth, threads=self.threads, tt_mb=self._budget(), seed=seed)
        return int(_core.perft(pos.core_args(), depth, self.threads))

    def _divide(self, pos, depth, seed):
        from . import _core, zobrist
        if self.tt:
            return zobrist.divide_tt(pos, depth, threads=self.threads, tt_mb=self._budget(), seed=seed)
        return {m: int(n) for m, n in sorted(_core.divide(pos.core_args(), depth, self.threads))}

    def _count_moves(self, pos, depth, moves, watch, on_move, seed, estimate):
        """One extension call per root move (through one set of tables shared by the root moves),
        or, time-limited without tables, one per descendant ``split`` plies below it."""
        from . import zobrist
        table = zobrist.new_tables(pos, depth, self._budget(), seed) if self.tt else None
        split = _split_plies(pos, depth, estimate, len(moves)) if watch.max_seconds is not None and not self.tt else 0
        for i, move in enumerate(moves, 1):
            child = pos.push(move)
            if table is not None:  # the extension stops at the deadline inside the root move too
                n = limits.cpu_limited(watch, lambda left, child=child: zobrist.perft_tt(
                    child, depth - 1, threads=self.threads, table=table, max_seconds=left))
            else:
                n = _subtree(child, depth - 1, split, self.threads, watch)
            on_move(move, n)
            watch.advance(n, i, len(moves))


class GpuBackend(Backend):
    """The process's GPU driver for ``name`` ("gpu": CuPy; "gpu-emulated": NumPy), got on first use
    (:func:`perft_core.gpu.get_driver`, which sizes its tables from ``tt_mb`` once per process).
    The driver is left as found: tables off, whole counts, its key seed."""

    name = "gpu"
    # nodes/s: the H200 counts 0.3-2 T without tables (NOTES "Session 9"); a GPU 30-200x slower
    # than an H200 (a low-end card of 2016) still counts 10 G nodes/s.
    speed_floor = 1e10

    @property
    def seed(self) -> int:
        from .gpu import get_driver

        return get_driver(self.name, self.tt_mb).seed

    @contextlib.contextmanager
    def _driver(self, seed: int | None, tables: bool):
        """The process's driver, for one count with ``tables`` and key ``seed`` (None: its own)."""
        from .gpu import get_driver

        drv = get_driver(self.name, self.tt_mb)
        drv.whole_counts()
        own = drv.seed
        drv.tt_enabled = tables
        if seed is not None:
            drv.reseed(seed)
        try:
            yield drv
        finally:
            drv.tt_enabled = False
            if drv.seed != own:
                drv.reseed(own)

    def _count(self, pos, depth, seed):
        with self._driver(seed, self.tt) as drv:
            return drv.perft(pos, depth)

    def _divide(self, pos, depth, seed):
        with self._driver(seed, self.tt) as drv:
            return drv.divide(pos, depth)

    def _count_moves(self, pos, depth, moves, watch, on_move, seed, estimate):
        """Each root move's subtree by the driver; its BFS chunks report to ``watch``. With tables
        the root moves share them (``keep_tables``, as a deep run's units do): positions below one
        root move that transpose into another's were counted again with tables rebuilt for every
        move (startpos perft 12 with a time limit: 20 counts of perft 11 with cold tables)."""
        with self._driver(seed, self.tt) as drv:
            drv.progress = watch.chunk
            if drv.tt_enabled:
                drv.keep_tables(("watched", pos.fen()), plan_depth=depth, game=pos)
            try:
                for i, move in enumerate(moves, 1):
                    n = drv.count_roots([pos.push(move)], depth - 1, game=pos)[0]  # the root's castling geometry
                    on_move(move, n)
                    watch.advance(n, i, len(moves))
            finally:
                drv.progress = None
                drv.keep_tables(None)

    # ----- statistics: the plain BFS down to the leaf parents, then the statistics leaf (issue 36) -----
    # Measured on an H200 (ci/stats_gpu_check.sh, NOTES.md "Session 15": statistics against the
    # plain count, same depth, same process): 11.16x startpos 8, 11.61x startpos 9, 8.82x Kiwipete 6,
    # 11.37x Kiwipete 7; the statistics leaf classifies every leaf move where the plain count's
    # fused leaf counts the last two plies by bulk counting.
    stats_cost = 12.0
    stats_tables = True

    def _stats_driver(self, seed: int | None = None):
        """The process's driver for a statistics count: with ``tt`` through its tables (statistics
        entries, ``TTBfsDriver.perft_stats``) keyed by ``seed`` (None: its own), else the plain BFS."""
        return self._driver(seed, self.tt)

    def count_stats(self, pos, depth):
        """The Stats of the leaf moves ``depth`` plies below ``pos``, through the driver
        (``perft_stats``: its tables with ``tt``, else the plain BFS); with a ``verify_seed`` counted
        again through tables keyed by it, every counter compared.

        Raises HashVerificationError: the two key seeds' statistics differ."""
        def count(seed):
            with self._stats_driver(seed) as drv:
                return drv.perft_stats(pos, depth)

        return self._verified(depth, count)

    def divide_stats(self, pos, depth, max_seconds=None):
        """``{uci: Stats}`` of each root move (``BfsDriver.divide_stats``, sorted by UCI). With
        ``max_seconds``: the root moves with the smallest subtrees first, the time checked after each
        BFS chunk and between root moves; past it, CountInterrupted with the root moves counted in
        full (a root move stopped inside is discarded). With ``tt`` each root move's count has tables
        of its own. With a ``verify_seed`` (and no ``max_seconds``) every root move's statistics are
        counted again through tables keyed by it and compared.

        Raises HashVerificationError: the two key seeds' statistics of a root move differ;
        StatsUnsupported: a ``verify_seed`` with ``max_seconds``."""
        from .errors import CountInterrupted
        if max_seconds is None or depth <= 1:
            def divide(seed):
                with self._stats_driver(seed) as drv:
                    return drv.divide_stats(pos, depth)

            return self._verified(depth, divide)
        if self.verify_seed is not None:
            raise StatsUnsupported("a time-limited statistics count has no verify pass: leave out verify_seed or "
                                   "max_seconds")
        with self._stats_driver() as drv:
            t0 = time.perf_counter()
            moves = sorted(pos.legal_moves())
            counted: dict[str, Stats] = {}

            def check(_nodes: int = 0) -> None:
                if time.perf_counter() - t0 > max_seconds:
                    raise _StatsDeadline()

            drv.progress = check
            try:
                for move in _smallest_first(pos, depth, moves):
                    check()
                    counted[move] = drv.perft_stats(pos.push(move), depth - 1)
            except _StatsDeadline:
                raise CountInterrupted(counted, len(moves), depth, time.perf_counter() - t0) from None
            finally:
                drv.progress = None
            return dict(sorted(counted.items()))

    def speed(self, pos, depth, nodes, probe_speed):
        """Nodes/s of the driver on ``perft(pos, depth) == nodes`` without tables, after a warm-up
        count at depth 1 (kernel compile, first-use costs): a small count is dominated by launch
        overhead, so the speed is a lower bound (True)."""
        with self._driver(None, False) as drv:
            drv.perft(pos, 1)
            t0 = time.perf_counter()
            drv.perft(pos, depth)
            dt = time.perf_counter() - t0
        return (nodes / dt if dt > 0 else 0.0), True


class EmulatedGpuBackend(GpuBackend):
    """The GPU driver on NumPy and the extension's host batch kernels: how CPU CI tests the GPU path."""

    name = "gpu-emulated"
    speed_floor = 5e7  # nodes/s: the host kernels count about as fast as the CPU extension on one thread
    # 4.8x and 3.3x: startpos 6 and Kiwipete 5, statistics against the plain count of the same driver
    # (the host kernels' fused leaf counts quiet moves without a make) on the 2-core VM.
    stats_cost = 5.0


BACKENDS: dict[str, type[Backend]] = {b.name: b for b in (CpuBackend, GpuBackend, EmulatedGpuBackend)}
"""The backend class of each API name."""


def get_backend(name: str, *, threads: int = 1, tt: bool = False, tt_mb: float | None = None,
                verify_seed: int | None = None) -> Backend:
    """A backend object for the API name ``name`` ("cpu", "gpu", "gpu-emulated") with these options
    (see :class:`Backend`). Cheap: a GPU driver is made on the first count, not here.

    Raises ValueError: unknown name, or a bad verify_seed.
    """
    cls = BACKENDS.get(name)
    if cls is None:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    return cls(threads=threads, tt=tt, tt_mb=tt_mb, verify_seed=verify_seed)


def _smallest_first(pos: Position, depth: int, moves: list[str]) -> list[str]:
    """``moves`` ordered by the size of their subtree three plies deep (a cheap proxy for the size
    at ``depth``: under 10^5 nodes each), so that a time-limited count finishes the smallest
    subtrees first and its partial divide is non-empty whenever the limit allows one subtree."""
    from . import _core
    probe = min(depth - 1, 3)
    size = {m: int(_core.perft(pos.push(m).core_args(), probe, 1)) for m in moves}
    return sorted(moves, key=lambda m: (size[m], m))


def _split_plies(pos: Position, depth: int, estimate, calls: int) -> int:
    """Plies (0-3) below each of the ``calls`` root moves at which a time-limited CPU count is split
    into separate calls, so that one call is estimated (``estimate``, None: no split) at most CALL_SECONDS."""
    from . import _core
    if estimate is None:
        return 0
    s = 0
    while s < min(3, depth - 2) and estimate.seconds / max(calls, 1) > CALL_SECONDS:
        s += 1
        calls = int(_core.perft(pos.core_args(), s + 1, 1))
    return s


def _subtree(position: Position, depth: int, split: int, threads: int, watch) -> int:
    """perft(position, depth) as the sum of its descendants' counts ``split`` plies down, one
    extension call each, each stopping at the deadline of ``watch`` (limits.cpu_count)."""
    if split == 0 or depth <= 1:
        return limits.cpu_count(watch, position.core_args(), depth, threads)
    return sum(_subtree(position.push(m), depth - 1, split - 1, threads, watch) for m in position.legal_moves())
