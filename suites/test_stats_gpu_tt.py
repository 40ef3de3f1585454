"""Perft statistics on the GPU backends with transposition tables (issue 36): TTBfsDriver.perft_stats,
13 counters a board through the BFS levels, the upsweep, the 64-byte statistics entries of the
device tables (kernels/pc_tt_stats.h) and the host cache.

Every driver test runs on the emulated device (CPU CI) and again on the real GPU (marker ``gpu``).
Statistics with tables must equal the CPU backend's (its own recursion, perft_core/src/stats.cpp)
and the driver's statistics without tables, on the CPW positions, on random walks (standard and
Chess960) and on every published statistics row (CPW, Grand Chess Tree) within a budget; the audit
recounts every stored entry on the CPU (perft_core.gpu.audit.stats_counts) and finds none wrong,
also after an out-of-memory fault at each allocation site. Expected values come from the CPU backend or the published tables, never from
this file.
"""
from __future__ import annotations

import os

import chess
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stats_gpu import CHESS960, KIWIPETE, POS3, POS4, POS5, POS6, depth_within, published, walk_fens

import perft_core
from oracle.stats import statistics_rows
from oracle.strategies import random_walk_fens
from perft_core.gpu.arena import FaultPlan
from perft_core.gpu.kernels import BOARD_WORDS
from perft_core.gpu.tables import STATS_ENTRY_WORDS, stats_entry_counters
from perft_core.gpu.ttdriver import TTBfsDriver
from perft_core.stats import Stats

pytestmark = pytest.mark.core

STARTPOS = chess.STARTING_FEN
DOUBLE_DISCOVERED = "4R3/3p3n/B7/4P3/4k3/8/7K/3Q1R2 w - - 0 1"
"""Made for the rarest counters: after Bb7+ d5, exd6 e.p. uncovers the rook e8 and the bishop b7 on the
king e4 at once, a double discovered check, mate where the queen d1 and the rook f1 cover the escapes;
the black knight's tempo moves put such leaves five plies down, under the statistics tables."""
# Deep enough that statistics tables exist (a GPU depth >= 4 below a launch depth of 1 or 2).
CASES = [(KIWIPETE, 4), (CHESS960, 5), (POS3, 6), (STARTPOS, 5), (POS4, 4), (POS5, 4), (POS6, 4),
         (DOUBLE_DISCOVERED, 5)]
OOM_CASES = [(CHESS960, 5), (POS3, 6)]
SITES = ["boards[*]", "keys[*]", "values[*]", "counts[*]", "offsets[*]", "moves[*]", "parents[*]", "tt[*]"]
EMU_TT_STATS_NODES = int(os.environ.get("PERFT_EMU_TT_STATS_NODES", "50000000"))
"""Published statistics rows up to this many nodes are counted with statistics and tables on the emulated
device in CI (the ``gpu`` twin takes rows up to test_stats_gpu.GPU_STATS_NODES)."""


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def kernels(request):
    if request.param == "emulated":
        from perft_core.gpu.kernels import EmulatedKernels

        return EmulatedKernels()
    from perft_core.gpu.kernels import CupyKernels

    return CupyKernels()


def make_driver(kernels, plan=None, tt_bytes=4 << 20, **kw):
    """A small TT driver in audit mode: many small chunks, so later chunks hit what earlier ones stored."""
    kw.setdefault("min_roots", 20)
    kw.setdefault("chunk_leaf_moves", 1 << 8)
    return TTBfsDriver(kernels, memory_bytes=16 << 20, fault_plan=plan, tt_bytes=tt_bytes, audit=True, **kw)


def position(fen: str) -> perft_core.Position:
    return perft_core.Position.from_fen(fen, chess960=None)


def cpu_stats(fen_or_pos, depth: int) -> Stats:
    return perft_core.perft_stats(fen_or_pos, depth, threads=2, max_estimate_seconds=None)


def assert_clean(drv) -> int:
    """Audit every stored entry (device tables and host caches); returns the statistics entries checked."""
    _checked, wrong = drv.audit()
    assert not wrong, f"poisoned entries: {wrong[:3]}"
    return sum(1 for e in list(drv.audit_entries()) + list(drv.host_entries()) if isinstance(e[4], tuple))


