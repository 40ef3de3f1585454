"""Perft statistics on the GPU backends (issue 36): the BFS driver down to the leaf parents, then the
statistics leaf (kernels/pc_stats.h, stats_leaf_kernel / stats_sum_kernel in kernels/pc_kernels.cu).

The emulated device (NumPy + the extension's host batch twins of those kernels) runs in CPU CI: its
statistics must equal the CPU backend's (a recursion of its own, perft_core/src/stats.cpp) on
random positions, standard and Chess960, depths 1-4, and every published column of the CPW detail
rows and Grand Chess Tree's rows within a budget (oracle.stats.statistics_rows); the driver's launch
depth, chunks of roots and out-of-memory fallback must keep them exact. The tests marked ``gpu`` do
the same on the real device and skip with the reason elsewhere (suites/conftest.py). Expected
values come from the CPU backend or the published tables (oracle/data/cpw_perft_results_detail.csv,
oracle/data/gct_perft_stats.csv), never from this file.
"""
from __future__ import annotations

import json
import os
import random

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perft_core
from oracle.stats import statistics_rows
from oracle.strategies import random_walk_fens, seeded_walk
from perft_cli import main
from perft_core.gpu.arena import DeviceOutOfMemory, FaultPlan
from perft_core.gpu.driver import BfsDriver
from perft_core.gpu.kernels import EmulatedKernels
from perft_core.stats import Stats

pytestmark = pytest.mark.core

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CHESS960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
POS3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
POS4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"
POS5 = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8"
POS6 = "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10"

EMU_STATS_NODES = int(os.environ.get("PERFT_EMU_STATS_NODES", "200000000"))
"""Published statistics rows up to this many nodes are counted on the emulated device in CI (about 3 s in all
on one core of the 2-core VM; the statistics leaf classifies about 500 M leaf moves a second)."""
GPU_STATS_NODES = int(os.environ.get("PERFT_GPU_STATS_NODES", "20000000000"))
"""Published statistics rows up to this many nodes are counted on the real GPU by the ``gpu`` tests."""
WALK_NODES = 3_000_000
"""Leaf moves per random-walk example at most (the depth is lowered until the count fits)."""


def published(stats: Stats, row: dict) -> dict[str, int]:
    """The counters of ``stats`` that a published row (oracle.stats.statistics_rows) gives."""
    return {name: getattr(stats, name) for name in row["columns"]}


def position(fen: str) -> perft_core.Position:
    return perft_core.Position.from_fen(fen, chess960=None)


def walk_fens(seed: int, count: int, chess960: bool) -> list[str]:
    """``count`` FENs of seeded random legal walks (0-60 plies; Shredder-FEN for Chess960)."""
    rng = random.Random(seed)
    return [seeded_walk(rng, chess960) for _ in range(count)]


def depth_within(pos: perft_core.Position, depth: int, nodes: int = WALK_NODES) -> int:
    """``depth`` lowered until the count has at most ``nodes`` leaf moves (at least 1)."""
    while depth > 1 and perft_core.perft(pos, depth, threads=1) > nodes:
        depth -= 1
    return depth


# ----- the emulated device ----------------------------------------------------------------------

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("chess960", [False, True], ids=["standard", "chess960"])
@SETTINGS
@given(data=st.data(), depth=st.integers(1, 4))
def test_emulated_stats_equal_cpu_on_random_walks(chess960, data, depth):
    fen = data.draw(random_walk_fens(chess960=chess960, max_plies=60), label="fen")
    pos = position(fen)
    depth = depth_within(pos, depth)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=16 << 20)
    assert drv.perft_stats(pos, depth) == perft_core.perft_stats(pos, depth, threads=1), (fen, depth)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fen=random_walk_fens(chess960=None, max_plies=60), depth=st.integers(1, 3))
def test_emulated_divide_stats_equal_cpu(fen, depth):
    pos = position(fen)
    depth = depth_within(pos, depth, 300_000)
    got = perft_core.divide_stats(pos, depth, backend="gpu-emulated")
    assert got == perft_core.divide_stats(pos, depth, threads=1), (fen, depth)
    assert list(got) == sorted(got)


@pytest.mark.parametrize("row", statistics_rows(EMU_STATS_NODES), ids=lambda r: f"{r['id']}-{r['depth']}")
def test_emulated_published_row(row):
    got = perft_core.perft_stats(row["fen"], row["depth"], backend="gpu-emulated")
    assert published(got, row) == row["columns"]


