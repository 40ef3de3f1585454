"""128-bit Zobrist keys (kernels/pc_zobrist.h through perft_core.zobrist).

Properties, on random legal walks (oracle.strategies.random_walk_fens, standard and Chess960)
continued by move sequences biased toward captures, castling, promotions and en passant:
  * the incremental key (update_hash, move by move) equals the from-scratch key after every
    move, for the default seed and for a drawn one;
  * the from-scratch key equals a pure-Python reference built from the documented table layout
    (splitmix64 stream, memory order) and the documented en passant rule;
  * two move orders that reach the same position give the same key;
  * positions that differ only in side to move, castling rights or en passant get different
    keys; the en passant square counts exactly when the side to move has a pawn beside the pawn
    that just made the double push.
"""
from __future__ import annotations

import struct

import chess
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from oracle.strategies import random_walk_fens
from perft_core import FenError, IllegalMoveError, Position, _core
from perft_core.zobrist import DEFAULT_SEED, zobrist, zobrist_path

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
seeds = st.integers(0, 2**64 - 1)
M64 = 2**64 - 1


# ---------------------------------------------------------------- a pure-Python reference


def splitmix64_stream(seed: int, n: int) -> list[int]:
    """n outputs of splitmix64 (Steele, Lea, Flood 2014) from state ``seed``."""
    out, state = [], seed
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


def reference_keys(seed: int) -> list[int]:
    """The 1,097 Key128 of ZobristKeys in memory order, each (hi << 64 | lo); lo is drawn first."""
    raw = splitmix64_stream(seed, 2 * 1097)
    return [raw[2 * i + 1] << 64 | raw[2 * i] for i in range(1097)]


PSQ, CASTLE, EP, SIDE = 0, 1024, 1088, 1096  # offsets of psq[2][8][64], castle[64], ep[8], side


def reference_key(pos: Position, seed: int) -> int:
    """compute_hash in Python, from the layout and rules documented in kernels/pc_zobrist.h."""
    keys = reference_keys(seed)
    k = 0
    for sq in range(64):
        letter = pos.piece_at(sq)
        if letter:
            colour = 1 if letter.islower() else 0
            code = " pnbrqk".index(letter.lower())
            k ^= keys[PSQ + (colour * 8 + code) * 64 + sq]
    if not pos.white_to_move:
        k ^= keys[SIDE]
    for rook in pos.castle_rooks:
        if rook >= 0:
            k ^= keys[CASTLE + rook]
    if ep_counts(pos):
        k ^= keys[EP + pos.ep_square % 8]
    return k


def ep_counts(pos: Position) -> bool:
    """The key's en passant rule: a pawn of the side to move stands beside the double-pushed pawn."""
    if pos.ep_square is None:
        return False
    victim = pos.ep_square + (-8 if pos.white_to_move else 8)
    ours = "P" if pos.white_to_move else "p"
    return any(pos.piece_at(s) == ours for s in _beside(victim))


# ---------------------------------------------------------------- strategies


def _kind(pos: Position, uci: str) -> str:
    """capture / castle / promotion / double / quiet, for biasing the walk."""
    frm, to = chess.parse_square(uci[:2]), chess.parse_square(uci[2:4])
    piece, target = pos.piece_at(frm), pos.piece_at(to)
    if len(uci) == 5:
        return "promotion"
    if piece in ("K", "k") and (abs(to - frm) == 2 or (target is not None and target.isupper() == piece.isupper())):
        return "castle"
    if target is not None or (piece in ("P", "p") and frm % 8 != to % 8):
        return "capture"
    if piece in ("P", "p") and abs(to - frm) == 16:
        return "double"
    return "quiet"


@st.composite
def positions_and_moves(draw, chess960: bool | None = None, max_moves: int = 12):
    """(start Position, UCI moves legal in sequence), biased toward the move classes keys get wrong."""
    start = Position.from_fen(draw(random_walk_fens(chess960=chess960, max_plies=30)))
    pos, moves = start, []
    for _ in range(draw(st.integers(1, max_moves))):
        legal = pos.legal_moves()
        if not legal:
            break
        special = [m for m in legal if _kind(pos, m) != "quiet"]
        pool = special if special and draw(st.integers(0, 99)) < 70 else legal
        move = pool[draw(st.integers(0, len(pool) - 1))]
        moves.append(move)
        pos = pos.push(move)
    return start, moves


