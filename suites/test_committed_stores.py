"""The deep-perft stores committed as evidence (ci/stores/*.sqlite): each is read back and checked
against the published tables, so a figure quoted in NOTES.md or docs/deep-perft.md stays provable
from the repository alone.

For every store: every unit row passes its checksum (opened as ``perft deep --check`` opens it,
an older schema migrated first). A finished run (every
row counted) must give the published total: the node count of OEIS A048987 for startpos
(oracle/data/startpos_A048987.csv), and for a statistics run all thirteen counters of Grand Chess
Tree's row (oracle/data/gct_perft_stats.csv). A run still being counted (resumed across device
sessions) is skipped after its checksums, with how far it is. Each store is opened from a copy, so
the checkout is never written (a migration, SQLite's -shm and -wal files).
"""
from __future__ import annotations

import dataclasses
import math
import shutil
from fractions import Fraction
from pathlib import Path

import chess
import pytest

from oracle.stats import published_rows
from oracle.tables import published_nodes
from perft_core.deep.run import _sum_nodes, _sum_stats
from perft_core.deep.store import Store
from perft_core.stats import Stats

pytestmark = pytest.mark.core

STORES = sorted((Path(__file__).resolve().parents[1] / "ci" / "stores").glob("*.sqlite"))


def _published_stats(fen: str, depth: int) -> Stats | None:
    epd = chess.Board(fen).epd()
    rows = [r for r in published_rows("gct") if r["depth"] == depth and chess.Board(r["fen"]).epd() == epd]
    return Stats(**rows[0]["columns"]) if rows else None


def test_the_stores_are_found():
    assert {p.name for p in STORES} >= {"perft13-h200x4-s17.sqlite", "perft12-stats-h200x2-s16.sqlite"}


def _check_store(path: Path) -> str | None:
    """Assert what the module docstring says of the store at ``path`` (read as it is); returns why it
    cannot be judged yet (a run still being counted), or None when it was."""
    with Store.open(path, repair=False) as st:  # an older schema migrated, as perft deep --check opens it
        assert not st.tampered, f"{path.name}: {len(st.tampered)} rows fail their checksums"
        run = st.run
        rows = st.checked_rows()
        counted = [r for r in rows if r["count"] is not None]
        if len(counted) < len(rows):
            return (f"{path.name}: perft {run['depth']} not finished, {len(counted)} of {len(rows)} unit rows counted "
                    "(every checksum passed; the total is judged once all are)")
        nodes = _sum_nodes(rows)
        want = published_nodes(run["fen"], run["depth"])
        assert want is not None, f"no published node count for perft {run['depth']} of {run['fen']}"
        assert nodes == want, f"{path.name}: {nodes:,} nodes, published {want:,}"
        if run["stats"]:
            published = _published_stats(run["fen"], run["depth"])
            assert published is not None, f"no published statistics for perft {run['depth']} of {run['fen']}"
            got = _sum_stats(st, rows)
            assert got == published, f"{path.name}: statistics {got} differ from the published {published}"
    return None


@pytest.mark.parametrize("path", STORES, ids=lambda p: p.name)
def test_a_committed_store_gives_the_published_total(path, tmp_path):
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    why = _check_store(copy)
    if why:
        pytest.skip(why)


def _changed_copy(tmp_path, name: str, column: str, change, where: str = "1") -> tuple[Path, str]:
    """A copy of the committed store ``name`` (tmp_path/in/name, whose checksums pass) with ``column``
    of its first unit row matching the SQL ``where`` replaced by ``change(old text)`` and the row's
    checksum made again, so that only a comparison (with the published row, or with another
    store) can tell. Returns (the copy, that row's unit key)."""
    (committed,) = [p for p in STORES if p.name == name]
    copy = tmp_path / "in" / name
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(committed, copy)
    with Store.open(copy) as st:
        assert not st.tampered
        idx, key, old = st.conn.execute(f"SELECT idx, key, {column} FROM units WHERE {where} ORDER BY idx LIMIT 1").fetchone()
        st.conn.execute(f"UPDATE units SET {column} = ? WHERE idx = ?", (change(old), idx))
        st._seal("idx = ?", (idx,))
        st.conn.commit()
    return copy, key


def _bump(field: str):
    """change() for _changed_copy's ``stats`` column: ``field``'s counter (a Stats field) one higher."""
    names = [f.name for f in dataclasses.fields(Stats)]  # the stored order (Stats.from_tuple)

    def bump(stats: str) -> str:
        values = [int(v) for v in stats.split(",")]
        values[names.index(field)] += 1
        return ",".join(map(str, values))
    return bump


