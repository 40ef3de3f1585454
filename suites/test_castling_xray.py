"""Chess960 castling where the rook shields the king's path along the back rank.

The move generator tests castling against one attack set built with the king lifted; lifting the
rook as well matters only when an enemy rook or queen stands beyond it (an a-side rook on the b-file
shields c1 from a1), and that case is tested square by square (CastleSide.xray, kernels/pc_movegen.h).
These positions are checked against python-chess, with and without the shielded attacker.
"""
import chess
import pytest

import perft_core
from oracle.engines import PythonChessEngine

XRAY_FENS = [
    "7k/8/8/8/8/8/8/qRK5 w B - 0 1",      # queen a1 behind the b1 rook: king stays on c1, in check after
    "7k/8/8/8/8/8/8/rRK5 w B - 0 1",      # the same with a rook
    "7k/8/8/8/8/8/8/bRK5 w B - 0 1",      # a bishop on a1 sees nothing along the rank: castling is legal
    "7k/8/8/8/8/8/8/qR1K4 w B - 0 1",     # king d1 -> c1 through the shielded square
    "7k/8/8/8/8/8/8/qR2K3 w B - 0 1",     # king e1 -> c1
    "Qrk5/8/8/8/8/8/8/7K b b - 0 1",      # black's mirror image (white queen a8)
    "1r1k4/8/8/8/8/8/8/qR2K3 w Bb - 0 1",  # rights on both sides of the board
]


@pytest.mark.parametrize("fen", XRAY_FENS)
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_shielded_castling_matches_python_chess(fen, depth):
    assert perft_core.perft(perft_core.Position.from_fen(fen), depth) == PythonChessEngine().perft(fen, depth)


@pytest.mark.parametrize("fen", XRAY_FENS[:2])
def test_shielded_castling_is_not_generated(fen):
    board = chess.Board(fen, chess960=True)
    castles = [m for m in board.legal_moves if board.is_castling(m)]
    assert castles == []
    moves = {str(m) for m in perft_core.divide(perft_core.Position.from_fen(fen), 1)}
    assert "c1b1" not in moves and len(moves) == board.legal_moves.count()
