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


def castle_twice(board: chess.Board) -> list[chess.Move]:
    """Generates every castling move twice (a perftree or UCI divide then gives it on two lines)."""
    moves = list(board.legal_moves)
    return moves + [m for m in moves if board.is_castling(m)]


def ep_ignores_pins(board: chess.Board) -> list[chess.Move]:
    """Also generates en passant captures that expose the own king (a rank or diagonal pin)."""
    moves = list(board.legal_moves)
    return moves + [m for m in board.generate_pseudo_legal_ep() if not board.is_legal(m)]


def no_knight_promotion(board: chess.Board) -> list[chess.Move]:
    """Promotes to a queen, rook or bishop, never to a knight."""
    return [m for m in board.legal_moves if m.promotion != chess.KNIGHT]


def king_beside_pawn(board: chess.Board) -> list[chess.Move]:
    """Lets the king step onto squares attacked by an enemy pawn only (pawn attacks forgotten)."""
    moves = list(board.legal_moves)
    king = board.king(board.turn)
    if king is None:
        return moves
    for move in board.generate_pseudo_legal_moves(from_mask=chess.BB_SQUARES[king]):
        if board.is_legal(move) or board.is_castling(move):
            continue
        attackers = board.attackers(not board.turn, move.to_square)
        board.push(move)
        still = board.attackers(board.turn, move.to_square)  # attackers once the king stands there
        board.pop()
        if attackers and still and all(board.piece_type_at(sq) == chess.PAWN for sq in still):
            moves.append(move)
    return moves


def knight_wrap_attacks(board: chess.Board) -> list[chess.Move]:
    """Its attack test lets knights attack across the board's edge (square +-6, +-10, +-15, +-17 with
    no file check): king moves onto such squares are left out."""
    wrapped = 0
    for knight in chess.scan_forward(board.knights & board.occupied_co[not board.turn]):
        for delta in (6, 10, 15, 17, -6, -10, -15, -17):
            if 0 <= knight + delta < 64:
                wrapped |= chess.BB_SQUARES[knight + delta]
    return [m for m in board.legal_moves
            if board.piece_type_at(m.from_square) != chess.KING or not wrapped & chess.BB_SQUARES[m.to_square]
            or board.is_castling(m)]


def double_check_blocks(board: chess.Board) -> list[chess.Move]:
    """In double check, also lets a piece capture or block one of the two checkers."""
    moves = list(board.legal_moves)
    checkers = board.checkers()
    if len(checkers) < 2:
        return moves
    king = board.king(board.turn)
    for move in board.generate_pseudo_legal_moves():
        if board.piece_type_at(move.from_square) == chess.KING or board.is_legal(move):
            continue
        if board.is_pinned(board.turn, move.from_square):
            continue
        if any(move.to_square == c or chess.BB_SQUARES[move.to_square] & chess.between(king, c) for c in checkers):
            moves.append(move)
    return moves


def evasion_ignores_pins(board: chess.Board) -> list[chess.Move]:
    """In check, lets a pinned piece capture the checker or block the check."""
    moves = list(board.legal_moves)
    checkers = board.checkers()
    if len(checkers) != 1:
        return moves
    king, checker = board.king(board.turn), next(iter(checkers))
    for move in board.generate_pseudo_legal_moves():
        if board.is_legal(move) or not board.is_pinned(board.turn, move.from_square):
            continue
        if move.to_square == checker or chess.BB_SQUARES[move.to_square] & chess.between(king, checker):
            moves.append(move)
    return moves


def promotion_as_push(board: chess.Board) -> list[chess.Move]:
    """Writes a queen promotion as a plain pawn push (the pawn stays a pawn on the last rank)."""
    return [chess.Move(m.from_square, m.to_square) if m.promotion == chess.QUEEN else m for m in board.legal_moves]


BUGS = {
    "good": legal,
    "no-ep": no_en_passant,
    "no-underpromotion": no_underpromotion,
    "castle-through-check": castle_through_check,
    "illegal-king-step": illegal_king_step,
    "no-castling-in-place": no_castling_in_place,
    "knight-twice": knight_twice,
    "castle-twice": castle_twice,
    "ep-ignores-pins": ep_ignores_pins,
    "no-knight-promotion": no_knight_promotion,
    "king-beside-pawn": king_beside_pawn,
    "promotion-as-push": promotion_as_push,
    "knight-wrap": knight_wrap_attacks,
    "double-check-blocks": double_check_blocks,
    "evasion-ignores-pins": evasion_ignores_pins,
}


def board_literal(fen: str) -> chess.Board:
    """The board of ``fen`` with its castling field taken literally, as a simple engine reads it: a
    standard right stays even where its rook is gone (python-chess drops it), so that a FEN can
    carry the state a buggy make-move leaves."""
    chess960 = chess.Board(fen, chess960=True).has_chess960_castling_rights()
    board = chess.Board(fen, chess960=chess960)
    ep = board.ep_square
    # python-chess trusts the rights of a board with a move stack and cleans those of a fresh one:
    # two null moves give it a stack without changing the side to move
    board.push(chess.Move.null())
    board.push(chess.Move.null())
    board.ep_square = ep
    field = fen.split()[2] if len(fen.split()) > 2 else "-"
    for letter, square in zip("KQkq", (chess.H1, chess.A1, chess.H8, chess.A8)):
        if letter in field and not chess960:
            board.castling_rights |= chess.BB_SQUARES[square]
    return board


