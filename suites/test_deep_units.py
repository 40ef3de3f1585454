"""Deep perft without Dask: work units (split, merge, confirmation, FENs) and the GPU driver's
warm tables across units (``TTBfsDriver.keep_tables``, on the emulated device, audited).

Counts are checked against the bundled tables (OEIS A048987 / A083276, CPW, Chess960 set).
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import perft_core
from oracle import tables
from perft_core import Position, _core
from perft_core.deep import KeyCollisionError, units
from perft_core.gpu.kernels import EmulatedKernels
from perft_core.gpu.ttdriver import TTBfsDriver

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
SEED = _core.ZOBRIST_DEFAULT_SEED


def table(suite: str, fen_prefix: str, depth: int) -> tables.TableRow:
    rows = [r for r in tables.load(suite) if r.fen.startswith(fen_prefix) and r.depth == depth]
    assert rows, f"no {suite} row for {fen_prefix} at depth {depth}"
    return rows[0]


def test_units_per_ply_are_the_distinct_positions_of_A083276():
    """Merging by key gives exactly the distinct positions after n plies (OEIS A083276), and the
    multiplicities add up to the paths (A048987): merged boards are equal, none left apart. Ply 4
    has double pushes whose en passant file is not hashed: merged with their twins, not flagged."""
    distinct = tables.unique_positions()
    for ply, boards, keys, mult, us, ci in units._levels(Position.from_fen(STARTPOS), SEED):
        assert len(boards) == distinct[ply]
        assert int(mult.sum()) == table("startpos", "rnbqkbnr", ply).nodes
        if ply == 4:
            break


@pytest.mark.parametrize("suite,prefix,depth,ply", [
    ("startpos", "rnbqkbnr", 5, 3),
    ("cpw", "r3k2r/p1ppqpb1", 4, 2),     # Kiwipete: castling, en passant, promotions nearby
    ("cpw", "8/2p5/3p4/KP5r", 5, 3),     # position 3: en passant pins
    ("chess960", "bqnb1rkr", 4, 2),     # Chess960 castling geometry carried into the unit FENs
])
def test_split_total_is_the_table_count(suite, prefix, depth, ply):
    row = table(suite, prefix, depth)
    pos = Position.from_fen(row.fen, chess960=True if row.chess960 else None)
    us = units.split(pos, depth, ply)
    assert all(u.depth == depth - ply for u in us)
    assert len({u.key for u in us}) == len(us)
    assert [u.estimate for u in us] == sorted((u.estimate for u in us), reverse=True)  # largest first
    total = sum(u.multiplicity * perft_core.perft(Position.from_fen(u.fen, chess960=pos.chess960), u.depth)
                for u in us)
    assert total == row.nodes


def _log_error_spread(estimates: np.ndarray, exact: np.ndarray) -> float:
    """Standard deviation of log(exact / estimate) over the units with moves: how far apart the
    estimates put units that are really alike (a common scale factor does not count)."""
    live = exact > 0
    return float(np.log(exact[live] / np.maximum(estimates[live], 1.0)).std())


@pytest.mark.parametrize("suite,prefix,depth", [
    ("startpos", "rnbqkbnr", 6),
    ("cpw", "8/2p5/3p4/KP5r", 7),        # position 3: a sparse endgame, two more plies to grow
    ("cpw", "r3k2r/Pppp1ppp", 6),        # position 4: checks and promotions
    ("chess960", "bqnb1rkr", 6),
])
def test_unit_estimates_follow_each_units_own_branching(monkeypatch, suite, prefix, depth):
    """Units at split ply 2, sampled 3 plies deep (the cap lowered from 4 so that the estimate
    still extrapolates): the estimates with each unit's own branching are closer to the exact
    counts than the root's growth alone (share 0), on every position. The batches of a deep run
    hold about equal estimated nodes and its progress bar's ETA is in estimated nodes, so this
    spread is how far off both are."""
    row = table(suite, prefix, depth)
    pos = Position.from_fen(row.fen, chess960=True if row.chess960 else None)
    monkeypatch.setattr(units, "_SAMPLE_MAX_PLIES", 3)
    for p, boards, keys, mult, us, ci in units._levels(pos, SEED):
        if p == 2:
            break
    rem = depth - 2
    counts = units.root_growth(pos, depth)
    exact = np.asarray(_core.batch_perft(np.ascontiguousarray(boards).reshape(-1), len(boards), us, ci, rem),
                       dtype=np.float64)
    assert int((exact * mult).sum()) == row.nodes
    own = _log_error_spread(units.unit_estimates(boards, us, ci, rem, counts, 2), exact)
    monkeypatch.setattr(units, "_OWN_GROWTH_SHARE", 0.0)
    root_only = _log_error_spread(units.unit_estimates(boards, us, ci, rem, counts, 2), exact)
    assert own < 0.85 * root_only, (own, root_only)
    assert own < 0.1


def test_unit_estimates_are_exact_when_the_sample_reaches_the_depth():
    pos = Position.from_fen(STARTPOS)
    for p, boards, keys, mult, us, ci in units._levels(pos, SEED):
        if p == 2:
            break
    est = units.unit_estimates(boards, us, ci, 3, units.root_growth(pos, 5), 2)
    exact = _core.batch_perft(np.ascontiguousarray(boards).reshape(-1), len(boards), us, ci, 3)
    assert est.tolist() == [float(x) for x in exact]


@pytest.mark.parametrize("fen", [STARTPOS, "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
                                 "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"])
def test_unit_fens_read_back_to_the_same_key(fen):
    """Each unit's FEN, read back, has the unit's key from scratch (Position.zobrist): the FEN
    carries everything the key covers (pieces, side, castling rights and geometry, en passant)."""
    pos = Position.from_fen(fen)
    for u in units.split(pos, 4, 2):
        assert Position.from_fen(u.fen, chess960=pos.chess960).zobrist() == u.key, u.fen


def test_key_collision_is_caught_not_merged(monkeypatch):
    """A key function that maps different positions to one key: the merge refuses them."""
    real = units.host_keys
    pos = Position.from_fen(STARTPOS)
    assert len(units.split(pos, 3, 2)) == 400  # the real keys: no false alarm

    def colliding(boards, us, ci, z):
        keys = real(boards, us, ci, z)
        keys[:, 0] %= np.uint64(3)
        keys[:, 1] = 0
        return keys

    monkeypatch.setattr(units, "host_keys", colliding)
    with pytest.raises(KeyCollisionError, match="shared by two different positions at ply 1"):
        units.split(pos, 3, 2)


def test_split_ply_rule():
    """At least 20 units per worker; deeper while a unit would take over 600 s; at most depth - 1."""
    pos = Position.from_fen(STARTPOS)
    assert units.choose_split_ply(pos, 6, 1, None) == 1   # 20 units
    assert units.choose_split_ply(pos, 6, 2, None) == 2   # 400 units >= 40
    assert units.choose_split_ply(pos, 3, 50, None) == 2  # never deeper than depth - 1
    assert units.choose_split_ply(pos, 1, 8, None) == 0
    # perft 12 is ~6e16 nodes: at 1e9 nodes/s a ply-2 unit (1/400 of it) would take days
    assert units.choose_split_ply(pos, 12, 2, 1e9) > 2
    with pytest.raises(ValueError):
        units.split(pos, 3, 4)


# ----- warm tables across units (TTBfsDriver.keep_tables) -----------------------------------------

def _driver():
    return TTBfsDriver(EmulatedKernels(), memory_bytes=16 << 20, tt_bytes=4 << 20, audit=True,
                       chunk_leaf_moves=1 << 11)


def _tags(drv) -> list[int]:
    """Store launch numbers of the valid device TT entries (audit records)."""
    out = []
    for tt in drv.tts.values():
        e = np.asarray(tt.entries).reshape(-1, 2)
        a = np.asarray(tt.audit).reshape(-1, 8)
        out += [int(a[s, 7]) >> 1 for s in np.nonzero(e[:, 1])[0]]
    return out


def _count(drv, us) -> int:
    return sum(u.multiplicity * drv.perft(Position.from_fen(u.fen), u.depth) for u in us)


def test_warm_tables_across_units_are_exact_and_hit():
    """Startpos perft 6 as its 20 ply-1 units on one driver: each unit is one BFS call, which can
    never hit its own stores, so every device hit is an entry an earlier unit stored. Without
    keep_tables there are none; with it, hits, the exact total, and an audit with no wrong entry."""
    expected = table("startpos", "rnbqkbnr", 6).nodes
    us = units.split(Position.from_fen(STARTPOS), 6, 1)
    cold = _driver()
    assert _count(cold, us) == expected and cold.tt_stats["hits"] == 0
    drv = _driver()
    drv.keep_tables("run", 6)  # tables sized for perft 6 from the start, as a monolithic count's
    assert _count(drv, us) == expected
    assert drv.tt_stats["hits"] > 0
    checked, wrong = drv.audit()
    assert checked > 20 and not wrong


@pytest.mark.parametrize("change", ["seed", "geometry", "depth", "run"])
def test_kept_tables_reset_when_the_run_changes(change, monkeypatch):
    """A new key seed, castling geometry, depth or run key resets the kept tables: afterwards
    every device entry was stored by the new count, and the audit (which recomputes keys with
    the driver's current seed) finds nothing wrong. With the reset planted away, both fail."""
    def run(drv):
        drv.keep_tables("run")
        _count(drv, units.split(Position.from_fen(STARTPOS), 5, 1)[:6])
        before = drv.device_tables.store_launches
        if change == "seed":
            drv.reseed(12345)
            drv.perft(Position.from_fen(STARTPOS).push("e2e4"), 4)
        elif change == "geometry":
            drv.perft(Position.from_fen("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"), 4)
        elif change == "depth":
            drv.perft(Position.from_fen(STARTPOS).push("e2e4"), 5)
        else:
            drv.keep_tables("another run")
            drv.perft(Position.from_fen(STARTPOS).push("e2e4"), 4)
        tags = _tags(drv)
        return tags and min(tags) > before, drv.audit()[1]

    fresh, wrong = run(_driver())
    assert fresh and not wrong
    monkeypatch.setattr(TTBfsDriver, "_table_plan", lambda self, depth: "whatever changes")
    fresh, wrong = run(_driver())
    assert not fresh  # the planted bug: old entries survive the change
    if change == "seed":
        assert wrong  # and the audit sees keys of the old seed


def test_batches_keep_parts_apart_cover_every_row_once_and_interleave():
    from perft_core.deep.dispatch import MAX_UNITS_PER_TASK, TASKS_PER_WORKER, batches

    rows = [{"idx": u * 2 + p, "unit": u, "part": p, "estimate": float(1000 - u)} for u in range(400) for p in range(2)]
    tasks = batches(rows, 2)
    assert all(len({r["part"] for r in t}) == 1 for t in tasks)
    assert sorted(r["idx"] for t in tasks for r in t) == list(range(800))
    per_part = [[t for t in tasks if t[0]["part"] == p] for p in range(2)]
    assert [len(p) for p in per_part] == [TASKS_PER_WORKER, TASKS_PER_WORKER]
    assert [t[0]["part"] for t in tasks[:4]] == [0, 1, 0, 1]  # every worker starts at once
    sums = [sum(r["estimate"] for r in t) for t in per_part[0]]
    assert max(sums) < 1.5 * min(sums)  # about equal estimated work, largest units first
    many = [{"idx": i, "unit": i, "part": 0, "estimate": 1.0} for i in range(10_000)]
    assert len(batches(many, 1)) == -(-10_000 // MAX_UNITS_PER_TASK)
    assert len(batches(many[:5], 4)) == 5  # never more batches than rows


def test_merged_tasks_are_not_cut_for_balance_where_each_worker_owns_a_part():
    """GPU tasks with tables count their units as one count (equal positions merge), so cutting a
    part's units into 16 tasks costs work (perft 11 through one GPU: 1.39x the one-process count);
    where each worker owns a part, or one worker counts everything, a part is one task (bounded by
    MAX_UNITS_PER_TASK and the task time). Workers sharing a part still get balancing tasks."""
    from perft_core.deep.dispatch import MAX_TASK_SECONDS, MAX_UNITS_PER_TASK, TASKS_PER_WORKER, batches

    rows = [{"idx": u * 4 + p, "unit": u, "part": p, "estimate": float(1000 - u)} for u in range(200) for p in range(4)]
    assert len(batches(rows, 4, merged=True)) == 4  # one task a part
    assert len(batches(rows, 4)) == 4 * TASKS_PER_WORKER  # whole-unit balance where nothing merges
    assert len(batches(rows, 8, merged=True)) == 4 * 2 * TASKS_PER_WORKER  # two workers a part: balance
    one = [dict(r, part=0, idx=i) for i, r in enumerate(rows)]
    assert len(batches(one, 1, merged=True)) == -(-len(one) // MAX_UNITS_PER_TASK)
    pace = 10 * MAX_TASK_SECONDS / sum(r["estimate"] for r in one)  # ten tasks' worth of time
    assert len(batches(one, 1, pace, merged=True)) >= 10


def test_batches_are_cut_to_the_task_time_once_the_speed_is_known():
    """A perft 13-sized run on one worker: without a speed, 16 tasks of over an hour each; with the
    measured seconds per estimated node, no task is much over MAX_TASK_SECONDS (a killed client
    loses minutes), and a short run keeps its 16 tasks (the bound never merges)."""
    from perft_core.deep.dispatch import MAX_TASK_SECONDS, TASKS_PER_WORKER, batches, seconds_per_estimate

    rows = [{"idx": u, "unit": u, "part": 0, "estimate": 1e17 / (u + 50), "count": None, "seconds": None}
            for u in range(400)]
    pace = 1 / 5e13  # seconds per estimated node
    longest = max(r["estimate"] for r in rows) * pace
    assert len(batches(rows, 1)) == TASKS_PER_WORKER
    tasks = batches(rows, 1, pace)
    assert sorted(r["idx"] for t in tasks for r in t) == list(range(400))
    seconds = [sum(r["estimate"] for r in t) * pace for t in tasks]
    assert max(seconds) <= MAX_TASK_SECONDS + longest
    assert sum(seconds) / len(tasks) > 0.5 * MAX_TASK_SECONDS  # not cut finer than asked
    assert len(batches(rows, 1, pace / 1e4)) == TASKS_PER_WORKER
    # the pace: measured on counted rows (their estimates' scale cancels), else the calibration
    assert seconds_per_estimate(rows, None) is None
    assert seconds_per_estimate(rows, 2e9) == 1 / 2e9
    done = [dict(r, count=1, seconds=3.0) for r in rows[:10]]
    assert seconds_per_estimate(done + rows[10:], 2e9) == pytest.approx(30.0 / sum(r["estimate"] for r in done))


def test_calibration_stops_before_a_count_that_would_take_far_longer(monkeypatch):
    """A backend of 1e9 nodes/s on the start position: perft 6 takes 0.12 s (under the 0.5 s asked)
    and predicts 2.9 s for perft 7, so the calibration stops at perft 6 with its speed instead of
    spending the 3.2 s of perft 7."""
    from perft_core.deep import worker

    clock = [0.0]
    asked = []

    def fake_count(fen, depth, *args):
        asked.append(depth)
        nodes = table("startpos", "rnbqkbnr", depth).nodes
        clock[0] += nodes / 1e9
        return nodes

    monkeypatch.setattr(worker, "count", fake_count)
    monkeypatch.setattr(worker, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    assert worker.calibrate(STARTPOS, 12, "cpu", False, SEED) == pytest.approx(1e9)
    assert max(asked) == 6
    assert clock[0] < 0.2


def test_parts_only_where_tables_split_by_key_pay():
    from perft_core.deep.dispatch import MAX_PARTS, choose_parts

    assert choose_parts("gpu", True, 9, 2) == 2
    assert choose_parts("gpu-emulated", True, 3, 3) == 3
    assert choose_parts("gpu", True, 9, 64) == MAX_PARTS
    assert choose_parts("gpu", False, 9, 2) == 1  # no tables: whole units balance as well
    assert choose_parts("cpu", True, 9, 2) == 1
    assert choose_parts("gpu", True, 2, 2) == 1  # no position 3 plies from the end to split by


def test_a_time_budget_takes_only_the_rows_that_fit_each_part_on_its_own_clock():
    """batches(budget=...): a part's rows are taken in order while their seconds (times
    BUDGET_MARGIN) fit its workers' time left; a row longer than the budget is passed over for
    smaller ones after it; a part with no time gets no task; no task is longer than the budget."""
    from perft_core.deep.dispatch import BUDGET_MARGIN, batches

    pace = 1.0  # seconds per estimated node
    rows = [{"idx": i * 2 + p, "unit": i, "part": p, "estimate": e} for i, e in enumerate([50.0, 30, 30, 10, 5])
            for p in range(2)]
    tasks = batches(rows, 2, pace, merged=True, budget={0: 100.0, 1: 0.0})
    taken = [r for t in tasks for r in t]
    assert {r["part"] for r in taken} == {0}
    # 50 and 30 (x1.25 = 62.5 + 37.5 = 100) fit, the second 30 does not, 10 and 5 would exceed 100 too
    assert [r["unit"] for r in taken] == [0, 1]
    tasks = batches(rows, 2, pace, merged=True, budget={0: 40.0, 1: 40.0})
    # 50 (62.5 s) never fits 40 s; a 30 (37.5 s) does, and then nothing else (2.5 s left)
    assert sorted(r["unit"] for t in tasks for r in t if r["part"] == 0) == [1]
    assert all(sum(r["estimate"] for r in t) * pace * BUDGET_MARGIN <= 40.0 for t in tasks)
    assert batches(rows, 2, 0.0, merged=True, budget={0: 0.0, 1: 0.0}) == []  # no time left: nothing, even if free
    pool = [dict(r, part=0) for r in rows if r["part"] == 0]  # whole units on 4 workers: 4 x 40 s of time
    assert sorted(r["unit"] for t in batches(pool, 4, pace, budget={0: 40.0}) for r in t) == [1, 2, 3, 4]


class _FakeFuture:
    def __init__(self, key, result):
        self.key, self._result = key, result

    def result(self):
        return self._result

    def release(self):
        pass


def _fake_phase(monkeypatch, rows, true_pace, placed=None, **kw):
    """run_phase on a fake one-worker cluster whose clock advances by each task's true seconds
    (its rows' estimates x ``true_pace``, or the sum of ``true_pace(row)`` where it is a function)
    when its result is taken: (tasks submitted, rows counted, rows left, the clock at the end);
    ``placed``: a list that gets each submission's ``workers``."""
    distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install 'perft-oracle[dist]')")
    from perft_core.deep import dispatch

    clock = [0.0]
    submitted, counted = [], []

    class Client:
        def submit(self, fn, fens, *args, key, **kw):
            submitted.append(fens)
            if placed is not None:
                placed.append(kw.get("workers"))
            return _FakeFuture(key, {"seconds": len(fens) * 0.0 + 0.0, "fens": fens})

        def cancel(self, *a, **k):
            pass

    class AsCompleted:
        def __init__(self):
            self.queue = []

        def add(self, fut):
            self.queue.append(fut)

        @property
        def futures(self):
            return self.queue

        def __iter__(self):
            while self.queue:
                fut = self.queue.pop(0)
                batch = [r for r in rows if r["fen"] in fut._result["fens"]]
                seconds = sum(true_pace(r) if callable(true_pace) else r["estimate"] * true_pace for r in batch)
                clock[0] += seconds
                fut._result["seconds"] = seconds
                yield fut

    monkeypatch.setattr(distributed, "as_completed", AsCompleted)
    monkeypatch.setattr(dispatch, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    st = types.SimpleNamespace(submitted=lambda idxs: list(idxs))
    progress = types.SimpleNamespace(phase=lambda *a: None, advance=lambda *a: None)

    def on_result(batch, result, key):
        counted.extend(batch)
        return 0

    failures, left, why = dispatch.run_phase(Client(), st, rows, lambda b: ([r["fen"] for r in b],), on_result,
                                             ["w0"], progress, "count", **kw)
    assert not failures and (why is None) == bool(counted or not left)
    return submitted, counted, left, clock[0]


def _rows(n, estimate=1e12):
    return [{"idx": i, "unit": i, "part": 0, "fen": f"unit {i}", "estimate": estimate} for i in range(n)]


def test_a_deadline_starts_only_tasks_estimated_to_end_before_it(monkeypatch):
    """20 rows of 10 s each, 95 s left: tasks are started while their 1.25 x 10 s fit what is left
    (7, then one and one more as the time left shrinks to 25 and 15 s), never past the deadline;
    the 11 rows left stay pending. Without a deadline every row is counted."""
    rows = _rows(20)
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, pace=1e-11, deadline=95.0)
    assert (len(counted), left) == (9, 11) and end <= 95.0
    assert sorted(r["idx"] for r in counted) == list(range(9))  # in order, none twice
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, pace=1e-11)
    assert (len(counted), left) == (20, 0)


def test_parts_that_take_turns_on_fewer_workers_share_the_time_left(monkeypatch):
    """A run of four parts on one worker (a four-GPU store resumed on one GPU): the parts run one
    after another on it, so 95 s hold 9 rows of 10 s in all, as for whole units, all of the first
    part (its tables stay warm), and the phase ends before the deadline. Each part budgeting the
    whole 95 s for itself started 28 rows and ran 360 s (session 34: 565 s for --max-seconds 520);
    a quarter of the time for each part took turns at every task (a table reset each). With only
    one part's rows left the worker's whole time goes to it, not a quarter."""
    rows = [{"idx": i, "unit": i // 4, "part": i % 4, "fen": f"unit {i // 4} part {i % 4}", "estimate": 1e12}
            for i in range(80)]
    placed = []
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, placed, pace=1e-11, deadline=95.0, parts=4)
    assert end <= 95.0 and left == 80 - len(counted) and len(counted) >= 7
    assert {r["part"] for r in counted} == {0}  # one part at a time within a command
    assert set(placed) == {None}  # one worker: never pinned to it (a restarted worker has a new address)
    last = [r for r in rows if r["part"] == 3]
    submitted, counted, left, end = _fake_phase(monkeypatch, last, 1e-11, pace=1e-11, deadline=95.0, parts=4)
    assert end <= 95.0 and len(counted) >= 7


def test_under_a_time_limit_a_worker_stays_on_its_part_rather_than_start_the_next_for_a_small_row(monkeypatch):
    """One worker, two parts, 95 s: part 0's 20 rows of 10 s fill the time (9 fit), and part 1's
    rows (one of them 0.1 s) wait for the next command. On the old code the 0.1-s row of part 1 was
    sent once part 0's next row no longer fit: the worker changed part for it, dropping part 0's
    tables, and the image saved at the stop was part 1's one-row tables (a helper's hunt,
    session 35: 139 rows of a part's history thrown away for a 1-row task)."""
    rows = [{"idx": i, "unit": i, "part": 0, "fen": f"unit {i} part 0", "estimate": 1e12} for i in range(20)]
    rows += [{"idx": 20 + i, "unit": i, "part": 1, "fen": f"unit {i} part 1", "estimate": 1e12 if i else 1e10}
             for i in range(20)]
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, pace=1e-11, deadline=95.0, parts=2)
    assert {r["part"] for r in counted} == {0} and len(counted) >= 7 and end <= 95.0
    assert left == 40 - len(counted)
    # part 0's rows too large for the limit: nothing starts, and the reason is about them, not part 1's row
    for r in rows[:20]:
        r["estimate"] = 2e13
    from perft_core.deep import dispatch

    got = {}
    real = dispatch.run_phase

    def keep(*a, **k):
        got["out"] = real(*a, **k)
        return got["out"]

    monkeypatch.setattr(dispatch, "run_phase", keep)
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, pace=1e-11, deadline=95.0, parts=2)
    assert not counted and left == 40
    assert "the smallest row left of a worker's current part is estimated at 250.0 s" in got["out"][2]


