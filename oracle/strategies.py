"""Hypothesis strategies for chess positions, drawn as random legal games with python-chess.

``random_walk_fens`` plays a random legal walk from a start position and yields the FEN of where
it stops. Each walk draws a preference and its strength (50, 80 or 95 % of plies):
- none: uniform over the legal moves;
- tactical: captures (en passant too), castling, promotions, checks, and double pawn pushes
  that land beside an enemy pawn (so en passant is possible next ply);
- lead pawn: the most advanced pawns push on, so pawns pile up one step from promoting;
- clear back rank: knights, bishops and queens leave home, so castling becomes legal.
Half the walks end on a double pawn push, so that the FEN carries an en passant square.
Every value (walk length, preference, each move) is drawn from hypothesis, so failures shrink to
short walks of "first" moves and replay from the example database. Only tests import this
module (it needs hypothesis).
"""
from __future__ import annotations

import chess
from hypothesis import strategies as st

from oracle.tables import double_push_allows_en_passant

__all__ = ["random_walk_fens", "chess960_start_fens", "EN_PASSANT_MODES"]

EN_PASSANT_MODES: tuple[str, ...] = ("legal", "fen", "xfen")
"""python-chess ``Board.fen(en_passant=...)`` modes the walks write, drawn per example:
``"legal"`` keeps the en passant square only if an en passant capture is legal, ``"xfen"`` if one
is pseudo-legal, ``"fen"`` after every double pawn push (so the FEN can name an en passant square
although no capture onto it is possible, e.g. the capturing pawn is pinned or absent)."""


def _is_double_push(board: chess.Board, move: chess.Move) -> bool:
    return abs(move.to_square - move.from_square) == 16 and board.piece_type_at(move.from_square) == chess.PAWN





# Preferences: given the legal moves, the ones a biased walk picks from (empty: no preference).

def _tactical(board: chess.Board, moves: list[chess.Move]) -> list[chess.Move]:
    """Captures (en passant too), castling, promotions, pushes that allow en passant, checks."""
    return [
        m for m in moves
        if m.promotion or board.is_capture(m) or board.is_castling(m)
        or double_push_allows_en_passant(board, m) or board.gives_check(m)
    ]


def _lead_pawn(board: chess.Board, moves: list[chess.Move]) -> list[chess.Move]:
    """Non-promoting moves of the side's most advanced pawns: pawns race to the seventh rank and
    pile up there, one step from promoting (the walk promotes when it falls back to any move)."""
    def progress(m: chess.Move) -> int:
        rank = chess.square_rank(m.from_square)
        return rank if board.turn == chess.WHITE else 7 - rank

    pawn_moves = [m for m in moves if not m.promotion and board.piece_type_at(m.from_square) == chess.PAWN]
    lead = max(map(progress, pawn_moves), default=None)
    return [m for m in pawn_moves if progress(m) == lead]


def _clear_back_rank(board: chess.Board, moves: list[chess.Move]) -> list[chess.Move]:
    """Knights, bishops and queens leaving the back rank, so that castling becomes legal (and,
    not being preferred itself, often stays available at the end of the walk)."""
    back_rank = chess.BB_RANK_1 if board.turn == chess.WHITE else chess.BB_RANK_8
    movers = back_rank & board.occupied_co[board.turn] & (board.knights | board.bishops | board.queens)
    return [m for m in moves if movers & chess.BB_SQUARES[m.from_square]]


_PREFERENCES = {
    "none": None, "tactical": _tactical, "lead_pawn": _lead_pawn, "clear_back_rank": _clear_back_rank,
}


@st.composite
def _walk(draw: st.DrawFn, chess960: bool | None, min_plies: int, max_plies: int) -> str:
    if chess960 is None:
        chess960 = draw(st.booleans())
    if chess960:
        board = chess.Board.from_chess960_pos(draw(st.integers(0, 959)))
    else:
        board = chess.Board()
    plies = draw(st.integers(min_plies, max_plies))
    prefer = _PREFERENCES[draw(st.sampled_from(tuple(_PREFERENCES)))]
    bias = draw(st.sampled_from((50, 80, 95)))  # percent chance per ply of a preferred move
    for ply in range(plies):
        if board.is_game_over():
            break
        moves = list(board.legal_moves)
        if ply == plies - 1 and draw(st.booleans()):
            # End on a double push half the time, so the FEN has an en passant square.
            moves = ([m for m in moves if double_push_allows_en_passant(board, m)]
                     or [m for m in moves if _is_double_push(board, m)] or moves)
        elif prefer is not None and draw(st.integers(0, 99)) < bias:
            moves = prefer(board, moves) or moves
        board.push(moves[draw(st.integers(0, len(moves) - 1))])
    en_passant = draw(st.sampled_from(EN_PASSANT_MODES))
    return board.fen(shredder=chess960, en_passant=en_passant)


def random_walk_fens(chess960: bool | None = False, min_plies: int = 0,
                     max_plies: int = 40) -> st.SearchStrategy[str]:
    """FENs of positions reached by a random legal walk of ``min_plies..max_plies`` plies.

    ``chess960=False`` walks from the standard start and yields standard FEN (castling ``KQkq``);
    ``True`` from one of the 960 Chess960 starts (``chess.Board.from_chess960_pos``) and yields
    Shredder-FEN (castling by rook file, ``HAha``), which keeps every right exact; ``None`` draws
    either. The walk stops early when the game is over. The en passant field is written in one
    of ``EN_PASSANT_MODES``, drawn per example. Raises ValueError for a bad plies range.
    """
    if not 0 <= min_plies <= max_plies:
        raise ValueError(f"need 0 <= min_plies <= max_plies, got {min_plies}, {max_plies}")
    return _walk(chess960, min_plies, max_plies)


def chess960_start_fens() -> st.SearchStrategy[str]:
    """Shredder-FENs of the 960 Chess960 start positions (Scharnagl numbers 0..959; 518 is standard)."""
    return st.integers(0, 959).map(lambda n: chess.Board.from_chess960_pos(n).fen(shredder=True))


def seeded_walk(rng, chess960: bool, max_plies: int = 60) -> str:
    """The FEN (Shredder-FEN for Chess960) after a random legal walk of 0..``max_plies`` plies drawn
    from ``rng`` (a ``random.Random``) from the start position, or from a random one of the 960
    Chess960 starts: seeded positions for scripts and tests that run outside hypothesis."""
    board = chess.Board.from_chess960_pos(rng.randrange(960)) if chess960 else chess.Board()
    for _ in range(rng.randrange(max_plies + 1)):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board.fen(shredder=chess960)
