"""An independent perft of positions with the two kings alone, for the tests of counts past 2^64
(through tables a count of two lone kings passes 2^64 at depth 25 in a fraction of a second)."""
from __future__ import annotations


def _steps(square: int) -> set[int]:
    f, r = square % 8, square // 8
    return {(r + dr) * 8 + f + df for dr in (-1, 0, 1) for df in (-1, 0, 1)
            if (dr or df) and 0 <= f + df < 8 and 0 <= r + dr < 8}


def kings_perft(white_king: int, black_king: int, white_to_move: bool, depth: int) -> int:
    """Perft of the position with only the two kings (squares a1 = 0 .. h8 = 63), counted over
    (king squares, side to move) states in Python integers: no engine code, exact at any size."""
    near = {sq: _steps(sq) for sq in range(64)}
    paths = {(white_king, black_king, white_to_move): 1}
    for _ in range(depth):
        step: dict[tuple[int, int, bool], int] = {}
        for (w, b, white), n in paths.items():
            mover, other = (w, b) if white else (b, w)
            for to in near[mover] - near[other] - {other}:
                key = (to, b, False) if white else (w, to, True)
                step[key] = step.get(key, 0) + n
        paths = step
    return sum(paths.values())
