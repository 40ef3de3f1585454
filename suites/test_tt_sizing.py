"""GPU TT sizing from the position at hand: distinct positions per ply, measured then extrapolated.

The truth: OEIS A083276 (the bundled table) for the start position, and a full host expansion with
key merging for positions small enough to expand here.
"""
from __future__ import annotations

import numpy as np
import pytest

import perft_core
from oracle import tables
from perft_core.gpu.ttdriver import TTBfsDriver, distinct_per_ply

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
CPW3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
CPW4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"


@pytest.fixture(scope="module")
def drv():
    from perft_core.gpu.kernels import EmulatedKernels

    return TTBfsDriver(EmulatedKernels(), memory_bytes=16 << 20, tt_bytes=64 << 20)


def _estimate(drv, fen, depth):
    root, us = drv._set_root(perft_core.Position.from_fen(fen))
    return distinct_per_ply(np.array([root], dtype=np.uint64), us, depth, drv._expand_host, drv._host_keys)


def _exact(drv, fen, depth):
    root, us = drv._set_root(perft_core.Position.from_fen(fen))
    boards, out = np.array([root], dtype=np.uint64), [1]
    for _ in range(depth):
        boards = drv._expand_host(boards, us)
        us ^= 1
        _, first = np.unique(drv._host_keys(boards, us), axis=0, return_index=True)
        boards = boards[first]
        out.append(len(first))
    return out


def test_startpos_estimate_follows_a083276(drv):
    truth = tables.unique_positions()
    est = _estimate(drv, STARTPOS, 9)
    for ply in range(10):
        assert 0.5 <= est[ply] / truth[ply] <= 2.0, (ply, est[ply], truth[ply])


@pytest.mark.parametrize("fen, depth", [(CPW3, 5), (CPW4, 4)])
def test_estimate_of_other_positions_within_2x(drv, fen, depth):
    exact = _exact(drv, fen, depth)
    est = _estimate(drv, fen, depth)
    assert est[:2] == exact[:2]  # the first plies are measured exactly
    for ply in range(depth + 1):
        assert 0.5 <= est[ply] / exact[ply] <= 2.0, (ply, est[ply], exact[ply])


def test_tables_sized_by_the_positions_own_counts(drv):
    """CPW position 3 has far fewer distinct positions per ply than the start position: its tables
    stay within 4x its own counts (the start position's sequence gave it up to 25x too many)."""
    est = _estimate(drv, CPW3, 8)
    drv.tts = {}
    drv.tt_arena.reset()
    drv._plan_tts(8, 7, est)
    assert drv.tts
    for r, table in drv.tts.items():
        assert table.slots <= max(1024, 4 * est[8 - r])
    drv.tts = {}
    drv.tt_arena.reset()
    drv._plan_tts(8, 7, est, cap=False)  # a deep run's shared tables: the whole budget, same proportions
    budget_slots = drv.tt_arena.capacity * 0.95 / 16
    assert sum(t.slots for t in drv.tts.values()) == pytest.approx(budget_slots, rel=0.01)


def test_a_dead_end_has_no_positions_below(drv):
    mate = "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"  # black is mated: nothing below the root
    assert _estimate(drv, mate, 3) == [1.0, 0.0, 0.0, 0.0]


def test_chunks_of_roots_bounded_by_distinct_positions():
    """Level merging bounds a call's levels by the distinct positions of their plies, so a call
    takes more roots than one root's unmerged estimate allows; with no bound, the old rule."""
    from perft_core.gpu.kernels import EmulatedKernels

    drv = TTBfsDriver(EmulatedKernels(), memory_bytes=256 << 20, tt_bytes=4 << 20)
    pos = perft_core.Position.from_fen(CPW3)
    drv._plan_call(pos, 8)
    est = _estimate(drv, CPW3, 8)
    drv._level_bound = None
    unbounded = drv._chunk_tt(10_000, 7)
    drv._level_bound = (8, est)
    bounded = drv._chunk_tt(10_000, 7)
    assert bounded > unbounded >= 1
    drv._level_bound = (8, [1.0] * 9)  # one position a ply: every root fits
    assert drv._chunk_tt(10_000, 7) == 10_000


def test_an_underestimate_costs_retries_never_a_count(monkeypatch):
    """Distinct positions guessed 1 a ply: chunks far too big for the arena run out of memory, are
    halved and retried, and the count stays exact (the table's count)."""
    from perft_core.gpu import ttdriver
    from perft_core.gpu.kernels import EmulatedKernels

    monkeypatch.setattr(ttdriver, "distinct_per_ply", lambda boards, us, depth, *a: [1.0] * (depth + 1))
    d = TTBfsDriver(EmulatedKernels(), memory_bytes=200_000, tt_bytes=1 << 20, min_roots=20)
    expected = dict(((r.fen, r.depth), r.nodes) for r in tables.load_all() if r.id == "pos3")
    fen = next(f for (f, depth) in expected if depth == 6)
    assert d.perft(perft_core.Position.from_fen(fen), 6) == expected[(fen, 6)]
    assert d.stats.chunk_splits > 0


