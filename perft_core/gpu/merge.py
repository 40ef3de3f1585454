"""Merging equal positions inside a GPU call: a BFS level's boards by key before it is expanded
(``merge_level``), and the fused leaf's children (``leaf_merged``), each distinct child counted once.

Both group 128-bit Zobrist keys in a hash table on the device (``CupyKernels.merge_groups``,
``CupyKernels.leaf_merged``; NumPy's ``unique`` on the emulated device): equal keys, same subtree.
"""
from __future__ import annotations

import numpy as np

from ..hostbatch import WORDS

MERGE_TEMP_BYTES_PER_BOARD = 36
"""The merge of a level's boards takes temporaries outside the arena (CupyKernels.merge_groups): a
hash table of 2-4 slots a board (uint32), slot, head and group (uint32) and rank (uint64) a board."""
LEAF_MERGE_TEMP_BYTES_PER_MOVE = 40
"""Temporaries outside the arena a move of a leaf merge's slice takes at once (``leaf_merged``, a
slice of a power of two moves): its child's key (16), 4 hash table slots (16), its group head and
head flag (8); after the insert the key and table make way for the heads and a count (12)."""
STATS_LEAF_MERGE_TEMP_BYTES_PER_MOVE = 120
"""The same for the statistics leaf merge (``stats_leaf_merged``): after the insert the heads, the
head flags and the heads' 13 counters (116 bytes a move at once, CupyKernels.stats_leaf_merged)."""
LEAF_MERGE_MIN_SLICE = 1 << 12
"""Fewer moves than this fitting the memory beside the arenas: the leaf is not merged (slices that
small find few transpositions and pay a host round trip each)."""
LEAF_MERGE_SLICE = 1 << 30
"""The most moves of a remaining-depth-3 level merged at once (a merge's indices are uint32)."""


def merge_level(kernels, arena, boards, keys, n: int, ply: int):
    """Merge boards with equal keys: (unique boards, their keys, count, group of each board).

    The kernel set groups equal (lo, hi) keys (a hash table on the device, ``np.unique`` when
    emulated) and copies one board per group into ``arena`` (sites ``merged_boards[ply]``,
    ``merged_keys[ply]``); group_of (uint32, n) maps each board to its group for the upsweep, None
    when every key is distinct (then the inputs come back unchanged).
    """
    groups, plan = kernels.merge_groups(keys, n)
    if groups == n:
        return boards, keys, n, None
    ub = arena.alloc(f"merged_boards[{ply}]", groups * WORDS, np.uint64)
    uk = arena.alloc(f"merged_keys[{ply}]", groups * 2, np.uint64)
    group_of = kernels.merge_gather(plan, boards, keys, n, ub, uk)
    return ub, uk, groups, group_of


def keep_part(kernels, arena, boards, keys, n: int, ply: int, us: int, split):
    """The boards of ``split``'s part (a ``kernels.Split``; side ``us`` to move) of a level about to
    be merged at the split level, and one board of another part: (boards, keys, count, group of
    each board).

    A part counts only its own boards at the split level; the others count 0 there (the part
    filter), but merged, probed and counted they cost as much as its own, so a part of P did the
    split level's work P times over. Here each own board keeps a group of its own, in order, and
    every other board joins the group of the first of them (the last group), which the part filter
    then sets to 0 as before: the level that is merged, probed and expanded is the part's own
    share. The kept boards are copied into ``arena`` (sites ``part_boards[ply]``,
    ``part_keys[ply]``); group_of (uint32, n) maps each board to its group for the upsweep, None
    when every board is this part's (then the inputs come back unchanged)."""
    with kernels.temporaries(f"part_mask[{ply}]"):  # out of memory: the driver halves the chunk
        m, rows, group_of = kernels.part_rows(keys, boards, n, us, split)
        if m == n:
            return boards, keys, n, None
        kept_boards = arena.alloc(f"part_boards[{ply}]", (m + 1) * WORDS, np.uint64)
        kept_keys = arena.alloc(f"part_keys[{ply}]", (m + 1) * 2, np.uint64)
        kernels.gather_rows(boards, rows, m + 1, WORDS, kept_boards)
        kernels.gather_rows(keys, rows, m + 1, 2, kept_keys)
    return kept_boards, kept_keys, m + 1, group_of


def then_group(kernels, first, second):
    """The groups of two grouping steps one after the other (uint32 maps, board -> group of the first
    step, that group -> group of the second; None: the identity): board -> final group."""
    if first is None or second is None:
        return second if first is None else first
    with kernels.temporaries("part_groups"):
        return kernels.take_u32(second, first)