def test_a_store_with_a_changed_count_fails(tmp_path):
    """The check is not blind: the finished perft 13 store with one row's count one higher, its
    checksum made again (so that only the total can tell), no longer gives the published total."""
    copy, _ = _changed_copy(tmp_path, "perft13-h200x4-s17.sqlite", "count", lambda c: str(int(c) + 1))
    with pytest.raises(AssertionError, match="published 1,981,066,775,000,396,239"):
        _check_store(copy)


def test_a_statistics_store_with_a_changed_counter_fails(tmp_path):
    """The statistics are judged too, counter by counter: the finished perft 12 statistics store with
    one row's double-discovered checks one higher (its node count untouched, its checksum made
    again) no longer equals Grand Chess Tree's depth-12 row."""
    copy, _ = _changed_copy(tmp_path, "perft12-stats-h200x2-s16.sqlite", "stats", _bump("double_discovered_checks"))
    with pytest.raises(AssertionError, match="perft12-stats-h200x2-s16.sqlite: statistics .* differ from the published"):
        _check_store(copy)


@pytest.mark.parametrize("name", ["perft13-h200x4-s17.sqlite", "perft12-stats-h200x2-s16.sqlite",
                                  "perft13-h200x4-board-s35.sqlite"])
def test_a_verify_sample_is_at_least_its_fraction_and_keeps_what_was_verified(name, tmp_path):
    """``dispatch.sample_keys`` takes ceil(fraction x units) units, the lowest key bits first (the
    fraction as the decimal written: 28 of 400 at 0.07). The committed stores were verified under
    an older rule (a unit when its low 32 bits < fraction x 2**32: 21 of 400 at 0.07, 14 of 400 at
    0.05) and topped up on resume in session 26 (perft 13 to 29 units, when 0.07 x 400 rounded up
    to 29 in floats; the statistics to 20); session 35's board-cut perft 13 was verified under this
    rule (24 of 400 at 0.06): each holds the whole sample, which is at least the fraction asked;
    the same keys give the same sample in any order."""
    from perft_core.deep.dispatch import sample_keys

    (path,) = [p for p in STORES if p.name == name]
    copy = tmp_path / name  # Store.open writes (its write-ahead log, the session): never the committed file
    shutil.copyfile(path, copy)
    with Store.open(copy, repair=False) as st:
        rows, fraction, units = st.units(), st.run["verify_sample"], st.run["units"]
    keys = [r["key"] for r in rows]
    got = sample_keys(keys, fraction)
    asked = Fraction(repr(fraction)) * units
    assert len(got) == math.ceil(asked) >= asked
    assert len(got) == {0.07: 28, 0.05: 20, 0.06: 24}[fraction]
    verified = {r["key"] for r in rows if r["verify_count"] is not None}
    assert verified >= got
    assert sample_keys(reversed(keys), fraction) == got
    assert sample_keys(keys, 1.0) == set(keys) and len(sample_keys(keys, 1e-9)) == 1


def _unit_counts(path: Path) -> tuple[tuple, dict[str, tuple[int, ...]], bool]:
    """The count a store ran ((fen, depth, split ply, stats)), by unit key the count of each unit
    whose parts are all counted (the parts summed: the node count, and in a statistics run all 13
    counters), and whether every unit is; read from a copy as ``perft deep --check`` opens it
    (every checksum passing)."""
    with Store.open(path, repair=False) as st:
        assert not st.tampered, f"{path.name}: {len(st.tampered)} rows fail their checksums"
        run = st.run
        parts: dict[str, list] = {}
        for r in st.checked_rows():
            got = None if r["count"] is None else (
                tuple(int(v) for v in r["stats"].split(",")) if run["stats"] else (int(r["count"]),))
            parts.setdefault(r["key"], []).append(got)
    whole = {k: tuple(map(sum, zip(*cs))) for k, cs in parts.items() if None not in cs}
    return (run["fen"], run["depth"], run["split_ply"], bool(run["stats"])), whole, len(whole) == len(parts)


