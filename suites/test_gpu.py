"""GPU suite (marker ``gpu``; ``tox -e gpu`` via ci/gpu-runner.sh): NVRTC build, GPU/CPU parity.

Skipped with a reason where CuPy or a CUDA device is missing (suites/conftest.py).
"""
from __future__ import annotations

import os
import sys

import pytest

import perft_core
from oracle import tables

pytestmark = pytest.mark.gpu

GPU_MAX_NODES = int(os.environ.get("PERFT_GPU_MAX_NODES", "20000000"))


@pytest.fixture(scope="module")
def driver():
    from perft_core.gpu import get_driver

    return get_driver("gpu")


@pytest.mark.parametrize("fen", [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
])
def test_nvrtc_kernels_count_perft3(driver, fen):
    """The shared headers compile through cupy.RawModule and count perft 1..3 on the device."""
    for depth in (1, 2, 3):
        assert driver.perft(perft_core.Position.from_fen(fen), depth) == perft_core.perft(fen, depth)
    assert driver.stats.gpu_calls >= 1


def test_gpu_perft_matches_every_table_within_budget(driver):
    rows = tables.deepest_rows(GPU_MAX_NODES)
    assert len(rows) > 1000
    bad = []
    for row in rows:
        pos = perft_core.Position.from_fen(row.fen, chess960=row.chess960 or None)
        got = driver.perft(pos, row.depth)
        if got != row.nodes:
            bad.append((row.test_id, got, row.nodes))
    assert not bad, bad[:10]


def test_gpu_divide_matches_cpu_on_tables(driver):
    """GPU/CPU divide parity: all small-suite positions, every 8th perftsuite/Chess960 position."""
    rows = tables.deepest_rows(GPU_MAX_NODES // 4)
    picked = [r for i, r in enumerate(rows) if r.suite not in ("perftsuite", "chess960") or i % 8 == 0]
    assert any(r.chess960 for r in picked)
    for row in picked:
        pos = perft_core.Position.from_fen(row.fen, chess960=row.chess960 or None)
        assert driver.divide(pos, row.depth) == perft_core.divide(pos, row.depth), row.test_id


def test_gpu_launch_depth_chunks_and_fallback_exact():
    """A small arena forces CPU expansion above the launch depth, chunking and OOM fallback."""
    from perft_core.gpu.driver import BfsDriver
    from perft_core.gpu.kernels import CupyKernels

    pos = perft_core.Position.from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    for capacity in (1 << 16, 1 << 20, 1 << 24):
        d = BfsDriver(CupyKernels(), memory_bytes=capacity)
        assert d.perft(pos, 5) == 193690690
        assert d.stats.peak_bytes <= capacity


@pytest.mark.parametrize("miscount", [1, -1])
@pytest.mark.parametrize("tables", [False, True])
def test_gen_kernel_refuses_a_board_whose_generator_miscounts(miscount, tables):
    """Issue 26, item 8: kernels built with a planted generator bug (every 7th board of a BFS level
    generates one move more, or one fewer, than its count reserved) raise GeneratorMismatch naming
    the board and both numbers, in the plain and the TT driver, instead of writing over the next
    board's moves or returning a count; the error word is cleared for the next count."""
    from perft_core.errors import GeneratorMismatch
    from perft_core.gpu.driver import BfsDriver
    from perft_core.gpu.kernels import CupyKernels
    from perft_core.gpu.ttdriver import TTBfsDriver

    k = CupyKernels(options=(f"-DPC_TEST_GEN_MISCOUNT={miscount}",))
    d = (TTBfsDriver(k, memory_bytes=1 << 26, tt_bytes=1 << 22) if tables else BfsDriver(k, memory_bytes=1 << 26))
    kiwipete = perft_core.Position.from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    with pytest.raises(GeneratorMismatch, match="moves where its count promised") as caught:
        d.perft(kiwipete, 5)
    e = caught.value
    assert e.generated - e.reserved == miscount and e.reserved > 0 and e.board % 7 == 3, str(e)
    assert int(k.gen_error.get()[0]) == 0


def test_kernel_resources_printed(driver):
    """Registers, local memory and shared memory of every kernel (CuPy's kernel attributes)."""
    attrs = driver.k.attributes()
    lines = [f"{name:28s} regs={a['registers']:3d} local={a['local_bytes']:5d} B shared={a['shared_bytes']:6d} B"
             for name, a in sorted(attrs.items())]
    sys.stderr.write("\nkernel resources:\n  " + "\n  ".join(lines) + "\n")
    assert all(a["registers"] > 0 for a in attrs.values())
    # Kernels without a per-thread move list keep at most a small call stack in local memory.
    assert all(a["local_bytes"] <= 64 for n, a in attrs.items() if n.startswith(("count", "make")))
