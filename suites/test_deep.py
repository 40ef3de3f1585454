"""Deep perft on Dask (CPU CI): exact distributed counts, a killed client resumed, a killed
worker survived, verification with a second key seed, and the one-line errors of bad stores.

Expected counts come from the bundled OEIS A048987 table (oracle/data/startpos_A048987.csv).
One 2-worker LocalCluster (processes, one thread each) serves most tests through its scheduler
address; one test starts its own LocalCluster through ``workers=2``.
"""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import types

import numpy as np
import pytest

from oracle import tables
from perft_cli import main
from perft_core import Position
from perft_core.deep import deep_perft, split, units
from perft_core.deep.store import Store, StoreError

distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install 'perft-oracle[dist]')")

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def expected(depth: int) -> int:
    (row,) = [r for r in tables.load("startpos") if r.depth == depth]
    return row.nodes


def rows(path) -> list[dict]:
    conn = sqlite3.connect(path, timeout=30)
    try:
        cur = conn.execute("SELECT * FROM units ORDER BY idx")
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        conn.close()


def counted(path) -> int:
    if not os.path.exists(path):
        return 0
    try:
        conn = sqlite3.connect(path, timeout=30)
        try:
            return conn.execute("SELECT COUNT(*) FROM units WHERE count IS NOT NULL").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:  # the store's tables are not created yet
        return 0