def test_device_tts_only_when_a_level_takes_several_calls():
    """Tables pay only across BFS calls (a call stores after its last probe): roots that all fit
    one call get none; roots sent in several chunks get them. Counts from the CPW table."""
    from perft_core.gpu.kernels import EmulatedKernels

    fen, nodes = next((r.fen, r.nodes) for r in tables.load_all() if r.id == "pos3" and r.depth == 6)
    pos = perft_core.Position.from_fen(fen)
    one = TTBfsDriver(EmulatedKernels(), memory_bytes=64 << 20, tt_bytes=4 << 20, min_roots=20)
    assert one.perft(pos, 6) == nodes
    assert one.stats.gpu_calls == 1 and one.stats.launch_depth >= 1 and not one.tts
    many = TTBfsDriver(EmulatedKernels(), memory_bytes=64 << 20, tt_bytes=4 << 20, min_roots=20,
                       chunk_leaf_moves=1 << 8)
    assert many.perft(pos, 6) == nodes
    assert many.stats.gpu_calls > 1 and many.tts


def test_later_chunks_are_sized_from_what_calls_used():
    """The first chunk of a level comes from an estimate with a margin a ply; later chunks from the
    arena bytes the calls really used (at most doubling): fewer calls, the same exact count.
    CPW 3 perft 7 in a 2 MiB arena: 6 calls sized by the estimate alone, 4 adapted."""
    from perft_core.gpu.kernels import EmulatedKernels

    fen, nodes = next((r.fen, r.nodes) for r in tables.load_all() if r.id == "pos3" and r.depth == 7)
    calls = {}
    for adaptive in (False, True):
        d = TTBfsDriver(EmulatedKernels(), memory_bytes=2 << 20, tt_bytes=1 << 20, min_roots=400)
        d.adaptive = adaptive
        assert d.perft(perft_core.Position.from_fen(fen), 7) == nodes
        calls[adaptive] = d.stats.gpu_calls
    assert calls[True] < calls[False]


def test_chunks_keep_siblings_together_so_calls_merge_more():
    """Roots go out in the order the host made them, not sorted by key: a chunk's roots share
    ancestors, so their transpositions merge inside the call. Startpos perft 7 from 400 roots in a
    1 MiB arena (about 50 calls): roughly 10x the positions merged inside calls, the same count."""
    from perft_core.gpu.kernels import EmulatedKernels

    (nodes,) = [r.nodes for r in tables.load("startpos") if r.depth == 7]
    merged = {}
    for locality in (False, True):
        d = TTBfsDriver(EmulatedKernels(), memory_bytes=1 << 20, tt_bytes=1 << 20, min_roots=400)
        d.locality = locality
        assert d.perft(perft_core.Position.from_fen(STARTPOS), 7) == nodes
        assert d.stats.gpu_calls > 10
        merged[locality] = d.tt_stats["merged"]
    assert merged[True] > 4 * merged[False]


