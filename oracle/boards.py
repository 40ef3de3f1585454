"""Pictures of a localization: the position where the oracle stopped, drawn by python-chess
(``chess.svg.board``), and the divide at that node, engine beside reference.

Marks on the board (:func:`board_svg`): moves the engine generates that are not legal
(``extra``) are red arrows, legal moves it misses (``missing``) green ones, a move it counts other
than once (a ``count`` verdict) orange, the move of a ``state`` verdict blue with the squares whose
state it carries wrongly (the en passant square, the rook of a castling right) filled, candidate
moves (a ``candidates`` verdict) purple; the last move of the path is highlighted as python-chess
highlights a last move. The caption (:func:`caption`) gives the side to move and the path from the
root in SAN.

Used by the HTML and Markdown reports (:mod:`oracle.report`) and by ``perft diff --svg FILE``.
"""
from __future__ import annotations

from dataclasses import dataclass

import chess
import chess.svg

from oracle.engines import board_from, fen_of
from oracle.localize import Localization

__all__ = ["COLORS", "DivideRow", "board_svg", "caption", "divide_rows", "node_board"]

#: Arrow and fill colours by what they mark (8-digit hex: python-chess's alpha channel).
COLORS = {"extra": "#d62728cc", "missing": "#2ca02ccc", "count": "#ff7f0ecc", "state": "#1f77b4cc",
          "state_square": "#1f77b466", "candidate": "#9467bdaa"}


def node_board(loc: Localization) -> chess.Board:
    """The board at ``loc.fen`` with the path from the root as its move stack (python-chess).

    The path is replayed from ``loc.root_fen`` so the last move can be highlighted and the path
    written in SAN; where it does not replay to ``loc.fen`` (an engine's illegal move on the path
    cannot happen, but a hand-made localization may), the board is read from ``loc.fen`` alone.
    Raises ``ValueError`` when ``loc.fen`` is not a FEN.
    """
    board = board_from(loc.root_fen)
    try:
        for move in loc.path:
            board.push(board.parse_uci(move))
    except ValueError:
        return board_from(loc.fen)
    return board if fen_of(board) == loc.fen else board_from(loc.fen)


def _move(text: str) -> chess.Move | None:
    """A UCI move string as a ``chess.Move`` for an arrow (legal or not); None when it names no
    two distinct squares (``0000``, garbage an engine printed)."""
    try:
        move = chess.Move.from_uci(text.strip().lower())
    except ValueError:
        return None
    return move if move and move.from_square != move.to_square else None


def _state_squares(board: chess.Board, loc: Localization) -> chess.SquareSet:
    """The squares whose state a ``state`` verdict says the engine carries wrongly: for each move
    named, the child's FEN against the variant the engine counts as if it had (``state["fens"]``):
    an en passant square that differs, the rook square of every castling right that differs."""
    squares = chess.SquareSet()
    for uci, variant_fen in zip(loc.state.get("moves", []), loc.state.get("fens", [])):
        child = board.copy(stack=False)
        try:
            child.push(child.parse_uci(uci))
            variant = chess.Board(variant_fen, chess960=True)
        except ValueError:
            continue
        child_fen = fen_of(child)
        eps = (child_fen.split()[3], variant_fen.split()[3])
        if eps[0] != eps[1]:
            squares |= chess.SquareSet(chess.parse_square(s) for s in eps if s != "-")
        squares |= chess.SquareSet(chess.Board(child_fen, chess960=True).castling_rights ^ variant.castling_rights)
    return squares


def board_svg(loc: Localization, size: int = 360) -> str:
    """An SVG picture (text, ``size`` px square) of the position where ``loc``'s walk ended, with
    its verdict's marks (module docstring). For an ``agree`` localization: the root, unmarked.
    Raises ``ValueError`` when the localization's FEN cannot be read."""
    board = node_board(loc)
    arrows: list[chess.svg.Arrow] = []
    fill: dict[int, str] = {}

    def arrow(uci: str, color: str) -> None:
        move = _move(uci)
        if move is not None:
            arrows.append(chess.svg.Arrow(move.from_square, move.to_square, color=color))

    for uci in loc.extra:
        arrow(uci, COLORS["extra"])
    for uci in loc.missing:
        arrow(uci, COLORS["missing"])
    if loc.kind == "count":
        for uci in loc.wrong:
            arrow(uci, COLORS["count"])
    if loc.kind == "state":
        for uci in loc.state.get("moves", []):
            arrow(uci, COLORS["state"])
        for square in _state_squares(board, loc):
            fill[square] = COLORS["state_square"]
    if loc.kind == "candidates":
        for cand in loc.candidates:
            for uci in cand.get("moves", []):
                arrow(uci, COLORS["candidate"])
    king = board.king(board.turn)
    svg = chess.svg.board(board, size=size, arrows=arrows, fill=fill,
                          lastmove=board.peek() if board.move_stack else None,
                          check=king if king is not None and board.is_check() else None)
    head, _, rest = svg.partition("<desc>")  # the text diagram in <desc>: the caption says it better
    return head + rest.partition("</desc>")[2] if rest else svg


def caption(loc: Localization) -> dict[str, str]:
    """What the board's caption says: ``to_move`` (``"White to move"``), ``path`` (the moves from
    the root in SAN with move numbers, ``""`` at the root) and ``marks`` (what the colours mean
    on this board)."""
    board = node_board(loc)
    san = ""
    if board.move_stack:
        replay = board.root()
        san = replay.variation_san(board.move_stack)
    marks = []
    if loc.extra:
        marks.append("red: generated, not legal")
    if loc.missing:
        marks.append("green: legal, not generated")
    if loc.kind == "count":
        marks.append("orange: counted other than once")
    if loc.kind == "state":
        marks.append("blue: the move whose make carries wrong state, and the squares concerned")
    if loc.kind == "candidates" and loc.candidates:
        marks.append("purple: candidate moves")
    return {"to_move": ("White" if board.turn == chess.WHITE else "Black") + " to move", "path": san,
            "marks": "; ".join(marks)}


@dataclass(frozen=True)
class DivideRow:
    """One move of the divide at the node where a walk ended. ``engine`` / ``reference``: nodes
    below the move (None: not counted, or not generated); ``note``: ``"extra"``, ``"missing"``,
    ``"differs"`` or ``""``; ``differs``: the row disagrees."""

    move: str
    engine: int | None
    reference: int | None
    note: str

    @property
    def differs(self) -> bool:
        """Whether the engine and the reference disagree on this move."""
        return self.note != ""


def divide_rows(loc: Localization) -> list[DivideRow]:
    """The divide at the last level of ``loc`` (engine vs reference per move), rows that differ
    first, then by move; empty when the walk has no level. A move only the engine generates is
    ``extra``, one only the reference lists ``missing``, counts that differ ``differs``."""
    if not loc.levels:
        return []
    level = loc.levels[-1]
    extra, missing = set(loc.extra), set(loc.missing)
    rows = []
    for move in sorted(set(level.engine) | set(level.reference) | extra | missing):
        eng, ref = level.engine.get(move), level.reference.get(move)
        if move in extra:
            note = "extra"
        elif move in missing:
            note = "missing"
        elif eng is not None and ref is not None and eng != ref:
            note = "differs"
        else:
            note = ""
        rows.append(DivideRow(move, eng, ref, note))
    return sorted(rows, key=lambda r: (not r.differs, r.move))
