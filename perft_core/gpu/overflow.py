"""Counts past 2^64 on the GPU backends: where they could wrap, and a refusal instead of a wrong count.

The GPU driver keeps every count in uint64: the device levels, the upsweep, the device tables and
the host levels above the launch ply (NumPy arrays). With tables a count reaches 2^64 at depths no
count without tables ever reaches (two lone kings at depth 25: 6.6e19 nodes, a fraction of a
second through the tables), and there the sums wrapped silently: the emulated device returned
perft 25 of king against king as 10,608,735,664,674,341,638, the true count less 3 x 2^64
(a helper's hunt, session 29). Two rules keep every uint64 value of a count below 2^64, or the
count is refused (:class:`CountOverflow`); none changes a count that fits:

- **One BFS call** counts the subtrees of its roots ``g`` plies deep on the device, with no check
  of its sums there. A subtree's count is at most the product, over the plies it covers, of a
  bound on the moves of any position of that ply (:func:`moves_bound`: from the root's material
  only, which captures never increase; a pawn counted as a queen from the ply it could have
  promoted, as on its seventh rank from the ply it could stand there; never above
  ``PC_MOVES_BOUND``, the most moves of any position the parser accepts). :func:`safe_gpu_depth`
  is the deepest call whose product stays below 2^64; the driver plans no deeper call. The bound
  allows 8 plies in the CPW positions 1-2 and 4-6 and a Chess960 position (whose tables counts plan
  8-ply calls at perft 12, NOTES.md), 10-11 in CPW position 3, 19 for two lone kings.
- **The host levels** (the plies above the launch ply) add the calls' counts with
  :func:`add_counts`, which refuses a sum of 2^64 or more (a float64 shadow of the same sums finds
  the candidates; Python integers decide).
"""
from __future__ import annotations

import numpy as np

from ..errors import CountOverflow

LIMIT = 1 << 64
PC_MOVES_BOUND = 1098
"""The most legal moves of any position the parser accepts (kernels/pc_movegen.h proves it)."""
_MOBILITY = {"q": 27, "r": 14, "b": 13, "n": 8}
"""The most moves of a piece on an empty board: queen 27, rook 14, bishop 13, knight 8."""
KING_MOVES = 10  # 8 steps and 2 castlings
PAWN_MOVES = 4  # a push, a double push, 2 captures
PROMOTING_PAWN_MOVES = 12  # 3 targets, 4 promotions each


def _material(pos, white: bool) -> tuple[int, list[int]]:
    """The side's pieces but its pawns as their mobility summed (the king with its castlings), and
    each pawn's moves to its seventh rank (the rank before promotion; a double push counted)."""
    pieces, pawns = KING_MOVES, []
    for square in range(64):
        piece = pos.piece_at(square)
        if piece is None or piece.isupper() != white or piece in "Kk":
            continue
        if piece.lower() != "p":
            pieces += _MOBILITY[piece.lower()]
            continue
        rank = square // 8
        to_seventh = (6 - rank) if white else (rank - 1)
        if rank == (1 if white else 6):
            to_seventh = max(to_seventh - 1, 0)  # the double push
        pawns.append(to_seventh)
    return pieces, pawns


def moves_bound(pos, white: bool, made: int, material: tuple[int, list[int]] | None = None) -> int:
    """An upper bound on the legal moves of the side ``white`` (True: white) in any position reached
    from ``pos`` (a :class:`perft_core.position.Position`) after that side made ``made`` moves:
    the mobility of its pieces on an empty board (the king with its castlings); a pawn that could
    have promoted by then counted as a queen, one that could stand on its seventh rank as a pawn that
    promotes, any other as a pawn. Captures only remove pieces. At most PC_MOVES_BOUND.
    ``material``: the side's :func:`_material`, when the caller has it."""
    pieces, pawns = material if material is not None else _material(pos, white)
    total = pieces
    for to_seventh in pawns:
        if made >= to_seventh + 1:
            total += _MOBILITY["q"]
        elif made >= to_seventh:
            total += PROMOTING_PAWN_MOVES
        else:
            total += PAWN_MOVES
    return min(total, PC_MOVES_BOUND)


def call_bound(pos, launch: int, g: int) -> int:
    """An upper bound (int) on the count of any subtree ``g`` plies deep rooted ``launch`` plies below
    ``pos``: the product of :func:`moves_bound` over plies launch .. launch + g - 1."""
    material = {white: _material(pos, white) for white in (True, False)}
    product = 1
    for ply in range(launch, launch + g):  # the move of ply p is its mover's (p // 2 + 1)-th
        white = pos.white_to_move == (ply % 2 == 0)
        product *= moves_bound(pos, white, ply // 2, material[white])
    return product


def safe_gpu_depth(pos, depth: int, g: int) -> int:
    """The deepest BFS call of at most ``g`` plies, launched ``depth - g'`` plies below ``pos``, whose
    subtrees are proved below 2^64 by :func:`call_bound`; at least 1 (a call of one ply counts moves:
    fewer than PC_MOVES_BOUND)."""
    while g > 1 and call_bound(pos, depth - g, g) >= LIMIT:
        g -= 1
    return g


def add_counts(values: np.ndarray, index: np.ndarray, below: np.ndarray) -> None:
    """``np.add.at(values, index, below)`` for uint64 counts (shape (n,) or (n, 13)), refusing a sum
    that does not fit.

    Raises CountOverflow: a sum of 2^64 or more (``values`` is then left changed)."""
    np.add.at(values, index, below)
    if len(below) == 0:
        return
    shadow = np.zeros(values.shape, dtype=np.float64)
    np.add.at(shadow, index, below.astype(np.float64))
    if float(shadow.max()) < 2.0 ** 63:  # float64 sums of uint64 counts err by far less than 2^63
        return
    exact = np.zeros(values.shape, dtype=object)
    np.add.at(exact, index, below.astype(object))
    if max(exact.reshape(-1), key=int) >= LIMIT:
        raise CountOverflow("the count passes 2^64 - 1 (18,446,744,073,709,551,615) and the GPU backends count "
                            "in 64 bits; --backend cpu counts it exactly (128 bits), and perft deep in units whose counts fit")
