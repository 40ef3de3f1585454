"""Deliberately broken move generators for the oracle's tests (python-chess underneath).

Each bug is a function ``board -> list[chess.Move]``: the legal moves, plus or minus one kind of
mistake real move generators make. ``fake_uci.py`` and ``fake_perftree.py`` serve them as
subprocess engines; the tests also wrap them in-process (``PythonChessEngine.moves``).
"""
from __future__ import annotations

import chess


def legal(board: chess.Board) -> list[chess.Move]:
    """No bug."""
    return list(board.legal_moves)


def no_en_passant(board: chess.Board) -> list[chess.Move]:
    """Never generates en passant captures."""
    return [m for m in board.legal_moves if not board.is_en_passant(m)]


def no_underpromotion(board: chess.Board) -> list[chess.Move]:
    """Promotes to a queen only."""
    return [m for m in board.legal_moves if m.promotion in (None, chess.QUEEN)]


def castle_through_check(board: chess.Board) -> list[chess.Move]:
    """Standard chess: lets the king castle across an attacked square (never from or into check)."""
    moves = list(board.legal_moves)
    if board.chess960 or board.is_check():
        return moves
    king = board.king(board.turn)
    back = chess.E1 if board.turn == chess.WHITE else chess.E8
    if king != back:
        return moves
    enemy = not board.turn
    for rook, crossed, target, empty in (
        (back + 3, back + 1, back + 2, (back + 1, back + 2)),
        (back - 4, back - 1, back - 2, (back - 1, back - 2, back - 3)),
    ):
        if not board.castling_rights & chess.BB_SQUARES[rook]:
            continue
        if any(board.piece_at(sq) for sq in empty):
            continue
        if board.is_attacked_by(enemy, crossed) and not board.is_attacked_by(enemy, target):
            moves.append(chess.Move(back, target))
    return moves


def illegal_king_step(board: chess.Board) -> list[chess.Move]:
    """Also lets the king step onto one attacked square (the first such, in python-chess order)."""
    moves = list(board.legal_moves)
    king = board.king(board.turn)
    if king is None:  # an earlier illegal step let the king be taken
        return moves
    for move in board.generate_pseudo_legal_moves(from_mask=chess.BB_SQUARES[king]):
        if not board.is_legal(move) and not board.is_castling(move):
            moves.append(move)
            break
    return moves


def no_castling_in_place(board: chess.Board) -> list[chess.Move]:
    """Chess960: drops castling moves in which the king stays on its square (king g1, h-side)."""
    return [m for m in board.legal_moves
            if not (board.is_castling(m) and chess.square_file(m.from_square)
                    == (6 if board.is_kingside_castling(m) else 2))]


def knight_twice(board: chess.Board) -> list[chess.Move]:
    """Generates the first knight move of the position twice."""
    moves = list(board.legal_moves)
    for move in moves:
        if board.piece_type_at(move.from_square) == chess.KNIGHT:
            return moves + [move]
    return moves


BUGS = {
    "good": legal,
    "no-ep": no_en_passant,
    "no-underpromotion": no_underpromotion,
    "castle-through-check": castle_through_check,
    "illegal-king-step": illegal_king_step,
    "no-castling-in-place": no_castling_in_place,
    "knight-twice": knight_twice,
}

#: The position and depth where the "miscount" bug adds one node: perft(MISCOUNT_FEN, 3) is off by one.
MISCOUNT_AT = ("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq", 3)


def perft(board: chess.Board, depth: int, gen=legal, miscount: bool = False) -> int:
    """Perft with bulk counting through ``gen``; ``miscount`` plants the depth-3 bug (MISCOUNT_AT)."""
    if depth == 0:
        return 1
    moves = gen(board)
    if depth == 1:
        return len(moves)
    nodes = 0
    for move in moves:
        board.push(move)
        nodes += perft(board, depth - 1, gen, miscount)
        board.pop()
    if miscount and depth == MISCOUNT_AT[1] and board.epd().startswith(MISCOUNT_AT[0] + " "):
        nodes += 1
    return nodes


def divide(board: chess.Board, depth: int, gen=legal, miscount: bool = False) -> list[tuple[str, int]]:
    """``[(uci, nodes)]`` per generated move (duplicates kept, as an engine would print them)."""
    out = []
    for move in gen(board):
        board.push(move)
        nodes = perft(board, depth - 1, gen, miscount)
        board.pop()
        out.append((board.uci(move), nodes))
    return out