def test_row_seconds_predicts_by_the_unit_s_other_parts_then_the_part_s_pace_then_the_phase_s():
    """RowSeconds' three rules, in order: a row whose unit has another part's seconds gets their mean
    (from the store's history or this phase's results), times its part's ratio in this phase of
    what its rows took to what their units' other parts took; else its estimate at its part's
    pace in this phase; else at the phase's (its results over all parts, else the starting pace);
    nothing known: None."""
    from perft_core.deep.dispatch import RowSeconds

    def row(unit, part, estimate=1e12, **kw):
        return {"unit": unit, "part": part, "estimate": estimate, **kw}

    assert RowSeconds(None)(row(0, 0)) is None
    history = [row(0, 0, count="5", seconds=8.0), row(0, 2, count="5", seconds=12.0), row(1, 0, count=None, seconds=None),
               row(2, 0, count="5", seconds=4.0)]
    p = RowSeconds(2e-12, history)
    assert p(row(0, 1)) == 10.0  # the mean of its unit's parts 0 and 2
    assert p(row(0, 0)) == 12.0  # its own part's row is not its own history
    assert p(row(1, 1)) == 2.0  # unit 1 has no counted part: the starting pace
    p.add([row(2, 1)], 8.0)  # part 1 took twice what unit 2's part 0 did
    assert p(row(0, 1)) == 20.0  # 10 s by unit 0's other parts, times part 1's ratio of 2
    assert p(row(0, 3)) == 10.0  # part 3 has no ratio yet: 1
    assert p(row(1, 1)) == 8.0  # no other part of unit 1: part 1's own pace, 8 s per 1e12
    assert p(row(1, 3)) == 8.0  # part 3 has no result: the phase's pace (part 1's so far)
    p.add([row(1, 3, estimate=3e12)], 3.0)
    assert p.pace == pytest.approx(11.0 / 4e12)


