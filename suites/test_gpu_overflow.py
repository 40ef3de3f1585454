"""Counts past 2^64 on the GPU backends (perft_core/gpu/overflow.py), on the emulated device.

Through the tables a count passes 2^64 at depths a count without tables never reaches: two lone
kings at depth 25 are 6.6e19 nodes. The GPU driver counts in uint64; there it returned the count
less 3 x 2^64 with exit 0 (a helper's hunt, session 29). Now a count that fits is exact and one
that does not is refused (CountOverflow). Expected counts come from a count over king squares in
Python integers (no engine code); the move bound is checked against python-chess's move lists.
"""
from __future__ import annotations

import random

import chess
import pytest
from kings import kings_perft

import perft_core
from perft_core.errors import CountOverflow
from perft_core.gpu.overflow import LIMIT, add_counts, call_bound, moves_bound, safe_gpu_depth
from perft_core.position import Position

pytestmark = pytest.mark.core

KINGS = "7k/8/8/8/8/8/8/K7 w - - 0 1"


def _kings_perft(depth: int) -> int:
    return kings_perft(chess.A1, chess.H8, True, depth)


def test_a_count_that_fits_is_exact_and_one_that_does_not_is_refused():
    """Depth 24 (9.6e18: between 2^63 and 2^64, where the float64 shadow defers to Python ints) is
    exact; depth 25 (6.6e19) is refused, not wrapped; the cpu backend counts it (128 bits)."""
    assert 2 ** 63 < _kings_perft(24) < LIMIT < _kings_perft(25)
    assert perft_core.perft(KINGS, 24, backend="gpu-emulated", tt=True) == _kings_perft(24)
    with pytest.raises(CountOverflow, match="passes 2\\^64 - 1"):
        perft_core.perft(KINGS, 25, backend="gpu-emulated", tt=True)
    assert perft_core.perft(KINGS, 25, tt=True) == _kings_perft(25)


def test_statistics_past_2_to_the_64_are_refused_too():
    with pytest.raises(CountOverflow):
        perft_core.perft_stats(KINGS, 25, backend="gpu-emulated", tt=True, force=True)
    assert perft_core.perft_stats(KINGS, 20, backend="gpu-emulated", tt=True, force=True).nodes == _kings_perft(20)


def test_host_sums_refuse_only_what_passes_2_to_the_64():
    import numpy as np

    values = np.zeros(2, dtype=np.uint64)
    add_counts(values, np.array([0, 0, 1]), np.array([LIMIT - 2, 1, 5], dtype=np.uint64))
    assert values.tolist() == [LIMIT - 1, 5]  # the largest count that fits
    with pytest.raises(CountOverflow):
        add_counts(np.zeros(1, dtype=np.uint64), np.array([0, 0]), np.array([LIMIT - 1, 1], dtype=np.uint64))
    rows = np.zeros((1, 13), dtype=np.uint64)  # statistics: any of the 13 counters
    with pytest.raises(CountOverflow):
        add_counts(rows, np.array([0, 0]), np.full((2, 13), 1 << 63, dtype=np.uint64))


def test_the_planned_call_depth_keeps_every_subtree_below_2_to_the_64():
    """The bound allows 8-ply calls for the CPW positions (startpos perft 12 plans them, NOTES.md)
    and 19 for two lone kings (10 moves at most a ply); a deeper plan is cut to it."""
    start = Position.from_fen(chess.STARTING_FEN)
    assert call_bound(start, 4, 8) < LIMIT <= call_bound(start, 4, 9)
    assert safe_gpu_depth(start, 12, 8) == 8 and safe_gpu_depth(start, 12, 9) == 8
    kings = Position.from_fen(KINGS)
    assert safe_gpu_depth(kings, 40, 30) == 19 == max(g for g in range(1, 40) if 10 ** g < LIMIT)


def test_the_driver_cuts_a_deeper_plan_to_the_bound(monkeypatch):
    """Where memory would allow one call of 22 plies for two lone kings (on a large device), the
    driver plans calls of 19: its count stays exact, and no device sum can wrap."""
    from perft_core.gpu import get_driver

    drv = get_driver("gpu-emulated", None)
    monkeypatch.setattr(drv, "_gpu_depth", lambda *args, **kwargs: 40)
    assert perft_core.perft(KINGS, 22, backend="gpu-emulated", tt=True) == _kings_perft(22)
    assert (drv.stats.gpu_depth, drv.stats.launch_depth) == (19, 3)


ROOTS = [chess.STARTING_FEN,
         "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
         "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
         "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
         "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
         "8/PPPPPPPP/8/7k/K7/8/pppppppp/8 w - - 0 1",  # every pawn one push from promoting
         "k7/pp6/8/8/8/8/QQQQQQ2/QQQQQQK1 w - - 0 1"]  # more queens than a game allows


@pytest.mark.parametrize("fen", ROOTS)
def test_the_move_bound_holds_on_random_games(fen):
    """moves_bound(root, side, made) >= the legal moves of every position of random games from the
    root (python-chess's move lists), at every ply: the bound the call depth rests on."""
    root = Position.from_fen(fen)
    rng = random.Random(fen)
    for _ in range(40):
        board = chess.Board(fen, chess960="HFhf" in fen)
        for ply in range(40):
            moves = list(board.legal_moves)
            assert len(moves) <= moves_bound(root, board.turn == chess.WHITE, ply // 2), (fen, board.fen())
            if not moves:
                break
            board.push(rng.choice(moves))
