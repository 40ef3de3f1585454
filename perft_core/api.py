"""Public counting API: ``perft`` and ``divide`` over the available backends."""
from __future__ import annotations

from .position import Position, as_position

BACKENDS = ("cpu", "gpu", "gpu-emulated")




def _check(depth: object, backend: str, threads: object) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    if depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")


def perft(fen_or_position: str | Position, depth: int, *, backend: str = "cpu", threads: int = 1,
          tt: bool = False, tt_mb: float | None = None, verify_seed: int | None = None) -> int:
    """Count the leaf nodes of the legal move tree ``depth`` plies below a position.

    Args:
        fen_or_position: a FEN / X-FEN / Shredder-FEN string (Chess960 inferred) or a Position.
        depth: plies, an int >= 0; perft(…, 0) is 1.
        backend: "cpu" (C++ extension), "gpu" (CuPy) or "gpu-emulated" (the GPU driver on NumPy).
        threads: CPU threads for the cpu backend (the tree is split two plies below the root).
        tt: count through transposition tables (same counts): CPU tables (perft_core.zobrist) or,
            on the GPU backends, device tables plus a host cache (perft_core.gpu.ttdriver).
        tt_mb: memory budget of those tables, MiB; default 256 on the CPU, 30 % of the GPU
            driver's memory on the GPU backends (fixed when the process's driver is made).
        verify_seed: with tt, count again with tables keyed by this Zobrist seed and raise
            HashVerificationError if the two counts differ.

    Returns:
        The node count as a Python int.

    Raises:
        FenError: the FEN is malformed or describes a position perft is undefined for.
        ValueError: bad depth, backend, threads or tt options.
        perft_core.zobrist.HashVerificationError: the verify_seed count differs.
    """
    _check(depth, backend, threads)
    pos = as_position(fen_or_position)
    use_tt = _use_tt(tt, verify_seed)
    if use_tt and backend == "cpu":
        from . import zobrist

        return zobrist.perft_tt(pos, depth, threads=threads, tt_mb=_cpu_tt_mb(tt_mb), verify_seed=verify_seed)
    if backend == "cpu":
        from . import _core

        return int(_core.perft(pos._core_args(), depth, threads))
    return _gpu_count(backend, use_tt, tt_mb, verify_seed, lambda drv: drv.perft(pos, depth))


def divide(fen_or_position: str | Position, depth: int, *, backend: str = "cpu", threads: int = 1,
           tt: bool = False, tt_mb: float | None = None, verify_seed: int | None = None) -> dict[str, int]:
    """Perft split by root move: ``{uci_move: nodes}``, the counts below each legal move.

    Arguments as for :func:`perft`. UCI keys: promotions as ``e7e8q``; castling as king to its
    destination (``e1g1``) in standard chess and king-takes-rook (``e1h1``) in Chess960, as
    Stockfish writes them with UCI_Chess960. Depth 0 gives ``{}``; depth 1 gives 1 per move.

    Raises:
        FenError, ValueError, HashVerificationError: as for :func:`perft`.
    """
    _check(depth, backend, threads)
    pos = as_position(fen_or_position)
    use_tt = _use_tt(tt, verify_seed)
    if depth == 0:
        return {}
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
