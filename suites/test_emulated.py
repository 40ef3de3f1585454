"""The GPU BFS driver on the emulated device (NumPy + the extension's host batch kernels), in CPU CI.

Same driver code as the real GPU: levels, prefix sums, interval expand, fused two-level leaf,
launch depth, chunking of roots, and the out-of-memory fallback under injected faults (``-k oom``).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

import perft_core
from oracle import tables
from oracle.strategies import random_walk_fens
from perft_core.gpu.arena import DeviceOutOfMemory, FaultPlan
from perft_core.gpu.driver import BfsDriver
from perft_core.gpu.kernels import EmulatedKernels

EMU_MAX_NODES = int(os.environ.get("PERFT_EMU_MAX_NODES", "1000000"))
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CHESS960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
POS3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"


@pytest.mark.parametrize("suite", [s for s in tables.SUITES if s != "deep"])  # deep rows: beyond these budgets
def test_emulated_perft_matches_tables(suite):
    drv = BfsDriver(EmulatedKernels(), memory_bytes=64 << 20)
    rows = [r for r in tables.deepest_rows(EMU_MAX_NODES) if r.suite == suite]
    assert rows
    bad = []
    for row in rows:
        pos = perft_core.Position.from_fen(row.fen, chess960=row.chess960 or None)
        got = drv.perft(pos, row.depth)
        if got != row.nodes:
            bad.append((row.test_id, got, row.nodes))
    assert not bad, bad[:10]


@pytest.mark.parametrize("fen,depth", [(KIWIPETE, 3), (CHESS960, 3), (POS3, 4)])
def test_emulated_divide_matches_cpu(fen, depth):
    drv = BfsDriver(EmulatedKernels(), memory_bytes=16 << 20)
    assert drv.divide(perft_core.Position.from_fen(fen), depth) == perft_core.divide(fen, depth)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fen=random_walk_fens(chess960=None, max_plies=60))
def test_fused_leaf_quiet_moves_match_cpu_perft_on_random_walks(fen):
    """The fused leaf counts each quiet move of a child as the child's base count (kernels/pc_quiet.h);
    the CPU perft makes and counts every move. Depth 3 is one fused-leaf call on the whole tree."""
    pos = perft_core.Position.from_fen(fen, chess960=None)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=8 << 20)
    assert drv.perft(pos, 3) == perft_core.perft(pos, 3)
    assert drv.stats.gpu_depth == 3 and drv.stats.launch_depth == 0


def test_backend_option_routes_to_emulated_driver():
    assert perft_core.perft(KIWIPETE, 3, backend="gpu-emulated") == 97862
    assert perft_core.divide(CHESS960, 2, backend="gpu-emulated") == perft_core.divide(CHESS960, 2)


@pytest.mark.parametrize("capacity", [1 << 14, 1 << 16, 1 << 18, 1 << 22])
def test_small_arena_uses_launch_depth_and_chunks_exactly(capacity):
    """A small buffer moves the launch depth down and splits the roots into chunks; counts stay exact."""
    drv = BfsDriver(EmulatedKernels(), memory_bytes=capacity)
    assert drv.perft(perft_core.Position.from_fen(KIWIPETE), 5) == 193690690
    s = drv.stats
    assert s.peak_bytes <= capacity
    assert s.launch_depth + s.gpu_depth == 5
    if capacity <= 1 << 18:
        assert s.launch_depth >= 1 and s.gpu_calls > 1
    assert sum(len(levels) for levels in s.level_positions) >= s.gpu_calls


@pytest.mark.parametrize("max_gpu_depth", [1, 2, 3, 4])
def test_every_leaf_kind_and_gpu_depth(max_gpu_depth):
    """GPU calls of depth 1 (count_sum), 2 (leaf2), 3 (fused leaf3) and 4 (one expanded level)."""
    drv = BfsDriver(EmulatedKernels(), memory_bytes=8 << 20, max_gpu_depth=max_gpu_depth)
    assert drv.perft(perft_core.Position.from_fen(POS3), 5) == 674624
    assert drv.stats.gpu_depth == max_gpu_depth


def test_empty_level_ends_the_call_without_counting():
    """Checkmate at the root or inside the tree: an empty BFS level contributes 0, counted once."""
    drv = BfsDriver(EmulatedKernels(), memory_bytes=1 << 20)
    mated = perft_core.Position.from_fen("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3")
    for depth in range(1, 5):
        assert drv.perft(mated, depth) == 0
    # Mate in one for white; some lines end early at every depth.
    mate_in_1 = perft_core.Position.from_fen("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    for depth in range(1, 5):
        assert drv.perft(mate_in_1, depth) == perft_core.perft(mate_in_1, depth)


# ----- out-of-memory fault injection (pytest -k oom) -----------------------------------------------

OOM_SITES = ["boards[*]", "counts[*]", "offsets[*]", "moves[*]", "parents[*]", "boards[0]", "moves[0]"]


@pytest.mark.parametrize("fen,depth,expected", [(KIWIPETE, 4, 4085603), (CHESS960, 4, 326672), (POS3, 5, 674624)])
@pytest.mark.parametrize("site", OOM_SITES)
def test_oom_at_each_site_falls_back_exactly(fen, depth, expected, site):
    plan = FaultPlan(site=site, times=1)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=32 << 20, fault_plan=plan)
    assert drv.perft(perft_core.Position.from_fen(fen, chess960=None), depth) == expected
    assert plan.fired == 1, "the fault plan never fired"
    assert drv.stats.oom_fallbacks + drv.stats.chunk_splits >= 1
    assert drv.stats.oom_sites and all(s for s in drv.stats.oom_sites)


@pytest.mark.parametrize("ordinal", [1, 2, 3, 5, 8, 11])
def test_oom_at_kth_allocation_falls_back_exactly(ordinal):
    plan = FaultPlan(ordinal=ordinal, times=3)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=32 << 20, fault_plan=plan)
    assert drv.perft(perft_core.Position.from_fen(KIWIPETE), 5) == 193690690
    assert plan.fired >= 1


def test_oom_on_largest_allocation_with_many_roots_splits_chunks():
    """Launch depth > 0 gives chunks of several roots; a fault halves the chunk instead of recursing."""
    plan = FaultPlan(site="moves[*]", min_bytes=1, times=4)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=1 << 20, fault_plan=plan)
    assert drv.perft(perft_core.Position.from_fen(KIWIPETE), 5) == 193690690
    assert plan.fired == 4
    assert drv.stats.chunk_splits >= 1


def test_oom_that_never_ends_raises_instead_of_returning_a_partial_count():
    plan = FaultPlan(site="*", times=10**9)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=1 << 20, fault_plan=plan)
    with pytest.raises(DeviceOutOfMemory):
        drv.perft(perft_core.Position.from_fen(KIWIPETE), 3)


def test_oom_plan_text_form_and_errors():
    plan = FaultPlan.parse("site=moves[*],ordinal=3,min_bytes=10,times=2")
    assert (plan.site, plan.ordinal, plan.min_bytes, plan.times) == ("moves[*]", 3, 10, 2)
    with pytest.raises(ValueError, match="bad entry"):
        FaultPlan.parse("where=moves")
    with pytest.raises(ValueError, match="integer"):
        FaultPlan.parse("ordinal=three")


def test_oom_plan_from_environment(monkeypatch):
    from perft_core.gpu import registry as driver_mod

    monkeypatch.setenv("PERFT_FAULT_PLAN", "site=boards[1],times=1")
    driver_mod._DRIVERS.clear()
    try:
        drv = driver_mod.get_driver("gpu-emulated")
        assert drv.perft(perft_core.Position.from_fen(KIWIPETE), 4) == 4085603
        assert drv.arena.fault_plan.fired == 1
    finally:
        driver_mod._DRIVERS.clear()


def test_oom_single_root_lowers_launch_depth_for_the_rest_of_the_level():
    """Every BFS call that expands a second level fails: single roots fall back, and the rest of the
    level goes one ply down with them (no root is tried again at the depth that failed)."""
    plan = FaultPlan(site="moves[1]", times=10**6)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=1 << 20, fault_plan=plan)
    assert drv.perft(perft_core.Position.from_fen(KIWIPETE), 5) == 193690690
    s = drv.stats
    assert plan.fired >= 1 and s.launch_lowered >= 1
    # Lowering is per level, not per root: far fewer failed calls than roots at the launch depth.
    assert s.oom_fallbacks == s.launch_lowered <= 5