def test_a_part_that_starts_in_a_command_is_planned_by_its_units_other_parts(monkeypatch):
    """One worker taking turns at two parts, 60 s left: part 0 resumes on its warm tables (its last
    20 rows, 1 s each), then part 1 starts on empty tables, whose first 5 rows take 10 s each, as
    part 0's first 5 did (the store's history), and the rest 1 s. Part 1's first task is planned by
    the seconds its units' part-0 rows took, so the phase ends before the deadline. Planned by
    part 0's last pace (1 s a row), part 1's first task held about 30 rows (75 s) and ran past it,
    as one H200 at perft 13 did by minutes (session 36)."""
    history = [{"idx": 2 * u, "unit": u, "part": 0, "estimate": 1e12, "count": 1, "seconds": 10.0 if u < 5 else 1.0}
               for u in range(20)]
    rows = [{"idx": 2 * u, "unit": u, "part": 0, "fen": f"unit {u} part 0", "estimate": 1e12} for u in range(20, 40)]
    rows += [{"idx": 2 * u + 1, "unit": u, "part": 1, "fen": f"unit {u} part 1", "estimate": 1e12} for u in range(40)]

    def true(r):
        return 10.0 if r["part"] == 1 and r["unit"] < 5 else 1.0

    pace = sum(h["seconds"] for h in history) / sum(h["estimate"] for h in history)
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, true, pace=pace, deadline=60.0, parts=2,
                                                history=history)
    assert end <= 60.0 and {r["unit"] for r in counted if r["part"] == 0} == set(range(20, 40))
    assert 0 in {r["unit"] for r in counted if r["part"] == 1} and end >= 50.0  # and the time is used
    assert left == 60 - len(counted)


