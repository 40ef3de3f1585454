"""GPU transposition tables (downsweep probe, upsweep store, host cache) and out-of-memory fault
injection proving no TT entry is ever poisoned. ``pytest suites/ -k oom`` runs the fault plans.

Every test runs on the emulated device (CPU CI) and again on the real GPU (marker ``gpu``).
Each fault-plan test checks: the count is exact, the audit (every device TT entry and host cache
entry recomputed on the CPU from the position stored beside it) finds nothing wrong, and the plan
fired (a plan that never fires fails).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perft_core
from oracle.strategies import random_walk_fens
from perft_core.gpu.arena import FaultPlan
from perft_core.hostbatch import WORDS
from perft_core.gpu.ttdriver import TTBfsDriver, distinct_per_ply

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CHESS960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
POS3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
CASES = [(KIWIPETE, 4, 4085603), (CHESS960, 4, 326672), (POS3, 6, 11030083), (STARTPOS, 5, 4865609)]
# Deep enough that device TTs exist (GPU depth >= 4 below a launch depth of 1 or 2).
OOM_CASES = [(KIWIPETE, 5, 193690690), (CHESS960, 5, 8146062), (POS3, 6, 11030083)]


def _emulated():
    from perft_core.gpu.kernels import EmulatedKernels

    return EmulatedKernels()


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def kernels(request):
    if request.param == "emulated":
        return _emulated()
    from perft_core.gpu.kernels import CupyKernels

    return CupyKernels()


def make_driver(kernels, plan=None, tt_bytes=4 << 20, **kw):
    """A small TT driver: many small chunks, so later chunks hit what earlier ones stored."""
    kw.setdefault("min_roots", 20)
    kw.setdefault("chunk_leaf_moves", 1 << 8)
    return TTBfsDriver(kernels, memory_bytes=16 << 20, fault_plan=plan, tt_bytes=tt_bytes, audit=True, **kw)


def assert_clean(drv):
    checked, wrong = drv.audit()
    assert not wrong, f"poisoned TT entries: {wrong[:5]}"
    return checked


@pytest.mark.parametrize("fen,depth,expected", CASES)
def test_tt_counts_exact_with_hits_and_clean_audit(kernels, fen, depth, expected):
    drv = make_driver(kernels)
    assert drv.perft(perft_core.Position.from_fen(fen), depth) == expected
    assert drv.stats.gpu_calls > 1
    assert assert_clean(drv) > 0


def test_tt_hits_happen_and_save_work(kernels):
    drv = make_driver(kernels)
    assert drv.perft(perft_core.Position.from_fen(POS3), 6) == 11030083
    assert drv.tt_stats["hits"] > 0 and drv.tt_stats["probes"] > drv.tt_stats["hits"]


def test_tiny_tables_heavy_collisions_still_exact(kernels):
    """Tables of a few thousand slots (1,024 is the minimum) for ~10^4-10^5 positions: most stores
    overwrite others."""
    drv = make_driver(kernels, tt_bytes=400_000)
    assert drv.perft(perft_core.Position.from_fen(POS3), 7) == 178633661
    assert drv.tts and all(t.slots <= 400_000 // 80 for t in drv.tts.values())  # 16-byte entries + 64-byte audit
    assert_clean(drv)


def test_tt_divide_and_host_cache(kernels):
    drv = make_driver(kernels)
    pos = perft_core.Position.from_fen(KIWIPETE)
    assert drv.divide(pos, 4) == perft_core.divide(pos, 4)
    assert_clean(drv)


def test_tt_sizing_follows_the_positions_own_distinct_positions(kernels):
    drv = make_driver(kernels, tt_bytes=64 << 20)
    pos = perft_core.Position.from_fen(STARTPOS)
    drv.perft(pos, 6)
    assert drv.stats.gpu_calls > 1
    sizes = {r: t.slots for r, t in drv.tts.items()}
    assert sizes, "no device TT was made"
    root, us = drv._set_root(pos)
    distinct = distinct_per_ply(np.array([root], dtype=np.uint64), us, 6, drv._expand_host, drv._host_keys)
    # A table never exceeds 4x the distinct positions of its ply, and deeper plies get more.
    for r, slots in sizes.items():
        assert slots <= max(1024, 4 * distinct[6 - r])
    assert [sizes[r] for r in sorted(sizes, reverse=True)] == sorted(sizes.values())


def test_single_call_count_makes_no_device_tt(kernels):
    """A count that is one BFS call of the root cannot hit its own stores (they happen in the
    call's upsweep): it skips the device TTs and is still exact."""
    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=4 << 20, audit=True)
    assert drv.perft(perft_core.Position.from_fen(KIWIPETE), 4) == 4085603
    assert drv.stats.gpu_calls == 1 and drv.stats.launch_depth == 0
    assert drv.tts == {} and drv.tt_stats["probes"] == 0