def test_plan_slots_bounds_each_table_and_fills_the_budget():
    """plan_slots: every table within SLOTS_PER_POSITION x its positions; a run's shared tables
    (the lowest table unbounded) use the whole budget; a budget too small for every bound is
    shared in proportion to positions x value^(r - lowest); nothing below MIN_SLOTS."""
    from perft_core.gpu import tables

    positions = {3: 9.2e9, 4: 0.99e9, 5: 96e6, 6: 9.4e6}
    big = tables.plan_slots(positions, 1e12)
    assert all(big[r] == int(tables.SLOTS_PER_POSITION * positions[r]) for r in positions)
    shared = tables.plan_slots(positions, 1e12, cap_lowest=False)
    assert sum(shared.values()) == pytest.approx(1e12, rel=1e-9)
    assert all(shared[r] == big[r] for r in (4, 5, 6)) and shared[3] > big[3]
    small = tables.plan_slots(positions, 4.4e9, value=1.0)  # the old rule: in proportion to positions
    total = sum(positions.values())
    assert all(small[r] == pytest.approx(4.4e9 * positions[r] / total, rel=1e-6) for r in positions)
    top = tables.plan_slots(positions, 4.4e9, value=1e9)  # top-down: the upper tables to their bounds
    assert all(top[r] == int(tables.SLOTS_PER_POSITION * positions[r]) for r in (5, 6))
    assert top[4] > small[4] and top[3] < small[3]
    assert top[3] == pytest.approx(tables.LOWEST_FLOOR * small[3], rel=1e-3)  # the lowest table's floor
    assert sum(top.values()) == pytest.approx(4.4e9, rel=1e-6)
    ten = tables.plan_slots(positions, 4.4e9, value=10.0)  # between: each upper table more slots a position
    per = {r: ten[r] / positions[r] for r in positions}
    assert per[6] >= per[5] >= per[4] > per[3] and small[4] < ten[4] < top[4]
    assert sum(ten.values()) == pytest.approx(4.4e9, rel=1e-6)
    gains = [tables.held_gain(s) for s in (0.01, 0.5, 1.0, 2.0, 4.0)]
    assert gains == sorted(gains, reverse=True) and gains[0] == pytest.approx(1.0) and gains[2] == pytest.approx(0.264, abs=1e-3)
    part = tables.plan_slots({3: positions[3] / 4, **{r: positions[r] for r in (4, 5, 6)}}, 4.4e9, value=10.0,
                             above_lowest=0.25)  # a quarter of the leaf below each upper hit: the split level gains
    whole = tables.plan_slots({3: positions[3] / 4, **{r: positions[r] for r in (4, 5, 6)}}, 4.4e9, value=10.0)
    assert part[3] > whole[3] and part[4] < whole[4]
    # split at remaining depth 4: a hit at 4 saves the part the whole count under it, as at 3
    split4 = {3: positions[3] / 4, 4: positions[4] / 4, 5: positions[5], 6: positions[6]}
    deeper = tables.plan_slots(split4, 4.4e9, value=10.0, above_lowest=0.25, split=4)
    shallow = tables.plan_slots(split4, 4.4e9, value=10.0, above_lowest=0.25)  # the share from 4 up
    assert deeper[4] > shallow[4] and deeper[5] <= shallow[5]
    assert tables.plan_slots(split4, 4.4e9, value=10.0, above_lowest=0.25, split=3) == shallow
    assert tables.plan_slots({3: 1.0, 4: 0.0}, 10) == {3: tables.MIN_SLOTS, 4: tables.MIN_SLOTS}
    assert tables.plan_slots({}, 1e9) == {}


def test_host_cache_never_evicts_and_rereads_its_bound(monkeypatch):
    """The host cache is lossless: full, it refuses new entries (and keeps every old one); with no
    fixed bound it reads the host's memory again when it fills (a machine whose memory grows)."""
    from perft_core.gpu import hostcache

    fixed = hostcache.HostCache(2)
    assert fixed.put((1, 1, 5), 10) and fixed.put((2, 2, 5), 20)
    assert not fixed.put((3, 3, 5), 30) and fixed.get((3, 3, 5)) is None
    assert fixed.put((1, 1, 5), 10) and len(fixed) == 2 and fixed.get((2, 2, 5)) == 20
    limit = [3 * hostcache.ENTRY_COST_BYTES / hostcache.HOST_CACHE_SHARE]
    monkeypatch.setattr(hostcache, "memory_limit_bytes", lambda: int(limit[0]))
    monkeypatch.setattr(hostcache, "MIN_ENTRIES", 1)
    grows = hostcache.HostCache()
    assert grows.max_entries == 3
    assert all(grows.put((i, i, 4), i + 1) for i in range(3)) and not grows.put((9, 9, 4), 1)
    limit[0] *= 2  # the machine's memory grew
    assert grows.put((9, 9, 4), 1) and grows.max_entries == 6
    monkeypatch.setenv("PERFT_HOST_CACHE_ENTRIES", "5")
    assert hostcache.HostCache().max_entries == 5


def test_memory_limit_prefers_a_cgroup_limit_below_the_machine(monkeypatch, tmp_path):
    from perft_core.gpu import hostcache

    real = hostcache.Path
    files = {"/proc/meminfo": "MemTotal:       32000000 kB\nMemFree: 1 kB\n", "/sys/fs/cgroup/memory.max": "max\n"}

    def fake(path):
        p = str(path)
        if p in files:
            f = tmp_path / p.replace("/", "_")
            f.write_text(files[p])
            return f
        return real(tmp_path / "missing" / p.strip("/"))

    monkeypatch.setattr(hostcache, "Path", fake)
    assert hostcache.memory_limit_bytes() == 32000000 * 1024  # no cgroup limit: the machine's memory
    files["/sys/fs/cgroup/memory.max"] = "1073741824\n"
    assert hostcache.memory_limit_bytes() == 1 << 30
    files["/sys/fs/cgroup/memory.max"] = str(1 << 50) + "\n"  # a limit above the machine: the machine
    assert hostcache.memory_limit_bytes() == 32000000 * 1024
