"""Host batches of boards: expand a level and key it on the CPU through the extension's batch
kernels (the emulated device's operations, also used by the host levels of the GPU driver, the
deep run's split and the estimate's distinct positions). No GPU module is needed here."""
from __future__ import annotations

import numpy as np

from . import _core

WORDS = _core.BOARD_BYTES // 8
"""uint64 words a board takes (the quad bitboard and its state: kernels/pc_board.h)."""


def expand_host(boards: np.ndarray, us: int, ci: bytes) -> tuple[np.ndarray, np.ndarray]:
    """All children of ``boards`` (uint64 (n, 5)) with side ``us`` to move under castling geometry
    ``ci`` (CastleInfo bytes), on the CPU through the extension's host batch kernels: (children,
    uint64 (m, 5); the index of each child's parent, int64 (m,))."""
    n = len(boards)
    flat = np.ascontiguousarray(boards).reshape(-1)
    counts = np.empty(n, dtype=np.uint32)
    _core.batch_count(flat, n, us, ci, counts)
    offsets = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(counts, dtype=np.uint64, out=offsets[1:])
    total = int(offsets[n])
    moves = np.empty(total, dtype=np.uint16)
    parents = np.empty(total, dtype=np.uint32)
    _core.batch_gen(flat, n, us, ci, offsets, moves, parents)
    children = np.empty((total, WORDS), dtype=np.uint64)
    _core.batch_make(flat, parents, moves, total, us, ci, children)
    return children, parents.astype(np.int64)


def host_keys(boards: np.ndarray, us: int, ci: bytes, z: np.ndarray) -> np.ndarray:
    """128-bit Zobrist keys of host ``boards`` (uint64 (n, 5)), side ``us`` (0 white, 1 black), castle
    info ``ci``, key table ``z`` (uint64, ``_core.zobrist_keys_blob``): uint64 (n, 2) as (lo, hi)
    (the extension's ``batch_keys``)."""
    keys = np.empty((len(boards), 2), dtype=np.uint64)
    if len(boards):
        _core.batch_keys(np.ascontiguousarray(boards).reshape(-1), len(boards), us, ci, z, keys)
    return keys