def test_iterative_schedule_keeps_tables_warm_and_exact(kernels):
    """perft_iterative (perft_gpu_2026's 1..N schedule): every depth exact, entries of earlier depths
    hit later ones, and the audit finds every stored entry right. Each count here is one BFS call,
    so every hit is an entry stored by an earlier depth: positions two plies apart, which the rook
    and king moves of CPW position 3 make (a tempo lost on each side)."""
    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=16 << 20, audit=True)
    pos = perft_core.Position.from_fen(POS3)
    rows = drv.perft_iterative(pos, 7)
    assert [(d, n) for d, n, _ in rows] == [(d, perft_core.perft(pos, d)) for d in range(1, 8)]
    assert all(sec >= 0 for _, _, sec in rows)
    assert drv.stats.gpu_calls == 1 and drv.tt_stats["hits"] > 0 and drv.tts
    assert assert_clean(drv) > 0
    assert not drv._warm  # the next plain count rebuilds its tables
    with pytest.raises(ValueError):
        drv.perft_iterative(pos, 0)


# ----- out-of-memory fault injection ------------------------------------------------------------

SITES = ["boards[*]", "keys[*]", "values[*]", "counts[*]", "offsets[*]", "moves[*]", "parents[*]", "tt[*]"]


@pytest.mark.parametrize("fen,depth,expected", OOM_CASES)
@pytest.mark.parametrize("site", SITES)
def test_oom_each_site_exact_and_no_poisoned_entry(kernels, fen, depth, expected, site):
    plan = FaultPlan(site=site, times=1)
    drv = make_driver(kernels, plan)
    assert drv.perft(perft_core.Position.from_fen(fen), depth) == expected
    assert plan.fired == 1, "the fault plan never fired"
    assert drv.stats.oom_sites
    assert_clean(drv)


