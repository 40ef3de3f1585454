"""oracle.strategies: the random-walk positions are legal, round-trip, and cover what perft breaks on."""
from __future__ import annotations

import collections

import chess
import pytest
from hypothesis import HealthCheck, given, settings

from oracle import tables
from oracle.strategies import EN_PASSANT_MODES, chess960_start_fens, random_walk_fens

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def is_shredder(fen: str) -> bool:
    return not set(fen.split()[2]) <= set("KQkq-")


def board_of(fen: str, chess960: bool) -> chess.Board:
    board = chess.Board(fen, chess960=chess960)
    assert board.status() == chess.STATUS_VALID, (fen, board.status())
    # The FEN is exactly python-chess's own output in one of the modes the walks use.
    assert fen in {board.fen(shredder=chess960, en_passant=mode) for mode in EN_PASSANT_MODES}
    return board


def plies_played(board: chess.Board) -> int:
    return 2 * (board.fullmove_number - 1) + (board.turn == chess.BLACK)


@FAST
@given(random_walk_fens(chess960=False))
def test_standard_walks_are_valid(fen):
    assert not is_shredder(fen)
    board = board_of(fen, chess960=False)
    assert not board.has_chess960_castling_rights()


@FAST
@given(random_walk_fens(chess960=True))
def test_chess960_walks_are_valid_shredder_fens(fen):
    assert fen.split()[2] == "-" or is_shredder(fen)
    board_of(fen, chess960=True)


@FAST
@given(random_walk_fens(chess960=None))
def test_either_walks_are_valid(fen):
    board_of(fen, chess960=is_shredder(fen))


@FAST
@given(random_walk_fens(chess960=None, min_plies=6, max_plies=9))
def test_walk_length_is_bounded(fen):
    board = board_of(fen, chess960=is_shredder(fen))
    assert plies_played(board) <= 9
    assert plies_played(board) >= 6 or board.is_game_over()


@FAST
@given(chess960_start_fens())
def test_chess960_starts(fen):
    board = board_of(fen, chess960=True)
    assert is_shredder(fen) and len(fen.split()[2]) == 4
    assert plies_played(board) == 0
    assert board.occupied == chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8
    assert fen in CHESS960_STARTS


CHESS960_STARTS = frozenset(chess.Board.from_chess960_pos(n).fen(shredder=True) for n in range(960))


def test_bad_plies_range():
    with pytest.raises(ValueError):
        random_walk_fens(min_plies=5, max_plies=2)
    with pytest.raises(ValueError):
        random_walk_fens(min_plies=-1)


def _sample(strategy, n: int = 300) -> list[str]:
    out: list[str] = []

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def collect(fen):
        out.append(fen)

    collect()
    return out


@pytest.mark.parametrize("chess960", [False, True])
def test_walks_are_diverse(chess960):
    fens = _sample(random_walk_fens(chess960=chess960))
    seen = collections.Counter()
    for fen in fens:
        board = chess.Board(fen, chess960=chess960)
        seen.update(tables.tags(fen, chess960))
        seen["ep square"] += board.ep_square is not None
        seen["ep square, no legal capture"] += board.ep_square is not None and not board.has_legal_en_passant()
        seen["legal ep capture"] += board.has_legal_en_passant()
        seen["capture"] += any(board.is_capture(m) for m in board.legal_moves)
        seen["castling move"] += any(board.is_castling(m) for m in board.legal_moves)
        seen["20+ plies"] += plies_played(board) >= 20
        seen["castling field " + fen.split()[2]] += 1
    assert len(set(fens)) >= 0.5 * len(fens)
    for what, least in [("ep square", 20), ("ep square, no legal capture", 10), ("legal ep capture", 3),
                        ("en_passant", 10), ("castling", 100), ("castling move", 10), ("promotion", 10),
                        ("check", 5), ("capture", 100), ("20+ plies", 50)]:
        assert seen[what] >= least, (what, seen[what], dict(seen))
    castling_fields = {k for k in seen if k.startswith("castling field ")}
    if chess960:
        assert sum(is_shredder(fen) for fen in fens) >= 100
        assert len(castling_fields) >= 20  # rooks on many different files
        assert len({fen.split()[0].split("/")[0].lower() for fen in fens}) >= 50  # many start arrays
    else:
        assert len(castling_fields) >= 8