@st.composite
def en_passant_positions(draw):
    """Positions just after a double push, with or without a capturer beside the pushed pawn, and
    a few random pieces (which may pin the capturer or give check)."""
    white = draw(st.booleans())  # the side to move (the other side just pushed)
    f = draw(st.integers(0, 7))
    victim = (32 if white else 24) + f
    ep = victim + (8 if white else -8)
    board: dict[int, str] = {victim: "p" if white else "P"}
    for sq in _beside(victim):
        if draw(st.booleans()):
            board[sq] = "P" if white else "p"
    free = [s for s in range(8, 56) if s not in board and s != ep and s != ep + (8 if white else -8)]
    for letter in draw(st.lists(st.sampled_from("NBRQnbrqPp"), max_size=6)):
        sq = draw(st.sampled_from(free))
        free.remove(sq)
        board[sq] = letter
    kings = draw(st.lists(st.sampled_from(free), min_size=2, max_size=2, unique=True))
    board[kings[0]], board[kings[1]] = "K", "k"
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for file in range(8):
            letter = board.get(rank * 8 + file)
            if letter is None:
                empty += 1
            else:
                row += (str(empty) if empty else "") + letter
                empty = 0
        rows.append(row + (str(empty) if empty else ""))
    fen = f"{'/'.join(rows)} {'w' if white else 'b'} - {chess.square_name(ep)} 0 1"
    try:
        return Position.from_fen(fen)
    except FenError:
        assume(False)


def _beside(sq: int) -> list[int]:
    return [sq + d for d in (-1, 1) if 0 <= sq % 8 + d < 8]


def _variant(fen: str, field: int, value: str) -> str:
    parts = fen.split()
    parts[field] = value
    return " ".join(parts)


# ---------------------------------------------------------------- the incremental key


@SETTINGS
@given(positions_and_moves(), seeds)
def test_incremental_equals_scratch_after_every_move(start_moves, seed):
    start, moves = start_moves
    for s in (None, seed):
        path = zobrist_path(start, moves, seed=s)
        assert len(path) == len(moves) + 1
        pos = start
        assert path[0] == zobrist(pos, seed=s)
        for i, move in enumerate(moves):
            pos = pos.push(move)
            assert path[i + 1] == zobrist(pos, seed=s), f"after {moves[: i + 1]} from {start.fen()}"


@settings(SETTINGS, max_examples=60)
@given(positions_and_moves(chess960=True), seeds)
def test_incremental_equals_scratch_chess960(start_moves, seed):
    start, moves = start_moves
    pos = start
    path = zobrist_path(start, moves, seed=seed)
    for i, move in enumerate(moves):
        pos = pos.push(move)
        assert path[i + 1] == zobrist(pos, seed=seed)


@settings(SETTINGS, max_examples=100)
@given(random_walk_fens(chess960=None), seeds)
def test_scratch_key_matches_python_reference(fen, seed):
    pos = Position.from_fen(fen)
    assert zobrist(pos, seed=seed) == reference_key(pos, seed)
    assert zobrist(pos) == reference_key(pos, DEFAULT_SEED)


def test_key_table_blob_layout():
    seed = 12345
    blob = _core.zobrist_keys_blob(seed)
    assert len(blob) == 1097 * 16 == 17552
    words = struct.unpack("<2194Q", blob)
    assert [words[2 * i + 1] << 64 | words[2 * i] for i in range(1097)] == reference_keys(seed)


def test_key_examples():
    pos = Position.from_fen(START)
    key = zobrist(pos)
    assert 0 < key < 2**128 and key >> 64 and key & M64
    assert zobrist(START) == key
    assert zobrist(pos, seed=DEFAULT_SEED) == key
    assert zobrist(pos, seed=1) != key
    assert zobrist_path(pos, []) == [key]


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True, "1"])
def test_bad_seed(seed):
    with pytest.raises(ValueError):
        zobrist(START, seed=seed)


def test_illegal_move_in_path():
    with pytest.raises(IllegalMoveError, match="move 1"):
        zobrist_path(START, ["e2e4", "e2e4"])
    with pytest.raises(IllegalMoveError):
        zobrist_path(START, [17])


# ---------------------------------------------------------------- transpositions


def test_transposition_examples():
    # The en passant square of the last double push counts only with a capturer beside it.
    a = zobrist_path(START, ["e2e4", "e7e5", "g1f3", "b8c6"])[-1]
    b = zobrist_path(START, ["g1f3", "b8c6", "e2e4", "e7e5"])[-1]
    assert a == b  # 2...e5 leaves e6 as the en passant square but no white pawn on d5/f5
    a = zobrist_path(START, ["e2e3", "e7e6", "e3e4", "e6e5"])[-1]
    b = zobrist_path(START, ["e2e4", "e7e5"])[-1]
    assert a == b
    # With a capturer beside the pushed pawn, the en passant square is part of the position.
    a = zobrist_path(START, ["e2e4", "a7a6", "e4e5", "d7d5"])[-1]
    b = zobrist_path(START, ["e2e4", "d7d6", "e4e5", "d6d5"])[-1]
    assert a != b
    assert a == zobrist(Position.from_fen("rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3"))


