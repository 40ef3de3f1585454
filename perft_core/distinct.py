"""Distinct positions per ply below a position: measured on the host for the first plies, then
extrapolated. They size the transposition tables (perft_core.gpu.tables), bound the levels of the
GPU driver's calls, and model a count through perfect tables (perft_core.estimate.tt_fraction)."""
from __future__ import annotations

import numpy as np

from . import _core
from .hostbatch import expand_host, host_keys

FIRST_TRANSPOSITION_PLY = 3
"""The first ply below one position where two move sequences can reach the same position (two moves
of one side played in either order around a move of the other); at ply 1 and 2 every path reaches a
different position, so a BFS level there is not merged (merging it would find nothing)."""

DISTINCT_MEASURE_BOARDS = 20_000
"""Boards the host may make to measure distinct positions past ply 3 (a few ms on one core)."""
DISTINCT_FIRST_MERGE_BOARDS = 250_000
"""Boards the host may make to reach ply 3, the first ply with transpositions (see distinct_per_ply)."""
DISTINCT_RATIO_DECAY = 0.95
"""Per-ply decay of the distinct-position branching ratio past the measured plies. From the start
position's A083276 ratios past ply 4 (11.41, 11.45, 10.24, 10.25, 9.29, 9.30: about 0.95 a ply);
checked at ply 5 on CPW positions 2-6 measured from plies 3-4 (estimate / true: Kiwipete 1.44,
CPW 3 1.00, CPW 4 1.76, CPW 5 1.43, CPW 6 1.25; NOTES.md): a mild overestimate, the safe side for
a table size."""


def distinct_per_ply(boards: np.ndarray, us: int, depth: int, expand, keys_of) -> list[float]:
    """Estimated distinct positions at each ply 0..depth below the root ``boards`` (shape (1, 5)).

    Plies are expanded on the host (``expand(boards, side) -> children``, ``keys_of(boards, side) ->
    (n, 2) uint64 Zobrist keys``), equal keys merged, while the next ply is expected to need at most
    ``DISTINCT_MEASURE_BOARDS`` boards; later plies grow by the last measured ratio, decaying by
    ``DISTINCT_RATIO_DECAY`` a ply (never below 1). Returns floats, ``depth + 1`` of them.
    """
    distinct = [1.0]
    made = 0
    while len(distinct) <= depth:
        ratio = distinct[-1] / distinct[-2] if len(distinct) > 1 else 40.0
        # Transpositions start at ply 3 (two moves of one side in either order): the plies before
        # it branch with no merging at all, so ply 3 is measured whenever it is affordable.
        limit = DISTINCT_MEASURE_BOARDS if len(distinct) > 3 else DISTINCT_FIRST_MERGE_BOARDS
        if len(distinct) > 1 and made + len(boards) * ratio > limit:
            break
        children = expand(boards, us)
        us ^= 1
        made += len(children)
        if len(children) == 0:
            return distinct + [0.0] * (depth + 1 - len(distinct))
        _, first = np.unique(keys_of(children, us)[:, 0], return_index=True)  # low halves: enough to count
        boards = children[first]
        distinct.append(float(len(first)))
    ratio = distinct[-1] / distinct[-2] if len(distinct) > 1 else 1.0
    while len(distinct) <= depth:
        ratio = max(1.0, ratio * DISTINCT_RATIO_DECAY)
        distinct.append(distinct[-1] * ratio)
    return distinct


def distinct_below(position, depth: int) -> list[float]:
    """:func:`distinct_per_ply` below a ``perft_core.Position``: estimated distinct positions at each
    ply 0..depth (floats, ``depth + 1`` of them), keyed with the default Zobrist seed (equal keys
    mean equal positions whatever the seed, up to 2^-64). Raises ValueError for a negative depth."""
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    root, us, ci = _core.gpu_root(position.core_args())
    z = np.frombuffer(_core.zobrist_keys_blob(_core.ZOBRIST_DEFAULT_SEED), dtype=np.uint64).copy()
    return distinct_per_ply(np.array([root], dtype=np.uint64), us, depth,
                            lambda boards, side: expand_host(boards, side, ci)[0],
                            lambda boards, side: host_keys(boards, side, ci, z))