@pytest.mark.parametrize("which", ["first", "second", "middle", "last"])
def test_oom_first_kth_and_last_allocation(kernels, which):
    pos = perft_core.Position.from_fen(KIWIPETE)
    probe = make_driver(kernels)
    probe.perft(pos, 4)
    n = probe.stats.allocations[0]  # allocations of the first BFS call
    ordinal = {"first": 1, "second": 2, "middle": max(1, n // 2), "last": n}[which]
    plan = FaultPlan(arena="bfs", ordinal=ordinal, times=1)
    drv = make_driver(kernels, plan)
    assert drv.perft(pos, 4) == 4085603
    assert plan.fired == 1
    assert drv.stats.oom_fallbacks + drv.stats.chunk_splits >= 1
    assert_clean(drv)


# Plans that can fire: by site (some allocation of every BFS call or TT build has it) or by an
# ordinal that every BFS call reaches (each call allocates at least 7 arrays).
PLANS = st.one_of(
    st.builds(FaultPlan, site=st.sampled_from(SITES), times=st.integers(1, 4),
              min_bytes=st.one_of(st.none(), st.integers(0, 64))),
    st.builds(FaultPlan, arena=st.just("bfs"), ordinal=st.integers(1, 7), times=st.integers(1, 4)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=PLANS, case=st.sampled_from(OOM_CASES))
def test_oom_hypothesis_plans(kernels, plan, case):
    fen, depth, expected = case
    drv = make_driver(kernels, plan)
    assert drv.perft(perft_core.Position.from_fen(fen), depth) == expected
    assert plan.fired >= 1, "the fault plan never fired"
    assert drv.stats.oom_sites
    assert_clean(drv)


# ----- Zobrist keys on the device: incremental == from scratch == host ------------------------------

def _device_keys_property(kernels, fen: str, seed: int, plies: int = 3) -> int:
    """Expand ``plies`` levels below ``fen`` with make_key (incremental keys) and compare every child's
    key with keys_kernel (from scratch) and the host's compute_hash. Returns positions checked."""
    import numpy as np

    from perft_core import _core

    xp = kernels.xp
    pos = perft_core.Position.from_fen(fen)
    root, us, ci = _core.gpu_root(pos.core_args())
    kernels.set_castle(ci)
    z = kernels.zobrist(seed)
    z_host = np.frombuffer(_core.zobrist_keys_blob(seed), dtype=np.uint64).copy()
    boards = kernels.to_device(np.array(root, dtype=np.uint64))
    keys = xp.zeros(2, dtype=xp.uint64)
    kernels.keys(boards, 1, us, z, keys)
    n, side, checked = 1, us, 0
    for _ in range(plies):
        counts = xp.zeros(n, dtype=xp.uint32)
        kernels.count(boards, n, side, counts)
        offsets = xp.zeros(n + 1, dtype=xp.uint64)
        total = kernels.scan(counts, n, offsets)
        if total == 0:
            break
        moves = xp.zeros(total, dtype=xp.uint16)
        parents = xp.zeros(total, dtype=xp.uint32)
        kernels.gen(boards, n, side, offsets, moves, parents)
        children = xp.zeros(total * 5, dtype=xp.uint64)
        inc = xp.zeros(total * 2, dtype=xp.uint64)
        kernels.make_key(boards, keys, parents, moves, total, side, z, children, inc)
        scratch = xp.zeros(total * 2, dtype=xp.uint64)
        kernels.keys(children, total, side ^ 1, z, scratch)
        kernels.synchronize()
        host_children = np.asarray(children.get() if hasattr(children, "get") else children)
        host = np.zeros((total, 2), dtype=np.uint64)
        _core.batch_keys(host_children, total, side ^ 1, ci, z_host, host)
        inc_h = np.asarray(inc.get() if hasattr(inc, "get") else inc).reshape(total, 2)
        scr_h = np.asarray(scratch.get() if hasattr(scratch, "get") else scratch).reshape(total, 2)
        assert (inc_h == scr_h).all(), f"incremental key != from-scratch key below {fen}"
        assert (scr_h == host).all(), f"device key != host key below {fen}"
        boards, keys, n, side = children, inc, total, side ^ 1
        checked += total
    return checked


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fen=random_walk_fens(chess960=None, max_plies=30),
       seed=st.sampled_from([None, 0x1234_5678_9ABC_DEF1]))
def test_device_zobrist_incremental_equals_scratch(kernels, fen, seed):
    from perft_core import _core

    _device_keys_property(kernels, fen, _core.ZOBRIST_DEFAULT_SEED if seed is None else seed)


@pytest.mark.parametrize("fen", [KIWIPETE, CHESS960, POS3, "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
                                 "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"])
def test_device_zobrist_tables_positions(kernels, fen):
    from perft_core import _core

    for seed in (_core.ZOBRIST_DEFAULT_SEED, 99):
        assert _device_keys_property(kernels, fen, seed) > 0


# ----- counts split into parts by key (deep runs: one part per GPU) -----------------------------------
@pytest.mark.parametrize("fen,depth,expected,split", [(*c, 3) for c in CASES[:3]]
                         + [(*OOM_CASES[0], 4), (*OOM_CASES[2], 4)])
def test_parts_add_up_hit_tables_and_audit_clean(kernels, fen, depth, expected, split):
    """Each part of a count split by key at remaining depth ``split`` is exact for its part: the parts
    add up to the count, none is empty, the device tables hit where there are any (small chunks:
    later calls see earlier stores), and every entry the audit recomputes as that part's count is
    right. A split at 4 divides other paths among the parts than a split at 3."""
    pos = perft_core.Position.from_fen(fen)
    drv = make_driver(kernels)
    by_parts = {}
    for parts in (2, 3):
        got = []
        for c in range(parts):
            drv.set_part(c, parts, split)
            got.append(drv.perft(pos, depth))
            assert assert_clean(drv) > 0
        assert sum(got) == expected and min(got) > 0, got
        by_parts[parts] = got
    if drv.tts and (split == 3 or fen == POS3):  # GPU depth >= 4 (CPW 3 at depth 6): device tables exist and
        assert drv.tt_stats["hits"] > 0  # hit (Kiwipete 5 split at 4 repeats no position at 3 in these chunks)
    if split == 4:
        drv.set_part(0, 2)  # the default split, at 3
        assert drv.part_depth == 3 and drv.perft(pos, depth) != by_parts[2][0]


def test_a_split_depth_is_checked_and_its_change_resets_tables(kernels):
    """set_part refuses a split above the leaf level's parent (< 3) and a non-integer one; entries
    above the split hold a part's count, so a new split depth (same part) must not reuse them."""
    from perft_core.deep.store import PART_DEPTH as STORE_PART_DEPTH
    from perft_core.gpu.kernels import PART_DEPTH

    assert STORE_PART_DEPTH == PART_DEPTH == 3  # the store names older runs' split without the GPU package
    from perft_core.deep import store
    from perft_core.gpu import kernels as gpu_kernels

    assert (store.PART_CUT_BOARD, store.PART_CUT_KEY) == (gpu_kernels.CUT_BOARD, gpu_kernels.CUT_KEY)
    assert set(store.PART_CUTS) == set(gpu_kernels.CUTS)
    drv = make_driver(kernels)
    for bad in (2, 0, 3.0, True, "4"):
        with pytest.raises(ValueError, match="split depth"):
            drv.set_part(0, 2, bad)
    pos = perft_core.Position.from_fen(POS3)
    drv.keep_tables("run", 6)
    drv.set_part(0, 2, 3)
    a = drv.perft(pos, 6)
    drv.set_part(0, 2, 4)
    b = drv.perft(pos, 6)
    drv.set_part(1, 2, 4)
    c = drv.perft(pos, 6)
    assert b + c == 11030083 and a != b
    assert_clean(drv)


def test_a_parts_table_statistics_count_its_own_boards(kernels):
    """With parts, the split level's probes are the part's own boards (the others are dropped
    there, never found or stored): with no table above it (GPU depth 4) every part makes the same
    calls, so the parts' probes at remaining depth 3 add up to the whole count's, and each part's
    probes equal its hits plus its stores. Counting every board probed (sessions 4-13) gave each
    part the whole count's probes."""
    pos = perft_core.Position.from_fen(KIWIPETE)
    rows = []
    for parts in (1, 2, 3):
        for c in range(parts):
            drv = make_driver(kernels, max_gpu_depth=4)
            drv.set_part(c, parts)
            drv.perft(pos, 5)
            assert set(drv.tts) == {3}
            rows.append((parts, dict(drv.depth_stats[3])))
    whole = rows[0][1]["probes"]
    assert whole > 0
    for parts in (2, 3):
        own = [row for p, row in rows if p == parts]
        assert sum(row["probes"] for row in own) == whole
        assert all(0 < row["probes"] < whole and row["probes"] == row["hits"] + row["stores"] for row in own)


def test_part_change_resets_tables(kernels):
    """Table entries hold one part's counts: a driver that changes part must not reuse them (here:
    kept tables of one run, part 0 then part 1; without the reset part 1 hits part 0's entries)."""
    pos = perft_core.Position.from_fen(POS3)
    drv = make_driver(kernels)
    drv.keep_tables("run", 6)
    drv.set_part(0, 2)
    a = drv.perft(pos, 6)
    drv.set_part(1, 2)
    b = drv.perft(pos, 6)
    assert a + b == 11030083 and a != b
    assert_clean(drv)


def test_count_roots_merges_roots_and_matches_single_counts(kernels):
    """count_roots: per-root counts of a deep run's batch (castling rights lost in some roots, the
    game's geometry for all), whole and in parts, with and without tables."""
    game = perft_core.Position.from_fen(KIWIPETE)
    roots = [game.push(m) for m in sorted(game.legal_moves())]
    roots = [c.push(m) for c in roots[:12] for m in sorted(c.legal_moves())[:4]]
    want = [perft_core.perft(p, 3) for p in roots]
    drv = make_driver(kernels)
    assert drv.count_roots(roots, 3, game) == want
    halves = []
    for c in range(2):
        drv.set_part(c, 2)
        halves.append(drv.count_roots(roots, 3, game))
        assert_clean(drv)
    assert [a + b for a, b in zip(*halves)] == want
    drv.tables = False
    assert drv.count_roots(roots, 3, game) == halves[1]
    assert drv.tts == {}


def test_count_roots_rejects_roots_of_another_geometry():
    drv = make_driver(_emulated())
    game = perft_core.Position.from_fen(STARTPOS)
    other = perft_core.Position.from_fen(CHESS960)
    with pytest.raises(ValueError, match="rook"):
        drv.count_roots([other], 2, game)
    with pytest.raises(ValueError):
        drv.set_part(2, 2)


def test_units_of_a_deep_run_go_many_roots_a_call():
    """The chunks of a deep run's units are sized by the run's plies (its distinct positions and
    growth per ply, indexed alike): with the memory of an H200, startpos perft 12's depth-10 units
    (a ply-4 level below them in depth-8 calls) go out several roots a call. Sized with the unit's own
    growth indexed by the run's plies they went one root a call (1,768 calls in 148 s on an H200)."""
    drv = make_driver(_emulated(), chunk_leaf_moves=None)
    game = perft_core.Position.from_fen(STARTPOS)
    unit = game.push("e2e4").push("e7e5")
    drv.keep_tables("run", 12, game)
    root, us = drv._set_root(game)
    drv.max_gpu_depth = 8
    drv._prepare(unit, root, us, 10)
    drv.arena.capacity, drv.temp_bytes = 89 << 30, 18 << 30  # an H200's arena and what is left beside it
    assert drv._chunk_tt(900, 8) >= 4


def test_a_deep_workers_part_does_not_leak_into_plain_counts():
    """A deep run's worker leaves its process's driver counting part 1 of 2 with kept tables; a
    plain count through the API on that process is still the whole count."""
    from perft_core.gpu.registry import get_driver

    drv = get_driver("gpu-emulated")
    drv.tt_enabled = True
    drv.set_part(1, 2)
    drv.keep_tables("some run", 6, perft_core.Position.from_fen(STARTPOS))
    assert perft_core.perft(POS3, 6, backend="gpu-emulated", tt=True) == 11030083
    assert perft_core.perft(POS3, 5, backend="gpu-emulated") == 674624
    assert (drv.part, drv.parts, drv._keep) == (0, 1, None)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fen=random_walk_fens(chess960=None, max_plies=30), parts=st.sampled_from([2, 3, 5]),
       depth=st.integers(min_value=3, max_value=4))
def test_parts_add_up_on_random_positions(kernels, fen, parts, depth):
    """On positions no test was tuned on (random walks, Chess960 included): the parts of a count add
    up to the CPU count, and every stored entry is its part's count."""
    pos = perft_core.Position.from_fen(fen)
    drv = make_driver(kernels, min_roots=8)
    got = []
    for c in range(parts):
        drv.set_part(c, parts)
        got.append(drv.perft(pos, depth))
        assert_clean(drv)
    assert sum(got) == perft_core.perft(pos, depth)


@pytest.mark.parametrize("fen,depth,expected", OOM_CASES)
def test_keeping_the_parts_own_boards_changes_the_work_not_the_counts(kernels, fen, depth, expected):
    """``part_compact`` (merge.keep_part): the split level's boards of other parts are dropped before
    it is merged, probed and expanded, instead of zeroed after. Per part the count, every table
    counter per remaining depth (the same own boards probed, found and stored in the same order)
    and a clean audit are those of the filter alone; only the boards that went on are fewer. The
    same through count_roots, as a deep run's task counts its units."""
    pos = perft_core.Position.from_fen(fen)
    units = [pos.push(m) for m in sorted(pos.legal_moves())[:3]]
    for parts in (2, 3):
        got = {}
        for compact in (False, True):
            rows = []
            for c in range(parts):
                drv = make_driver(kernels)
                drv.part_compact = compact
                drv.set_part(c, parts)
                n = drv.perft(pos, depth)
                assert assert_clean(drv) > 0
                stats = {r: {key: row[key] for key in ("probes", "hits", "host_probes", "host_hits", "stores")}
                         for r, row in drv.depth_stats.items()}
                drv.keep_tables("run", depth, pos)
                roots = drv.count_roots(units, depth - 1, pos)
                rows.append((n, stats, roots, drv.tt_stats["other_parts"]))
            got[compact] = rows
        assert sum(n for n, *_ in got[True]) == expected
        for (n0, s0, r0, o0), (n1, s1, r1, o1) in zip(got[False], got[True]):
            assert (n1, r1) == (n0, r0)
            if kernels.name == "gpu-emulated":
                assert s1 == s0
            else:  # on a GPU concurrent stores to one slot may keep either entry: the probes are the same
                assert {r: v["probes"] for r, v in s1.items()} == {r: v["probes"] for r, v in s0.items()}
            assert o0 == 0 < o1  # boards of other parts were dropped, and only with part_compact


@pytest.mark.parametrize("site", ["part_boards[*]", "part_keys[*]"])
def test_oom_where_the_part_keeps_its_boards_is_exact(kernels, site):
    """Out of memory where keep_part copies the kept boards: the call is retried smaller, exact."""
    fen, depth, expected = OOM_CASES[2]
    got = []
    plan = None
    for c in range(3):
        plan = FaultPlan(site=site, times=1)
        drv = make_driver(kernels, plan)
        drv.part_compact = True
        drv.set_part(c, 3)
        got.append(drv.perft(perft_core.Position.from_fen(fen), depth))
        assert plan.fired == 1 and drv.stats.oom_sites
        assert_clean(drv)
    assert sum(got) == expected


def _board_part_by_hand(words, us: int, salt: int, parts: int) -> int:
    """kernels/pc_tt.h board_part in Python ints, written from the header (not from kernels.py)."""
    m = (1 << 64) - 1

    def mix(h, x):
        z = ((h ^ x) + 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    pbq, nbk, rqk, black = (int(w) for w in words[:4])
    them = (~black & m) if us else black
    h = salt
    for w in (pbq, nbk, rqk):
        h = mix(h, w & them)
    return ((h >> 32) * parts) >> 32


def test_the_board_cut_is_the_header_s_hash_and_keeps_a_side_s_move_orders_together():
    """kernels.board_part (NumPy) equals pc_tt.h's board_part written out in Python ints; every part
    gets boards; another salt cuts differently; and the positions of the split level that reach one
    leaf position by two orders of one side's quiet moves (1. Nf3 Nf6 2. Nc3 and 1. Nc3 Nf6 2. Nf3:
    the mover's pieces differ, the other side's do not) share a part, while the key cut gives the
    ply-3 positions of startpos to parts as if at random."""
    from perft_core.gpu.kernels import Split, board_part, key_part

    rng = np.random.default_rng(3)
    boards = rng.integers(0, 2**64 - 1, size=(500, WORDS), dtype=np.uint64, endpoint=True)
    for parts in (2, 3, 4, 8):
        for us in (0, 1):
            got = board_part(boards, us, 0x5EED2026, parts)
            assert got.tolist() == [_board_part_by_hand(b, us, 0x5EED2026, parts) for b in boards]
            assert set(got.tolist()) == set(range(parts))
    assert (board_part(boards, 0, 1, 4) != board_part(boards, 0, 2, 4)).any()
    assert (board_part(boards, 0, 1, 4) != board_part(boards, 1, 1, 4)).any()

    from perft_core import _core
    from perft_core.hostbatch import host_keys

    z = np.frombuffer(_core.zobrist_keys_blob(_core.ZOBRIST_DEFAULT_SEED), dtype=np.uint64).copy()

    def position(*moves):
        p = perft_core.Position.from_fen(STARTPOS)
        for mv in moves:
            p = p.push(mv)
        return p

    def host(p):
        """(key (1, 2), board words (1, 5), side to move) of a Position."""
        root, us, ci = _core.gpu_root(p.core_args())
        words = np.array([root], dtype=np.uint64)
        return host_keys(words, us, ci, z), words, us

    assert (host(position("g1f3", "g8f6", "b1c3"))[0] == host(position("b1c3", "g8f6", "g1f3"))[0]).all()
    for salt in (1, 0x5EED2026, 2**63 + 5):  # the two parents of that position by white's two orders
        split = Split(4, 0, "board", salt)
        (kx, bx, us), (ky, by, _) = host(position("g1f3", "g8f6")), host(position("b1c3", "g8f6"))
        assert us == 0 and split.of(kx, bx, us) == split.of(ky, by, us)
    # Every ply-3 position of startpos reached from two ply-2 parents (white's moves in two orders,
    # no capture possible yet): its parents share a part by the board cut, not by the key cut.
    parents_of, parents = {}, {}
    for m1 in position().legal_moves():
        for m2 in position(m1).legal_moves():
            p = position(m1, m2)
            parents[p.fen()] = p
            for m3 in p.legal_moves():
                parents_of.setdefault(tuple(host(p.push(m3))[0][0].tolist()), set()).add(p.fen())
    cut = Split(4, 0, "board", 0x1234)
    by_board = {f: int(cut.of(*host(p))[0]) for f, p in parents.items()}
    by_key = {f: int(key_part(host(p)[0], 4)[0]) for f, p in parents.items()}
    shared = [ps for ps in parents_of.values() if len(ps) > 1]
    assert len(shared) > 100
    assert all(len({by_board[f] for f in ps}) == 1 for ps in shared)
    assert sum(len({by_key[f] for f in ps}) > 1 for ps in shared) > len(shared) // 2


def test_keep_part_groups_each_own_board_alone_and_the_rest_together():
    """merge.keep_part on a level whose parts are known: own boards in order, then the first board
    of another part; every other board maps to that last group; a level of own boards only comes
    back unchanged."""
    from perft_core.gpu.kernels import Split, key_part
    from perft_core.gpu.merge import keep_part, then_group

    k = _emulated()
    rng = np.random.default_rng(7)
    n = 64
    keys = rng.integers(0, 2**63, size=(n, 2), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    boards = np.arange(n * WORDS, dtype=np.uint64)
    part_of = key_part(keys, 3)

    class Arena:
        def alloc(self, site, count, dtype):
            return np.zeros(count, dtype=dtype)

    for part in range(3):
        mine = np.flatnonzero(part_of == part)
        other = int(np.flatnonzero(part_of != part)[0])
        kb, kk, m, group_of = keep_part(k, Arena(), boards, keys.reshape(-1), n, 5, 0, Split(3, part, "key"))
        assert m == len(mine) + 1
        assert (kb.reshape(m, WORDS) == boards.reshape(n, WORDS)[list(mine) + [other]]).all()
        assert (kk.reshape(m, 2) == keys[list(mine) + [other]]).all()
        want = np.full(n, len(mine), dtype=np.uint32)
        want[mine] = np.arange(len(mine))
        assert (group_of == want).all()
    own = keys.copy()
    own[:, 1] = np.uint64(5)  # every key in part 0 of 3
    assert keep_part(k, Arena(), boards, own.reshape(-1), n, 5, 0, Split(3, 0, "key"))[2:] == (n, None)
    first = np.array([2, 0, 1, 2], dtype=np.uint32)
    assert then_group(k, first, np.array([1, 1, 0], dtype=np.uint32)).tolist() == [0, 1, 1, 0]
    assert then_group(k, None, first) is first and then_group(k, first, None) is first


# ----- issue 27: table statistics, tables shared by a watched count's root moves ---------------------
def test_table_statistics_per_remaining_depth_add_up(kernels):
    """tt_statistics: per remaining depth, probes and hits add up to the driver's totals, a hit is a
    probe, stores are the probes not found, and occupied slots (read from the table) plus evictions
    are the stores; tables of a few thousand slots for ~10^4 positions must show evictions."""
    drv = make_driver(kernels, tt_bytes=400_000)
    assert drv.perft(perft_core.Position.from_fen(POS3), 7) == 178633661
    stats = drv.tt_statistics()["by_depth"]
    assert set(drv.tts) <= set(stats) and drv.tts
    assert sum(r["probes"] for r in stats.values()) == drv.tt_stats["probes"]
    assert sum(r["hits"] for r in stats.values()) == drv.tt_stats["hits"] > 0
    for r, row in stats.items():
        assert 0 <= row["hits"] <= row["probes"] and 0 <= row["host_hits"] <= row["host_probes"]
        if r in drv.tts:
            e = np.asarray(drv.tts[r].entries.get() if hasattr(drv.tts[r].entries, "get") else drv.tts[r].entries)
            assert row["occupied"] == int(np.count_nonzero(e.reshape(-1, 2)[:, 1]))
            assert row["stores"] == row["probes"] - row["hits"]  # tables planned once in this count
            assert row["occupied"] + row["evictions"] == row["stores"]
    assert any(stats[r]["evictions"] > 0 and stats[r]["slots"] <= 400_000 // 80 for r in drv.tts)


def test_watched_count_shares_tables_across_root_moves(kernels, monkeypatch):
    """A count with a time limit goes root move by root move; with tables they share one set of
    device tables (keep_tables), so later root moves hit what earlier ones stored (each root move
    here is a single BFS call, which alone would make no device table), and the count is exact."""
    from perft_core.gpu import registry

    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=16 << 20, audit=True)
    monkeypatch.setitem(registry._DRIVERS, "gpu-emulated", drv)
    if not isinstance(kernels, type(_emulated())):
        monkeypatch.setitem(registry._DRIVERS, "gpu", drv)
    backend = "gpu-emulated" if isinstance(kernels, type(_emulated())) else "gpu"
    assert perft_core.perft(STARTPOS, 6, backend=backend, tt=True, max_seconds=3600) == 119060324
    assert drv.tt_stats["hits"] > 0 and drv._keep is None  # shared, then released
    assert_clean(drv)


def test_count_answered_by_the_host_cache_counts_no_distinct_positions(kernels):
    """The distinct positions per ply (a host expansion of up to 250,000 boards) are counted only
    when a level goes out in several BFS calls: a count answered from the host cache skips them."""
    drv = make_driver(kernels)
    pos = perft_core.Position.from_fen(KIWIPETE)
    assert drv.perft(pos, 4) == 4085603

    def boom(*args):
        raise AssertionError("distinct positions counted for a count the host cache answers")

    drv._distinct = boom
    assert drv.perft(pos, 4) == 4085603


def test_levels_without_transpositions_are_not_merged(kernels):
    """A single-root count merges no BFS level at ply 1 or 2 below its root (no two paths reach one
    position there: the merge would cost a synchronising read for nothing) and stays exact; roots of
    several counts (count_roots) are merged from their first made level, where their children can
    meet."""
    merged_n = []
    merge_groups = kernels.merge_groups

    def watched(keys, n):
        merged_n.append(n)
        return merge_groups(keys, n)

    kernels.merge_groups = watched
    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=4 << 20)
    drv.leaf_merge = False  # the BFS levels' merges only (the leaf's: test_leaf_merge_*)
    pos3 = perft_core.Position.from_fen(POS3)
    assert drv.perft(pos3, 5) == 674624  # one BFS call: plies 1 and 2 made, neither merged
    assert drv.stats.gpu_calls == 1 and drv.stats.launch_depth == 0 and merged_n == []
    assert drv.perft(pos3, 6) == 11030083
    assert len(merged_n) == drv.stats.gpu_calls  # one level at ply 3 merged in each call
    merged_n.clear()
    kiwi = perft_core.Position.from_fen(KIWIPETE)
    roots = [kiwi.push(m) for m in sorted(kiwi.legal_moves())[:6]]
    assert drv.count_roots(roots, 4, kiwi) == [perft_core.perft(p, 4) for p in roots]
    assert len(merged_n) == drv.stats.gpu_calls > 0  # the call's first made level is merged


def test_leaf_merge_counts_each_distinct_child_once(kernels):
    """The fused leaf's moves are merged by their children's keys: startpos perft 5 in one BFS call
    has a remaining-depth-3 level of the 400 ply-2 positions, whose 8,902 moves reach 5,362
    distinct ply-3 positions (OEIS A083276), and the leaf counts those 5,362 once each; exact with
    and without the merge, and with slices too small to hold a transposition's two moves."""
    start = perft_core.Position.from_fen(STARTPOS)
    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=4 << 20)
    assert drv.perft(start, 5) == 4865609 and drv.stats.gpu_calls == 1
    assert (drv.tt_stats["leaf_moves"], drv.tt_stats["leaf_positions"]) == (8902, 5362)
    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=4 << 20)
    drv.leaf_merge_slice = 2000  # some transpositions' two moves now fall in different slices
    assert drv.perft(start, 5) == 4865609
    assert 5362 < drv.tt_stats["leaf_positions"] < 8902
    drv = TTBfsDriver(kernels, memory_bytes=64 << 20, tt_bytes=4 << 20)
    drv.temp_bytes = 1000  # no room beside the arenas: the plain fused leaf, still exact
    assert drv.perft(start, 5) == 4865609 and drv.tt_stats["leaf_moves"] == 0
    merged = 0
    for fen, depth, expected in CASES + OOM_CASES:
        pos = perft_core.Position.from_fen(fen)
        for merge in (True, False):
            drv = make_driver(kernels)
            drv.leaf_merge = merge
            assert drv.perft(pos, depth) == expected, (fen, merge)
            assert_clean(drv)
            assert drv.tt_stats["leaf_positions"] <= drv.tt_stats["leaf_moves"]
            if merge:
                merged += drv.tt_stats["leaf_moves"] - drv.tt_stats["leaf_positions"]
            else:
                assert drv.tt_stats["leaf_moves"] == 0
    assert merged > 0