@SETTINGS
@given(positions_and_moves(max_moves=3), st.data())
def test_two_move_orders_same_key(start_moves, data):
    """a, b, c vs c, b, a (a and c by the same side): same position, same key."""
    start, _ = start_moves
    a = data.draw(st.sampled_from(start.legal_moves() or ["none"]))
    assume(a != "none")
    after_a = start.push(a)
    b = data.draw(st.sampled_from(after_a.legal_moves() or ["none"]))
    assume(b != "none")
    after_ab = after_a.push(b)
    first = set(start.legal_moves())
    cands = [c for c in after_ab.legal_moves() if c in first and c != a]
    assume(cands)
    c = data.draw(st.sampled_from(cands))
    one = after_ab.push(c)
    try:
        two = start.push(c).push(b).push(a)
    except IllegalMoveError:
        assume(False)
    same = one.fen().split()[:3] == two.fen().split()[:3] and ep_counts(one) == ep_counts(two) and (
        not ep_counts(one) or one.ep_square == two.ep_square)
    event("same position" if same else "different positions")
    k1 = zobrist_path(start, [a, b, c])[-1]
    k2 = zobrist_path(start, [c, b, a])[-1]
    assert (k1 == k2) == same
    assert k1 == zobrist(one) and k2 == zobrist(two)


# ---------------------------------------------------------------- what tells positions apart


@SETTINGS
@given(random_walk_fens(chess960=None), seeds)
def test_side_to_move_changes_key(fen, seed):
    other = _variant(_variant(fen, 1, "b" if fen.split()[1] == "w" else "w"), 3, "-")
    try:
        flipped = Position.from_fen(other)
    except FenError:  # the side that would now not be to move is in check
        assume(False)
    pos = Position.from_fen(_variant(fen, 3, "-"))
    assert zobrist(pos, seed=seed) != zobrist(flipped, seed=seed)


@SETTINGS
@given(random_walk_fens(chess960=None), seeds, st.data())
def test_each_castling_right_changes_key(fen, seed, data):
    castling = fen.split()[2]
    assume(castling != "-")
    drop = data.draw(st.integers(0, len(castling) - 1))
    fewer = castling[:drop] + castling[drop + 1:] or "-"
    pos = Position.from_fen(fen)
    other = Position.from_fen(_variant(fen, 2, fewer), chess960=pos.chess960)
    assert zobrist(pos, seed=seed) != zobrist(other, seed=seed)


@SETTINGS
@given(random_walk_fens(chess960=None), seeds, st.data())
def test_en_passant_counts_by_the_rule(fen, seed, data):
    """The walks end on a double push beside an enemy pawn where they can; else we push one here."""
    start = Position.from_fen(fen)
    if start.ep_square is not None:
        pos = start
    else:
        doubles = [m for m in start.legal_moves() if _kind(start, m) == "double"]
        assume(doubles)
        move = data.draw(st.sampled_from(doubles))
        pos = start.push(move)  # push() sets the en passant square after every double push
        assert zobrist_path(start, [move], seed=seed)[-1] == zobrist(pos, seed=seed)
    without = Position.from_fen(_variant(pos.fen(), 3, "-"), chess960=pos.chess960)
    event(f"en passant counts: {ep_counts(pos)}")
    assert (zobrist(pos, seed=seed) != zobrist(without, seed=seed)) == ep_counts(pos)


@SETTINGS
@given(en_passant_positions(), seeds)
def test_en_passant_rule_synthetic(pos, seed):
    without = Position.from_fen(_variant(pos.fen(), 3, "-"))
    event(f"en passant counts: {ep_counts(pos)}")
    assert (zobrist(pos, seed=seed) != zobrist(without, seed=seed)) == ep_counts(pos)
    assert zobrist(pos, seed=seed) == reference_key(pos, seed)


@pytest.mark.parametrize("fen, counts", [
    ("rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2", True),   # e5 beside d5
    ("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2", False),  # no white pawn on c5/e5
    # A pinned capturer still counts (the rule is pseudo-legal): Ka5, Pb5, ...c5, Rh5 pins along the rank.
    ("8/8/8/KPp4r/8/8/8/4k3 w - c6 0 1", True),
])
def test_en_passant_rule_examples(fen, counts):
    pos = Position.from_fen(fen)
    without = Position.from_fen(_variant(fen, 3, "-"))
    assert (zobrist(pos) != zobrist(without)) == counts


def test_chess960_inner_and_outer_rook_rights_differ():
    # Rooks on a1 and b1, king on c1: the a-side right on b1 (Shredder B) or on a1 (A).
    inner = Position.from_fen("rrk5/8/8/8/8/8/8/RRK5 w B - 0 1", chess960=True)
    outer = Position.from_fen("rrk5/8/8/8/8/8/8/RRK5 w A - 0 1", chess960=True)
    assert inner.castle_rooks != outer.castle_rooks
    assert zobrist(inner) != zobrist(outer)


@settings(SETTINGS, max_examples=60)
@given(random_walk_fens(chess960=None), seeds, seeds)
def test_seeds_give_different_keys(fen, s1, s2):
    assume(s1 != s2)
    pos = Position.from_fen(fen)
    k1, k2 = zobrist(pos, seed=s1), zobrist(pos, seed=s2)
    assert k1 != k2 and (k1 >> 64) != (k2 >> 64) and (k1 & M64) != (k2 & M64)
