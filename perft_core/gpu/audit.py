"""The audit of a GPU driver's tables: every stored entry recomputed on the CPU, so a test can
prove that no device table or host cache entry is poisoned (after faults, parts, merges)."""
from __future__ import annotations

import itertools

import numpy as np

from .. import _core
from ..hostbatch import expand_host
from ..stats import STATS_FIELDS


def part_counts(driver, boards: np.ndarray, side: int, ci: bytes, r: int) -> np.ndarray:
    """``driver``'s part (``TTBfsDriver.set_part``) of perft(b, r) for host boards (uint64 (n, 5)),
    on the CPU: uint64 (n,). The whole count when the driver counts one part or r is below its
    split depth (``driver.part_depth``)."""
    n = len(boards)
    if driver.parts == 1 or r < driver.part_depth:
        return np.asarray(_core.batch_perft(np.ascontiguousarray(boards).reshape(-1), n, side, ci, r),
                          dtype=np.uint64)
    out = np.zeros(n, dtype=np.uint64)
    if r == driver.part_depth:
        keys = np.empty((n, 2), dtype=np.uint64)
        _core.batch_keys(np.ascontiguousarray(boards).reshape(-1), n, side, ci, driver.z_host, keys)
        mine = np.nonzero(driver.split.mine(keys, boards, side))[0]
        if len(mine):
            out[mine] = _core.batch_perft(np.ascontiguousarray(boards[mine]).reshape(-1), len(mine), side, ci, r)
        return out
    children, parents = expand_host(boards, side, ci)
    np.add.at(out, parents, part_counts(driver, children, side ^ 1, ci, r - 1))
    return out


def stats_counts(board: np.ndarray, side: int, ci: bytes, r: int, driver=None) -> tuple[int, ...]:
    """The 13 statistics counters (STATS_FIELDS order) of one host board (uint64 (5,)) at remaining
    depth ``r`` >= 1, on the CPU: its subtree expanded ``r - 1`` plies by the host batch kernels, the
    leaf parents' moves classified (kernels/pc_stats.h ``leaf_stats``) and summed. With ``driver``
    counting a part (``TTBfsDriver.set_part``): that part's, the boards at remaining depth
    ``driver.part_depth`` kept only where they are in the part (``driver.split``)."""
    boards = np.ascontiguousarray(board, dtype=np.uint64).reshape(1, -1)
    for left in range(r, 1, -1):
        if driver is not None and driver.parts > 1 and left == driver.part_depth:
            keys = np.empty((len(boards), 2), dtype=np.uint64)
            _core.batch_keys(np.ascontiguousarray(boards).reshape(-1), len(boards), side, ci, driver.z_host, keys)
            boards = boards[driver.split.mine(keys, boards, side)]
            if not len(boards):
                return (0,) * len(STATS_FIELDS)
        boards, _parents = expand_host(boards, side, ci)
        side ^= 1
    flat = np.ascontiguousarray(boards).reshape(-1)
    return tuple(int(x) for x in _core.batch_stats_sum(flat, len(boards), side, ci))


def audit(driver) -> tuple[int, list[tuple]]:
    """Recompute every stored entry of ``driver`` (a TTBfsDriver made with ``audit=True``), device
    TTs and host cache, on the CPU: its key from scratch and its (part's) perft.

    Statistics entries (a 13-tuple for a count: the statistics tables and host cache of
    ``perft_stats``) are recounted by :func:`stats_counts`.

    Returns (entries checked, wrong entries); a wrong entry is (remaining, key, stored count, CPU
    count, key matches). An empty list means no entry is poisoned.
    Raises RuntimeError when the driver was not made with ``audit=True``.
    """
    checked, wrong = 0, []
    for r, key, words, side, count, ci in itertools.chain(driver.audit_entries(), driver.host_entries()):
        flat = np.ascontiguousarray(words, dtype=np.uint64).reshape(-1)
        k = np.empty((1, 2), dtype=np.uint64)
        _core.batch_keys(flat, 1, side, ci, driver.z_host, k)
        real_key = (int(k[0, 1]) << 64) | int(k[0, 0])
        if isinstance(count, tuple):
            real = stats_counts(flat, side, ci, r, driver)
        else:
            real = int(part_counts(driver, flat.reshape(1, -1), side, ci, r)[0])
        checked += 1
        if real_key != key or real != count:
            wrong.append((r, key, count, real, real_key == key))
    return checked, wrong
