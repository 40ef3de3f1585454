"""Table statistics per remaining depth in the deep store (issue 27, item 1; schema 4): each task's
change of the driver's per-depth counters is stored beside its counts, adds up to the unit rows'
device probes and hits, grows with a resumed run, survives a schema-3 store's migration, and
reaches ``perft deep --json``, the human summary and ``perft deep --stats``.

Runs on the emulated GPU (``gpu-emulated --tt``: the real TTBfsDriver on NumPy) on a 2-worker
LocalCluster (conftest's ``cluster``); expected counts from the bundled OEIS A048987 table.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from perft_cli import main
from perft_core.deep import deep_perft, worker
from perft_core.deep.store import SCHEMA, TABLE_COUNTERS, Store
from test_deep import STARTPOS, expected  # Dask or a skip (its importorskip)


def query(path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(path, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def per_depth(path, where: str = "1") -> dict[int, dict]:
    """The store's count-phase statistics summed per remaining depth, straight from SQL."""
    got = query(path, f"SELECT r, {', '.join(f'SUM({c})' for c in TABLE_COUNTERS)} FROM tables "
                      f"WHERE phase = 'count' AND {where} GROUP BY r")
    return {r: dict(zip(TABLE_COUNTERS, sums)) for r, *sums in got}


def unit_totals(path, where: str = "1") -> tuple[int, int]:
    (probes, hits), = query(path, f"SELECT TOTAL(probes), TOTAL(hits) FROM units WHERE {where}")
    return int(probes), int(hits)


def test_stored_statistics_add_up_to_the_unit_rows_and_a_resume_adds_to_them(cluster, tmp_path):
    """Per remaining depth, the stored probes and hits of the count phase sum to the unit rows'
    device probes and hits (those come from the driver's own totals, not from the per-depth
    counters); a hit is a probe; the run's result carries the same sums. Then the tasks of half
    the units are undone as a killed client leaves them (no counts, no statistics), and a resumed
    run counts them again in a new session: the sums grow by exactly its rows, and still match."""
    path = tmp_path / "stats.sqlite"
    res = deep_perft(STARTPOS, 6, backend="gpu-emulated", tt=True, split_ply=2, scheduler=cluster.scheduler_address,
                     store=path)
    assert res.nodes == expected(6) and res.parts == 2
    stats = per_depth(path)
    assert 3 in stats and 0 < stats[3]["hits"] < stats[3]["probes"]  # warm tables hit across units
    assert (sum(s["probes"] for s in stats.values()), sum(s["hits"] for s in stats.values())) == unit_totals(path)
    assert (res.tt_probes, res.tt_hits) == unit_totals(path)
    for r, s in stats.items():
        row = res.tables["by_depth"][r]
        assert {k: row[k] for k in TABLE_COUNTERS} == s
        assert row["hit_rate"] == (s["hits"] / s["probes"] if s["probes"] else None)
    assert res.tables["processes"] == 2
    # a killed client: the tasks it had not committed have neither counts nor statistics
    with Store.open(path) as st:
        tasks = [t for (t,) in st.conn.execute("SELECT DISTINCT task FROM units ORDER BY task")][::2]
        marks = ", ".join("?" * len(tasks))
        st.conn.execute(f"UPDATE units SET status = 'pending', count = NULL, seconds = NULL, finishes = 0, "
                        f"probes = NULL, hits = NULL, task = NULL WHERE task IN ({marks})", tasks)
        st.conn.execute(f"DELETE FROM tables WHERE task IN ({marks})", tasks)
        st._seal("count IS NULL")
    kept = per_depth(path)
    assert unit_totals(path) == (sum(s["probes"] for s in kept.values()), sum(s["hits"] for s in kept.values()))
    res2 = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert res2.nodes == expected(6) and res2.counted_now > 0 and res2.tampered == []
    (session,), = query(path, "SELECT MAX(id) FROM sessions")
    new = per_depth(path, f"session = {session}")
    assert unit_totals(path, f"task IN (SELECT task FROM tables WHERE session = {session})") == \
        (sum(s["probes"] for s in new.values()), sum(s["hits"] for s in new.values()))
    now = per_depth(path)
    for r in now:
        for c in TABLE_COUNTERS:
            assert now[r][c] == kept.get(r, {}).get(c, 0) + new.get(r, {}).get(c, 0)
            assert res2.tables["by_depth"][r][c] == now[r][c]
    assert unit_totals(path) == (sum(s["probes"] for s in now.values()), sum(s["hits"] for s in now.values()))
    assert sum(s["probes"] for s in new.values()) > 0