def test_a_worker_taking_turns_at_parts_gets_one_part_s_tasks_after_another(monkeypatch):
    """One worker, four parts (``--parts 4`` on one GPU): the tasks go out part by part, in order
    of submission (their priority), so the worker's tables are reset three times, not at every
    task (interleaved, batch 0 of every part then batch 1, they were reset at each)."""
    rows = [{"idx": i, "unit": i // 4, "part": i % 4, "fen": f"unit {i // 4} part {i % 4}", "estimate": 1e12}
            for i in range(400)]
    submitted, counted, left, _ = _fake_phase(monkeypatch, rows, 1e-11, pace=1e-11, parts=4)
    assert left == 0 and len(counted) == 400
    parts = [int(fens[0].split()[-1]) for fens in submitted]
    assert parts == sorted(parts) and len(set(parts)) == 4
    assert all(len({f.split()[-1] for f in fens}) == 1 for fens in submitted)  # one part a task


def test_tasks_cut_by_a_calibrated_pace_are_cut_again_by_the_first_measured_one(monkeypatch):
    """A calibration 1e4 x slower than the run's real pace (a small count without deep tables; startpos
    perft 13 on four H200s got 400 one-unit tasks a part) cuts every unit into a task of its own;
    after the first result the rest are cut by the measured pace: TASKS_PER_WORKER tasks, not 384
    more. With measured=True (a pace from the store's rows) the plan is kept."""
    from perft_core.deep.dispatch import MAX_TASK_SECONDS, TASKS_PER_WORKER

    rows = _rows(400)
    slow = 2 * MAX_TASK_SECONDS / 1e12  # one unit takes two task lengths by the calibration
    submitted, counted, left, _ = _fake_phase(monkeypatch, rows, slow / 1e4, pace=slow, measured=False)
    assert (len(counted), left) == (400, 0)
    assert len(submitted) <= 16 + TASKS_PER_WORKER
    assert all(len(t) == 1 for t in submitted[:16])  # those in flight before the first result
    submitted, counted, left, _ = _fake_phase(monkeypatch, rows, slow / 1e4, pace=slow, measured=True)
    assert len(submitted) == 400 and left == 0


def test_a_calibration_too_fast_for_the_run_does_not_overrun_the_limit(monkeypatch):
    """40 rows of 1 s by the calibration that take 6 s each (a statistics run on the emulated device
    ran 8.7 s for --max-seconds 4: its calibration was about 6x too fast, and every task had been
    sent by it at once): the first task holds a tenth of the time by the calibrated pace, the rest is
    planned by its measured pace, and the phase ends before the deadline. On the old code one task
    of all 40 rows (240 s) went out for the 95 s. A limit too short for that tenth still gets a task."""
    rows = _rows(40, estimate=1e11)
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 6e-11, pace=1e-11, measured=False, deadline=95.0)
    assert end <= 95.0 and 10 <= len(counted) < 40 and left == 40 - len(counted)
    assert len(submitted[0]) <= 8  # 9.5 s by the calibration, 1.25 x 1 s a row
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, pace=1e-11, measured=False, deadline=5.0)
    assert counted and end <= 5.0