def wait_for(cond, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def assert_counted_once(path, n_units: int) -> None:
    rs = rows(path)
    assert len(rs) == n_units
    assert all(r["finishes"] == 1 and r["count"] is not None and r["attempts"] >= 1 for r in rs)


def test_cpu_on_a_two_worker_local_cluster_is_exact(tmp_path):
    """workers=2 starts a LocalCluster of 2 processes; split ply 2 (400 units >= 20 per worker)."""
    res = deep_perft(STARTPOS, 6, workers=2, store=tmp_path / "cpu.sqlite")
    assert res.nodes == expected(6)
    assert (res.split_ply, res.units, res.counted_now) == (2, 400, 400)
    assert res.store.endswith("cpu.sqlite") and str(res.nodes) in res.summary()
    assert_counted_once(tmp_path / "cpu.sqlite", 400)
    assert len({r["worker"] for r in rows(tmp_path / "cpu.sqlite")}) == 2  # both workers counted units
    steps = res.timings  # every step of the run timed (issue 33: the fixed costs shown)
    assert {"cluster_start", "calibrate", "split", "store_create", "warm_up", "count", "dispatch", "store"} <= set(steps)
    assert all(v >= 0 for v in steps.values()) and steps["count"] == pytest.approx(res.count_seconds, abs=1e-5)
    assert steps["cluster_start"] > 0 and steps["store"] > 0 and steps["dispatch"] <= steps["count"]
    assert sum(v for k, v in steps.items() if k not in ("dispatch", "store")) <= res.seconds
    # each worker's busy seconds in the count phase, no device kernels on the CPU
    assert set(res.workers) == {r["worker"] for r in rows(tmp_path / "cpu.sqlite")}
    assert all(w["busy"] > 0 and w["kernels"] is None and w["leaf_moves"] is None for w in res.workers.values())
    assert max(w["busy"] for w in res.workers.values()) <= res.count_seconds


def test_workers_report_the_seconds_their_kernels_took(cluster, tmp_path):
    """A GPU run's result gives each worker's busy seconds and its kernels' device seconds in the
    count phase (issue 33: where a part's time goes beyond the kernels); the kernels' share is
    no larger than the busy seconds, and the busy seconds add up to the rows'."""
    store = tmp_path / "k.sqlite"
    res = deep_perft(STARTPOS, 5, split_ply=1, backend="gpu-emulated", tt=True,
                     scheduler=cluster.scheduler_address, store=store)
    assert res.nodes == expected(5)
    assert res.workers and all(0 <= w["kernels"] <= w["busy"] for w in res.workers.values())
    assert all(0 < w["leaf_positions"] < w["leaf_moves"] for w in res.workers.values())  # repeats at ply 3
    assert sum(w["busy"] for w in res.workers.values()) == pytest.approx(sum(r["seconds"] for r in rows(store)), abs=1e-5)
    assert res.as_dict()["workers"] == res.workers


def test_a_task_reports_the_device_seconds_of_its_own_kernels():
    """worker.run_task's kernel_seconds are the driver's kernel seconds during that task alone (not
    the process's total since it started), with tables and without; None on the CPU."""
    import perft_core
    from perft_core.deep import worker
    from perft_core.gpu import get_driver

    fens = [Position.from_fen(STARTPOS).push(m).fen() for m in ("e2e4", "d2d4")]
    k = get_driver("gpu-emulated").k
    for tt in (True, False, True):
        before = k.kernel_seconds
        res = worker.run_task(fens, 4, "gpu-emulated", tt, 1, "run-k", STARTPOS, 5)
        assert res["counts"] == [perft_core.perft(f, 4) for f in fens]
        assert res["kernel_seconds"] == pytest.approx(k.kernel_seconds - before, abs=1e-12)
        assert 0 <= res["kernel_seconds"] <= res["seconds"] and (tt or res["kernel_seconds"] > 0)
    assert worker.run_task(fens, 2, "cpu", False, 1, "run-k", STARTPOS, 3)["kernel_seconds"] is None


def test_tasks_are_cut_to_the_task_time_on_a_new_run_and_on_a_resumed_one(cluster, tmp_path, monkeypatch):
    """With MAX_TASK_SECONDS below one unit's time every task is one unit: on a new run (explicit
    split ply, so the pace comes from a calibration on a worker) and on a resumed one (the pace
    measured on the store's counted rows). Without the bound the 400 units go in 32 tasks."""
    from perft_core.deep import dispatch, worker

    store = tmp_path / "paced.sqlite"
    monkeypatch.setattr(dispatch, "MAX_TASK_SECONDS", 1e-9)
    res = deep_perft(STARTPOS, 4, split_ply=2, scheduler=cluster.scheduler_address, store=store)
    assert res.nodes == expected(4)
    assert len({r["task"] for r in rows(store)}) == 400
    conn = sqlite3.connect(store)
    with conn:  # half the units back to pending, as after a killed client
        conn.execute("UPDATE units SET status = 'pending', count = NULL, seconds = NULL, task = NULL WHERE idx >= 200")
    conn.close()
    # the store's counted rows give the pace: no calibration (it would raise on the worker)
    monkeypatch.setattr(worker, "calibrate", lambda *a: (_ for _ in ()).throw(AssertionError("calibrated")))
    res = deep_perft(resume=store, scheduler=cluster.scheduler_address)
    assert res.nodes == expected(4) and res.counted_now == 200
    assert len({r["task"] for r in rows(store)[200:]}) == 200
    monkeypatch.undo()
    monkeypatch.setattr(dispatch, "MAX_TASK_SECONDS", 1e9)
    res = deep_perft(STARTPOS, 4, split_ply=2, scheduler=cluster.scheduler_address, store=tmp_path / "long.sqlite")
    assert len({r["task"] for r in rows(tmp_path / "long.sqlite")}) == 2 * dispatch.TASKS_PER_WORKER


def test_gpu_emulated_with_tables_and_a_verify_seed_is_exact(cluster, tmp_path):
    res = deep_perft(STARTPOS, 6, backend="gpu-emulated", tt=True, verify_seed=0xBADC0FFEE, verify_sample=0.25,
                     scheduler=cluster.scheduler_address, store=tmp_path / "emu.sqlite")
    assert res.nodes == expected(6)
    assert res.units == 400 and res.verified == 100 and res.mismatches == []  # ceil(0.25 x 400)
    assert f"{res.verified} of 400 units (a 0.25 sample of units by key)" in res.verify and "0xbadc0ffee" in res.verify
    rs = rows(tmp_path / "emu.sqlite")
    assert res.parts == 2 and len(rs) == 800  # one part per worker: the GPU backends with tables
    assert len({r["unit"] for r in rs if r["status"] == "verified"}) == res.verified
    totals: dict = {}
    for r in rs:  # a second seed cuts the parts differently: the unit's totals agree
        if r["status"] == "verified":
            c, v = totals.get(r["unit"], (0, 0))
            totals[r["unit"]] = (c + int(r["count"]), v + int(r["verify_count"]))
    assert totals and all(c == v for c, v in totals.values())
    assert any(r["count"] != r["verify_count"] for r in rs if r["status"] == "verified")
    assert all(r["device"].startswith("emulated GPU") for r in rs)
    assert 0 < res.tt_hits < res.tt_probes == sum(r["probes"] for r in rs)  # warm tables hit across units


def test_a_verify_pass_is_planned_by_its_own_pace_not_the_first_counts(cluster, tmp_path, monkeypatch):
    """A verify pass counts under a second key seed from empty tables (session 35: 3.8x the time the
    first counts' pace gave its perft 13 sample), so it starts as an unmeasured phase (one first task
    a worker under a time limit, then its own pace); resumed, it is planned by the seconds of the
    rows it verified before, not by the first counts'."""
    from perft_core.deep import run as deep_run

    calls = []
    real = deep_run.run_phase

    def spy(client, st, rows, task, on_result, workers, progress, name, parts=1, pace=None, merged=False,
            measured=True, deadline=None, history=()):
        calls.append((name, len(rows), pace, measured, len(history)))
        return real(client, st, rows, task, on_result, workers, progress, name, parts, pace, merged, measured,
                    deadline, history)

    monkeypatch.setattr(deep_run, "run_phase", spy)
    path = tmp_path / "v.sqlite"
    deep_perft(STARTPOS, 5, tt=True, verify_seed=7, verify_sample=0.5, split_ply=1,
               scheduler=cluster.scheduler_address, store=path)
    (count, verify) = [c for c in calls if c[1]]
    assert count[0] == "count" and verify[:2] == ("verify", 10) and verify[3:] == (False, 0)
    with Store.open(path) as st:
        every = st.units()
        again = [r["idx"] for r in every if r["status"] == "verified"][:4]  # these four verified again
        st.conn.execute(f"UPDATE units SET status = 'counted', verify_count = NULL, verify_seconds = NULL "
                        f"WHERE idx IN ({','.join('?' * len(again))})", again)
        st._seal(f"idx IN ({','.join('?' * len(again))})", again)
        done = [r for r in st.units() if r["verify_seconds"]]
    calls.clear()
    res = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert res.nodes == expected(5) and res.mismatches == []
    (verify,) = [c for c in calls if c[1]]
    pace = sum(r["verify_seconds"] for r in done) / sum(max(r["estimate"], 1.0) for r in done)
    assert verify[:2] == ("verify", 4) and verify[2] == pytest.approx(pace) and verify[3:] == (True, 6)


def test_a_verify_mismatch_is_counted_again_without_tables(cluster, tmp_path):
    """A wrong first count (planted in the store, as a poisoned table would make it) disagrees
    with the second seed's count; the unit is counted again without tables, that count is used,
    and the run reports it."""
    path = tmp_path / "mm.sqlite"
    deep_perft(STARTPOS, 5, tt=True, verify_seed=7, verify_sample=0.5, split_ply=1,
               scheduler=cluster.scheduler_address, store=path)
    with Store.open(path) as st:  # written as a count is, with its checksum (an edit without one is recounted)
        (idx, good), = st.conn.execute("SELECT idx, count FROM units WHERE status = 'verified' LIMIT 1").fetchall()
        st.conn.execute("UPDATE units SET count = ?, status = 'counted', verify_count = NULL WHERE idx = ?",
                        (str(int(good) + 1), idx))
        st._seal("idx = ?", (idx,))
    res = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert res.nodes == expected(5)
    assert [(m["rows"], m["count"], m["verify_count"], m["recount"], m["differs"]) for m in res.mismatches] == \
        [([idx], str(int(good) + 1), good, good, ["nodes"])]
    assert "1 differed and were counted again without tables" in res.verify
    assert 0 < res.verified < res.units  # a sample


def test_client_killed_then_resumed_is_exact_and_counts_no_unit_twice(cluster, tmp_path):
    """The client (a subprocess) is killed with SIGKILL after some units are stored; a second
    client resumes the store. Finished units are never counted again (their rows, attempts
    included, are unchanged), unfinished ones are, every unit is written once, the total is exact."""
    path = tmp_path / "killed.sqlite"
    proc = subprocess.Popen([sys.executable, "-P", "-m", "perft_cli", "deep", STARTPOS, "7", "--split-ply", "2",
                             "--scheduler", cluster.scheduler_address, "--store", str(path), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(lambda: counted(path) >= 40 or proc.poll() is not None)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL, "the client finished before it could be killed"
    before = {r["idx"]: r for r in rows(path) if r["count"] is not None}
    assert 40 <= len(before) < 400
    res = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert res.nodes == expected(7)
    assert res.counted_now == 400 - len(before)
    after = {r["idx"]: r for r in rows(path)}
    for idx, r in before.items():
        assert after[idx] == r, f"finished unit {idx} was counted again"
    assert_counted_once(path, 400)
    conn = sqlite3.connect(path)
    sessions = conn.execute("SELECT counted FROM sessions ORDER BY id").fetchall()
    conn.close()
    assert [c for (c,) in sessions] == [len(before), 400 - len(before)]


def test_a_worker_killed_mid_run_is_survived(cluster, tmp_path):
    """One worker process is killed with SIGKILL while units run; Dask reruns its units on the
    other worker (and the nanny's restarted one); the total is exact, no unit counted twice."""
    path = tmp_path / "worker.sqlite"
    client = distributed.Client(cluster.scheduler_address)
    try:
        pids = client.run(os.getpid)
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(res=deep_perft(
            STARTPOS, 7, split_ply=2, scheduler=cluster.scheduler_address, store=path)))
        t.start()
        wait_for(lambda: counted(path) >= 40 or not t.is_alive())
        victim, pid = sorted(pids.items())[0]
        done_at_kill = counted(path)
        os.kill(pid, signal.SIGKILL)
        t.join(600)  # a hang guard: 10 s idle, 46-48 s beside eight busy loops (session 40's audit)
        assert not t.is_alive()
        assert done_at_kill < 400, "the run finished before the worker was killed"
        assert out["res"].nodes == expected(7)
        assert_counted_once(path, 400)
        client.wait_for_workers(2, timeout=300)  # the nanny restarted it; later tests have 2 again
    finally:
        client.close()


# ----- bad stores and options: one line, exit 2, before any cluster starts ------------------------

@pytest.fixture
def small_store(tmp_path):
    path = tmp_path / "small.sqlite"
    pos = Position.from_fen(STARTPOS)
    Store.create(path, {"fen": pos.fen(), "depth": 4, "split_ply": 2, "backend": "cpu", "tt": False,
                        "seed": 1, "verify_seed": None, "verify_sample": None}, split(pos, 4, 2, 1)).close()
    return path


def test_stats_file_reads_one_snapshot_of_a_store_being_written(small_store, monkeypatch):
    """`perft deep --stats FILE` reads a store a run may be writing: its figures come from one
    snapshot. Here a row is counted, and its session's count raised, between its first statement
    and its read of the sessions; read statement by statement, it said 0 rows counted and a
    session that counted 1 (session 43's hunt)."""
    from perft_core.deep import check

    Store.open(small_store).close()  # migrated and sealed as a run leaves it
    writer = sqlite3.connect(small_store, isolation_level=None)
    writer.execute("INSERT INTO sessions (started, host, pid, cluster, counted) VALUES ('t', 'h', 1, 'c', 0)")
    read = Store.read
    written = []

    def write_once(sql: str) -> None:
        if "FROM sessions" in sql and not written:
            written.append(sql)
            with writer:
                writer.execute("UPDATE units SET count = '1', status = 'counted', finishes = 1 WHERE idx = 0")
                writer.execute("UPDATE sessions SET counted = counted + 1")

    def traced(path):
        st = read(path)
        st.conn.set_trace_callback(write_once)
        return st

    monkeypatch.setattr(Store, "read", traced)
    s = check.store_statistics(small_store)
    assert written and s["counted"] == sum(x["counted"] for x in s["sessions"]) == 0
    s = check.store_statistics(small_store)
    assert s["counted"] == sum(x["counted"] for x in s["sessions"]) == 1
    writer.close()


def assert_run_row_sealed(path, edit: str) -> None:
    """The run row changed by hand (the SQL ``edit``) is found: the store is refused as tampered."""
    from perft_core.deep.store import StoreTampered

    conn = sqlite3.connect(path)
    with conn:
        conn.execute(edit)
    conn.close()
    with pytest.raises(StoreTampered):
        Store.open(path)


def one_line_error(capsys, argv, *needles) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perft: error: "), err
    for n in needles:
        assert n in err, err


def test_a_stop_inside_the_stores_checksums_is_an_interrupt_not_an_unreadable_store(tmp_path, monkeypatch,
                                                                                     small_store):
    """Ctrl-C while a store is opened or created lands inside its SQL checksum function, which SQLite
    reports as "user-defined function raised exception": the command said the store was unreadable
    (or could not be created), exit 2, though it was whole (found by session 32's edge hunt). With
    the stop noted by the command's handler it is the interrupt it was."""
    from perft_core import cliargs
    from perft_core.deep import store as store_mod

    def interrupted(*args):
        cliargs.note_stop(2)  # what perft_cli's handler does before it raises
        raise KeyboardInterrupt

    monkeypatch.setattr(store_mod, "row_checksum", interrupted)
    pos = Position.from_fen(STARTPOS)
    try:
        with pytest.raises(KeyboardInterrupt):
            Store.open(small_store)
        with pytest.raises(KeyboardInterrupt):
            Store.create(tmp_path / "new.sqlite", {"fen": pos.fen(), "depth": 4, "split_ply": 2, "backend": "cpu",
                                                   "tt": False, "seed": 1, "verify_seed": None,
                                                   "verify_sample": None}, split(pos, 4, 2, 1))
    finally:
        cliargs.note_stop(0)
    monkeypatch.undo()
    with Store.open(small_store) as st:  # whole
        assert not st.tampered


def test_corrupt_store_is_refused(tmp_path, capsys, small_store):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(os.urandom(4096))
    one_line_error(capsys, ["deep", "--resume", str(junk)], "junk.sqlite")
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    one_line_error(capsys, ["deep", "--resume", str(other)], "not a deep-perft store")
    conn = sqlite3.connect(small_store)
    conn.execute("UPDATE units SET finishes = 2, count = '5', status = 'counted' WHERE idx = 3")
    conn.commit()
    conn.close()
    one_line_error(capsys, ["deep", "--resume", str(small_store)], "corrupt", "1 counted twice")
    one_line_error(capsys, ["deep", "--resume", str(tmp_path / "missing.sqlite")], "does not exist")


def test_store_of_other_options_is_refused(capsys, small_store):
    one_line_error(capsys, ["deep", STARTPOS, "5", "--resume", str(small_store)], "depth=4, not 5")
    one_line_error(capsys, ["deep", "--resume", str(small_store), "--backend", "gpu-emulated"], "backend='cpu'")
    one_line_error(capsys, ["deep", "--resume", str(small_store), "--tt"], "tt=False")
    one_line_error(capsys, ["deep", "--resume", str(small_store), "--split-ply", "3"], "split_ply=2")
    one_line_error(capsys, ["deep", "4k3/8/8/8/8/8/8/4K3 w - - 0 1", "4", "--resume", str(small_store)], "fen=")
    one_line_error(capsys, ["deep", STARTPOS, "4", "--store", str(small_store)], "already exists")


def test_a_second_client_is_refused(small_store):
    """A store held by one client (its flock) is refused to a second client process."""
    with Store.open(small_store):
        proc = subprocess.run([sys.executable, "-P", "-m", "perft_cli", "deep", "--resume", str(small_store)],
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("perft: error: ") and proc.stderr.count("\n") == 1
    assert "in use by another client" in proc.stderr


@pytest.mark.parametrize("extra", [["--max-seconds", "5"], ["--workers", "2"], ["--verify-seed", "7"],
                                   ["--backend", "gpu"], ["--check-sample", "1"]])
def test_stats_file_refuses_what_it_would_ignore(small_store, capsys, extra):
    """`perft deep --stats FILE` only reads: an option of a run (or of --check) given with it is a
    usage error naming it, not ignored, as `--check FILE` does (session 44's review)."""
    one_line_error(capsys, ["deep", "--stats", str(small_store), *extra], f"it takes no {extra[0]}")
    assert main(["deep", "--stats", str(small_store), "--json"]) == 0


def test_bad_options_are_one_line(capsys):
    one_line_error(capsys, ["deep", STARTPOS, "4", "--verify-seed", "7"], "--verify-seed needs --tt")
    one_line_error(capsys, ["deep", STARTPOS, "4", "--gpus", "2"], "gpus= runs the gpu backend")
    one_line_error(capsys, ["deep", STARTPOS, "4", "--backend", "gpu", "--workers", "2"], "one worker per GPU")
    one_line_error(capsys, ["deep", STARTPOS], "FEN and DEPTH")
    one_line_error(capsys, ["deep", STARTPOS, "4", "--split-ply", "5"], "split ply")
    one_line_error(capsys, ["deep", STARTPOS, "4", "--split-ply", "-1"], "the split ply must be a non-negative")
    one_line_error(capsys, ["deep", "not a fen", "4"], "fields")
    one_line_error(capsys, ["deep", STARTPOS, "4", "--workers", "2", "--scheduler", "tcp://x:1"], "not allowed")


def test_a_bad_scheduler_address_or_an_empty_path_names_its_option_and_makes_no_store(capsys, tmp_path, monkeypatch):
    """Checked when the arguments are read: before, `--scheduler garbage` announced a new store (and
    the command to resume it) that was never made, then failed with Dask's "missing port number"
    naming no option, and `--store ''` was reported as "store ." (a helper's hunt, session 29)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    for addr in ("garbage", "tcp://:8786", "tcp://host:port"):
        one_line_error(capsys, ["deep", STARTPOS, "3", "--scheduler", addr], "argument --scheduler",
                       "not a Dask scheduler address")
    for opt in ("--store", "--resume", "--check", "--stats"):
        argv = ["deep", STARTPOS, "3", opt, ""] if opt == "--store" else ["deep", opt, " "]
        one_line_error(capsys, argv, f"argument {opt}", "empty string")
    assert not list(tmp_path.rglob("*")), "a store was made"


@pytest.mark.parametrize("extra", [["--max-seconds", "2"], ["--workers", "2"], ["--tt"], ["--split-ply", "2"],
                                   ["--verify-seed", "7"], ["--force"], ["--stats"]])
def test_check_refuses_the_options_of_a_run(capsys, tmp_path, extra):
    """`perft deep --check FILE` recounts its sample in the client: `--max-seconds 2` ran 30 s and
    every other run option was ignored without a word (found by session 32's edge hunt). Each is
    refused now, named, before the store is read."""
    one_line_error(capsys, ["deep", "--check", str(tmp_path / "absent.sqlite"), *extra], "--check FILE",
                   f"it takes no {extra[0]}")


def test_cli_prints_the_total_time_and_store_last(cluster, tmp_path, capsys):
    path = tmp_path / "cli.sqlite"
    argv = ["deep", STARTPOS, "4", "--split-ply", "1", "--scheduler", cluster.scheduler_address]
    assert main(argv + ["--store", str(path)]) == 0
    got = capsys.readouterr()
    last = got.out.strip().splitlines()[-1]
    assert last.startswith(f"perft 4: {expected(4)} nodes in ") and last.endswith(f" s (store {path})")
    # no terminal: progress as lines on stderr (here the phase's end; a line a minute before it)
    first, second = got.err.splitlines()[:2]  # at once: the split and the store, then progress
    assert first.startswith("perft deep: 20 units at split ply 1, on the scheduler ") and first.endswith(f"; store {path}")
    assert second.startswith(f"perft deep: count 20/20 units (100.0 % of the estimated nodes), "
                              f"{expected(4):,} nodes in ")
    assert main(["deep", "--resume", str(path), "--json", "--scheduler", cluster.scheduler_address]) == 0
    got = capsys.readouterr()
    out = json.loads(got.out)
    assert (out["nodes"], out["units"], out["counted_now"], out["store"]) == (expected(4), 20, 0, str(path))
    assert out["timings"]["cluster_start"] > 0 and out["timings"]["count"] == 0  # nothing was left to count
    assert "perft deep:" not in got.err  # --json: quiet


@pytest.fixture
def count_phase_limit(monkeypatch):
    """A time limit judged in the phases of the count only. The steps before them (a new run's split
    and store, a resumed store's opening, the look before the count's first read of every row) poll
    it too (test_a_limit_passed_before_the_count_...), and would stop a limit of milliseconds first:
    tests of the phases' stops leave those polls out."""
    from perft_core.deep import errors, store

    for module in (errors, store):
        monkeypatch.setattr(module, "past", lambda deadline: False)


def test_max_seconds_stops_before_work_that_cannot_end_in_time_and_the_run_resumes_exact(cluster, tmp_path, capsys,
                                                                                         count_phase_limit):
    """--max-seconds: a limit the cluster's start already spends leaves every unit pending, exit
    status 3, one line that says how far the run is and how to resume (with --json an object with
    "finished": false); the resumed run without a limit is exact and counts each unit once."""
    path = tmp_path / "limited.sqlite"
    argv = ["deep", STARTPOS, "4", "--split-ply", "2", "--scheduler", cluster.scheduler_address, "--store", str(path)]
    assert main(argv + ["--max-seconds", "0.001", "--json"]) == 3
    got = capsys.readouterr()
    out = json.loads(got.out)
    assert out["finished"] is False and (out["rows"], out["counted"], out["counted_now"]) == (400, 0, 0)
    assert out["phase"] == "count" and out["store"] == str(path) and out["done"] == 0
    assert got.err.strip().endswith(f"resume with --resume {path}") and got.err.count("\n") == 1
    assert counted(path) == 0
    assert main(argv[:-2] + ["--max-seconds", "0"]) == 2  # not a positive number of seconds: a usage error
    assert "--max-seconds: expected a positive number of seconds" in capsys.readouterr().err
    assert main(["deep", "--resume", str(path), "--scheduler", cluster.scheduler_address, "--max-seconds", "600"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"perft 4: {expected(4)} nodes in ")
    assert_counted_once(path, 400)


def test_a_run_stopped_in_its_verify_phase_reports_the_verify_seconds(cluster, tmp_path, capsys, count_phase_limit):
    """A run whose count is finished and whose verify pass is stopped by --max-seconds says so
    ("phase": "verify") and reports the seconds that pass took (timings["verify"]), as a finished
    run does; session 29's stopped verify pass reported none."""
    path = tmp_path / "verify.sqlite"
    argv = ["deep", STARTPOS, "3", "--split-ply", "1", "--tt", "--scheduler", cluster.scheduler_address, "--store", str(path)]
    assert main(argv + ["--json"]) == 0
    capsys.readouterr()
    resume = ["deep", "--resume", str(path), "--scheduler", cluster.scheduler_address, "--verify-seed", "0x5EED",
              "--verify-sample", "1", "--json"]
    assert main(resume + ["--max-seconds", "0.001"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["finished"] is False and out["phase"] == "verify" and out["counted"] == out["rows"] == 20
    assert out["timings"]["verify"] >= 0 and out["timings"]["count"] == 0
    # the verify pass's own progress, not the count's (which said "0 by this command" of a verify pass)
    assert (out["phase_rows"], out["phase_done"], out["phase_done_now"]) == (20, 0, 0)
    assert main(resume[:-1] + ["--max-seconds", "0.001"]) == 3
    err = capsys.readouterr().err
    # (the seconds are the command's own wall time: not asserted, a loaded machine may take one or more)
    assert "in the verify phase after " in err and " s: 0 of 20 unit rows of the verify sample counted again " \
           "under the verify seed, 0 by this command (20 of 20 rows have their first count)" in err
    assert main(resume) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == expected(3) and out["verified"] == 20 and out["mismatches"] == []


def test_a_limit_passed_before_the_count_stops_the_split_or_the_opening(cluster, tmp_path, capsys):
    """--max-seconds is polled before the count too (session 43's hunt: Kiwipete perft 6 at split
    ply 4 ran over 75 s past --max-seconds 3; a 57,548-unit store's opening ran 7.8 s past 1). Here
    a split of 5,362 units (about 0.2 s) and its store's opening (as long again) outlast a
    millisecond. A new run stopped in its split: exit 3, one line, no store left. A resumed store
    stopped while it opens: exit 3, unchanged, and it then resumes exact."""
    from perft_core import _core
    from perft_core.deep import run as run_mod
    from perft_core.deep.store import PART_CUT_KEY, PART_DEPTH

    path = tmp_path / "s.sqlite"
    assert main(["deep", STARTPOS, "5", "--split-ply", "3", "--store", str(path), "--max-seconds", "0.001",
                 "--json"]) == 3
    got = capsys.readouterr()
    out = json.loads(got.out)
    assert (out["finished"], out["phase"], out["rows"], out["counted"], out["counted_now"]) == (False, "split", None,
                                                                                              None, 0)
    assert "split" in out["timings"] and "store_create" not in out["timings"]
    assert out["images"] == {"loaded": [], "saved": []}  # the shape of a count phase's stop
    assert got.err.count("\n") == 1 and f"while splitting the run into units: no store was made at {path}" in got.err
    assert list(tmp_path.iterdir()) == []
    pos = Position.from_fen(STARTPOS)
    run_mod._create_store(path, pos, 5, 3, "cpu", False, _core.ZOBRIST_DEFAULT_SEED, None, None, False, 1, PART_DEPTH,
                          PART_CUT_KEY, {}).close()  # the store the run above would have made, nothing counted
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    resume = ["deep", "--resume", str(path), "--scheduler", cluster.scheduler_address]
    assert main(resume + ["--max-seconds", "0.001", "--json"]) == 3
    got = capsys.readouterr()
    out = json.loads(got.out)
    assert (out["phase"], out["rows"], out["counted_now"]) == ("open", None, 0) and "store_open" in out["timings"]
    assert got.err.count("\n") == 1 and "no row or count in it changed" in got.err and got.err.strip().endswith(
        f"resume it with more time (--resume {path})")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert main(resume + ["--max-seconds", "600"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"perft 5: {expected(5)} nodes in ")
    assert_counted_once(path, 5362)


def test_a_limit_spent_before_the_count_stops_without_reading_every_row(cluster, tmp_path, monkeypatch, capsys):
    """A resumed store whose opening spent the limit stops before the count reads its rows, warms
    its workers up or calibrates (an adversarial review, session 44: a 1.37 M-unit store given
    --max-seconds 105 stopped at 172 s, its rows read three times at 15 s each); the stop's line
    takes its figures from SQL. The opening here ignores the limit and then spends it."""
    path = tmp_path / "s.sqlite"
    deep_perft(STARTPOS, 4, split_ply=2, scheduler=cluster.scheduler_address, store=path, max_seconds=600,
               progress=False)
    with sqlite3.connect(path) as conn:  # two rows made pending by hand: their checksums now fail
        conn.execute("UPDATE units SET count = NULL, status = 'pending', finishes = 0 WHERE idx IN (0, 1)")
    Store.open(path).close()  # found tampered and made pending: the store as a stopped run leaves it
    opened, reads = Store.open, []

    def slow_open(p, repair=True, deadline=None):
        st = opened(p, repair)
        time.sleep(0.5)
        monkeypatch.setattr(st, "units", lambda: reads.append(1) or Store.units(st))
        return st

    monkeypatch.setattr(Store, "open", staticmethod(slow_open))
    assert main(["deep", "--resume", str(path), "--scheduler", cluster.scheduler_address, "--max-seconds", "0.3",
                 "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert (out["phase"], out["rows"], out["counted"], out["counted_now"]) == ("count", 400, 398, 0)
    assert out["why"] == "the time limit had passed before the count began"
    assert reads == [] and "warm_up" not in out["timings"] and "calibrate" not in out["timings"]
    monkeypatch.setattr(Store, "open", opened)
    assert deep_perft(resume=path, scheduler=cluster.scheduler_address).nodes == expected(4)


def test_the_steps_before_the_count_poll_the_time_limit(tmp_path):
    """units.split, Store.create and Store.open raise Overdue once their deadline has passed, the
    two stores' files as they were: none left by a creation, an opened store unchanged and
    unlocked."""
    from perft_core.deep.errors import Overdue
    from perft_core.deep.store import PART_CUT_KEY

    pos = Position.from_fen(STARTPOS)
    gone = time.perf_counter() - 1.0
    with pytest.raises(Overdue) as stop:
        split(pos, 5, 3, 1, deadline=gone)
    assert stop.value.step == "split"
    made = split(pos, 5, 3, 1)
    assert split(pos, 5, 3, 1, deadline=time.perf_counter() + 3600) == made
    run = {"fen": pos.fen(), "depth": 5, "split_ply": 3, "backend": "cpu", "tt": False, "seed": 1,
           "verify_seed": None, "verify_sample": None, "part_cut": PART_CUT_KEY}
    with pytest.raises(Overdue) as stop:
        Store.create(tmp_path / "new.sqlite", run, made, deadline=gone)
    assert stop.value.step == "store" and list(tmp_path.iterdir()) == []
    Store.create(tmp_path / "new.sqlite", run, made).close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(Overdue) as stop:
        Store.open(tmp_path / "new.sqlite", deadline=gone)
    assert stop.value.step == "open" and {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    with Store.open(tmp_path / "new.sqlite", deadline=time.perf_counter() + 3600) as st:
        assert len(st.units()) == len(made) and st.tampered == []


def test_progress_lines_say_units_nodes_rate_and_eta(monkeypatch, capsys):
    from perft_core import watch
    from perft_core.deep import dispatch

    clock = [0.0]
    monkeypatch.setattr(dispatch, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    progress = dispatch.Progress("lines")
    rows = [{"estimate": 3e9}, {"estimate": 1e9}, {"estimate": 1e9}]
    progress.phase("count", rows)
    clock[0] = 30.0
    progress.advance(None, rows[:1], 2_000_000_000)  # 30 s after the start: under a minute, no line
    assert capsys.readouterr().err == ""
    clock[0] = 90.0
    progress.advance(None, rows[1:2], 1_000_000_000)  # 80 % of the estimated nodes in 90 s: 22 s left
    assert capsys.readouterr().err == ("perft deep: count 2/3 units (80.0 % of the estimated nodes), 3,000,000,000 "
                                       "nodes in 1 min 30 s, 33 M nodes/s, ETA 22 s\n")
    clock[0] = 100.0
    progress.advance(None, rows[2:], 1_000_000_000)  # the phase's end: always a line, no ETA
    assert capsys.readouterr().err.endswith("4,000,000,000 nodes in 1 min 40 s, 40 M nodes/s\n")
    assert watch.duration(3 * 3600 + 5 * 60 + 2) == "3 h 05 min"
    # units in parts: a row a part, so the lines count unit rows (they said "units" of 1,600 rows)
    progress.phase("verify", [{"estimate": 1e9, "part": p} for p in (0, 1)])
    progress.advance(None, [{"estimate": 1e9, "part": 0}, {"estimate": 1e9, "part": 1}], 10)
    assert "perft deep: verify 2/2 unit rows (100.0 % of the estimated nodes)" in capsys.readouterr().err


def test_a_key_collision_stops_the_run_before_any_store(cluster, tmp_path, capsys, monkeypatch):
    real = units.host_keys

    def colliding(boards, us, ci, z):
        keys = real(boards, us, ci, z)
        keys[:, 0] %= np.uint64(5)
        keys[:, 1] = 0
        return keys

    monkeypatch.setattr(units, "host_keys", colliding)
    path = tmp_path / "never.sqlite"
    one_line_error(capsys, ["deep", STARTPOS, "4", "--split-ply", "2", "--scheduler", cluster.scheduler_address,
                            "--store", str(path)], "shared by two different positions")
    assert not path.exists()


@pytest.mark.gpu
def test_gpus_one_worker_per_gpu_is_exact(tmp_path):
    """On a CUDA runner with dask-cuda ([dist-gpu]): LocalCUDACluster, warm tables, verify seed."""
    pytest.importorskip("dask_cuda", reason="dask-cuda is not installed (pip install 'perft-oracle[dist-gpu]')")
    res = deep_perft(STARTPOS, 8, backend="gpu", tt=True, gpus=1, split_ply=2, verify_seed=99,
                     store=tmp_path / "gpu.sqlite")
    assert res.nodes == expected(8) and res.verified == res.units == 400 and not res.mismatches
    assert all(r["device"] != "unknown" for r in rows(tmp_path / "gpu.sqlite"))


def test_a_store_that_cannot_be_made_starts_no_local_cluster(monkeypatch, tmp_path):
    """A new run with its split given on a local cluster makes its store before the cluster starts:
    a store that cannot be made (a full disk) is its error alone, with no cluster started and torn
    down under it (Dask's teardown of a cluster that had just started printed asyncio lines after
    the error once, under load: NOTES.md session 17). Without the split the cluster must come first
    (a worker measures the speed that chooses it), and so it must on a scheduler (its workers,
    which choose the parts, are known only there)."""
    from contextlib import contextmanager

    from perft_core.deep import cluster, run as run_mod
    from perft_core.deep.store import StoreWriteError

    order = []

    def refuse(*args, **kwargs):
        order.append("store")
        raise StoreWriteError("cannot create store: disk full")

    @contextmanager
    def client(*args):
        order.append("cluster")
        raise run_mod.DeepError("no cluster here")
        yield  # pragma: no cover

    monkeypatch.setattr(run_mod.Store, "create", refuse)
    monkeypatch.setattr(cluster, "dask_client", client)
    for kw, first in ((dict(split_ply=2, workers=2), "store"), (dict(split_ply=2), "store"),
                      (dict(split_ply=2, backend="gpu-emulated", tt=True, workers=3), "store"),
                      (dict(), "cluster"), (dict(split_ply=2, scheduler="tcp://127.0.0.1:1"), "cluster")):
        order.clear()
        with pytest.raises((StoreWriteError, run_mod.DeepError)):
            deep_perft(STARTPOS, 4, store=tmp_path / f"s{len(kw)}-{first}.sqlite", **kw)
        assert order == [first], (kw, order)


def test_a_local_cluster_larger_than_the_cores_can_use_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """``--workers 100000`` ran ten minutes at 1.6 GB starting a LocalCluster, with no worker up and
    deaf to SIGTERM (session 43's hunt). More than LOCAL_WORKERS_PER_CORE a core is one error line,
    exit 2, before a store or a cluster; the bound itself is taken."""
    from perft_core import limits
    from perft_core.deep import cluster

    monkeypatch.setattr(cluster, "dask_client", lambda *a: pytest.fail("a cluster was started"))
    most = limits.max_local_workers()
    with pytest.raises(limits.LimitError, match=f"workers must be at most {most} .*got {most + 1}"):
        deep_perft(STARTPOS, 3, store=tmp_path / "s.sqlite", workers=most + 1)
    assert not (tmp_path / "s.sqlite").exists()
    assert main(["deep", "startpos", "3", "--workers", "100000", "--store", str(tmp_path / "t.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perft: error: workers must be at most") and "Traceback" not in err
    monkeypatch.setattr(limits, "max_local_workers", lambda: 1)
    with pytest.raises(limits.LimitError):
        deep_perft(STARTPOS, 3, store=tmp_path / "u.sqlite", workers=2)


def test_a_run_over_the_day_is_refused_unless_forced(tmp_path, monkeypatch, capsys):
    """A new run estimated over the limit is refused before any store is made, with or without
    --max-seconds, and says the speed its estimate used; --force lets it start (here it reaches the
    store, made to fail). Session 22: perft 13 on one GPU was refused as "about 1.2 days at 10 G
    nodes/s" (it takes about 3 h on an H200) without naming that speed the gpu backend's floor."""
    from perft_core.deep import run as run_mod
    from perft_core.deep.store import StoreWriteError
    from perft_core.errors import CountRefused

    def refuse(*args, **kwargs):
        raise StoreWriteError("cannot create store: disk full")

    monkeypatch.setattr(run_mod.Store, "create", refuse)
    kw = dict(backend="cpu", workers=1, split_ply=2, max_estimate_seconds=60)
    for extra in (dict(), dict(max_seconds=30)):
        with pytest.raises(CountRefused, match=r"perft deep 12: .*speed from (the CPU speed measured here|"
                           r"the cpu backend's floor of 50 M nodes/s a worker)\): over the limit of 1 min 00 s"):
            deep_perft(STARTPOS, 12, store=tmp_path / "a.sqlite", **kw, **extra)
        assert not (tmp_path / "a.sqlite").exists()
    with pytest.raises(StoreWriteError):
        deep_perft(STARTPOS, 12, store=tmp_path / "b.sqlite", **kw, force=True)
    # a GPU run's estimate is the backend's floor (the client may have no GPU to measure), and says so
    with pytest.raises(CountRefused, match=r"at 10 G nodes/s \(1 gpu worker, tt at best; speed from the gpu "
                       r"backend's floor of 10 G nodes/s a worker\)"):
        run_mod.check_estimate(Position.from_fen(STARTPOS), 13, "gpu", True, 1)


def test_a_missing_dask_is_said_before_any_store_is_made(monkeypatch, tmp_path):
    """Dask (or, for --gpus, dask-cuda) not installed: the run says which extra to install, and
    leaves no store behind (a store made first would have to be resumed, not created again)."""
    from perft_core.deep import run as run_mod

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ImportError
    for kw in (dict(split_ply=2), dict()):
        path = tmp_path / f"nodask{len(kw)}.sqlite"
        with pytest.raises(run_mod.DeepError, match=r"needs Dask: pip install 'perft-oracle\[dist\]'"):
            deep_perft(STARTPOS, 4, store=path, **kw)
        assert not path.exists()
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    path = tmp_path / "nocuda.sqlite"
    with pytest.raises(run_mod.DeepError, match=r"--gpus needs dask-cuda"):
        deep_perft(STARTPOS, 4, backend="gpu", gpus=2, split_ply=2, force=True, store=path)
    assert not path.exists()


def test_a_cluster_without_workers_is_an_error_not_a_hang(monkeypatch, tmp_path):
    """A scheduler whose workers never come up (say they cannot import perft_core): the run says so
    after WORKER_START_SECONDS instead of waiting for ever; nothing is stored."""
    from perft_core.deep import cluster, run as run_mod

    monkeypatch.setattr(cluster, "WORKER_START_SECONDS", 1.0)
    from perft_core.deep.cluster import NO_DASHBOARD

    with distributed.LocalCluster(n_workers=0, processes=False, **NO_DASHBOARD) as empty:
        t = time.monotonic()
        with pytest.raises(run_mod.DeepError, match="no Dask worker"):
            deep_perft(STARTPOS, 4, scheduler=empty.scheduler_address, store=tmp_path / "none.sqlite")
        assert time.monotonic() - t < 30


def test_parts_survive_a_killed_worker(cluster, tmp_path):
    """gpu-emulated with tables on two workers: every unit in two parts, each part's tasks placed on
    its worker. One worker is killed mid-run: its part's tasks go to the other worker (whose tables
    reset for that part) or to the restarted one; the total is exact, every row counted once."""
    path = tmp_path / "parts.sqlite"
    client = distributed.Client(cluster.scheduler_address)
    try:
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(res=deep_perft(
            STARTPOS, 7, backend="gpu-emulated", tt=True, split_ply=3, scheduler=cluster.scheduler_address,
            store=path)))
        t.start()
        wait_for(lambda: counted(path) >= 300 or not t.is_alive(), 120)
        done_at_kill = counted(path)
        os.kill(sorted(pids.items())[1][1], signal.SIGKILL)
        t.join(300)
        assert not t.is_alive()
        assert done_at_kill < 2 * 5362, "the run finished before the worker was killed"
        res = out["res"]
        assert res.nodes == expected(7) and res.parts == 2 and res.units == 5362
        assert_counted_once(path, 2 * 5362)
        rs = rows(path)
        assert {r["part"] for r in rs} == {0, 1} and len({r["task"] for r in rs}) > 2
        client.wait_for_workers(2, timeout=60)
    finally:
        client.close()


def _cpw_detail(fen_prefix: str, depth: int) -> dict:
    """The Chess Programming Wiki's published columns of one row of the bundled detail table."""
    from oracle.stats import published_rows

    (row,) = [r for r in published_rows("cpw") if r["fen"].startswith(fen_prefix) and r["depth"] == depth]
    return row["columns"]


KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


@pytest.mark.parametrize("fen,depth,split_ply,backend,tt", [(STARTPOS, 5, 3, "cpu", False),
                                                           (KIWIPETE, 4, 2, "cpu", False),
                                                           (KIWIPETE, 3, 1, "gpu-emulated", False),
                                                           (STARTPOS, 5, 2, "gpu-emulated", True),
                                                           (KIWIPETE, 4, 1, "cpu", True)])
def test_a_statistics_run_adds_its_units_counters_times_their_paths_to_the_published_row(cluster, tmp_path, fen,
                                                                                       depth, split_ply, backend, tt):
    """perft deep with stats: every unit's 13 counters kept in the store, the total their sum times
    each unit's multiplicity (startpos split at ply 3 merges transpositions: multiplicities up to
    several), equal to the CPW detail row in every published column and to one plain statistics
    count; each row's counters are under its checksum (one changed by hand is found and counted
    again on resume)."""
    import perft_core

    store = tmp_path / "stats.sqlite"
    res = deep_perft(fen, depth, split_ply=split_ply, scheduler=cluster.scheduler_address, store=store, stats=True,
                     backend=backend, tt=tt)
    assert res.parts == (2 if tt and backend != "cpu" else 1)  # GPU tables: in parts, one per worker, as a plain run
    published = _cpw_detail(fen[:20], depth)
    assert {k: v for k, v in res.stats.cpw().items() if k in published} == published
    assert res.stats == perft_core.perft_stats(fen, depth) and res.nodes == res.stats.nodes
    rs = rows(store)
    assert all(r["stats"] and r["stats"].split(",")[0] == r["count"] for r in rs)
    assert all(r["device"].startswith("emulated GPU") == (backend == "gpu-emulated") for r in rs)
    if split_ply == 3:
        assert max(int(r["multiplicity"]) for r in rs) > 1
    out = res.as_dict()
    assert out["stats"]["cpw"] == res.stats.cpw() and out["stats"]["nodes"] == res.nodes
    json.dumps(out)
    # one unit's captures changed by hand (its count left alone): its checksum fails, it is counted again
    conn = sqlite3.connect(store)
    with conn:
        first = conn.execute("SELECT idx, stats FROM units ORDER BY idx LIMIT 1").fetchone()
        values = first[1].split(",")
        values[1] = str(int(values[1]) + 1)
        conn.execute("UPDATE units SET stats = ? WHERE idx = ?", (",".join(values), first[0]))
    conn.close()
    again = deep_perft(resume=store, scheduler=cluster.scheduler_address)
    assert again.stats == res.stats and again.counted_now >= 1 and [r["idx"] for r in again.tampered] == [first[0]]


def test_statistics_are_part_of_a_run_s_identity(cluster, tmp_path, small_store, capsys):
    """A plain store resumed with stats, or stats with a verify seed, is refused with one line; the
    CLI counts statistics with tables on the cpu backend; a statistics store's run row seals its flag
    (a store edited into a plain run fails its checksum)."""
    with pytest.raises(StoreError, match="stats=False, not True"):
        deep_perft(resume=small_store, scheduler=cluster.scheduler_address, stats=True)
    assert main(["deep", STARTPOS, "3", "--tt", "--stats", "--scheduler", cluster.scheduler_address,
                 "--store", str(tmp_path / "y.sqlite"), "--json"]) == 0
    cpw, published = json.loads(capsys.readouterr().out)["stats"]["cpw"], _cpw_detail("rnbqkbnr/pppppppp", 3)
    assert {k: v for k, v in cpw.items() if k in published} == published
    with pytest.raises(ValueError, match="verify seed needs tt"):
        deep_perft(STARTPOS, 3, backend="gpu-emulated", stats=True, verify_seed=5,
                   scheduler=cluster.scheduler_address, store=tmp_path / "z.sqlite")
    store = tmp_path / "s.sqlite"
    deep_perft(STARTPOS, 3, split_ply=1, scheduler=cluster.scheduler_address, store=store, stats=True)
    assert_run_row_sealed(store, "UPDATE run SET stats = 0")


def test_cli_counts_statistics_with_stats_after_the_run_and_still_reads_a_store_with_stats_file(cluster, tmp_path,
                                                                                            capsys):
    path = tmp_path / "cli-stats.sqlite"
    argv = ["deep", STARTPOS, "4", "--split-ply", "2", "--scheduler", cluster.scheduler_address, "--store", str(path)]
    assert main(argv + ["--stats", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    published = _cpw_detail("rnbqkbnr/pppppppp", 4)
    assert {k: v for k, v in out["stats"]["cpw"].items() if k in published} == published
    assert main(["deep", "--resume", str(path), "--scheduler", cluster.scheduler_address, "--stats"]) == 0
    text = capsys.readouterr().out
    assert "Captures" in text and "Checkmates" in text and f"{published['captures']:,}" in text
    assert main(["deep", "--stats", str(path)]) == 0  # a store's table statistics, as before
    assert f"store {path}: perft 4 of" in capsys.readouterr().out
    # the run row changed by hand (depth 4 -> 9): --stats reads without checking, but says so and exits 1
    # (it printed "perft 9" with no word and exit 0: a helper's hunt, session 35)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE run SET depth = 9")
    conn.close()
    assert main(["deep", "--stats", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["run_row_holds"] is False
    assert "its run row (FEN, depth, options) fails its checksum" in captured.err


def test_a_multiplicity_changed_with_its_checksum_made_again_is_found_and_counted_again(cluster, tmp_path):
    """The checksum rule is public, so a row can be changed and resealed; a recount of the row's own
    FEN cannot find a changed multiplicity (a helper's hunt, session 29: `--check --check-sample 1`
    passed such a store and the resumed total was 4,892,835 for perft 5's 4,865,609). Its plan fields
    are compared with the run's split: `--check` names the row, a resume counts it again, exact."""
    from perft_core.deep.check import check_store

    path = tmp_path / "m.sqlite"
    deep_perft(STARTPOS, 4, split_ply=2, scheduler=cluster.scheduler_address, store=path)
    with Store.open(path) as st:
        st.conn.execute("UPDATE units SET multiplicity = '2' WHERE idx = 5")
        st._seal("idx = ?", (5,))
        st.conn.commit()
    found = check_store(path, sample=1)
    assert not found.ok and [(r["idx"], r["why"]) for r in found.tampered] == [(5, "plan")] and found.differ == []
    assert "0 fail their checksum, 1 found changed otherwise" in found.lines()[0]
    assert "the row has plan fields (unit, key, FEN, depth, multiplicity) that are not the run's split" \
        in found.lines()[1]
    res = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert res.nodes == expected(4) and [r["idx"] for r in res.tampered] == [5]
    assert check_store(path, sample=1).ok


def test_check_recounts_a_statistics_run_counter_by_counter(cluster, tmp_path):
    """`perft deep --check` on a statistics run compares the 13 counters of each recounted unit, not
    only its nodes: a checks counter changed with its checksum made again keeps the node count, so
    a nodes-only recount passed it."""
    from perft_core.deep.check import check_store

    path = tmp_path / "s.sqlite"
    deep_perft(STARTPOS, 3, split_ply=1, scheduler=cluster.scheduler_address, store=path, stats=True)
    assert check_store(path, sample=1).ok
    with Store.open(path) as st:
        old = st.conn.execute("SELECT stats FROM units WHERE idx = 3").fetchone()[0].split(",")
        old[5] = str(int(old[5]) + 1)  # direct checks
        st.conn.execute("UPDATE units SET stats = ? WHERE idx = 3", (",".join(old),))
        st._seal("idx = ?", (3,))
        st.conn.commit()
    found = check_store(path, sample=1)
    assert found.tampered == [] and [d["unit"] for d in found.differ] == [3]


def test_statistics_split_at_the_depth_are_refused_not_summed_without_their_last_move(tmp_path, capsys):
    """Units split at the count's depth are single positions (perft 0): the capture, check or mate of
    the move into each was lost, so startpos perft 3 with --split-ply 3 printed 8,902 nodes and 0
    captures (34) and 0 checks (12) (a helper's hunt, session 29). Refused before any work."""
    path = tmp_path / "s.sqlite"
    argv = ["deep", STARTPOS, "3", "--split-ply", "3", "--stats", "--backend", "cpu", "--store", str(path)]
    assert main(argv) == 2
    assert "statistics need units of at least one ply" in capsys.readouterr().err and not path.exists()
    with pytest.raises(ValueError, match="split ply 1 must be below the depth 1"):
        deep_perft(STARTPOS, 1, split_ply=1, stats=True, store=tmp_path / "t.sqlite")


def test_older_stores_open_and_a_schema_5_run_row_changed_by_hand_is_not_resealed(tmp_path, small_store):
    """The committed schema-4 store of session 14's perft 13 opens (migrated: statistics columns
    added, its 20 counted rows proven); a schema-5 store (as this version wrote until schema 6)
    opens with every row proven, and the same store with its depth changed by hand is refused
    before the migration could seal the change."""
    import shutil
    from pathlib import Path

    from perft_core.deep.store import SCHEMA, StoreTampered

    src = Path(__file__).resolve().parents[1] / "ci" / "stores" / "perft13-h200x4-s14.sqlite"
    old = tmp_path / "s14.sqlite"
    shutil.copy(src, old)
    with Store.open(old) as st:
        assert st.run["schema"] == SCHEMA and not st.run["stats"] and not st.tampered
        assert sum(r["count"] is not None for r in st.checked_rows()) == 20
        assert st.run["part_depth"] == 3  # before schema 7 every run split its parts at 3
        assert st.run["part_cut"] == "key"  # before schema 9 every run cut its parts by key
    # Session 17's perft 13 (schema 7 then, a verify seed added on resume; schema 8 since its
    # session-18 calls): every counted row proven, as many as the file holds.
    seven = tmp_path / "s17.sqlite"
    shutil.copy(src.with_name("perft13-h200x4-s17.sqlite"), seven)
    con = sqlite3.connect(seven)
    counted = con.execute("SELECT count(*) FROM units WHERE count IS NOT NULL").fetchone()[0]
    con.close()
    with Store.open(seven) as st:
        assert st.run["schema"] == SCHEMA and st.run["verify_seed"] == 0x5EED2026 and not st.tampered
        assert sum(r["count"] is not None for r in st.checked_rows()) == counted >= 309
        assert st.run["part_depth"] == 3 and st.run["part_cut"] == "key"
    six = tmp_path / "s16.sqlite"  # schema 6 (session 16's perft 12 statistics on two GPUs)
    shutil.copy(src.with_name("perft12-stats-h200x2-s16.sqlite"), six)
    with Store.open(six) as st:
        assert st.run["schema"] == SCHEMA and st.run["stats"] and st.run["part_depth"] == 3 and not st.tampered
        assert sum(r["count"] is not None for r in st.checked_rows()) > 0
        # a statistics run takes a verify pass too (schema 8): session 21 added this one on resume
        assert (st.run["verify_seed"], st.run["verify_sample"]) == (0x5EED2026, 0.05)
        with pytest.raises(StoreError, match="verify_seed=0x5eed2026 already"):
            st.add_verification(0x5EED, 0.1)
    with Store.open(six) as st:
        assert (st.run["verify_seed"], st.run["verify_sample"]) == (0x5EED2026, 0.05) and not st.tampered
    for name, change in (("five.sqlite", None), ("changed.sqlite", "UPDATE run SET depth = 5")):
        path = tmp_path / name
        shutil.copy(small_store, path)
        conn = sqlite3.connect(path)
        with conn:  # back to schema 5: no statistics columns, no split depth
            conn.execute("ALTER TABLE run DROP COLUMN stats")
            conn.execute("ALTER TABLE run DROP COLUMN part_depth")
            conn.execute("ALTER TABLE units DROP COLUMN stats")
            conn.execute("UPDATE run SET schema = 5")
            if change:
                conn.execute(change)
        conn.close()
        if change:
            with pytest.raises(StoreTampered):
                Store.open(path)
        else:
            with Store.open(path) as st:
                assert st.run["schema"] == SCHEMA and not st.tampered and len(st.checked_rows()) == 400


def test_a_statistics_task_with_tt_counts_through_statistics_tables_kept_across_the_run_s_units():
    """worker.run_task(stats=True, tt=True) counts each unit through the driver's statistics tables,
    kept warm across the tasks of one run as a plain run's are: a unit whose positions at remaining
    depth 3 another unit stored (1. Nf3 Nf6 and 1. Nc3 Nc6 meet after 2. Nc3 Nc6 / 2. Nf3 Nf6) hits
    them when it follows that unit in the run (a unit without castling rights between them), and not
    under another run's key; every count equals
    the statistics counted without tables."""
    import perft_core
    from perft_core.deep import worker

    a, b = (Position.from_fen(STARTPOS).push(m1).push(m2).fen() for m1, m2 in (("g1f3", "g8f6"), ("b1c3", "b8c6")))
    want = {f: list(perft_core.perft_stats(f, 5).as_tuple()) for f in (a, b)}

    def task(fens, run_key):
        res = worker.run_task(fens, 5, "gpu-emulated", True, 1, run_key, STARTPOS, 7, stats=True)
        assert res["stats"] == [want[f] for f in fens] and res["counts"] == [s[0] for s in res["stats"]]
        return res["tables"]["by_depth"][3]["hits"]

    assert task([a], "run-1") == 0  # nothing stored before it
    assert task([b], "run-1") > 0  # what the first unit stored
    # A unit that lost its castling rights counts under the run's castling geometry: the tables stay
    # (under its own geometry they would be planned afresh, and the next unit would find them empty).
    kings = Position.from_fen(STARTPOS).push("e2e4").push("e7e5").push("e1e2").push("e8e7").fen()
    want[kings] = list(perft_core.perft_stats(kings, 5).as_tuple())
    task([kings], "run-1")
    d = Position.from_fen(STARTPOS).push("b1c3").push("g8f6").fen()  # meets both after 2. Nf3 Nc6
    want[d] = list(perft_core.perft_stats(d, 5).as_tuple())
    assert task([d], "run-1") > 0
    assert task([b], "run-2") == 0  # another run: tables afresh


def _has_module(name: str) -> bool:
    return name in sys.modules


def test_local_workers_are_forked_unless_the_client_loaded_cuda_or_the_environment_says(monkeypatch, tmp_path):
    """A local cluster forks its workers (a spawned one imports Dask and perft_core again: 2.3 s of a
    one-GPU perft 11 on an H200), unless this process initialised the CUDA driver (a forked child of
    a CUDA process cannot use CUDA) or PERFT_WORKER_START says otherwise. A module only this process
    has is seen by a forked worker, not by a spawned one."""
    from perft_core.deep import cluster as cluster_mod

    sentinel = "perft_test_only_in_the_client"
    monkeypatch.setitem(sys.modules, sentinel, types.ModuleType(sentinel))
    monkeypatch.delenv(cluster_mod.START_METHOD_ENV, raising=False)
    clean = tmp_path / "fd"
    clean.mkdir()
    (clean / "3").symlink_to("/usr/lib/x86_64-linux-gnu/libcuda.so.1")  # the library loaded, not initialised
    (clean / "4").symlink_to("/dev/null")
    monkeypatch.setattr(cluster_mod, "PROC_FD", str(clean))
    assert cluster_mod.worker_start_method() == ("fork" if sys.platform.startswith("linux") else "spawn")
    for forced in ("spawn", None):
        if forced:
            monkeypatch.setenv(cluster_mod.START_METHOD_ENV, forced)
        else:
            monkeypatch.delenv(cluster_mod.START_METHOD_ENV)
        with cluster_mod.dask_client("cpu", 1, None, None) as (client, desc):
            seen = client.submit(_has_module, sentinel, pure=False).result()
        assert seen == (forced is None and sys.platform.startswith("linux"))
        assert desc.endswith("(forked)" if seen else "(spawned)")
    (clean / "5").symlink_to("/dev/nvidiactl")  # what cuInit opens
    assert cluster_mod.worker_start_method() == "spawn"
    monkeypatch.setattr(cluster_mod, "PROC_FD", str(tmp_path / "absent"))
    assert cluster_mod.worker_start_method() == "spawn"
    monkeypatch.setenv(cluster_mod.START_METHOD_ENV, "fork")
    assert cluster_mod.worker_start_method() == "fork"
    monkeypatch.setenv(cluster_mod.START_METHOD_ENV, "threads")
    with pytest.raises(ValueError, match="PERFT_WORKER_START='threads'"):
        cluster_mod.worker_start_method()


SIGNAL_AT_START = """
import os, signal, sys
import distributed
from perft_core import cliargs
from perft_core.deep import cluster

closed = []

class Starting:  # a cluster whose start meets the signal
    def __init__(self, **kw):
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))

    def close(self):
        closed.append(True)

distributed.LocalCluster = Starting
handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
try:
    with cluster.dask_client("cpu", 1, None, None) as (client, desc):
        print("the run went on")
except KeyboardInterrupt:
    print("stopped", closed, cliargs.stop_requested(), {s: signal.getsignal(s) for s in handlers} == handlers)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_while_forked_workers_start_stops_the_run(sig, tmp_path):
    """Ctrl-C or a group's SIGTERM while the local cluster forks its workers: the client ignored
    both then (so that the workers would), and the run counted to the end and exited 0 (found by
    session 32's edge hunt). Now the client notes it with a handler the forked workers inherit and
    do nothing with, closes the cluster and stops before any work. In a process of its own, as
    the command's."""
    import perft_core

    root = os.path.dirname(os.path.dirname(os.path.abspath(perft_core.__file__)))  # the perft_core under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
           "PERFT_WORKER_START": "fork"}
    p = subprocess.run([sys.executable, "-P", "-c", SIGNAL_AT_START, sig], capture_output=True, text=True, timeout=120,
                       env=env, cwd=tmp_path)  # -P and elsewhere: not the checkout's unbuilt perft_core (CI)
    assert p.stdout.strip() == "stopped [True] True True", (p.stdout, p.stderr[-2000:])


def _distributed_log_level(set_to: int | None = None) -> int:
    import logging

    if set_to is not None:
        logging.getLogger("distributed").setLevel(set_to)
    return logging.getLogger("distributed").getEffectiveLevel()


def test_a_finished_run_silences_its_workers_before_the_cluster_closes(monkeypatch):
    """A worker whose heartbeat meets the closing scheduler logs an ERROR with a traceback (seen
    after a finished `perft deep --gpus 4` on 4x H200, NOTES.md session 32): the workers' Dask
    logs are silenced before the cluster of a finished run closes, as for a stopped one."""
    import logging

    from perft_core.deep import cluster as cluster_mod

    seen = []
    real = cluster_mod._quiet

    def quiet(client):
        real(client)
        seen.append(client.run(_distributed_log_level))

    monkeypatch.setattr(cluster_mod, "_quiet", quiet)
    with cluster_mod.dask_client("cpu", 1, None, None) as (client, desc):
        before = client.run(_distributed_log_level, logging.INFO)  # a worker that would log (forked workers
    assert before and all(v == logging.INFO for v in before.values())  # inherit this process's level)
    assert len(seen) == 1 and all(v > logging.CRITICAL for v in seen[0].values())


def test_a_verify_pass_is_added_to_a_run_made_without_one(cluster, tmp_path, capsys):
    """`perft deep --resume FILE --verify-seed S --verify-sample F` on a run with tables made
    without a verify seed: the units of the sample are counted again under S, the total stays
    exact, and the store holds its new options under every checksum (reopened: nothing tampered).
    A row changed by hand before stays found and is counted again. Another seed afterwards, a run
    without tables, and the run's own key seed are refused."""
    from perft_core.deep.store import StoreError

    store = tmp_path / "v.sqlite"
    first = deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=2, scheduler=cluster.scheduler_address,
                       store=store)
    assert first.nodes == expected(5) and first.verified == 0
    conn = sqlite3.connect(store)
    with conn:
        idx, count = conn.execute("SELECT idx, count FROM units ORDER BY idx LIMIT 1").fetchone()
        conn.execute("UPDATE units SET count = ? WHERE idx = ?", (str(int(count) + 1), idx))
    conn.close()
    assert main(["deep", "--resume", str(store), "--scheduler", cluster.scheduler_address, "--verify-seed", "99",
                 "--verify-sample", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == expected(5) and 0 < out["verified"] < out["units"] and not out["mismatches"]
    assert [r["idx"] for r in out["tampered"]] == [idx]
    with Store.open(store) as st:
        assert (st.run["verify_seed"], st.run["verify_sample"]) == (99, 0.5) and not st.tampered
        assert sum(r["verify_count"] is not None for r in st.units()) == out["verified"] * st.run["parts"]
    with pytest.raises(StoreError, match="verify_seed=99, not 7"):
        deep_perft(resume=store, scheduler=cluster.scheduler_address, verify_seed=7)
    plain, tables = tmp_path / "plain.sqlite", tmp_path / "tables.sqlite"
    deep_perft(STARTPOS, 3, split_ply=1, scheduler=cluster.scheduler_address, store=plain)
    deep_perft(STARTPOS, 3, split_ply=1, backend="gpu-emulated", tt=True, scheduler=cluster.scheduler_address,
               store=tables)
    with Store.open(plain) as st, pytest.raises(StoreError, match="without tables"):
        st.add_verification(99, 1.0)
    with Store.open(tables) as st:
        with pytest.raises(StoreError, match="differ from the run's key seed"):
            st.add_verification(st.run["seed"], 1.0)
        with pytest.raises(ValueError, match="fraction"):
            st.add_verification(99, 0)
        assert st.run["verify_seed"] is None
    # a row changed by hand in a store opened without repair keeps failing under the new options
    conn = sqlite3.connect(tables)
    with conn:
        conn.execute("UPDATE units SET count = count || '0' WHERE idx = 1")
    conn.close()
    with Store.open(tables, repair=False) as st:
        assert [r["idx"] for r in st.tampered] == [1]
        st.add_verification(99, 1.0)
    with Store.open(tables, repair=False) as st:
        assert st.run["verify_seed"] == 99 and [r["idx"] for r in st.tampered] == [1]


def test_a_refused_resume_does_not_add_its_verify_pass(cluster, tmp_path):
    """`--resume FILE --verify-seed S` refused for another option (parts, backend, workers on the
    gpu backend) leaves the store as it was: no verify seed written, so the command the user meant
    (another seed or sample) is still accepted. On the old code the seed was written, and resealed
    into every row, before the other options were checked."""
    from perft_core.deep.store import StoreError

    store = tmp_path / "r.sqlite"
    deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=2, parts=2,
               scheduler=cluster.scheduler_address, store=store)
    before = rows(store)
    at = dict(scheduler=cluster.scheduler_address)
    refused = [(StoreError, "not 3", dict(parts=3, **at)),
               (StoreError, "backend='gpu-emulated', not 'cpu'", dict(backend="cpu", **at)),
               (ValueError, "gpus= runs the gpu backend", dict(gpus=1))]  # refused before any cluster starts
    for error, match, options in refused:
        with pytest.raises(error, match=match):
            deep_perft(resume=store, verify_seed=5, verify_sample=0.01, **options)
        with Store.open(store, repair=False) as st:
            assert (st.run["verify_seed"], st.run["verify_sample"]) == (None, None) and not st.tampered
        assert rows(store) == before
    done = deep_perft(resume=store, scheduler=cluster.scheduler_address, verify_seed=6, verify_sample=0.5)
    assert done.nodes == expected(5) and done.verified > 0 and not done.mismatches


@pytest.mark.parametrize("text", [None, "1,2,x", "0,0,0,0,0,0,0,0,0,0,0,0,0,0"])
def test_check_names_a_resealed_row_whose_statistics_cannot_be_read(cluster, tmp_path, capsys, text):
    """`perft deep --check` of a statistics store whose row was given counters that are not 13
    decimals (or none) and resealed, so its checksum passes: the unit is reported as differing,
    naming what the store holds, and the check fails (exit 1). On the old code a missing text was
    an AttributeError traceback and '1,2,x' a bare int() error naming no row (a helper's hunt,
    session 35)."""
    store = tmp_path / "st.sqlite"
    deep_perft(STARTPOS, 3, stats=True, split_ply=1, scheduler=cluster.scheduler_address, store=store)
    with Store.open(store) as st:
        idx, unit = st.conn.execute("SELECT idx, unit FROM units ORDER BY idx LIMIT 1").fetchone()
        st.conn.execute("UPDATE units SET stats = ? WHERE idx = ?", (text, idx))
        st._seal("idx = ?", (idx,))
    assert main(["deep", "--check", str(store), "--check-sample", "1"]) == 1
    out = capsys.readouterr().out
    assert "0 fail their checksum, 0 found changed otherwise" in out and "1 differ" in out
    assert f"differs: unit {unit} " in out and "unreadable statistics" in out and repr(text) in out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_does_not_hold_the_store_s_lock(small_store):
    """A local cluster forks its workers while a resumed run holds its store's lock (the store is
    opened before the cluster starts): a forked child must not keep the lock, or a client killed
    with its workers still alive would leave the store locked for the next resume. The parent
    closes the store while the child lives; the store opens again at once."""
    read, write = os.pipe()
    ready_r, ready_w = os.pipe()
    with Store.open(small_store):
        pid = os.fork()
        if pid == 0:  # the child (its at-fork handlers have run): say so, wait for the parent, leave
            os.close(write)
            os.write(ready_w, b"1")
            os.read(read, 1)
            os._exit(0)
        os.read(ready_r, 1)  # a loaded machine may run the parent on before the child starts
    os.close(read)
    try:
        Store.open(small_store).close()  # the lock is free: the child holds no copy of it
    finally:
        os.close(write)
        for fd in (ready_r, ready_w):
            os.close(fd)
        os.waitpid(pid, 0)


def test_a_run_split_at_remaining_depth_4_is_exact_and_keeps_its_split(cluster, tmp_path, capsys):
    """`perft deep --part-depth 4`: each unit's two parts are split at remaining depth 4, the total is
    exact, each part's rows differ from a split at 3 (the same units), and the store keeps the split
    under its run row's checksum: resuming with another split is refused, and the run row changed
    by hand to another split is found (StoreTampered), so no part counted at one split is ever
    added to a part counted at another."""
    from perft_core.deep.store import StoreError

    four, three = tmp_path / "four.sqlite", tmp_path / "three.sqlite"
    assert main(["deep", STARTPOS, "5", "--backend", "gpu-emulated", "--tt", "--split-ply", "1", "--part-depth", "4",
                 "--scheduler", cluster.scheduler_address, "--store", str(four), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == expected(5) and out["parts"] == 2 and out["part_depth"] == 4
    res = deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=1, scheduler=cluster.scheduler_address,
                     store=three)
    assert res.nodes == expected(5) and res.part_depth == 3
    by = {p: {(r["unit"], r["part"]): int(r["count"]) for r in rows(p)} for p in (four, three)}
    assert by[four].keys() == by[three].keys() and by[four] != by[three]
    for unit in {u for u, _ in by[four]}:
        assert by[four][(unit, 0)] + by[four][(unit, 1)] == by[three][(unit, 0)] + by[three][(unit, 1)]
    with pytest.raises(StoreError, match="part_depth=4, not 3"):
        deep_perft(resume=four, scheduler=cluster.scheduler_address, part_depth=3)
    assert deep_perft(resume=four, scheduler=cluster.scheduler_address, part_depth=4).nodes == expected(5)
    with Store.open(four) as st:
        assert st.run["part_depth"] == 4 and not st.tampered
    assert_run_row_sealed(four, "UPDATE run SET part_depth = 3")
    whole = tmp_path / "whole.sqlite"  # a run of whole units (cpu) ignores the option, on resume too
    assert deep_perft(STARTPOS, 4, split_ply=1, part_depth=4, scheduler=cluster.scheduler_address, store=whole).nodes \
        == expected(4)
    assert deep_perft(resume=whole, part_depth=4, scheduler=cluster.scheduler_address).nodes == expected(4)
    one_line_error(capsys, ["deep", STARTPOS, "5", "--part-depth", "2"], "part depth must be at least 3")
    with pytest.raises(ValueError, match="part_depth must be an integer >= 3"):
        deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, part_depth=2)


def test_a_run_cut_by_key_is_exact_and_keeps_its_cut(cluster, tmp_path, capsys):
    """`perft deep --part-cut key` (the cut of every store before schema 9): exact, each unit's parts
    differ from the board cut's (the default, the same units) and add up to the same, and the store
    keeps its cut under its run row's checksum: resuming with the other cut is refused, the run row
    changed by hand is found (StoreTampered), so no part counted by one cut is added to a part
    counted by the other; a run of whole units ignores the option."""
    from perft_core.deep.store import StoreError

    key, board = tmp_path / "key.sqlite", tmp_path / "board.sqlite"
    assert main(["deep", STARTPOS, "5", "--backend", "gpu-emulated", "--tt", "--split-ply", "1", "--part-cut", "key",
                 "--scheduler", cluster.scheduler_address, "--store", str(key), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == expected(5) and out["parts"] == 2 and out["part_cut"] == "key"
    res = deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=1, scheduler=cluster.scheduler_address,
                     store=board)
    assert res.nodes == expected(5) and res.part_cut == "board"
    by = {p: {(r["unit"], r["part"]): int(r["count"]) for r in rows(p)} for p in (key, board)}
    assert by[key].keys() == by[board].keys() and by[key] != by[board]
    for unit in {u for u, _ in by[key]}:
        assert by[key][(unit, 0)] + by[key][(unit, 1)] == by[board][(unit, 0)] + by[board][(unit, 1)]
    with pytest.raises(StoreError, match="part_cut='key', not 'board'"):
        deep_perft(resume=key, scheduler=cluster.scheduler_address, part_cut="board")
    assert deep_perft(resume=key, scheduler=cluster.scheduler_address, part_cut="key").nodes == expected(5)
    with Store.open(key) as st:
        assert st.run["part_cut"] == "key" and not st.tampered
    with Store.open(board) as st:
        assert st.run["part_cut"] == "board" and not st.tampered
    assert_run_row_sealed(key, "UPDATE run SET part_cut = 'board'")
    assert_run_row_sealed(board, "UPDATE run SET part_cut = 'key'")
    whole = tmp_path / "whole.sqlite"  # a run of whole units (cpu) ignores the option, on resume too
    assert deep_perft(STARTPOS, 4, split_ply=1, part_cut="board", scheduler=cluster.scheduler_address,
                      store=whole).nodes == expected(4)
    assert deep_perft(resume=whole, part_cut="key", scheduler=cluster.scheduler_address).nodes == expected(4)
    with Store.open(whole) as st:
        assert st.run["part_cut"] == "key"  # whole units: their identity as before schema 9
    one_line_error(capsys, ["deep", STARTPOS, "5", "--part-cut", "pieces"], "invalid choice")
    with pytest.raises(ValueError, match="part_cut must be one of board, key"):
        deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, part_cut="pieces")


def test_a_command_that_started_nothing_says_why(cluster, tmp_path, capsys, count_phase_limit):
    """A time limit too short for any task (here a tenth of a second for perft 6 units): the stop
    says no task fit, with the smallest row's estimated seconds and the seconds that were left, and
    the pace's source, in the line and in --json (session 33: a one-GPU perft 13 given 170 s counted
    nothing and said only "0 of 400 unit rows counted")."""
    from perft_core.deep.errors import DeepStopped

    with pytest.raises(DeepStopped) as stop:
        deep_perft(STARTPOS, 7, split_ply=1, scheduler=cluster.scheduler_address, max_seconds=0.1,
                   store=tmp_path / "short.sqlite")
    assert stop.value.counted_now == 0
    assert re.search(r"no task fit: the smallest row left is estimated at [\d,]+\.\d s \(1.25 x the seconds predicted "
                     r"by its estimated nodes at the pace of a calibration count\) with 0\.0 s left to a worker",
                     str(stop.value))
    assert stop.value.as_dict()["why"] == stop.value.why
    assert main(["deep", "--resume", str(tmp_path / "short.sqlite"), "--scheduler", cluster.scheduler_address,
                 "--max-seconds", "0.1", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["counted_now"] == 0 and out["why"].startswith("no task fit")
    assert deep_perft(resume=tmp_path / "short.sqlite", scheduler=cluster.scheduler_address).nodes == expected(7)


def test_more_parts_than_workers_take_turns_and_stay_exact(cluster, tmp_path, capsys):
    """`perft deep --parts 4` on a two-worker cluster: every unit in four parts (each worker takes
    turns at two, their tables reset at each change of part), exact; the parts of each unit add up
    to the whole units' counts of the same split; the store keeps its parts (a resume asking for
    others is refused); bad counts of parts and parts without tables are one clear error each."""
    from perft_core.deep.store import StoreError

    four, whole = tmp_path / "four.sqlite", tmp_path / "whole.sqlite"
    assert main(["deep", STARTPOS, "5", "--backend", "gpu-emulated", "--tt", "--split-ply", "1", "--parts", "4",
                 "--scheduler", cluster.scheduler_address, "--store", str(four), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"] == expected(5) and out["parts"] == 4
    res = deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=1, parts=1,
                     scheduler=cluster.scheduler_address, store=whole)
    assert res.nodes == expected(5) and res.parts == 1
    by = {p: {(r["unit"], r["part"]): int(r["count"]) for r in rows(p)} for p in (four, whole)}
    assert {part for _, part in by[four]} == {0, 1, 2, 3} and len(by[four]) == 4 * len(by[whole])
    for unit, part in by[whole]:
        assert sum(by[four][(unit, q)] for q in range(4)) == by[whole][(unit, part)]
    with pytest.raises(StoreError, match="in 4 parts, not 2"):
        deep_perft(resume=four, scheduler=cluster.scheduler_address, parts=2)
    with pytest.raises(StoreError, match="in 1 part, not 4"):
        deep_perft(resume=whole, scheduler=cluster.scheduler_address, parts=4)
    assert deep_perft(resume=four, scheduler=cluster.scheduler_address, parts=4).nodes == expected(5)
    capsys.readouterr()
    # --stats FILE says how the units are split and which command ran on what (a resume on fewer
    # GPUs than parts shows in its line)
    assert main(["deep", "--stats", str(four)]) == 0
    out = capsys.readouterr().out
    assert "each unit in 4 parts (split at remaining depth 3 by board)" in out
    assert re.search(rf"command 1: \S+ to \S+ on \S+, the scheduler {re.escape(cluster.scheduler_address)}: "
                     rf"\d+ unit rows counted \(first counts\)", out) and "command 2:" in out and "command 3:" not in out
    assert main(["deep", "--stats", str(four), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["parts"] == 4 and [x["counted"] for x in shown["sessions"]] == [len(by[four]), 0]
    # parts asked without a split ply: the chosen split leaves units deep enough to split (it was
    # "these are 2-ply units" at depth 4)
    shallow = deep_perft(STARTPOS, 4, backend="gpu-emulated", tt=True, parts=3, scheduler=cluster.scheduler_address,
                         store=tmp_path / "d4.sqlite")
    assert shallow.nodes == expected(4) and shallow.parts == 3 and shallow.split_ply <= 1
    one_line_error(capsys, ["deep", STARTPOS, "5", "--parts", "9"], "parts must be at most 8")
    one_line_error(capsys, ["deep", STARTPOS, "5", "--parts", "0"], "expected a positive integer")
    for bad in (0, 9, True, 2.0):
        with pytest.raises(ValueError, match="parts must be an integer from 1 to 8"):
            deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, parts=bad)
    with pytest.raises(ValueError, match="4 parts need tables on a gpu backend .*, not cpu without tables"):
        deep_perft(STARTPOS, 5, split_ply=1, parts=4, scheduler=cluster.scheduler_address,
                   store=tmp_path / "cpu.sqlite")
    with pytest.raises(ValueError, match="2 parts need units of at least 3 plies .*; these are 2-ply units"):
        deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=3, parts=2,
                   scheduler=cluster.scheduler_address, store=tmp_path / "shallow.sqlite")
    assert not (tmp_path / "cpu.sqlite").exists() and not (tmp_path / "shallow.sqlite").exists()


@pytest.mark.parametrize("backend", ["gpu-emulated", "cpu"])
def test_a_statistics_run_is_verified_counter_by_counter_and_a_lie_in_one_counter_is_recounted(cluster, tmp_path,
                                                                                                backend):
    """A statistics run with a verify seed counts every unit again under the second seed and
    compares the unit's 13 counters (summed over its parts, which the second seed cuts
    differently). A first count wrong in one counter only, its node count right (planted in the
    store with its checksum, as a poisoned statistics entry would make it), is a mismatch; the unit
    is counted again without tables (in parts on the GPU backends) and that count's counters are
    the ones summed: the total equals the CPW row again."""
    from perft_core.stats import STATS_FIELDS

    path = tmp_path / "sv.sqlite"
    published = _cpw_detail("rnbqkbnr/pppppppp", 5)
    res = deep_perft(STARTPOS, 5, backend=backend, tt=True, stats=True, verify_seed=7, split_ply=1,
                     scheduler=cluster.scheduler_address, store=path)
    assert res.nodes == expected(5) and res.verified == res.units == 20 and not res.mismatches
    assert {k: v for k, v in res.stats.cpw().items() if k in published} == published
    rs = rows(path)
    assert all(r["status"] == "verified" and r["verify_stats"] for r in rs)
    if backend == "gpu-emulated":
        assert res.parts == 2 and any(r["stats"] != r["verify_stats"] for r in rs)  # parts cut by each seed's keys
    with Store.open(path) as st:
        (idx, unit, text), = st.conn.execute("SELECT idx, unit, stats FROM units ORDER BY idx LIMIT 1").fetchall()
        lie = text.split(",")
        lie[STATS_FIELDS.index("captures")] = str(int(lie[STATS_FIELDS.index("captures")]) + 1)
        st.conn.execute("UPDATE units SET stats = ? WHERE idx = ?", (",".join(lie), idx))
        st.conn.execute("UPDATE units SET status = 'counted', verify_count = NULL, verify_stats = NULL "
                        "WHERE unit = ?", (unit,))
        st._seal("unit = ?", (unit,))
    again = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert again.nodes == expected(5)
    # one mismatch, the unit (its parts summed, which each seed cuts differently), naming the counter
    (m,) = again.mismatches
    assert (m["unit"], set(m["rows"]), m["differs"]) == (unit, {r["idx"] for r in rs if r["unit"] == unit}, ["captures"])
    assert m["count"] == m["verify_count"] == m["recount"] and m["recount"] is not None
    assert {k: v for k, v in again.stats.cpw().items() if k in published} == published
    assert "1 differed and were counted again without tables" in again.verify
