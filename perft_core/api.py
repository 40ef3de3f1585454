"""Public counting API: ``perft`` and ``divide``; with statistics, ``perft_stats`` and ``divide_stats``.

A thin layer: it validates the arguments, guards a count with the run-time estimate and the limits
(``max_estimate_seconds`` / ``force``, ``max_seconds``, ``progress``) and hands it to a backend
object (:mod:`perft_core.backends`: count, divide, root move by root move, tables, the verify-seed
pass). It knows no backend by name.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

from . import estimate, limits, watch
from .backends import BACKENDS, Backend, get_backend
from .errors import CountInterrupted, CountRefused, StatsUnsupported
from .estimate import DEFAULT_MAX_ESTIMATE_SECONDS
from .position import Position, as_position
from .stats import Stats
from .threads import resolve_threads

if TYPE_CHECKING:
    import chess

def perft(fen_or_position: "str | Position | chess.Board", depth: int, *, backend: str = "cpu", threads: int | None = None,
          tt: bool = False, tt_mb: float | None = None, verify_seed: int | None = None,
          max_seconds: float | None = None, max_estimate_seconds: float | None = DEFAULT_MAX_ESTIMATE_SECONDS,
          force: bool = False, progress: bool | None = None) -> int:
    """Count the leaf nodes of the legal move tree ``depth`` plies below a position.

    Args:
        fen_or_position: a FEN / X-FEN / Shredder-FEN string (Chess960 inferred), a python-chess
            ``chess.Board`` or a Position.
        depth: plies, an int >= 0; perft(…, 0) is 1.
        backend: "cpu" (C++ extension), "gpu" (CuPy) or "gpu-emulated" (the GPU driver on NumPy).
        threads: CPU threads for the cpu backend; None (default): every core this process may run
            on (``os.sched_getaffinity``; perft_core.threads). The tree is split into subtrees
            that balance across threads (perft_core/src/host.h).
        tt: count through transposition tables (same counts): CPU tables (perft_core.zobrist) or,
            on the GPU backends, device tables plus a host cache (perft_core.gpu.ttdriver).
        tt_mb: memory budget of those tables, MiB; default 256 on the CPU, 75 % of the GPU
            driver's memory on the GPU backends (fixed when the process's driver is made).
        verify_seed: with tt, count again with tables keyed by this Zobrist seed (an int in
            0..2**64-1 other than the default seed) and raise HashVerificationError if the two
            counts differ; on every backend and way to count the same pass (perft_core.backends).
        max_seconds: stop the count after this many wall seconds (the CPU extension polls the
            deadline itself, also with force=True; on the GPU backends, checked after each BFS
            chunk) and raise CountInterrupted; None: no limit.
        max_estimate_seconds: refuse (CountRefused) a count estimated (perft_core.estimate) to take
            longer than this many seconds; default one day; None: never refuse, and no estimate
            is made at all (the oracle's reference calls). A bound of about 1 ms
            (``estimate.within_limit``) comes first; the sampled estimate (20-250 ms) is made only
            when the bound says the count could be longer. Counts through tables (tt) are refused
            only when even a count through perfect tables would be longer (``Estimate.tt_seconds``).
        force: count even when the estimate exceeds max_estimate_seconds (no estimate is made
            then, unless a progress bar is shown).
        progress: draw a progress bar on stderr (counts estimated over 2 s): True, False, or None
            (default) for "when stderr is a terminal"; "lines": the same, and without a terminal a
            progress line a minute and a summary line for a count estimated over 10 s (what the
            perft command asks for; perft_core.watch).

    Returns:
        The node count as a Python int.

    Raises:
        FenError: the FEN is malformed or describes a position perft is undefined for.
        ValueError: bad depth, backend, threads, tt or limit options; perft_core.limits.LimitError
            (a ValueError) for a depth over 64 plies or over 1024 threads.
        CountRefused (a ValueError): the estimate exceeds max_estimate_seconds; carries the Estimate.
        CountInterrupted: max_seconds passed; carries the root moves counted in full (``partial``).
        perft_core.zobrist.HashVerificationError: the verify_seed count differs.
    """
    depth = _depth(depth)
    engine, pos = _prepare(fen_or_position, depth, backend, threads, tt, tt_mb, verify_seed, max_seconds,
                           max_estimate_seconds, force, progress)
    watched = _watched(engine, pos, depth, max_seconds, max_estimate_seconds, force, progress)
    if watched is not None:
        return sum(watched.values())
    return engine.count(pos, depth)


def divide(fen_or_position: "str | Position | chess.Board", depth: int, *, backend: str = "cpu", threads: int | None = None,
           tt: bool = False, tt_mb: float | None = None, verify_seed: int | None = None,
           max_seconds: float | None = None, max_estimate_seconds: float | None = DEFAULT_MAX_ESTIMATE_SECONDS,
           force: bool = False, progress: bool | None = None) -> dict[str, int]:
    """Perft split by root move: ``{uci_move: nodes}``, the counts below each legal move.

    Arguments as for :func:`perft`. UCI keys: promotions as ``e7e8q``; castling as king to its
    destination (``e1g1``) in standard chess and king-takes-rook (``e1h1``) in Chess960, as
    Stockfish writes them with UCI_Chess960. Depth 0 gives ``{}``; depth 1 gives 1 per move.

    Raises:
        FenError, ValueError, CountRefused, CountInterrupted, HashVerificationError: as for :func:`perft`.
    """
    depth = _depth(depth)
    engine, pos = _prepare(fen_or_position, depth, backend, threads, tt, tt_mb, verify_seed, max_seconds,
                           max_estimate_seconds, force, progress)
    if depth == 0:
        return {}
    watched = _watched(engine, pos, depth, max_seconds, max_estimate_seconds, force, progress)
    if watched is not None:
        return dict(sorted(watched.items()))
    return engine.divide(pos, depth)


def _depth(depth: object) -> object:
    """A depth that is an integer of another type (``numbers.Integral``: a NumPy integer, say) as
    the int it is; anything else as given, for :func:`_prepare` to refuse (a bool, a float, a str):
    ``np.int64(3)`` was refused as "not a non-negative integer" (session 32's edge hunt)."""
    import numbers

    if isinstance(depth, numbers.Integral) and not isinstance(depth, bool):
        return int(depth)
    return depth


def _prepare(fen_or_position, depth: object, backend: str, threads: object, tt: object, tt_mb: float | None,
             verify_seed: int | None, max_seconds: object, max_estimate_seconds: object, force: object,
             progress: object) -> tuple[Backend, Position]:
    """Validate every argument (one-line ValueErrors, FenError); the backend object and the Position."""
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    if depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    threads = resolve_threads(threads)
    limits.check_count(depth, threads)  # bounds: recursion depth and threads (one-line errors, exit 2)
    pos = as_position(fen_or_position)
    if not isinstance(tt, bool):
        raise ValueError(f"tt must be True or False, got {tt!r}")
    if verify_seed is not None and not tt:
        raise ValueError("verify_seed needs tt=True (it re-counts through tables with another key seed)")
    if tt_mb is not None and not tt:
        raise ValueError("tt_mb needs tt=True (it sizes the transposition tables)")
    if tt_mb is not None:
        from .zobrist import check_tt_mb  # here: perft_core imports without the extension zobrist needs

        check_tt_mb(tt_mb)
    for name, value in (("max_seconds", max_seconds), ("max_estimate_seconds", max_estimate_seconds)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not value > 0 or value != value):
            raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")
    if not isinstance(force, bool):
        raise ValueError(f"force must be True or False, got {force!r}")
    if progress is not None and progress != "lines" and not isinstance(progress, bool):
        raise ValueError(f"progress must be True, False, None or 'lines', got {progress!r}")
    return get_backend(backend, threads=threads, tt=tt, tt_mb=tt_mb, verify_seed=verify_seed), pos


def _watched(engine: Backend, pos: Position, depth: int, max_seconds: float | None,
             max_estimate_seconds: float | None, force: bool, progress: bool | str | None) -> dict[str, int] | None:
    """Estimate the count, refuse it over the limit, and count a long or time-limited one root move
    by root move (progress bar or lines, deadline: ``engine.count_moves``). Returns the divide when
    it counted, None when the plain one-call path should count (depth 0, or a short count with no
    time limit: the same calls as ever).

    Raises CountRefused, CountInterrupted, HashVerificationError.
    """
    # A TT count's estimate is the plain count's time, an upper bound that can be wildly high (a
    # walled position counts 2**64 nodes in a second through its tables): a TT count is refused only
    # when even the count through perfect tables (Estimate.tt_seconds) is over the limit.
    # The sampled estimate costs 20-250 ms (and two small GPU counts): it is made only when a cheap
    # bound (about 1 ms) says the count could exceed the limit or last long enough for progress
    # lines, for a progress bar, or to split a time-limited CPU count; a short count pays the bound
    # alone (issue 27).
    # An upper bound of the count's seconds (estimate.within_limit's: the node bound over the
    # backend's speed floor), made once for both questions: each costs up to ~1 ms of CPU plies.
    bound_seconds = functools.cache(lambda: estimate.node_bound(pos, depth) / engine.speed_floor)
    refusing = not force and max_estimate_seconds is not None and bound_seconds() > max_estimate_seconds
    bar = watch.wants_bar(progress)
    # no terminal: a line a minute for a count over LINES_SECONDS
    lines = watch.wants_lines(progress) and bound_seconds() > watch.LINES_SECONDS
    split = max_seconds is not None and engine.splits_by_estimate
    est = (estimate.estimate(pos, depth, backend=engine.name, threads=engine.threads, tt=engine.tt,
                             tt_mb=engine.tt_mb)
           if refusing or bar or lines or split else None)
    if refusing and est.seconds > max_estimate_seconds and est.tt_seconds > max_estimate_seconds:
        raise CountRefused(est, max_estimate_seconds,
                           f"{est.describe()}: over the limit of {estimate.format_seconds(max_estimate_seconds)}")
    bar = bar and est is not None and est.seconds > watch.BAR_SECONDS
    lines = lines and est is not None and est.seconds > watch.LINES_SECONDS
    if depth == 0 or (not bar and not lines and max_seconds is None):
        return None
    moves = pos.legal_moves()
    counted: dict[str, int] = {}
    with watch.Watch(est, max_seconds, bar, passes=engine.passes, lines=lines) as w:
        try:
            engine.count_moves(pos, depth, moves, w, counted, est)
        except watch.Deadline:
            raise CountInterrupted(counted, len(moves), depth, w.elapsed(), est) from None
    return counted


def perft_stats(fen_or_position: "str | Position | chess.Board", depth: int, *, backend: str = "cpu",
                threads: int | None = None, tt: bool = False, tt_mb: float | None = None,
                verify_seed: int | None = None, max_seconds: float | None = None,
                max_estimate_seconds: float | None = DEFAULT_MAX_ESTIMATE_SECONDS, force: bool = False,
                progress: bool | None = None) -> Stats:
    """Perft statistics: the leaf moves ``depth`` plies below a position counted by kind.

    Arguments as for :func:`perft`, with the same checks, limits and estimate rule: a count whose
    estimate (the plain count's, times the backend's ``stats_cost``, the measured cost of
    statistics) exceeds ``max_estimate_seconds`` is refused unless ``force``; ``max_seconds``
    stops it. Every backend counts statistics: ``cpu`` (every core by default, ``threads``; with
    ``tt``, through CPU statistics tables: perft_core.stats_tt), ``gpu`` and ``gpu-emulated`` (the BFS
    driver's levels down to the leaf parents, then the statistics leaf: perft_core.gpu.driver; with
    ``tt``, through statistics tables: perft_core.gpu.ttdriver); ``progress`` is accepted and draws
    nothing.

    Returns:
        A :class:`perft_core.Stats` (its docstring defines every counter and the Chess Programming
        Wiki's columns); depth 0 gives ``Stats(nodes=1)``.

    Raises:
        FenError, ValueError, CountRefused: as for :func:`perft`.
        StatsUnsupported (a ValueError): a ``verify_seed`` with ``max_seconds``.
        HashVerificationError: ``verify_seed`` (with ``tt``) counted statistics that differ from the
            first key seed's.
        ValueError: ``backend="gpu"`` where CuPy or a CUDA device is missing.
        CountInterrupted: ``max_seconds`` passed; ``partial`` is ``{uci: Stats}`` of the root moves
            counted in full.
    """
    depth = _depth(depth)
    engine, pos = _prepare_stats(fen_or_position, depth, backend, threads, tt, tt_mb, verify_seed, max_seconds,
                                 max_estimate_seconds, force, progress)
    if depth == 0:
        return Stats(nodes=1)
    if max_seconds is None:
        return engine.count_stats(pos, depth)
    return sum(engine.divide_stats(pos, depth, max_seconds).values(), Stats())


def divide_stats(fen_or_position: "str | Position | chess.Board", depth: int, *, backend: str = "cpu",
                 threads: int | None = None, tt: bool = False, tt_mb: float | None = None,
                 verify_seed: int | None = None, max_seconds: float | None = None,
                 max_estimate_seconds: float | None = DEFAULT_MAX_ESTIMATE_SECONDS, force: bool = False,
                 progress: bool | None = None) -> dict[str, Stats]:
    """:func:`perft_stats` split by root move: ``{uci_move: Stats}`` (UCI keys as :func:`divide`'s),
    sorted by UCI; ``{}`` at depth 0. At depth 1 each root move is itself the leaf move: its Stats
    has ``nodes`` 1 and its own kinds. The values add up to :func:`perft_stats`.

    Raises:
        FenError, ValueError, CountRefused, StatsUnsupported, CountInterrupted, HashVerificationError:
            as for :func:`perft_stats`.
    """
    depth = _depth(depth)
    engine, pos = _prepare_stats(fen_or_position, depth, backend, threads, tt, tt_mb, verify_seed, max_seconds,
                                 max_estimate_seconds, force, progress)
    if depth == 0:
        return {}
    return engine.divide_stats(pos, depth, max_seconds)


def _prepare_stats(fen_or_position, depth, backend, threads, tt, tt_mb, verify_seed, max_seconds,
                   max_estimate_seconds, force, progress) -> tuple[Backend, Position]:
    """:func:`_prepare`'s checks, then statistics' own (a backend that counts them, tables only where
    it counts statistics through them) and the estimate's refusal. Raises as :func:`perft_stats`."""
    engine, pos = _prepare(fen_or_position, depth, backend, threads, tt, tt_mb, verify_seed, max_seconds,
                           max_estimate_seconds, force, progress)
    if not engine.stats_cost:
        engine.count_stats(pos, depth)  # raises StatsUnsupported, naming the backend
    if tt and not engine.stats_tables:
        raise StatsUnsupported(f"backend {engine.name!r} counts statistics without transposition tables: leave "
                               "out tt (the CLI's --tt)")
    if force or max_estimate_seconds is None or depth == 0:
        return engine, pos
    if estimate.node_bound(pos, depth) / engine.speed_floor * engine.stats_cost <= max_estimate_seconds:
        return engine, pos
    est = estimate.estimate(pos, depth, backend=engine.name, threads=engine.threads, tt=tt, tt_mb=engine.tt_mb)
    est = dataclasses.replace(est, seconds=est.seconds * engine.stats_cost,
                              nodes_per_second=est.nodes_per_second / engine.stats_cost)
    if est.seconds > max_estimate_seconds and est.tt_seconds > max_estimate_seconds:  # as the plain count's rule
        raise CountRefused(est, max_estimate_seconds, f"{est.describe()} with statistics: over the limit of "
                                                      f"{estimate.format_seconds(max_estimate_seconds)}")
    return engine, pos