@pytest.mark.parametrize("fen,depth", CASES)
def test_tt_stats_equal_cpu_and_no_tt_with_hits_and_clean_audit(kernels, fen, depth):
    pos = position(fen)
    drv = make_driver(kernels)
    got = drv.perft_stats(pos, depth)
    assert got == cpu_stats(pos, depth)
    if fen == DOUBLE_DISCOVERED:  # the case exists for these counters
        assert got.double_discovered_mates > 0 and got.double_discovered_checks > 0
    assert drv.stats.gpu_calls > 1
    assert drv.device_tables.entry_words == STATS_ENTRY_WORDS
    assert assert_clean(drv) > 0
    drv.tt_enabled = False
    assert drv.perft_stats(pos, depth) == got


@pytest.mark.parametrize("fen,depth", [(KIWIPETE, 4), (POS3, 6), (DOUBLE_DISCOVERED, 5)])
def test_tables_of_the_leaf_parents_parents_exact(kernels, fen, depth):
    """``stats_lowest_table`` 2: a table also where the statistics leaf classifies the moves."""
    pos = position(fen)
    drv = make_driver(kernels)
    drv.stats_lowest_table = 2
    assert drv.perft_stats(pos, depth) == cpu_stats(pos, depth)
    assert 2 in drv.tts and drv.device_tables.stat(2)["hits"] > 0
    assert any(e[0] == 2 for e in drv.audit_entries())
    assert_clean(drv)


@pytest.mark.parametrize("fen,depth", [(POS3, 6), (DOUBLE_DISCOVERED, 5), (CHESS960, 5)])
def test_statistics_leaf_merge_classifies_each_distinct_leaf_parent_once(kernels, fen, depth):
    """The leaf merge (on by default) classifies fewer leaf parents than it has moves, in slices too
    (a transposition split between two slices is classified twice), and equals the unmerged leaf."""
    pos = position(fen)
    want = cpu_stats(pos, depth)
    counts = {}
    for merge, slice_moves in ((False, None), (True, None), (True, 2000)):
        drv = make_driver(kernels)
        drv.leaf_merge = merge
        if slice_moves:
            drv.leaf_merge_slice = slice_moves
        assert drv.perft_stats(pos, depth) == want, (merge, slice_moves)
        counts[(merge, slice_moves)] = (drv.tt_stats["leaf_moves"], drv.tt_stats["leaf_positions"])
        assert_clean(drv)
    assert counts[(False, None)] == (0, 0)
    moves, groups = counts[(True, None)]
    assert 0 < groups < moves
    assert counts[(True, 2000)][1] >= groups


def test_tt_stats_hit_device_tables_and_host_cache(kernels):
    """Device hits within a count; host cache hits (the launch level's counts) in the next count of
    the same position, which the host cache answers whole."""
    drv = make_driver(kernels)
    pos = position(POS3)
    want = cpu_stats(pos, 6)
    assert drv.perft_stats(pos, 6) == want
    assert drv.tts and drv.tt_stats["hits"] > 0 and drv.tt_stats["probes"] > drv.tt_stats["hits"]
    assert len(drv.stats_cache) > 0 and len(drv.host_cache) == 0
    statistics = drv.tt_statistics()["by_depth"]
    assert any(row.get("occupied", 0) > 0 for row in statistics.values())
    calls = drv.stats.gpu_calls
    assert drv.perft_stats(pos, 6) == want
    assert drv.tt_stats["host_hits"] > 0 and drv.stats.gpu_calls < calls