def test_a_deadline_uses_the_phase_s_own_pace_once_results_come_in(monkeypatch):
    """A store whose rows say 20 s a row while this phase's rows take 10 s (warmer tables, smaller
    units): after the first results the deadline's cut uses the measured 10 s, so 9 rows fit in 95 s
    (8 with the store's pace kept), and none runs past the deadline."""
    rows = _rows(20)
    submitted, counted, left, end = _fake_phase(monkeypatch, rows, 1e-11, pace=2e-11, measured=True, deadline=95.0)
    assert (len(counted), left) == (9, 11) and end <= 95.0


def test_a_statistics_run_is_calibrated_at_the_statistics_speed():
    """The calibration counts plainly on a worker: a statistics run's speed is that over the
    backend's stats_cost, so its units and tasks are cut to the statistics' time (cut for the plain
    speed, perft 12 statistics on two H200s finished no task within its --max-seconds)."""
    import types

    from perft_core.backends import BACKENDS
    from perft_core.deep import dispatch
    from perft_core.deep import worker

    class Client:
        def submit(self, fn, *args, **kwargs):
            assert fn is worker.calibrate and args[3:5] == (True, SEED)
            return types.SimpleNamespace(result=lambda: 1e12)

    for backend in ("gpu", "gpu-emulated", "cpu"):
        assert dispatch.calibrate_speed(Client(), STARTPOS, 12, backend, True, SEED, False) == 1e12
        assert dispatch.calibrate_speed(Client(), STARTPOS, 12, backend, True, SEED, True) == 1e12 / BACKENDS[backend].stats_cost
        assert BACKENDS[backend].stats_cost > 1