# State bugs: a make (push) or unmake (pop) that leaves wrong state; the move list is right.

def push_no_ep(board: chess.Board, move: chess.Move) -> None:
    """make-move never sets the en passant square after a double push."""
    board.push(move)
    board.ep_square = None


def push_keeps_right_on_capture(board: chess.Board, move: chess.Move) -> None:
    """make-move keeps a castling right when a piece moves onto (captures on) its rook's corner."""
    kept = board.castling_rights & chess.BB_SQUARES[move.to_square]
    board.push(move)
    board.castling_rights |= kept


def pop_forgets_rights(board: chess.Board, move: chess.Move) -> None:
    """unmake of a king move forgets to restore the mover's castling rights (for its siblings)."""
    board.pop()
    if board.piece_type_at(move.from_square) == chess.KING:
        board.castling_rights &= ~(chess.BB_RANK_1 if board.turn == chess.WHITE else chess.BB_RANK_8)


def pop_drops_queenside(board: chess.Board, move: chess.Move) -> None:
    """unmake of any move forgets the mover's queenside castling right (for its siblings): from a
    position where a piece still blocks that castling path, the loss shows only below the siblings
    that move the blocker away (issue 34 N9: the held-out engine's shape)."""
    board.pop()
    board.castling_rights &= ~(chess.BB_A1 if board.turn == chess.WHITE else chess.BB_A8)


def literal_ep(board: chess.Board) -> list[chess.Move]:
    """The legal moves, but en passant as a simple engine generates it: every own pawn attacking the
    board's en passant square, whatever its rank, when the capture leaves the king safe (python-chess
    ignores an en passant square on the wrong rank; a buggy make-move can leave one there)."""
    moves = [m for m in board.legal_moves if not board.is_en_passant(m)]
    ep = board.ep_square
    if ep is None or board.occupied & chess.BB_SQUARES[ep]:
        return moves
    for pawn in chess.scan_forward(board.pawns & board.occupied_co[board.turn]
                                   & chess.BB_PAWN_ATTACKS[not board.turn][ep]):
        move = chess.Move(pawn, ep, chess.QUEEN if chess.square_rank(ep) in (0, 7) else None)
        board.push(move)
        if not board.was_into_check():
            moves.append(move)
        board.pop()
    return moves


def _fresh(board: chess.Board) -> list[bool]:
    """Per ply, whether the board's en passant square was set by the move just made (or the FEN)."""
    if not hasattr(board, "fresh_ep"):
        board.fresh_ep = [board.ep_square is not None]
    return board.fresh_ep


def push_keeps_ep(board: chess.Board, move: chess.Move) -> None:
    """make-move keeps the en passant square one ply too long (through the reply to a double push)."""
    fresh, old = _fresh(board), board.ep_square
    board.push(move)
    if board.ep_square is None and old is not None and fresh[-1]:
        board.ep_square = old
        fresh.append(False)
    else:
        fresh.append(board.ep_square is not None)


def pop_fresh(board: chess.Board, move: chess.Move) -> None:
    board.pop()
    _fresh(board).pop()


def push_ep_after_single(board: chess.Board, move: chess.Move) -> None:
    """make-move sets an en passant square behind every pawn push, a single one too."""
    pawn = board.piece_type_at(move.from_square) == chess.PAWN and abs(move.to_square - move.from_square) == 8
    board.push(move)
    if pawn:
        board.ep_square = move.to_square - (8 if board.turn == chess.BLACK else -8)


#: name -> (make, unmake): ``make(board, move)`` pushes, ``unmake(board, move)`` pops.
STATE_BUGS = {
    "ep-not-set": (push_no_ep, None),
    "keeps-right-on-capture": (push_keeps_right_on_capture, None),
    "unmake-forgets-rights": (None, pop_forgets_rights),
    "unmake-drops-blocked-right": (None, pop_drops_queenside),
    "ep-kept-a-ply": (push_keeps_ep, pop_fresh),
    "ep-after-single-push": (push_ep_after_single, None),
}

#: The move generator a state bug runs with (default :func:`legal`): en passant squares off their
#: rank need :func:`literal_ep` to matter.
STATE_GEN = {"ep-kept-a-ply": literal_ep, "ep-after-single-push": literal_ep}

#: The position and depth where the "miscount" bug adds one node: perft(MISCOUNT_FEN, 3) is off by one.
MISCOUNT_AT = ("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq", 3)


def perft(board: chess.Board, depth: int, gen=legal, miscount: bool = False, state: str | None = None) -> int:
    """Perft with bulk counting through ``gen``; ``miscount`` plants the depth-3 bug (MISCOUNT_AT);
    ``state`` a bug of :data:`STATE_BUGS` in make or unmake."""
    if depth == 0:
        return 1
    moves = gen(board)
    if depth == 1:
        return len(moves)
    make, unmake = STATE_BUGS.get(state, (None, None))
    nodes = 0
    for move in moves:
        (make or chess.Board.push)(board, move)
        nodes += perft(board, depth - 1, gen, miscount, state)
        if unmake:
            unmake(board, move)
        else:
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