def _stored_then_probed(kernels, rows: list[tuple[int, ...]]) -> list[tuple[int, ...] | None]:
    """Store each row (13 counters, STATS_FIELDS order) under a key of its own slot in a table of 1,024
    slots (stats_store), then probe every key (stats_probe): the counters found, None for a miss."""
    n, slots = len(rows), 1024
    rng = np.random.default_rng(2027)
    keys = rng.integers(0, 1 << 54, size=(n, 2), dtype=np.uint64)
    keys[:, 0] |= np.arange(n, dtype=np.uint64) << np.uint64(54)  # tt16_slot: key.lo >> 54 with 1,024 slots
    values = np.array(rows, dtype=np.uint64).T.reshape(-1)  # 13 slices of n
    xp = kernels.xp
    tt = xp.zeros(STATS_ENTRY_WORDS * slots, dtype=xp.uint64)
    dev_keys = kernels.to_device(keys.reshape(-1))
    kernels.stats_store(kernels.to_device(np.zeros(n * BOARD_WORDS, dtype=np.uint64)), dev_keys,
                        kernels.to_device(values), n, tt, slots, None, 2)
    counts = kernels.to_device(np.ones(n, dtype=np.uint32))
    found = kernels.to_device(np.zeros(13 * n, dtype=np.uint64))
    kernels.stats_probe(dev_keys, n, tt, slots, counts, found)
    counts, found, table = kernels.read(counts, found, tt)
    found = found.reshape(13, n).T
    for i in range(n):  # the Python reading of an entry (the audit's) agrees with the probe's
        row = table.reshape(slots, STATS_ENTRY_WORDS)[i]
        assert (stats_entry_counters(row) if row[1] else None) == (tuple(int(x) for x in found[i]) if counts[i] == 0 else None)
    return [tuple(int(x) for x in found[i]) if counts[i] == 0 else None for i in range(n)]


def test_statistics_entries_hold_32_bit_counters_exactly_and_never_a_wider_one(kernels):
    """An entry keeps nodes in 64 bits and the other 12 counters in 32 (kernels/pc_tt_stats.h): rows
    whose counters all fit come back exactly, each counter at its own place (values that differ in
    every counter and reach the top bits); a row with any other counter of 2^32 or more is not
    stored, so it is a miss and never a truncated count."""
    top = (1 << 32) - 1
    fits = [(1 << 40) + 3, *(top - 7 * c for c in range(12))]
    rows = [tuple(x - j for x in fits) for j in range(3)]
    rows.append(((1 << 64) - 1, *range(1, 13)))
    wide = [tuple((1 << 32) + 5 if c == k else c for c in range(1, 13)) for k in range(1, 13)]
    got = _stored_then_probed(kernels, rows + [((1 << 41), *w) for w in wide])
    assert got[:len(rows)] == rows
    assert got[len(rows):] == [None] * 12