def test_emulated_budget_covers_every_published_position():
    """The CI budget reaches every published position with statistics (CPW's and Grand Chess Tree's)
    at depth 4 or more."""
    deepest: dict[str, int] = {}
    for r in statistics_rows(EMU_STATS_NODES):
        deepest[r["id"]] = max(deepest.get(r["id"], 0), r["depth"])
    assert set(deepest) == {"gct_p0_startpos", "gct_p1_kiwipete", "gct_p2_sje_symmetric", "pos3", "pos4",
                            "pos4_mirrored"}
    assert min(deepest.values()) >= 4, deepest


@pytest.mark.parametrize("fen", [KIWIPETE, CHESS960, POS3, POS4, POS5, POS6])
def test_every_depth_and_gpu_depth(fen):
    """Depth 0-4 with every subtree depth of the BFS calls (1: every level but the last expanded on
    the host; the statistics leaf over the moves of left 2 and the boards of left 1 both run)."""
    pos = position(fen)
    for depth in range(5):
        want = perft_core.perft_stats(pos, depth, threads=1)
        for g in (1, 2, 3, None):
            drv = BfsDriver(EmulatedKernels(), memory_bytes=16 << 20, max_gpu_depth=g)
            assert drv.perft_stats(pos, depth) == want, (fen, depth, g)
        assert drv.perft(pos, depth) == want.nodes  # the plain count of the same driver agrees


@pytest.mark.parametrize("capacity", [1 << 16, 1 << 18, 1 << 20])
def test_small_arena_launch_depth_and_chunks_exact(capacity):
    pos = position(KIWIPETE)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=capacity)
    assert drv.perft_stats(pos, 4) == perft_core.perft_stats(pos, 4, threads=1)
    assert drv.stats.launch_depth >= 1 and drv.stats.peak_bytes <= capacity


def test_statistics_call_is_sized_one_level_deeper_than_the_plain_one():
    """A statistics BFS call stores the leaf parents' level: its subtree depth is at most the plain
    count's, and each call fits the arena."""
    pos = position(KIWIPETE)
    for capacity in (1 << 18, 1 << 21, 1 << 24):
        drv = BfsDriver(EmulatedKernels(), memory_bytes=capacity)
        drv.perft(pos, 5)
        plain = drv.stats.gpu_depth
        drv.perft_stats(pos, 5)
        assert drv.stats.gpu_depth <= plain and drv.stats.peak_bytes <= capacity
        assert drv.stats.oom_fallbacks == 0


OOM_SITES = ["boards[*]", "counts[*]", "offsets[*]", "moves[*]", "parents[*]", "boards[0]", "moves[0]"]


@pytest.mark.parametrize("fen,depth", [(KIWIPETE, 4), (CHESS960, 4), (POS3, 5)])
@pytest.mark.parametrize("site", OOM_SITES)
def test_oom_at_each_site_falls_back_exactly(fen, depth, site):
    """An injected out-of-memory at any site of a statistics call: the call's partial work is
    discarded, the chunk halved or the root sent one ply down, and the statistics stay exact."""
    pos = position(fen)
    plan = FaultPlan(site=site, times=1)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=32 << 20, fault_plan=plan)
    assert drv.perft_stats(pos, depth) == perft_core.perft_stats(pos, depth, threads=1)
    assert plan.fired == 1, "the fault plan never fired"
    assert drv.stats.oom_fallbacks + drv.stats.chunk_splits >= 1


def test_oom_that_never_ends_raises_instead_of_returning_partial_statistics():
    plan = FaultPlan(site="*", times=10**9)
    drv = BfsDriver(EmulatedKernels(), memory_bytes=1 << 20, fault_plan=plan)
    with pytest.raises(DeviceOutOfMemory):
        drv.perft_stats(position(KIWIPETE), 3)


def test_backend_option_counts_statistics_and_divides():
    assert perft_core.perft_stats(KIWIPETE, 0, backend="gpu-emulated") == Stats(nodes=1)
    assert perft_core.divide_stats(KIWIPETE, 0, backend="gpu-emulated") == {}
    one = perft_core.divide_stats(KIWIPETE, 1, backend="gpu-emulated")
    assert one == perft_core.divide_stats(KIWIPETE, 1) and len(one) == 48
    two = perft_core.divide_stats(CHESS960, 2, backend="gpu-emulated")
    assert two == perft_core.divide_stats(CHESS960, 2)
    assert sum(two.values(), Stats()) == perft_core.perft_stats(CHESS960, 2, backend="gpu-emulated")