def test_a_resumed_run_in_parts_continues_on_as_many_gpus_as_it_has_parts(monkeypatch, tmp_path):
    """``--resume`` of a gpu run in four parts with no cluster option starts min(4, the GPUs
    visible) workers, not one (session 34 resumed a four-GPU perft 13 on one GPU, unsaid); --gpus
    given is kept; visible GPUs unknown: one. The cluster is stubbed: no GPU or Dask is needed."""
    from perft_core.deep import cluster, run as run_mod

    st = run_mod._create_store(tmp_path / "p4.sqlite", Position.from_fen(STARTPOS), 6, 2, "gpu", True, SEED, None,
                               None, False, 4, 3, "board", {})
    assert st.run["parts"] == 4
    st.close()
    asked = []

    class Stop(Exception):
        pass

    def client(backend, workers, gpus, scheduler):
        asked.append((backend, workers, gpus, scheduler))
        raise Stop

    monkeypatch.setattr(cluster, "dask_client", client)
    for visible, gpus, want in ((8, None, 4), (2, None, 2), (None, None, 1), (8, 3, 3), (8, 1, 1)):
        monkeypatch.setattr(cluster, "visible_gpus", lambda v=visible: v)
        with pytest.raises(Stop):
            run_mod.deep_perft(resume=tmp_path / "p4.sqlite", gpus=gpus)
        assert asked.pop() == ("gpu", None, want, None), (visible, gpus)


