"""The reference engine: python-chess move generation with bulk counting and an exact cache."""
from __future__ import annotations

import time
from collections.abc import Sequence

import chess

from oracle.engines.base import BaseEngine, EngineError, board_from, check_depth, describe_query
from oracle.engines.divide import Divide

def position_key(board: chess.Board) -> tuple:
    """An exact key of what decides every perft count below ``board``: its pieces (bitboards per
    piece type and colour, ints), side to move, castling rights (``clean_castling_rights``) and the
    en passant square only when an en passant capture is legal (``has_legal_en_passant``), as a
    hashable tuple. The same fields as python-chess's private ``Board._transposition_key`` (1.10),
    read through its public API. Two boards with equal keys have equal perft counts at every depth
    (in one variant: the caller adds ``board.chess960``, which changes castling moves)."""
    return (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
            board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.turn,
            board.clean_castling_rights(), board.ep_square if board.has_legal_en_passant() else None)


class PythonChessEngine(BaseEngine):
    """The reference: python-chess move generation, ~1 M leaf nodes/s with bulk counting.

    Leaves are counted in bulk (the number of legal moves one ply above them). Interior nodes with
    at least ``2`` plies left are cached by an exact key (:func:`position_key`: pieces, side,
    castling rights, legal en passant square) and the remaining depth; the cache is shared across
    calls and cleared when it holds more than ``cache_size`` entries (0 disables it).

    Subclasses may override :meth:`moves` to plant a bug (the tests do exactly that).
    Never use it for large counts: it is for localizing and for small tables only.
    ``timeout``: seconds a query (one ``divide`` or ``perft``) may take, checked at its interior
    nodes; one that runs out raises :class:`EngineError` ("timed out"); None: no limit
    (:func:`oracle.engines.time_limit` sets it, as for the engines that run a program: as the
    reference of a deep root, an unbounded count ran on past ``--max-seconds`` for hours).
    """

    name = "python-chess"

    def __init__(self, *, cache_size: int = 1_000_000):
        self.cache_size = cache_size
        self._cache: dict = {}
        self.timeout: float | None = None
        self._query: tuple[float, str] | None = None  # the query being counted: its deadline, itself

    def _start(self, fen: str, depth: int, moves: tuple[str, ...]) -> None:
        self._query = None if self.timeout is None else (time.monotonic() + self.timeout,
                                                         describe_query(fen, depth, moves))

    def moves(self, board: chess.Board) -> list[chess.Move]:
        """The legal moves of ``board`` (override to make a deliberately broken engine)."""
        return list(board.legal_moves)

    def _count(self, board: chess.Board, depth: int) -> int:
        if depth == 1:
            return len(self.moves(board))
        if self._query is not None and time.monotonic() > self._query[0]:
            raise EngineError(self.name, f"timed out after {self.timeout:g} s", command=self._query[1])
        key = None
        if self.cache_size:
            key = (position_key(board), board.chess960, depth)
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        nodes = 0
        for move in self.moves(board):
            board.push(move)
            nodes += self._count(board, depth - 1)
            board.pop()
        if key is not None:
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            self._cache[key] = nodes
        return nodes

    def _board(self, fen: str, depth: int, moves: tuple[str, ...]) -> chess.Board:
        try:
            return board_from(fen, moves)
        except ValueError as exc:
            raise EngineError(self.name, "cannot set up the position",
                              command=describe_query(fen, depth, moves), output=str(exc)) from exc

    def _divide(self, fen, depth, moves):
        board = self._board(fen, depth, moves)
        self._start(fen, depth, moves)
        result = Divide()  # a move its generator gives twice is listed twice (a planted bug's)
        for move in self.moves(board):
            if depth == 1:
                count = 1
            else:
                board.push(move)
                count = self._count(board, depth - 1)
                board.pop()
            result.add(board.uci(move), count)
        return result

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies (bulk counted, cached); 1 at depth 0. Raises
        :class:`EngineError` for a position it cannot set up, or past ``timeout``."""
        if check_depth(depth) == 0:
            return 1
        board = self._board(fen, depth, tuple(moves))
        self._start(fen, depth, tuple(moves))
        return self._count(board, depth)
