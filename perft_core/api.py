"""Public counting API: ``perft`` and ``divide`` over the available backends."""
from __future__ import annotations

from .position import Position

BACKENDS = ("cpu", "gpu", "gpu-emulated")


def _position(fen_or_position: str | Position) -> Position:
    if isinstance(fen_or_position, Position):
        return fen_or_position
    if isinstance(fen_or_position, str):
        return Position.from_fen(fen_or_position)
    raise TypeError(f"expected a FEN string or a Position, got {type(fen_or_position).__name__}")


def _check(depth: object, backend: str, threads: object) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    if depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")


def perft(fen_or_position: str | Position, depth: int, *, backend: str = "cpu", threads: int = 1) -> int:
    """Count the leaf nodes of the legal move tree ``depth`` plies below a position.

    Args:
        fen_or_position: a FEN / X-FEN / Shredder-FEN string (Chess960 inferred) or a Position.
        depth: plies, an int >= 0; perft(…, 0) is 1.
        backend: "cpu" (C++ extension), "gpu" (CuPy) or "gpu-emulated" (the GPU driver on NumPy).
        threads: CPU threads for the cpu backend (the tree is split two plies below the root).

    Returns:
        The node count as a Python int.

    Raises:
        FenError: the FEN is malformed or describes a position perft is undefined for.
        ValueError: bad depth, backend or threads.
    """
    _check(depth, backend, threads)
    pos = _position(fen_or_position)
    if backend == "cpu":
        from . import _core

        return int(_core.perft(pos._core_args(), depth, threads))
    return _gpu_driver(backend).perft(pos, depth)


def divide(fen_or_position: str | Position, depth: int, *, backend: str = "cpu", threads: int = 1) -> dict[str, int]:
    """Perft split by root move: ``{uci_move: nodes}``, the counts below each legal move.

    Arguments as for :func:`perft`. UCI keys: promotions as ``e7e8q``; castling as king to its
    destination (``e1g1``) in standard chess and king-takes-rook (``e1h1``) in Chess960, as
    Stockfish writes them with UCI_Chess960. Depth 0 gives ``{}``; depth 1 gives 1 per move.

    Raises:
        FenError, ValueError: as for :func:`perft`.
    """
    _check(depth, backend, threads)
    pos = _position(fen_or_position)
    if depth == 0:
        return {}
    if backend == "cpu":
        from . import _core

        return {m: int(n) for m, n in sorted(_core.divide(pos._core_args(), depth, threads))}
    return _gpu_driver(backend).divide(pos, depth)


def _gpu_driver(backend: str):
    from .gpu import get_driver

    return get_driver(backend)