def test_unique_rows_is_numpys_unique_of_rows():
    """The split's merge groups 128-bit keys as ``np.unique(keys, axis=0, return_index=True,
    return_inverse=True)`` does (5.1 s for Kiwipete's 2.39 M positions at ply 4; this about 1 s):
    the same rows in the same order, the first index of each, every row's group. Keys from a few
    values share column 0 with different column 1 (the sort's fallback), random ones do not."""
    rng = np.random.default_rng(36)
    for n in (0, 1, 2, 7, 4096):
        for high in (1, 3, 2**64 - 1):
            keys = rng.integers(0, high, size=(n, 2), dtype=np.uint64, endpoint=True)
            if n > 3:
                keys[n // 2:] = keys[: n - n // 2]  # repeated keys, first seen in the first half
            want = np.unique(keys, axis=0, return_index=True, return_inverse=True)
            got = units._unique_rows(keys)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            assert np.array_equal(got[2], want[2].reshape(-1))


@pytest.mark.parametrize("fen", [
    STARTPOS,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # Kiwipete: castling both ways
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",  # CPW 3: en passant captures
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",  # Chess960, Shredder-FEN
    "1r2k1r1/8/8/8/8/8/8/1RR1K1R1 w Bbg - 0 1",  # X-FEN: an inner rook (B) beside an outer one (g)
])
def test_split_fens_are_the_positions_fens(fen):
    """``fens`` (the board field and the rest built for many boards at once) writes every unit's
    FEN as ``board_position(root, board, ply).fen()`` does, at plies 1-3: castling letters that
    depend on the back ranks (X-FEN's K/Q against a file letter), rights lost, en passant kept only
    where it is hashed, the side to move and the move number."""
    root = Position.from_fen(fen)
    for ply, boards, *_ in units._levels(root, _core.ZOBRIST_DEFAULT_SEED):
        if ply == 0:
            continue
        assert units.fens(root, boards, ply) == [units.board_position(root, b, ply).fen() for b in boards]
        if ply == 3:
            break