def test_the_cpu_and_the_emulated_gpu_agree_with_tables():
    """Both count statistics through their own tables (the CPU's: suites/test_stats_tt.py; the GPU's:
    suites/test_stats_gpu_tt.py), to the same counters."""
    for count in (perft_core.perft_stats, perft_core.divide_stats):
        assert count(KIWIPETE, 3, backend="cpu", tt=True) == count(KIWIPETE, 3, backend="gpu-emulated", tt=True)


def test_refused_over_the_estimate_limit():
    with pytest.raises(perft_core.CountRefused, match="with statistics: over the limit"):
        perft_core.perft_stats(chess.STARTING_FEN, 11, backend="gpu-emulated", max_estimate_seconds=60)


def test_max_seconds_keeps_the_root_moves_counted_in_full(monkeypatch):
    """A time-limited count stops between root moves (or inside one's BFS chunks, the driver's
    progress hook) and keeps the root moves it finished, smallest subtrees first, each that subtree's
    exact statistics. The backend's clock here moves one second when a root move's count returns and
    not otherwise, so a 2.5 s limit keeps exactly the three smallest on any machine; with the
    machine's clock a loaded one kept none and the check was empty (session 40's audit)."""
    import types

    from perft_core import backends
    from perft_core.backends import _smallest_first
    from perft_core.gpu import get_driver

    now = [0.0]
    monkeypatch.setattr(backends, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    driver = type(get_driver("gpu-emulated", None))
    counted = driver.perft_stats

    def perft_stats(self, *args, **kwargs):
        out = counted(self, *args, **kwargs)
        now[0] += 1.0
        return out

    monkeypatch.setattr(driver, "perft_stats", perft_stats)
    with pytest.raises(perft_core.CountInterrupted) as info:
        perft_core.perft_stats(chess.STARTING_FEN, 6, backend="gpu-emulated", max_seconds=2.5)
    pos = perft_core.Position.from_fen(chess.STARTING_FEN)
    smallest = _smallest_first(pos, 6, sorted(pos.legal_moves()))[:3]
    partial = info.value.partial
    assert info.value.moves_total == 20 and sorted(partial) == sorted(smallest)
    for move, s in partial.items():
        board = chess.Board()
        board.push_uci(move)
        assert s.nodes > 0 and s == perft_core.perft_stats(board, 5, threads=2), move


def test_cli_counts_statistics_on_the_emulated_device(capsys):
    assert main(["run", KIWIPETE, "3", "--stats", "--json", "--backend", "gpu-emulated"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert Stats.from_json(data["stats"]) == perft_core.perft_stats(KIWIPETE, 3) and data["backend"] == "gpu-emulated"


# ----- the real GPU (marker gpu: skipped with the reason where CuPy or a device is missing) ---------

@pytest.fixture(scope="module")
def gpu():
    """The process's GPU driver (tables off for these counts, as GpuBackend sets them)."""
    from perft_core.gpu import get_driver

    drv = get_driver("gpu")
    drv.whole_counts()
    drv.tt_enabled = False
    return drv


@pytest.mark.gpu
@pytest.mark.parametrize("chess960", [False, True])
def test_gpu_stats_equal_cpu_on_random_walks(gpu, chess960):
    """Seeded random walks (60 a kind), depths 1-4 (lowered to at most WALK_NODES leaf moves)."""
    bad = []
    for i, fen in enumerate(walk_fens(36 + chess960, 60, chess960)):
        pos = position(fen)
        depth = depth_within(pos, 1 + i % 4)
        got, want = gpu.perft_stats(pos, depth), perft_core.perft_stats(pos, depth)
        if got != want:
            bad.append((fen, depth, got, want))
    assert not bad, bad[:3]


@pytest.mark.gpu
def test_gpu_stats_every_published_row_within_budget(gpu):
    rows = statistics_rows(GPU_STATS_NODES)
    assert len(rows) > 40
    bad = []
    for row in rows:
        got = published(gpu.perft_stats(position(row["fen"]), row["depth"]), row)
        if got != row["columns"]:
            bad.append((row["id"], row["depth"], got, row["columns"]))
    assert not bad, bad[:3]


@pytest.mark.gpu
@pytest.mark.parametrize("fen,depth", [(KIWIPETE, 4), (CHESS960, 4), (POS3, 5), (POS4, 4), (POS5, 4), (POS6, 4)])
def test_gpu_divide_stats_equal_cpu(fen, depth):
    got = perft_core.divide_stats(fen, depth, backend="gpu")
    assert got == perft_core.divide_stats(fen, depth)


@pytest.mark.gpu
def test_gpu_stats_small_arena_chunks_and_fallback_exact():
    from perft_core.gpu.kernels import CupyKernels

    pos = position(KIWIPETE)
    want = perft_core.perft_stats(pos, 5)
    for capacity in (1 << 16, 1 << 20, 1 << 24):
        d = BfsDriver(CupyKernels(), memory_bytes=capacity)
        assert d.perft_stats(pos, 5) == want
        assert d.stats.peak_bytes <= capacity
    plan = FaultPlan(site="moves[*]", times=2)
    d = BfsDriver(CupyKernels(), memory_bytes=1 << 24, fault_plan=plan)
    assert d.perft_stats(pos, 5) == want and plan.fired == 2


def test_device_script_dry_run_on_the_emulated_device(tmp_path):
    """ci/stats_gpu_check.py (the device script's checks) runs end to end on the emulated device at
    small depths, agrees everywhere and writes its JSON."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "ci" / "stats_gpu_check.py"
    spec = importlib.util.spec_from_file_location("stats_gpu_check", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rc = script.main(["--backend", "gpu-emulated", "--out", str(tmp_path), "--startpos-depth", "5",
                      "--positions", "kiwipete:3,pos3:4,pos4:3,pos5:3,pos6:3", "--random", "6", "--random-nodes", "1e5",
                      "--divides", "2", "--timing", "startpos:5,kiwipete:3", "--budget-seconds", "60"])
    result = json.loads((tmp_path / "stats_gpu_check.json").read_text())
    assert rc == 0 and result["ok"]
    assert [r["depth"] for r in result["cpw_startpos"] if r.get("agree")] == [1, 2, 3, 4, 5]
    assert all(r["agree_cpu"] for r in result["cpw_positions"] + result["random"]["rows"])
    assert all(r["nodes_agree"] for r in result["timing"])


def test_parallel_checks_script_dry_run(tmp_path, device_tree):
    """ci/gpu_checks_parallel.sh end to end on a CPU machine (DRY=1: the statistics script on the
    emulated device; the GPU suite's tests skip without CuPy): one row per check with its GPU and
    exit code, every log in checks.tgz, and no other file left under $OUT (the device tool brings
    back eight at most). A failing check fails the script and shows in its row; an unknown check
    is refused before anything runs."""
    import os
    import subprocess
    import sys
    import tarfile
    from pathlib import Path

    tree, out_dir = device_tree, tmp_path / "out"
    out_dir.mkdir()
    script = str(tree / "ci" / "gpu_checks_parallel.sh")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "PERFT_WHEELS", "PYTHONPATH")}
    env.update(OUT=str(out_dir), DRY="1", PERFT_WHEELS=str(tmp_path / "no-wheels"),
               PERFT_SITE=str(tmp_path / "site"), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")

    def run(*checks, **extra):
        return subprocess.run(["bash", script, *checks], env=dict(env, **extra), cwd=tree, capture_output=True,
                              text=True, timeout=300, check=False)

    def rows():
        lines = (out_dir / "checks.md").read_text().splitlines()[2:]
        return [[c.strip() for c in line.split("|")[1:5]] for line in lines]

    got = run("stats", "gpu")
    assert got.returncode == 0, got.stdout + got.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["checks.md", "checks.tgz"]
    assert [r[:3] for r in rows()] == [["stats", "0", "0"], ["gpu", "1", "0"]] and all(r[3].isdigit() for r in rows())
    with tarfile.open(out_dir / "checks.tgz") as tar:
        names = set(tar.getnames())
    assert {"checks/stats.log", "checks/gpu.log", "checks/stats-gpu/stats_gpu_check.json"} <= names
    # a check that fails (the statistics script given an argument it does not know) fails the whole
    got = run("gpu", "stats", STATS_ARGS="--backend gpu-emulated --no-such-argument")
    assert got.returncode == 1 and rows()[0][:3] == ["gpu", "0", "0"], got.stdout
    assert rows()[1][:2] == ["stats", "1"] and rows()[1][2] != "0" and "--no-such-argument" in got.stdout
    for p in out_dir.iterdir():
        p.unlink()
    got = run("stats", "nonsense")
    assert got.returncode == 2 and "unknown check nonsense" in got.stderr
    assert not list(out_dir.iterdir())  # nothing ran