def _agreement(paths: list[Path], tmp_path) -> list[tuple[str, str, int]]:
    """Each store with counted units against each finished store of the same count: (the store, the
    finished one, the units compared); asserts that every unit the store counted in full equals the
    finished store's count of that unit. Units are keyed by their position's Zobrist key, so two
    runs split at the same ply compare unit by unit whatever their GPUs, parts and table plans."""
    read = {}
    for path in paths:
        copy = tmp_path / path.name
        shutil.copyfile(path, copy)
        read[path.name] = _unit_counts(copy)
    compared = []
    for name, (count, units, _) in read.items():
        for other, (count_o, units_o, finished) in read.items():
            if other == name or count_o != count or not finished or not units:
                continue
            differ = [k for k in units if units[k] != units_o.get(k)]
            assert not differ, (f"{name}: {len(differ)} of {len(units)} units differ from {other}'s "
                                f"(first: key {differ[0]}, {units[differ[0]]} against {units_o.get(differ[0])})")
            compared.append((name, other, len(units)))
    return compared


def test_stores_of_one_count_agree_unit_by_unit(tmp_path):
    """A run still being counted is judged unit by unit against a finished run of the same count:
    the one-GPU perft 13 store (one part a unit, its own table plan) and session 14's four-GPU one
    (its first 5 units) against the finished four-GPU one (four parts a unit). Two engines' runs on other machines and plans agreeing on every unit is evidence
    for both before the partial run ends."""
    compared = {c[:2]: c[2] for c in _agreement(STORES, tmp_path)}
    assert compared[("perft13-h200x1-s22.sqlite", "perft13-h200x4-s17.sqlite")] >= 33
    # Session 27's statistics run (64-byte statistics entries, four parts a unit) against the finished
    # one of sessions 16-22 (128-byte entries, two parts a unit): every counter of every whole unit.
    assert compared[("perft12-stats-h200x4-s27.sqlite", "perft12-stats-h200x2-s16.sqlite")] >= 15
    assert compared[("perft13-h200x4-s14.sqlite", "perft13-h200x4-s17.sqlite")] >= 5
    # Session 34's store cut by the other side's pieces (schema 9; 97 rows on four H200s, the rest on
    # one taking turns at the four parts) against the finished run cut by key: each unit's parts add up
    assert compared[("perft13-h200x4-board-s34.sqlite", "perft13-h200x4-s17.sqlite")] >= 40
    # Session 35's run cut by board, finished on four H200s in 718.6 s of counting, against session 17's
    # cut by key (3,408 s): all 400 units, both ways, and the unfinished board-cut store against it too.
    assert compared[("perft13-h200x4-board-s35.sqlite", "perft13-h200x4-s17.sqlite")] == 400
    assert compared[("perft13-h200x4-s17.sqlite", "perft13-h200x4-board-s35.sqlite")] == 400
    assert compared[("perft13-h200x4-board-s34.sqlite", "perft13-h200x4-board-s35.sqlite")] >= 40
    assert ("perft13-h200x4-s14.sqlite", "perft13-h200x1-s22.sqlite") not in compared  # s22 is not finished


def _row_agreement(paths: list[Path], tmp_path) -> dict[tuple[str, str], int]:
    """Each store against each finished store of the same count and the same split into parts (split
    ply, parts, where and how a unit is cut): (the store, the finished one) -> the part rows compared;
    asserts that every part row the store counted equals the finished store's row of that unit and
    part. A run whose units are not yet whole (one GPU taking turns at four parts counts every
    unit's part 0 first) is judged row by row this way."""
    read = {}
    for path in paths:
        copy = tmp_path / "rows" / path.name
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, copy)
        with Store.open(copy, repair=False) as st:
            assert not st.tampered, f"{path.name}: {len(st.tampered)} rows fail their checksums"
            run = st.run
            plan = tuple(run[k] for k in ("fen", "depth", "split_ply", "stats", "parts", "part_depth", "part_cut"))
            rows = {(r["key"], r["part"]): r["count"] for r in st.checked_rows()}
        read[path.name] = plan, {k: int(c) for k, c in rows.items() if c is not None}, None not in rows.values()
    compared = {}
    for name, (plan, rows, _) in read.items():
        for other, (plan_o, rows_o, finished) in read.items():
            if other != name and plan_o == plan and finished and rows:
                differ = [k for k in rows if rows[k] != rows_o.get(k)]
                assert not differ, (f"{name}: {len(differ)} of {len(rows)} part rows differ from {other}'s (first: "
                                    f"key {differ[0][0]} part {differ[0][1]}, {rows[differ[0]]} against "
                                    f"{rows_o.get(differ[0])})")
                compared[name, other] = len(rows)
    return compared


