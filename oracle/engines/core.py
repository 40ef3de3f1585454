"""Our own backends as an oracle engine: ``perft_core.divide`` / ``perft_core.perft``."""
from __future__ import annotations

from collections.abc import Sequence

from oracle.engines.base import BaseEngine, EngineError, check_depth

class CoreEngine(BaseEngine):
    """Our engine, ``perft_core.divide`` / ``perft_core.perft`` with a chosen backend.

    ``backend`` is passed through (``"cpu"``, ``"gpu"``, ``"gpu-emulated"``); ``threads`` too.
    Any error from perft_core while counting is re-raised as :class:`EngineError`.
    """

    def __init__(self, backend: str = "cpu", *, threads: int = 1):
        self.backend = backend
        self.threads = threads
        self.name = f"perft_core[{backend}]"

    def _position(self, fen: str, moves: tuple[str, ...]):
        import perft_core

        position = perft_core.Position.from_fen(fen)
        for uci in moves:
            position = position.push(uci)
        return position

    def _call(self, what: str, fen: str, depth: int, moves: tuple[str, ...]):
        import perft_core

        command = f"perft_core.{what}({fen!r}, {depth}, backend={self.backend!r}, threads={self.threads})"
        if moves:
            command += f" after moves {' '.join(moves)}"
        try:
            position = self._position(fen, moves)
            func = perft_core.divide if what == "divide" else perft_core.perft
            return func(position, depth, backend=self.backend, threads=self.threads, progress=False)
        except Exception as exc:  # an engine failure, whatever its type, is reported as one
            raise EngineError(self.name, f"{type(exc).__name__} while counting",
                              command=command, output=str(exc)) from exc

    def _divide(self, fen, depth, moves):
        return dict(self._call("divide", fen, depth, moves))

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies (``perft_core.perft``, no divide); 1 at depth 0."""
        if check_depth(depth) == 0:
            return 1
        return int(self._call("perft", fen, depth, tuple(moves)))