def test_a_schema_3_store_opens_migrates_and_resumes(cluster, tmp_path, capsys):
    """A store as the schema-3 code left it (no ``tables`` table, half its units pending): --stats
    reads it without the table, --check proves it, a resume migrates it to schema 4 and records
    the statistics of the counts it makes, and the total is exact."""
    path = tmp_path / "old.sqlite"
    deep_perft(STARTPOS, 5, backend="gpu-emulated", tt=True, split_ply=1, scheduler=cluster.scheduler_address,
               store=path)
    with Store.open(path) as st:
        st.conn.execute("DROP TABLE tables")
        st.conn.execute("ALTER TABLE run DROP COLUMN checksum")  # a schema-3 run row has none
        st.conn.execute("UPDATE run SET schema = 3")
        st.conn.execute("UPDATE units SET status = 'pending', count = NULL, seconds = NULL, finishes = 0, "
                        "probes = NULL, hits = NULL, task = NULL WHERE unit % 2 = 1")
        st._seal("count IS NULL")
    assert main(["deep", "--stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "20 of 40 unit rows counted" in out and "no table statistics per remaining depth" in out
    assert "schema 3" in out
    assert main(["deep", "--check", str(path), "--check-sample", "1"]) == 0
    capsys.readouterr()
    assert query(path, "SELECT schema FROM run") == [(SCHEMA,)]  # opened, so migrated
    res = deep_perft(resume=path, scheduler=cluster.scheduler_address)
    assert res.nodes == expected(5) and res.counted_now == 20 and res.tampered == []
    stats = per_depth(path)
    assert stats and (sum(s["probes"] for s in stats.values()), sum(s["hits"] for s in stats.values())) == \
        unit_totals(path, "unit % 2 = 1")
    assert {k: res.tables["by_depth"][3][k] for k in TABLE_COUNTERS} == stats[3]


def test_json_the_summary_and_stats_show_the_statistics_per_remaining_depth(cluster, tmp_path, capsys):
    """``perft deep --json`` carries the per-depth statistics (with the hit rate and the tables'
    slots, occupied and evictions as read at the end of the phase); the human summary prints a
    line per remaining depth; ``--stats FILE`` (human and --json) shows the same numbers without
    counting, for the count and the verify phase."""
    path = tmp_path / "json.sqlite"
    argv = ["deep", STARTPOS, "6", "--backend", "gpu-emulated", "--tt", "--split-ply", "2", "--scheduler",
            cluster.scheduler_address, "--verify-seed", "0xBADC0FFEE"]
    assert main(argv + ["--store", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["nodes"] == expected(6)
    stats = per_depth(path)
    got = data["tables"]["by_depth"]
    assert set(got) == {str(r) for r in stats}
    for r, s in stats.items():
        assert {k: got[str(r)][k] for k in TABLE_COUNTERS} == s
    row = got["3"]
    assert row["hit_rate"] == pytest.approx(row["hits"] / row["probes"]) and row["hits"] > 0
    # the end-of-phase readings: each worker's table of r = 3, summed
    readings = query(path, "SELECT slots, occupied, evictions FROM tables WHERE task = 'tables read' "
                           "AND phase = 'count' AND r = 3")
    assert len(readings) == 2
    assert [row[k] for k in ("slots", "occupied", "evictions")] == [sum(x) for x in zip(*readings)]
    assert 0 < row["occupied"] <= row["stores"] and row["occupied"] < row["slots"]
    assert data["verify_tables"]["by_depth"]["3"]["probes"] > 0
    status = main(["deep", "--stats", str(path), "--json"])
    shown = json.loads(capsys.readouterr().out)
    assert status == 0 and shown["tables"] == data["tables"] and shown["verify_tables"] == data["verify_tables"]
    assert (shown["tt_probes"], shown["tt_hits"]) == unit_totals(path)
    assert main(argv + ["--store", str(tmp_path / "human.sqlite")]) == 0
    human = capsys.readouterr().out.splitlines()
    assert main(["deep", "--stats", str(tmp_path / "human.sqlite")]) == 0
    again = capsys.readouterr().out.splitlines()
    for lines in (human, again):
        first = lines.index(next(x for x in lines if x.startswith("tables over the first counts")))
        verify = lines.index(next(x for x in lines if x.startswith("tables over the verify counts")))
        rows = {int(x.split()[0]): x.split() for x in lines[first + 2:verify]}
        probes = per_depth(tmp_path / "human.sqlite")
        assert set(rows) == set(probes)
        for r, cols in rows.items():
            assert int(cols[1].replace(",", "")) == probes[r]["probes"]
            assert int(cols[2].replace(",", "")) == probes[r]["hits"]


def test_occupancy_is_read_within_its_share_of_the_counting_time(monkeypatch):
    """A worker reads its tables' occupancy after a batch only when the batches since its last
    reading took at least the reading's cost / OCCUPANCY_SHARE: a batch after an expensive
    reading carries slots but no occupancy; once enough counting time has passed, it reads again.
    The per-depth figures of each batch are its own (the change of the driver's counters)."""
    import perft_core.gpu.registry as registry

    monkeypatch.setattr(worker, "_occupancy", {"cost": 0.0, "since": 0.0})
    monkeypatch.setattr(registry, "_DRIVERS", {})  # a driver of this test's own
    fens = [STARTPOS, "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"]
    args = ("gpu-emulated", True, 0x1234, "run-a", STARTPOS, 6)

    def batch(fen):
        return worker.run_task([fen], 5, *args)

    def probes(result):
        return sum(row["probes"] for row in result["tables"]["by_depth"].values())

    first = batch(fens[0])
    r3 = first["tables"]["by_depth"][3]
    assert r3["occupied"] is not None and r3["slots"] > 0 and probes(first) == first["probes"] > 0
    worker._occupancy["cost"] = 1e6  # a reading that would cost far more than the next batch
    second = batch(fens[1])
    r3b = second["tables"]["by_depth"][3]
    assert r3b["slots"] == r3["slots"] and r3b["occupied"] is None and r3b["evictions"] is None
    assert probes(second) == second["probes"] > 0  # this batch's own probes, not the driver's total
    assert worker._occupancy["since"] == second["seconds"]  # counting time since the last reading
    worker._occupancy["cost"] = worker._occupancy["since"] * worker.OCCUPANCY_SHARE / 2
    third = batch(fens[0])
    assert third["tables"]["by_depth"][3]["occupied"] is not None
    reading = worker.table_reading("gpu-emulated", "run-a", 0x1234)
    assert reading["by_depth"][3]["occupied"] >= r3["occupied"]
    assert worker.table_reading("gpu-emulated", "another run", 0x1234) is None
    # another run: the tables are planned again, and their evictions count from then on
    other = worker.run_task([fens[0]], 5, "gpu-emulated", True, 0x1234, "run-b", STARTPOS, 6)
    row = worker.table_reading("gpu-emulated", "run-b", 0x1234)["by_depth"][3]
    assert row["occupied"] + row["evictions"] == other["tables"]["by_depth"][3]["stores"] > 0


def test_duplicates_add_nothing_and_each_worker_process_counts_once_in_the_occupancy(tmp_path, capsys):
    """In the store: a duplicate result (its rows already counted) adds no statistics; the sums of a
    phase add every task's own figures; slots, occupied and evictions are each worker process's
    latest reading (a batch without one leaves it), summed over processes; an end-of-phase
    reading adds no probes; verify statistics stay apart. ``--stats`` reads the store while
    another client holds it; a file that is not a store is one line, exit 2."""
    from perft_core import Position
    from perft_core.deep import split

    path = tmp_path / "s.sqlite"
    pos = Position.from_fen(STARTPOS)
    st = Store.create(path, {"fen": pos.fen(), "depth": 4, "split_ply": 2, "backend": "gpu-emulated", "tt": True,
                             "seed": 1, "verify_seed": 2, "verify_sample": 1.0}, split(pos, 4, 2, 1))
    rows = st.units()

    def tables(process, probes, occupied):
        return {"process": process, "by_depth": {3: {"probes": probes, "hits": 1, "host_probes": 0, "host_hits": 0,
                                                     "stores": probes - 1, "slots": 100, "occupied": occupied,
                                                     "evictions": None if occupied is None else 0},
                                                 4: {"probes": 0, "hits": 0, "host_probes": 2, "host_hits": 1,
                                                     "stores": 0, "slots": None, "occupied": None,
                                                     "evictions": None}}}

    with st:
        st.begin_session("test")
        assert st.finish(rows[:2], [1, 1], [0.1, 0.1], "w1", "d", "t1", [5, 5], [1, 0], tables("h:1", 10, 6)) == 2
        assert st.finish(rows[:2], [1, 1], [0.1, 0.1], "w1", "d", "t1", [5, 5], [1, 0], tables("h:1", 10, 6)) == 0
        assert st.finish(rows[2:4], [1, 1], [0.1, 0.1], "w1", "d", "t2", [5, 5], [1, 0], tables("h:1", 10, 8)) == 2
        assert st.finish(rows[4:6], [1, 1], [0.1, 0.1], "w1", "d", "t3", [5, 5], [1, 0], tables("h:1", 10, None)) == 2
        assert st.finish(rows[6:8], [1, 1], [0.1, 0.1], "w2", "d", "t4", [5, 5], [1, 0], tables("h:2", 10, 5)) == 2
        got = st.table_statistics()["count"]
        assert got["processes"] == 2
        assert got["by_depth"][3] == {"probes": 40, "hits": 4, "host_probes": 0, "host_hits": 0, "stores": 36,
                                      "hit_rate": 4 / 40, "host_hit_rate": None, "slots": 200, "occupied": 8 + 5,
                                      "evictions": 0}
        assert got["by_depth"][4]["host_probes"] == 8 and got["by_depth"][4]["host_hit_rate"] == 0.5
        st.tables_read("count", "w1", {"process": "h:1", "by_depth": {3: {
            "probes": 0, "hits": 0, "host_probes": 0, "host_hits": 0, "stores": 0, "slots": 100, "occupied": 9,
            "evictions": 1}}})
        got = st.table_statistics()["count"]["by_depth"][3]
        assert (got["probes"], got["occupied"], got["evictions"]) == (40, 9 + 5, 1)
        assert st.verified(rows[:2], [1, 1], [0.1, 0.1], "w1", "t5", tables("h:1", 7, 3)) == 2
        both = st.table_statistics()
        assert both["count"]["by_depth"][3]["probes"] == 40 and both["verify"]["by_depth"][3]["probes"] == 7
        assert main(["deep", "--stats", str(path), "--json"]) == 0  # while this client holds the store
        shown = json.loads(capsys.readouterr().out)
    assert shown["tables"]["by_depth"]["3"]["occupied"] == 14 and shown["verify_tables"]["by_depth"]["3"]["probes"] == 7
    assert shown["counted"] == 8 and shown["tt_probes"] == 40
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a store")
    assert main(["deep", "--stats", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perft: error: ") and "junk.sqlite" in err, err


def test_the_occupancy_is_the_last_sessions_tables(tmp_path, capsys):
    """A run resumed in a second session (a second call, new worker processes): probes and hits sum
    over the run, but slots, occupied and evictions are the last session's processes' readings only
    (the first session's tables are gone). Session 22: a one-GPU perft 13 resumed once showed 4.1 G
    slots at r = 3, twice what its one GPU ever held."""
    from perft_core import Position
    from perft_core.deep import split

    path = tmp_path / "two.sqlite"
    pos = Position.from_fen(STARTPOS)
    st = Store.create(path, {"fen": pos.fen(), "depth": 4, "split_ply": 2, "backend": "gpu-emulated", "tt": True,
                             "seed": 1, "verify_seed": None, "verify_sample": None}, split(pos, 4, 2, 1))
    rows = st.units()

    def tables(process, occupied):
        return {"process": process, "by_depth": {3: {"probes": 10, "hits": 2, "host_probes": 0, "host_hits": 0,
                                                     "stores": 8, "slots": 100, "occupied": occupied,
                                                     "evictions": 1}}}

    with st:
        st.begin_session("first call")
        st.finish(rows[:2], [1, 1], [0.1, 0.1], "w1", "d", "t1", [5, 5], [1, 0], tables("h:1", 60))
        st.end_session()
        st.begin_session("second call")
        st.finish(rows[2:4], [1, 1], [0.1, 0.1], "w9", "d", "t2", [5, 5], [1, 0], tables("h:9", 30))
        got = st.table_statistics()["count"]
        assert (got["processes"], got["last_processes"]) == (2, 1)
        row = got["by_depth"][3]
        assert (row["probes"], row["hits"], row["slots"], row["occupied"], row["evictions"]) == (20, 4, 100, 30, 1)
    assert main(["deep", "--stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(2 worker processes; slots, occupancy and evictions: the last session's 1 process, as last read)" in out


def test_the_occupancy_of_rows_without_a_session(tmp_path):
    """Table rows written outside any session (the Store API without begin_session) still give the
    occupancy: they count as one session."""
    from perft_core import Position
    from perft_core.deep import split

    pos = Position.from_fen(STARTPOS)
    st = Store.create(tmp_path / "none.sqlite", {"fen": pos.fen(), "depth": 4, "split_ply": 2,
                                                 "backend": "gpu-emulated", "tt": True, "seed": 1,
                                                 "verify_seed": None, "verify_sample": None}, split(pos, 4, 2, 1))
    rows = st.units()
    with st:
        st.finish(rows[:2], [1, 1], [0.1, 0.1], "w1", "d", "t1", [5, 5], [1, 0],
                  {"process": "h:1", "by_depth": {3: {"probes": 10, "hits": 2, "host_probes": 0, "host_hits": 0,
                                                      "stores": 8, "slots": 100, "occupied": 7, "evictions": 0}}})
        got = st.table_statistics()["count"]
    assert (got["processes"], got["last_processes"], got["by_depth"][3]["occupied"]) == (1, 1, 7)
