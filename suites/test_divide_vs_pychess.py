"""perft_core.divide against python-chess on random legal positions, standard and Chess960.

Positions come from oracle.strategies.random_walk_fens (random games biased toward captures,
castling, promotions and en passant). UCI keys: castling is e1g1 in standard chess and
king-takes-rook (e1h1) in Chess960, as python-chess's ``board.uci(move, chess960=...)`` writes it.
"""
from __future__ import annotations

import chess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perft_core
from oracle.strategies import chess960_start_fens, random_walk_fens

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
depths = st.integers(1, 3)


def pychess_perft(board: chess.Board, depth: int) -> int:
    """Leaf nodes ``depth`` plies below ``board``, by python-chess (bulk count at the last ply)."""
    if depth == 0:
        return 1
    if depth == 1:
        return board.legal_moves.count()
    nodes = 0
    for move in board.legal_moves:
        board.push(move)
        nodes += pychess_perft(board, depth - 1)
        board.pop()
    return nodes


def pychess_divide(fen: str, depth: int, chess960: bool) -> dict[str, int]:
    """``{uci: perft(depth - 1) after the move}`` by python-chess; {} at depth 0."""
    board = chess.Board(fen, chess960=chess960)
    split = {}
    if depth == 0:
        return split
    for move in board.legal_moves:
        uci = board.uci(move, chess960=chess960)
        board.push(move)
        split[uci] = pychess_perft(board, depth - 1)
        board.pop()
    return split


def is_shredder(fen: str) -> bool:
    """Castling written by rook file (HAha): what the walks write for Chess960."""
    return not set(fen.split()[2]) <= set("KQkq-")


@SETTINGS
@given(random_walk_fens(chess960=False), depths)
def test_divide_standard(fen, depth):
    got = perft_core.divide(perft_core.Position.from_fen(fen, chess960=False), depth)
    assert got == pychess_divide(fen, depth, chess960=False)


@SETTINGS
@given(random_walk_fens(chess960=True), depths)
def test_divide_chess960(fen, depth):
    got = perft_core.divide(perft_core.Position.from_fen(fen, chess960=True), depth)
    assert got == pychess_divide(fen, depth, chess960=True)


@settings(SETTINGS, max_examples=80)
@given(random_walk_fens(chess960=None), depths)
def test_divide_and_perft_from_fen_text(fen, depth):
    """From the FEN text alone: Chess960 is inferred from Shredder castling letters."""
    expected = pychess_divide(fen, depth, chess960=is_shredder(fen))
    assert perft_core.divide(fen, depth) == expected
    assert perft_core.perft(fen, depth) == sum(expected.values())


@settings(SETTINGS, max_examples=80)
@given(chess960_start_fens(), depths)
def test_divide_chess960_starts(fen, depth):
    assert perft_core.divide(perft_core.Position.from_fen(fen, chess960=True), depth) == pychess_divide(
        fen, depth, chess960=True
    )


@settings(SETTINGS, max_examples=40)
@given(random_walk_fens(chess960=None, min_plies=10))
def test_threads_agree(fen):
    assert perft_core.divide(fen, 3, threads=2) == perft_core.divide(fen, 3, threads=1)
    assert perft_core.perft(fen, 3, threads=2) == perft_core.perft(fen, 3)


@settings(SETTINGS, max_examples=40)
@given(random_walk_fens(chess960=None))
def test_depth_zero(fen):
    assert perft_core.perft(fen, 0) == 1
    assert perft_core.divide(fen, 0) == {}


@settings(SETTINGS, max_examples=60)
@given(random_walk_fens(chess960=None))
def test_colour_mirror_has_the_same_count(fen):
    """Swapping colours (board flipped, side to move swapped) keeps every count: depth 4, engine only."""
    chess960 = is_shredder(fen)
    mirror = chess.Board(fen, chess960=chess960).mirror().fen(shredder=chess960, en_passant="fen")
    assert perft_core.perft(fen, 4) == perft_core.perft(mirror, 4)