def test_read_returns_host_copies_in_one_synchronisation(kernels):
    """``read``: every array's values (several dtypes and shapes, odd byte lengths) in one call,
    as host copies that later device writes do not change; scan totals read through it."""
    rng = np.random.default_rng(7)
    host = [rng.integers(0, 1 << 31, 5, dtype=np.uint32), rng.integers(0, 1 << 62, (3, 2), dtype=np.uint64),
            np.zeros(0, dtype=np.uint64), rng.integers(0, 255, 3, dtype=np.uint8), np.arange(9, dtype=np.uint64)]
    dev = [kernels.to_device(h.copy()) for h in host]
    got = kernels.read(*dev)
    for h, g in zip(host, got):
        assert g.dtype == h.dtype and g.shape == h.shape and np.array_equal(g, h)
    kernels.zero(dev[1])
    assert np.array_equal(got[1], host[1]) and not kernels.read(dev[1])[0].any()
    counts = kernels.to_device(host[0])
    offsets = kernels.xp.zeros(6, dtype=np.uint64)
    assert kernels.scan(counts, 5, offsets) == int(host[0].sum(dtype=np.uint64))


def test_a_table_bucket_holds_two_keys_and_way_0_keeps_the_bigger_count(kernels):
    """The node-count tables are two-way (kernels/pc_tt.h PC_TT_WAYS, pc_bfs.h bfs_store): keys of
    one bucket (here every key's low word is 0: bucket 0 of 2) are found side by side; a store goes to
    the way holding its key, else to way 0 when its count is at least way 0's, else to way 1. On a
    direct-mapped table the second key overwrote the first (one-GPU perft 12 3.8 % faster with the
    two ways, NOTES.md session 32)."""
    from perft_core import _core

    pos = perft_core.Position.from_fen(STARTPOS)
    root, us, ci = _core.gpu_root(pos.core_args())
    kernels.set_castle(ci)
    dev = kernels.to_device
    boards = dev(np.array([root] * 4, dtype=np.uint64).reshape(-1))
    tt = dev(np.zeros(4 * 2, dtype=np.uint64))

    def store(hi: int, count: int) -> None:
        kernels.store(boards, dev(np.array([0, hi], dtype=np.uint64)), dev(np.array([count], dtype=np.uint64)), 1,
                      tt, 4, None, 2)

    def found() -> dict[int, int]:
        keys = dev(np.array([[0, h] for h in (1, 2, 3, 4)], dtype=np.uint64).reshape(-1))
        counts, values = dev(np.zeros(4, dtype=np.uint32)), dev(np.zeros(4, dtype=np.uint64))
        kernels.count_probe(boards, keys, 4, us, tt, 4, counts, values)
        counts, values = kernels.read(counts, values)
        return {h: int(v) for h, c, v in zip((1, 2, 3, 4), counts, values) if c == 0}

    store(1, 50)
    store(2, 40)
    assert found() == {1: 50, 2: 40}  # both keys of the bucket
    store(3, 45)  # smaller than way 0's 50: way 1
    assert found() == {1: 50, 3: 45}
    store(4, 60)  # at least way 0's: way 0
    assert found() == {4: 60, 3: 45}
    store(3, 45)  # its own way again, whatever the counts
    store(1, 50)  # under way 0's 60: way 1
    assert found() == {4: 60, 1: 50}
    assert kernels.read(tt)[0].reshape(-1, 2)[2:].sum() == 0  # bucket 1 untouched