def leaf_merged(kernels, z, boards, keys, parents, moves, total: int, side: int, values, temp_bytes: int,
                max_slice: int = LEAF_MERGE_SLICE) -> tuple[int, int]:
    """The fused leaf of a remaining-depth-3 level with its children merged: the ``total`` moves
    of ``boards`` (side ``side``) are grouped by the Zobrist key (table ``z``) of the child each
    makes, perft 2 is counted once a group, and every move adds its group's count to its parent's
    value (``kernels.leaf_merged``). The same values as ``leaf_values(..., levels=3)``. The fused leaf
    is most of a deep count's time, and most of its children repeat: startpos perft 11's leaf
    has 29.1 G moves for 9.2 G distinct ply-9 positions (A083276); the slices merged them into
    15.7 G (H200, NOTES.md "Session 12": 20.5 -> 14.7 s; perft 12 343 -> 262 s).
    In slices of a power of two moves, at most ``max_slice`` and within 3/4 of ``temp_bytes`` (the
    memory beside the arenas, LEAF_MERGE_TEMP_BYTES_PER_MOVE a move): a transposition whose two
    moves fall in different slices is counted twice, exactly. Returns (moves merged, groups
    counted): (0, 0) when too little memory is left for a slice of LEAF_MERGE_MIN_SLICE moves (the
    plain fused leaf then counted the level).
    """
    size = _slice_size(temp_bytes, LEAF_MERGE_TEMP_BYTES_PER_MOVE, max_slice)
    if size is None:
        kernels.leaf_values(boards, parents, moves, total, side, 3, values)
        return 0, 0
    merged = groups = 0
    for start in range(0, total, size):
        n = min(size, total - start)
        groups += kernels.leaf_merged(boards, keys, parents[start:start + n], moves[start:start + n], n, side, z,
                                      values)
        merged += n
    return merged, groups


def _slice_size(temp_bytes: int, per_move: int, max_slice: int) -> int | None:
    """Moves in one slice of a leaf merge: the largest power of two of at most ``max_slice`` moves
    whose temporaries (``per_move`` bytes a move) fit 3/4 of ``temp_bytes``; None when fewer than
    LEAF_MERGE_MIN_SLICE do (the caller then counts the level without merging)."""
    # 3/4 of the memory beside the arenas: the upper levels' groups (uint32 a board) stay there
    # too. Larger slices merge more (startpos perft 11: 1.76x with 2^27 moves, 1.85x with 2^28).
    # A power of two, so the hash table is 4 slots a move (its size is the next power of two of 4n).
    # Too large a slice fails a temporary, and the driver retries the call with half its roots.
    fits = temp_bytes * 3 // 4 // per_move
    if fits < LEAF_MERGE_MIN_SLICE:
        return None
    size = max(1, min(max_slice, fits))
    return 1 << (size.bit_length() - 1)


def stats_leaf_merged(kernels, z, boards, keys, parents, moves, total: int, side: int, values, n_boards: int,
                      temp_bytes: int, max_slice: int = LEAF_MERGE_SLICE) -> tuple[int, int]:
    """The statistics leaf of a remaining-depth-2 level (``n_boards`` boards, side ``side``, values as
    13 slices of ``n_boards``) with its leaf parents merged: the ``total`` moves are grouped by the
    Zobrist key (table ``z``) of the leaf parent each makes, each group's leaf parent is classified
    once (kernels/pc_stats.h) and every move adds its group's 13 counters to its parent's values
    (``kernels.stats_leaf_merged``). The same values as ``stats_leaf_values``. In slices as
    :func:`leaf_merged` (STATS_LEAF_MERGE_TEMP_BYTES_PER_MOVE a move): a transposition whose two moves
    fall in different slices is classified twice, exactly. Returns (moves merged, groups
    classified): (0, 0) when too little memory is left for a slice of LEAF_MERGE_MIN_SLICE moves (the
    plain statistics leaf then classified every move)."""
    size = _slice_size(temp_bytes, STATS_LEAF_MERGE_TEMP_BYTES_PER_MOVE, max_slice)
    if size is None:
        kernels.stats_leaf_values(boards, parents, moves, total, side, values, n_boards)
        return 0, 0
    merged = groups = 0
    for start in range(0, total, size):
        n = min(size, total - start)
        groups += kernels.stats_leaf_merged(boards, keys, parents[start:start + n], moves[start:start + n], n, side,
                                            z, values, n_boards)
        merged += n
    return merged, groups