def test_tiny_statistics_tables_heavy_collisions_still_exact(kernels):
    """Tables of about two thousand 64-byte slots for ~10^4-10^5 positions: most stores overwrite others."""
    drv = make_driver(kernels, tt_bytes=400_000)
    pos = position(POS3)
    assert drv.perft_stats(pos, 7) == cpu_stats(pos, 7)
    assert drv.tts and all(t.slots <= max(1024, 400_000 // (8 * STATS_ENTRY_WORDS + 64)) for t in drv.tts.values())
    assert assert_clean(drv) > 0


def test_plain_and_statistics_counts_alternate_on_one_driver(kernels):
    """Node counts and statistics share the driver: a switch of kind rebuilds the device tables with
    the other entries, and the host caches are apart, so neither reads the other's entries."""
    drv = make_driver(kernels)
    pos = position(KIWIPETE)
    want = cpu_stats(pos, 4)
    for _ in range(2):
        assert drv.perft(pos, 4) == want.nodes
        assert drv.device_tables.entry_words == 2
        assert drv.perft_stats(pos, 4) == want
        assert drv.device_tables.entry_words == STATS_ENTRY_WORDS
    assert drv.count_roots([pos.push("e2a6"), pos.push("d5e6")], 3, game=pos) == [
        perft_core.perft(pos.push("e2a6"), 3), perft_core.perft(pos.push("d5e6"), 3)]
    assert_clean(drv)


def test_every_depth_and_gpu_depth_exact(kernels):
    pos = position(KIWIPETE)
    for depth in range(5):
        want = cpu_stats(pos, depth) if depth else Stats(nodes=1)
        for g in (1, 2, 3, 4):
            drv = make_driver(kernels, max_gpu_depth=g)
            assert drv.perft_stats(pos, depth) == want, (depth, g)


def test_statistics_refuse_parts_and_count_through_kept_tables(kernels):
    """perft_stats counts whole positions: a part is refused (count_roots counts parts). Tables kept for a run (a deep
    statistics run's units) serve the next count: each count equals the CPU's, the same position
    a second time too (answered from what the first stored)."""
    drv = make_driver(kernels)
    pos = position(KIWIPETE)
    drv.set_part(0, 2)
    with pytest.raises(ValueError, match="parts through count_roots"):
        drv.perft_stats(pos, 3)
    drv.whole_counts()
    drv.keep_tables("run", 4, pos)
    want = cpu_stats(pos.push("e2a6"), 3)
    assert drv.perft_stats(pos.push("e2a6"), 3) == want
    assert drv.count_roots([pos.push("d5e6")], 3, pos, stats=True) == [cpu_stats(pos.push("d5e6"), 3)]
    assert drv.count_roots([pos.push("e2a6")], 3, pos, stats=True) == [want]
    drv.keep_tables(None)
    assert drv.perft_stats(pos, 3) == cpu_stats(pos, 3)


# ----- statistics in parts (a deep statistics run: one part per GPU) ---------------------------------
def _stats_in_parts(drv, positions, depth, game, parts):
    """Each part's statistics of every position (count_roots(stats=True), the run's tables kept),
    auditing every stored entry after each part; returns the parts' lists."""
    drv.keep_tables("run", depth + 1, game)
    out = []
    for c in range(parts):
        drv.set_part(c, parts)
        drv.keep_tables("run", depth + 1, game)  # a part change forgets the tables: keep them again
        out.append(drv.count_roots(positions, depth, game, stats=True))
        assert_clean(drv) > 0
    return out


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("fen,depth", [(POS3, 6), (DOUBLE_DISCOVERED, 6), (CHESS960, 5)])
def test_statistics_in_parts_add_up_and_every_entry_is_its_part_s(kernels, fen, depth, compact):
    """A deep statistics run's task: its units through one count_roots(stats=True), each part
    counting the leaf moves below its own positions at remaining depth 3. The parts add up to each
    unit's statistics on the CPU in every counter, no part is empty, and every entry stored in the
    tables and the host cache is its part's statistics (the audit recounts it on the CPU, its
    positions at remaining depth 3 filtered by key). ``compact``: the other parts' boards of the
    split level dropped before it is expanded (``part_compact``) instead of zeroed after."""
    game = position(fen)
    units = [game.push(m) for m in sorted(game.legal_moves())[:2]]
    want = [cpu_stats(u, depth) for u in units]
    drv = make_driver(kernels)  # GPU depth 4: device tables at remaining depth 3, host entries at 4 (part values)
    drv.part_compact = compact
    for parts in (2, 3):
        got = _stats_in_parts(drv, units, depth, game, parts)
        for i, w in enumerate(want):
            assert sum((g[i] for g in got), Stats()) == w
        assert all(sum(g[i].nodes for i in range(len(units))) > 0 for g in got)
    assert drv.tts and drv.tt_stats["hits"] > 0  # later calls and units found what earlier ones stored
    assert (drv.tt_stats["other_parts"] > 0) == compact


# ----- random positions (emulated device; the gpu twins below) ----------------------------------------

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(fen=random_walk_fens(chess960=None, max_plies=60), depth=st.integers(1, 5))
def test_emulated_tt_stats_equal_cpu_on_random_walks(fen, depth):
    from perft_core.gpu.kernels import EmulatedKernels

    pos = position(fen)
    depth = depth_within(pos, depth, 1_000_000)
    drv = make_driver(EmulatedKernels(), min_roots=4, chunk_leaf_moves=1 << 10)
    assert drv.perft_stats(pos, depth) == perft_core.perft_stats(pos, depth, threads=1), (fen, depth)
    _checked, wrong = drv.audit()
    assert not wrong, (fen, depth, wrong[:3])


@pytest.mark.parametrize("chess960", [False, True])
def test_emulated_tt_stats_seeded_walks(chess960):
    """Seeded random walks (12 a kind) at depths 3-5 through small tables, every entry audited."""
    from perft_core.gpu.kernels import EmulatedKernels

    for i, fen in enumerate(walk_fens(360 + chess960, 12, chess960)):
        pos = position(fen)
        depth = depth_within(pos, 3 + i % 3, 2_000_000)
        drv = make_driver(EmulatedKernels())
        assert drv.perft_stats(pos, depth) == cpu_stats(pos, depth), (fen, depth)
        assert_clean(drv)


@pytest.mark.parametrize("row", statistics_rows(EMU_TT_STATS_NODES), ids=lambda r: f"{r['id']}-d{r['depth']}")
def test_emulated_tt_published_row(row):
    got = perft_core.perft_stats(row["fen"], row["depth"], backend="gpu-emulated", tt=True, force=True)
    assert published(got, row) == row["columns"]


# ----- out of memory: exact statistics, no poisoned entry ------------------------------------------------

@pytest.mark.parametrize("fen,depth", OOM_CASES)
@pytest.mark.parametrize("site", SITES)
def test_oom_each_site_exact_and_no_poisoned_entry(kernels, fen, depth, site):
    plan = FaultPlan(site=site, times=1)
    drv = make_driver(kernels, plan)
    pos = position(fen)
    assert drv.perft_stats(pos, depth) == cpu_stats(pos, depth)
    assert plan.fired == 1, "the fault plan never fired"
    assert drv.stats.oom_sites
    assert_clean(drv)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.one_of(
    st.builds(FaultPlan, site=st.sampled_from(SITES), times=st.integers(1, 4)),
    st.builds(FaultPlan, arena=st.just("bfs"), ordinal=st.integers(1, 7), times=st.integers(1, 4))),
    case=st.sampled_from(OOM_CASES))
def test_oom_hypothesis_plans(kernels, plan, case):
    fen, depth = case
    drv = make_driver(kernels, plan)
    pos = position(fen)
    assert drv.perft_stats(pos, depth) == cpu_stats(pos, depth)
    assert plan.fired >= 1, "the fault plan never fired"
    assert_clean(drv)


# ----- the API and the CLI ---------------------------------------------------------------------------

def test_api_counts_statistics_with_tables_on_the_gpu_backends():
    assert perft_core.perft_stats(KIWIPETE, 4, backend="gpu-emulated", tt=True) == cpu_stats(KIWIPETE, 4)
    got = perft_core.divide_stats(CHESS960, 3, backend="gpu-emulated", tt=True)
    assert got == perft_core.divide_stats(CHESS960, 3, threads=2)
    assert perft_core.perft_stats(POS3, 0, backend="gpu-emulated", tt=True) == Stats(nodes=1)


def test_a_time_limited_verify_seed_is_refused_with_statistics():
    with pytest.raises(perft_core.StatsUnsupported, match="no verify pass"):
        perft_core.perft_stats(KIWIPETE, 3, backend="gpu-emulated", tt=True, verify_seed=12345, max_seconds=60)


def _seeds_seen(monkeypatch):
    """The key seeds of the statistics counts made through the driver from now on."""
    from perft_core.gpu.ttdriver import TTBfsDriver

    seen, real = [], TTBfsDriver.perft_stats

    def spy(self, pos, depth):
        seen.append(self.seed)
        return real(self, pos, depth)

    monkeypatch.setattr(TTBfsDriver, "perft_stats", spy)
    return seen


def test_a_verify_seed_counts_the_statistics_again_with_other_keys_and_compares_every_counter(monkeypatch):
    """verify_seed: the statistics through tables keyed by the driver's seed, then by the verify
    seed, equal (and equal to the CPU's); a divide compares every root move. A verify pass that
    differs in one counter (planted: one more capture under the verify seed) is a
    HashVerificationError naming the counters, and the CLI says so with exit status 1."""
    from perft_cli import main
    from perft_core.zobrist import HashVerificationError

    seen = _seeds_seen(monkeypatch)
    assert perft_core.perft_stats(KIWIPETE, 4, backend="gpu-emulated", tt=True, verify_seed=12345) == \
        cpu_stats(KIWIPETE, 4)
    assert len(seen) == 2 and seen[1] == 12345 and seen[0] != 12345
    got = perft_core.divide_stats(CHESS960, 3, backend="gpu-emulated", tt=True, verify_seed=99)
    assert got == perft_core.divide_stats(CHESS960, 3, threads=2) and seen.count(99) == len(got)
    from perft_core.gpu.ttdriver import TTBfsDriver

    honest = TTBfsDriver.perft_stats

    def lying(self, pos, depth):
        s = honest(self, pos, depth)
        return s + Stats(captures=1) if self.seed == 12345 else s

    monkeypatch.setattr(TTBfsDriver, "perft_stats", lying)
    with pytest.raises(HashVerificationError, match="captures="):
        perft_core.perft_stats(KIWIPETE, 3, backend="gpu-emulated", tt=True, verify_seed=12345)
    assert main(["run", KIWIPETE, "3", "--stats", "--backend", "gpu-emulated", "--tt", "--verify-seed", "12345"]) == 1


def test_cli_counts_statistics_with_tables(capsys):
    import json

    from perft_cli import main

    assert main(["run", KIWIPETE, "3", "--stats", "--json", "--backend", "gpu-emulated", "--tt"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert Stats.from_json(data["stats"]) == cpu_stats(KIWIPETE, 3)


# ----- the real GPU: random walks and published rows with tables (marker gpu) ---------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("chess960", [False, True])
def test_gpu_tt_stats_equal_cpu_and_no_tt_on_random_walks(chess960):
    from perft_core.gpu.kernels import CupyKernels

    drv = TTBfsDriver(CupyKernels(), memory_bytes=1 << 30, tt_bytes=1 << 28, min_roots=20)
    bad = []
    for i, fen in enumerate(walk_fens(46 + chess960, 40, chess960)):
        pos = position(fen)
        depth = depth_within(pos, 3 + i % 3, 50_000_000)
        drv.tt_enabled = True
        got = drv.perft_stats(pos, depth)
        drv.tt_enabled = False
        plain = drv.perft_stats(pos, depth)
        want = cpu_stats(pos, depth)
        if not got == plain == want:
            bad.append((fen, depth, got, plain, want))
    assert not bad, bad[:3]


@pytest.mark.gpu
def test_gpu_tt_stats_every_published_row_within_budget():
    from test_stats_gpu import GPU_STATS_NODES

    bad = []
    for row in statistics_rows(GPU_STATS_NODES):
        got = published(perft_core.perft_stats(row["fen"], row["depth"], backend="gpu", tt=True, force=True), row)
        if got != row["columns"]:
            bad.append((row["id"], row["depth"], got, row["columns"]))
    assert not bad, bad[:3]


def test_audit_finds_a_poisoned_statistics_entry(monkeypatch):
    """The audit is not blind: entries stored with one counter off by one (a planted store bug whose
    check word is made for the wrong counters, so probes accept them) are reported."""
    from perft_core.gpu.kernels import EmulatedKernels

    k = EmulatedKernels()
    store = k.stats_store

    def poisoned(boards, keys, values, n, tt, slots, audit, tag):
        bad = values.copy()
        bad[3 * n:4 * n] += 1  # castles, for every board stored
        store(boards, keys, bad, n, tt, slots, audit, tag)

    monkeypatch.setattr(k, "stats_store", poisoned)
    drv = make_driver(k)
    drv.perft_stats(position(POS3), 6)
    _checked, wrong = drv.audit()
    assert drv.tts and wrong and all(isinstance(w[2], tuple) and w[2][3] > w[3][3] for w in wrong)  # hits add their excess up


def test_device_script_dry_run_on_the_emulated_device(tmp_path):
    """ci/stats_tt_gpu_check.py runs end to end on the emulated device at small depths, agrees
    everywhere and writes its JSON."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "ci" / "stats_tt_gpu_check.py"
    spec = importlib.util.spec_from_file_location("stats_tt_gpu_check", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rc = script.main(["--backend", "gpu-emulated", "--out", str(tmp_path), "--startpos-depth", "5",
                      "--positions", "kiwipete:3,pos3:4,pos4:3,pos5:3,pos6:3", "--random", "4",
                      "--random-nodes", "1e5", "--deep", "5,6", "--budget-seconds", "120"])
    result = json.loads((tmp_path / "stats_tt_gpu_check.json").read_text())
    assert rc == 0 and result["ok"]
    assert [r["depth"] for r in result["cpw_startpos"] if r.get("agree")] == [1, 2, 3, 4, 5]
    assert all(r["agree"] for r in result["positions"])
    assert [r["depth"] for r in result["deep"] if r.get("nodes_agree") and not r["rules"]] == [5, 6]
