"""Public counting API: ``perft`` and ``divide`` over the available backends."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import limits
from .estimate import DEFAULT_MAX_ESTIMATE_SECONDS
from .position import Position, as_position
from .threads import resolve_threads

if TYPE_CHECKING:
    import chess

BACKENDS = ("cpu", "gpu", "gpu-emulated")


def _check(depth: object, backend: str, threads: object) -> int:
    """Validates the options; returns the thread count (None: every available core)."""
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    if depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    threads = resolve_threads(threads)
    limits.check_count(depth, threads)  # bounds: recursion depth and threads (one-line errors, exit 2)
    return threads


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
        tt_mb: memory budget of those tables, MiB; default 256 on the CPU, 60 % of the GPU
            driver's memory on the GPU backends (fixed when the process's driver is made).
        verify_seed: with tt, count again with tables keyed by this Zobrist seed and raise
            HashVerificationError if the two counts differ.
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
    threads = _check(depth, backend, threads)
    pos = as_position(fen_or_position)
    use_tt = _use_tt(tt, verify_seed)
    watched = _watched(pos, depth, backend, threads, use_tt, tt_mb, verify_seed, max_seconds,
                       max_estimate_seconds, force, progress)
    if watched is not None:
        return sum(watched.values()) if depth > 0 else 1
    if use_tt and backend == "cpu":
        from . import zobrist

        return zobrist.perft_tt(pos, depth, threads=threads, tt_mb=_cpu_tt_mb(tt_mb), verify_seed=verify_seed)
    if backend == "cpu":
        from . import _core

        return int(_core.perft(pos._core_args(), depth, threads))
    return _gpu_count(backend, use_tt, tt_mb, verify_seed, lambda drv: drv.perft(pos, depth))


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
    threads = _check(depth, backend, threads)
    pos = as_position(fen_or_position)
    use_tt = _use_tt(tt, verify_seed)
    if depth == 0:
        return {}
    watched = _watched(pos, depth, backend, threads, use_tt, tt_mb, verify_seed, max_seconds,
                       max_estimate_seconds, force, progress)
    if watched is not None:
        return dict(sorted(watched.items()))
    if use_tt and backend == "cpu":
        from . import zobrist

        return zobrist.divide_tt(pos, depth, threads=threads, tt_mb=_cpu_tt_mb(tt_mb), verify_seed=verify_seed)
    if backend == "cpu":
        from . import _core

        return {m: int(n) for m, n in sorted(_core.divide(pos._core_args(), depth, threads))}
    return _gpu_count(backend, use_tt, tt_mb, verify_seed, lambda drv: drv.divide(pos, depth))


def _use_tt(tt: object, verify_seed: object) -> bool:
    """Validate the transposition-table options; True to count through tables."""
    if not isinstance(tt, bool):
        raise ValueError(f"tt must be True or False, got {tt!r}")
    if verify_seed is not None and not tt:
        raise ValueError("verify_seed needs tt=True (it re-counts through tables with another key seed)")
    return tt


def _cpu_tt_mb(tt_mb: float | None) -> float:
    from .zobrist import DEFAULT_TT_MB

    return DEFAULT_TT_MB if tt_mb is None else tt_mb


def _gpu_count(backend: str, tt: bool, tt_mb: float | None, verify_seed: int | None, count):
    """Run ``count(driver)`` on the process's GPU driver; with verify_seed, again with that key
    seed, raising HashVerificationError when the two results differ."""
    from .gpu import get_driver

    drv = get_driver(backend, tt_mb)
    drv.whole_counts()
    drv.tt_enabled = tt
    try:
        result = count(drv)
        if verify_seed is not None:
            from .zobrist import HashVerificationError

            default_seed = drv.seed
            drv.reseed(verify_seed)
            try:
                again = count(drv)
            finally:
                drv.reseed(default_seed)
            if again != result:
                raise HashVerificationError(
                    f"GPU counts differ between key seeds {default_seed:#x} and {verify_seed:#x}: {result} vs {again}")
        return result
    finally:
        drv.tt_enabled = False


def _check_limits(max_seconds: object, max_estimate_seconds: object, force: object, progress: object) -> None:
    for name, value in (("max_seconds", max_seconds), ("max_estimate_seconds", max_estimate_seconds)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not value > 0 or value != value):
            raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")
    if not isinstance(force, bool):
        raise ValueError(f"force must be True or False, got {force!r}")
    if progress is not None and progress != "lines" and not isinstance(progress, bool):
        raise ValueError(f"progress must be True, False, None or 'lines', got {progress!r}")


def _watched(pos: Position, depth: int, backend: str, threads: int, tt: bool, tt_mb: float | None,
             verify_seed: int | None, max_seconds: float | None, max_estimate_seconds: float | None,
             force: bool, progress: bool | None) -> dict[str, int] | None:
    """Estimate the count, refuse it over the limit, and count a long or time-limited one root move
    by root move (progress bar, deadline). Returns the divide when it counted, None when the plain
    one-call path should count (a short count with no time limit: the same calls as ever).

    Raises CountRefused, CountInterrupted, HashVerificationError.
    """
    import functools

    from . import watch
    from .errors import CountInterrupted, CountRefused
    from .estimate import SPEED_FLOOR, estimate, format_seconds, node_bound

    _check_limits(max_seconds, max_estimate_seconds, force, progress)
    bar = watch.wants_bar(progress)
    # A TT count's estimate is the plain count's time, an upper bound that can be wildly high (a
    # walled position counts 2**64 nodes in a second through its tables): a TT count is refused only
    # when even the count through perfect tables (Estimate.tt_seconds) is over the limit.
    # The sampled estimate costs 20-250 ms (and two small GPU counts): it is made only when a cheap
    # bound (about 1 ms) says the count could exceed the limit or last long enough for progress
    # lines, for a progress bar, or to split a time-limited CPU count; a short count pays the bound
    # alone (issue 27).
    # An upper bound of the count's seconds (estimate.within_limit's: the node bound over the
    # backend's speed floor), made once for both questions: each costs up to ~1 ms of CPU plies.
    bound_seconds = functools.cache(lambda: node_bound(pos, depth) / SPEED_FLOOR[backend])
    refusing = not force and max_estimate_seconds is not None and bound_seconds() > max_estimate_seconds
    # no terminal: a line a minute for a count over LINES_SECONDS
    lines = watch.wants_lines(progress) and bound_seconds() > watch.LINES_SECONDS
    split = max_seconds is not None and backend == "cpu" and not tt
    est = (estimate(pos, depth, backend=backend, threads=threads, tt=tt, tt_mb=tt_mb)
           if refusing or bar or lines or split else None)
    if refusing and est.seconds > max_estimate_seconds and est.tt_seconds > max_estimate_seconds:
        raise CountRefused(est, max_estimate_seconds,
                           f"{est.describe()}: over the limit of {format_seconds(max_estimate_seconds)}")
    bar = bar and est is not None and est.seconds > watch.BAR_SECONDS
    lines = lines and est is not None and est.seconds > watch.LINES_SECONDS
    if depth == 0 or (not bar and not lines and max_seconds is None):
        return None
    moves = sorted(pos.legal_moves())
    if max_seconds is not None:  # a limit keeps as many subtrees as it allows: the smallest first
        moves = _smallest_first(pos, depth, moves)
    passes: list[dict[str, int]] = []  # GPU: one divide per key seed; the last holds the moves checked

    def gpu_pass(drv) -> dict[str, int]:
        passes.append({})
        return _gpu_moves(drv, pos, depth, moves, w, passes[-1])

    gpu_passes = 2 if verify_seed is not None and backend != "cpu" else 1  # the CPU checks each move at once
    with watch.Watch(est, max_seconds, bar, passes=gpu_passes, lines=lines) as w:
        try:
            if backend == "cpu":
                passes.append({})
                split = _split_plies(pos, depth, est, moves) if max_seconds is not None and not tt else 0
                _cpu_moves(pos, depth, moves, threads, tt, tt_mb, verify_seed, w, passes[0], split)
            else:
                _gpu_count(backend, tt, tt_mb, verify_seed, gpu_pass)
        except watch.Deadline:
            raise CountInterrupted(passes[-1] if passes else {}, len(moves), depth, w.elapsed(), est) from None
    return passes[0]


def _smallest_first(pos, depth: int, moves: list[str]) -> list[str]:
    """``moves`` ordered by the size of their subtree three plies deep (a cheap proxy for the size
    at ``depth``: under 10^5 nodes each), so that a time-limited count finishes the smallest
    subtrees first and its partial divide is non-empty whenever the limit allows one subtree."""
    from . import _core

    probe = min(depth - 1, 3)
    size = {m: int(_core.perft(pos.push(m)._core_args(), probe, 1)) for m in moves}
    return sorted(moves, key=lambda m: (size[m], m))


CALL_SECONDS = 0.25
"""With a time limit, a CPU call should take about this long at most, so the limit is kept to
about this much (a root move of startpos perft 9 is one 100 s call otherwise)."""


def _split_plies(pos, depth: int, est, moves) -> int:
    """Plies (0-3) below each root move at which a time-limited CPU count is split into separate
    calls, so that one call is estimated at most CALL_SECONDS (from the estimate ``est``)."""
    from . import _core

    if est is None:
        return 0
    calls, s = len(moves), 0
    while s < min(3, depth - 2) and est.seconds / max(calls, 1) > CALL_SECONDS:
        s += 1
        calls = int(_core.perft(pos._core_args(), s + 1, 1))
    return s


def _subtree(position, depth: int, split: int, threads: int, w) -> int:
    """perft(position, depth) as the sum of its descendants' counts ``split`` plies down, one
    extension call each, checking the deadline before every call."""
    if split == 0 or depth <= 1:
        return limits.cpu_count(w, position._core_args(), depth, threads)  # stops at the deadline itself
    return sum(_subtree(position.push(m), depth - 1, split - 1, threads, w) for m in position.legal_moves())


def _cpu_moves(pos, depth, moves, threads, tt, tt_mb, verify_seed, w, parts, split: int = 0) -> None:
    """Count each root move's subtree with the CPU extension into ``parts``: one call per move, or
    per descendant ``split`` plies below it (a time limit then stops within about CALL_SECONDS)."""

    if tt:
        from . import zobrist

        zobrist._check_verify(verify_seed, None, None)  # a verify seed equal to the default checks nothing
        args = pos._core_args()
        table = zobrist._tables(depth, None, _cpu_tt_mb(tt_mb), None, args)
        check = zobrist._tables(depth, None, _cpu_tt_mb(tt_mb), verify_seed, args) if verify_seed is not None else None
    for i, move in enumerate(moves, 1):
        child = pos.push(move)
        if not tt:
            n = _subtree(child, depth - 1, split, threads, w)
        else:
            n = zobrist.perft_tt(child, depth - 1, threads=threads, table=table)
            if check is not None:
                again = zobrist.perft_tt(child, depth - 1, threads=threads, table=check)
                _compare({move: n}, {move: again}, depth, verify_seed)
        parts[move] = n
        w.advance(n, i, len(moves))


def _gpu_moves(drv, pos, depth, moves, w, parts) -> dict[str, int]:
    """Count each root move's subtree with the GPU driver into ``parts``; chunks report to ``w``.

    With tables, the root moves share them (``keep_tables``, as a deep run's units do): positions
    below one root move that transpose into another's were counted again with tables rebuilt for
    every move (startpos perft 12 with a time limit: 20 counts of perft 11 with cold tables)."""
    drv.progress = w.chunk
    if drv.tt_enabled:
        drv.keep_tables(("watched", pos.fen()), plan_depth=depth, game=pos)
    try:
        for i, move in enumerate(moves, 1):
            n = drv.count_roots([pos.push(move)], depth - 1, game=pos)[0]  # the root's castling geometry
            parts[move] = n
            w.advance(n, i, len(moves))
    finally:
        drv.progress = None
        drv.keep_tables(None)
    return parts


def _compare(first: dict[str, int], again: dict[str, int], depth: int, verify_seed: int) -> None:
    from .zobrist import HashVerificationError

    bad = sorted(m for m in first if first[m] != again.get(m))
    if bad:
        m = bad[0]
        raise HashVerificationError(f"divide {depth}: {m} has {first[m]} nodes with the default key seed but "
                                    f"{again.get(m)} with seed {verify_seed:#x} ({len(bad)} moves differ)")
