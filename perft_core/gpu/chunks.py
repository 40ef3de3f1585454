"""How many roots of a host level one GPU call of the TT driver takes: the chunk sizing, from the
call's estimated bytes with every level bounded by the distinct positions of its ply."""
from __future__ import annotations

from .driver import BYTES_PER_BOARD, BYTES_PER_MOVE
from .merge import MERGE_TEMP_BYTES_PER_BOARD

TT_BYTES_PER_BOARD = 32
"""TT mode's extra bytes per board of a level: its key (16), value (8), and its merge group (8)."""


def call_bytes(c: int, depth: int, ply0: int, growth: list[float], distinct: list[float],
               value_words: int = 1) -> tuple[float, float, float]:
    """(arena bytes, leaf moves, boards of the largest merged level) of a call of ``c`` roots at ply
    ``ply0`` with ``depth`` plies left: each level made from the last by ``growth[ply]`` (moves per
    board) and merged to at most ``distinct[ply]`` boards; the leaf's moves (three plies or fewer
    left) are not made into boards. ``value_words``: uint64 values a board carries, 1 (nodes) or 13
    (statistics, kernels/pc_tt_stats.h: whose leaf moves are those of two plies left)."""
    per_board = BYTES_PER_BOARD + TT_BYTES_PER_BOARD + 8 * (value_words - 1)
    leaf_left = 3 if value_words == 1 else 2
    boards, total, merged = float(c), 0.0, 0.0
    for p in range(depth):
        left = depth - p
        total += boards * per_board
        if left == 1:
            return total, 0.0, merged
        made = boards * growth[min(ply0 + p, len(growth) - 1)]
        total += made * BYTES_PER_MOVE
        if left <= leaf_left:
            return total, made, merged
        total += made * per_board
        merged = max(merged, made)
        boards = min(made, distinct[ply0 + p + 1])
    return total, 0.0, merged


def roots_per_call(n: int, depth: int, ply0: int, growth: list[float], distinct: list[float], arena_bytes: float,
                   temp_bytes: float, max_leaf_moves: int | None = None, value_words: int = 1) -> int:
    """The most roots (1 .. ``n``) whose call (:func:`call_bytes`, ``value_words`` values a board)
    fits ``arena_bytes``, whose largest merged level's temporaries (MERGE_TEMP_BYTES_PER_BOARD a
    board) fit ``temp_bytes`` beside the arenas, and with at most ``max_leaf_moves`` leaf moves when
    that is given."""
    def fits(c: int) -> bool:
        nbytes, leaf_moves, merged = call_bytes(c, depth, ply0, growth, distinct, value_words)
        return (nbytes <= arena_bytes and merged * MERGE_TEMP_BYTES_PER_BOARD <= temp_bytes
                and (max_leaf_moves is None or leaf_moves <= max_leaf_moves))

    lo, hi = 1, n  # the largest c that fits (the bytes grow with c)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