def test_stores_of_one_split_agree_part_row_by_part_row(tmp_path):
    """Session 36's one-H200 perft 13 (four parts taken in turn: part 0 of every unit, then part 1's
    first 31 rows; 30.9 % of a(13)) against session 35's finished four-H200 run of the same split:
    all 431 part rows equal, though no unit of it is whole yet; session 34's unfinished run of that
    split (255 rows) and session 14's cut by key (20 rows, against session 17's) likewise."""
    compared = _row_agreement(STORES, tmp_path)
    assert compared[("perft13-h200x1-board-s36.sqlite", "perft13-h200x4-board-s35.sqlite")] == 431
    assert compared[("perft13-h200x4-board-s34.sqlite", "perft13-h200x4-board-s35.sqlite")] == 255
    assert compared[("perft13-h200x4-s14.sqlite", "perft13-h200x4-s17.sqlite")] == 20
    assert not any("s22" in name for name, _ in compared)  # one part a unit: no finished store of its split


def test_a_part_row_that_differs_from_the_finished_store_fails(tmp_path):
    """The row-by-row check is not blind: session 36's store with one counted part row one higher
    (its checksum made again) fails against session 35's, naming the unit and part."""
    changed, key = _changed_copy(tmp_path, "perft13-h200x1-board-s36.sqlite", "count", lambda c: str(int(c) + 1),
                                 "count IS NOT NULL AND part = 1")
    (finished,) = [p for p in STORES if p.name == "perft13-h200x4-board-s35.sqlite"]
    with pytest.raises(AssertionError, match=f"perft13-h200x1-board-s36.sqlite: 1 of 431 part rows differ .*key {key} part 1"):
        _row_agreement([changed, finished], tmp_path)


def test_a_unit_that_differs_from_the_finished_store_fails(tmp_path):
    """The unit-by-unit check is not blind: the one-GPU perft 13 store with one counted unit one
    higher (its checksum made again, so only the comparison can tell) fails it, naming the unit."""
    changed, key = _changed_copy(tmp_path, "perft13-h200x1-s22.sqlite", "count", lambda c: str(int(c) + 1),
                                 "count IS NOT NULL")
    (finished,) = [p for p in STORES if p.name == "perft13-h200x4-s17.sqlite"]
    with pytest.raises(AssertionError, match=f"perft13-h200x1-s22.sqlite: 1 of .* units differ .*key {key}"):
        _agreement([changed, finished], tmp_path)


def test_a_statistics_unit_with_one_counter_changed_fails(tmp_path):
    """In statistics stores every counter is compared: session 27's run with one counted row's
    captures one higher (its node count unchanged, its checksum made again) fails against the
    finished statistics store, naming the unit; a comparison of node counts alone would pass."""
    whole = "key IN (SELECT key FROM units GROUP BY key HAVING COUNT(count) = COUNT(*))"  # every part counted
    changed, key = _changed_copy(tmp_path, "perft12-stats-h200x4-s27.sqlite", "stats", _bump("captures"), whole)
    (finished,) = [p for p in STORES if p.name == "perft12-stats-h200x2-s16.sqlite"]
    with pytest.raises(AssertionError, match=f"perft12-stats-h200x4-s27.sqlite: 1 of .* units differ .*key {key}"):
        _agreement([changed, finished], tmp_path)


@pytest.mark.parametrize("name, column, change", [
    ("perft13-h200x4-s17.sqlite", "count", lambda c: str(int(c) + 1)),
    ("perft12-stats-h200x4-s27.sqlite", "stats", _bump("direct_mates")),
])
def test_a_verified_unit_whose_count_was_changed_and_resealed_is_counted_again(tmp_path, name, column, change):
    """A row's status is not under its checksum; it is derived from its counts. A unit marked
    verified whose counts (or counters) no longer equal its second-seed counts, checksum made again,
    was summed with "0 differed" (a helper's hunt, session 29, with the status edited from mismatch
    to verified); now its rows are found (``tampered``, as a failed checksum's) and counted again."""
    copy, key = _changed_copy(tmp_path, name, column, change, "status = 'verified'")
    with Store.open(copy, repair=False) as st:
        unit = st.conn.execute("SELECT unit FROM units WHERE key = ?", (key,)).fetchone()[0]
        assert {r["unit"] for r in st.tampered} == {unit}
        assert len(st.tampered) == st.run["parts"]
        # said as what it is: no checksum fails, the unit's status does not follow from its counts
        assert {r["why"] for r in st.tampered} == {"status"}

