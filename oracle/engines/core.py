"""Our own backends as an oracle engine: ``perft_core.divide`` / ``perft_core.perft``."""
from __future__ import annotations

from collections.abc import Sequence

from oracle.engines.base import BaseEngine, EngineError, check_depth

class CoreEngine(BaseEngine):
    """Our engine, ``perft_core.divide`` / ``perft_core.perft`` with a chosen backend.

    ``backend`` is passed through (``"cpu"``, ``"gpu"``, ``"gpu-emulated"``); ``threads`` too (None:
    every core this process may run on).
    ``tt``: count through transposition tables; ``verify_seed``: the Zobrist key seed with which
    :meth:`recount` checks a count before the drill believes it (needs ``tt``). The GPU backends
    use the process's one driver (``perft_core.gpu.registry.get_driver``) for every query.
    Any error from perft_core while counting (a ``HashVerificationError`` too) is re-raised as
    :class:`EngineError`. Raises ``ValueError`` for ``verify_seed`` without ``tt``, and for a
    ``verify_seed`` equal to the default key seed (``perft run``'s message: it would check nothing),
    here rather than at the first re-count deep in a walk.
    """

    def __init__(self, backend: str = "cpu", *, threads: int | None = None, tt: bool = False,
                 verify_seed: int | None = None):
        if verify_seed is not None and not tt:
            raise ValueError("--verify-seed needs --reference-tt (it re-counts through tables with another key seed)")
        if verify_seed is not None:
            from perft_core.zobrist import check_verify_seed

            check_verify_seed(verify_seed)  # ValueError: verify_seed must differ from the key seed 0x...
        self.backend = backend
        self.threads = threads
        self.tt = tt
        self.verify_seed = verify_seed
        self.name = f"perft_core[{backend}{', tt' if tt else ''}]"
        self.timeout: float | None = None  # seconds a count may take (oracle.engines.time_limit), None: no limit

    def _position(self, fen: str, moves: tuple[str, ...]):
        import perft_core

        position = perft_core.Position.from_fen(fen)
        for uci in moves:
            position = position.push(uci)
        return position

    def _call(self, what: str, fen: str, depth: int, moves: tuple[str, ...], verify_seed: int | None = None):
        import perft_core
        from perft_core.estimate import within_limit

        options = f"backend={self.backend!r}, threads={self.threads}, tt={self.tt}"
        if verify_seed is not None:
            options += f", verify_seed={verify_seed:#x}"
        command = f"perft_core.{what}({fen!r}, {depth}, {options})"
        if moves:
            command += f" after moves {' '.join(moves)}"
        try:
            position = self._position(fen, moves)
            func = perft_core.divide if what == "divide" else perft_core.perft
            # no run-time estimate: the oracle makes hundreds of small calls and bounds its own time;
            # a time limit (self.timeout) only where the count could outlast it (estimate.within_limit,
            # about 1 ms): a time-limited count goes root move by root move (Kiwipete perft 4: 33 ms
            # against 4.6 ms)
            limit = self.timeout
            if limit is not None and within_limit(position, depth, self.backend, limit):
                limit = None
            return func(position, depth, backend=self.backend, threads=self.threads, tt=self.tt,
                        verify_seed=verify_seed, progress=False, max_estimate_seconds=None, max_seconds=limit)
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

    def recount(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int | None:
        """Count again with the ``verify_seed`` key seed (and the default one) before a count is
        believed; None when no ``verify_seed`` was given. Raises :class:`EngineError` when the two
        seeds' counts differ (a hash collision in the tables) or the count fails."""
        if self.verify_seed is None or check_depth(depth) == 0:
            return None
        return int(self._call("perft", fen, depth, tuple(moves), verify_seed=self.verify_seed))

