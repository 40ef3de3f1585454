"""The deep-count table (oracle/data/deep_counts.csv) and its generator (ci/deep_counts.py).

On the CPU: the table's shape and provenance, its published rows against the other bundled tables,
its small rows against python-chess, and the generator end to end on the emulated GPU backend
(tiny depths, a temporary file), a planted disagreement included. On a GPU runner (marked gpu):
the table's rows re-counted within a time budget.
"""
from __future__ import annotations

import csv
import importlib.util
import io
from importlib import resources
from pathlib import Path

import pytest

import perft_core
from oracle import tables
from oracle.engines import PythonChessEngine

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("deep_counts", ROOT / "ci" / "deep_counts.py")
deep_counts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(deep_counts)

PYCHESS_MAX_NODES = 2_000_000  # rows python-chess re-counts on the CPU
GPU_BUDGET_SECONDS = 120.0  # the GPU test re-counts rows (by their recorded TT seconds) up to this


def read(path=None) -> tuple[list[str], list[dict]]:
    text = (Path(path).read_text(encoding="utf-8") if path else
            resources.files("oracle.data").joinpath("deep_counts.csv").read_text(encoding="utf-8"))
    reader = csv.DictReader(io.StringIO(text))
    return list(reader.fieldnames or []), list(reader)


def published() -> dict[tuple[str, int], tables.TableRow]:
    return {(f"{r.suite}-{r.id}", r.depth): r for suite in ("cpw", "tricky", "chess960") for r in tables.load(suite)}


def check_rows(rows: list[dict]) -> int:
    """Check every row's shape, provenance and (where cheap) count; return how many were counted."""
    known = published()
    deepest: dict[str, int] = {}
    for (pid, depth) in known:
        deepest[pid] = max(deepest.get(pid, 0), depth)
    counted = 0
    for row in rows:
        pid, depth, nodes = row["id"], int(row["depth"]), int(row["nodes"])
        assert pid in deepest, row  # a position of the bundled tables ...
        assert row["fen"] == next(r.fen for (i, _), r in known.items() if i == pid), row
        assert row["status"] in ("computed", "published"), row
        for column in ("version", "commit", "gpu", "date", "source"):
            assert row[column].strip(), (column, row)
        assert all(float(row[c]) >= 0 for c in ("seconds_nott", "seconds_tt", "seconds_tt_seed2")), row
        if row["status"] == "published":  # ... its published count, re-counted
            assert known[(pid, depth)].nodes == nodes, row
        else:  # ... or beyond its published depths
            assert depth > deepest[pid], row
        if nodes <= PYCHESS_MAX_NODES:
            assert PythonChessEngine().perft(row["fen"], depth) == nodes, row
            counted += 1
    return counted


def test_the_table_has_its_columns_and_loads_as_a_suite():
    header, rows = read()
    assert tuple(header) == tables.DEEP_COLUMNS
    check_rows(rows)
    loaded = tables.load("deep")
    assert [(r.id, r.depth, r.nodes) for r in loaded] == [(r["id"], int(r["depth"]), int(r["nodes"])) for r in rows]


def test_generator_end_to_end_on_the_emulated_gpu(tmp_path, capsys):
    out = tmp_path / "deep.csv"
    argv = ["--backend", "gpu-emulated", "--out", str(out), "--row-seconds", "2", "--total-seconds", "60",
            "--only", "tricky-align-ep-pinned", "cpw-pos3", "--max-extra", "2"]
    assert deep_counts.main(argv) == 0
    header, rows = read(out)
    assert tuple(header) == tables.DEEP_COLUMNS
    statuses = {(r["id"], r["status"]) for r in rows}
    assert ("tricky-align-ep-pinned", "computed") in statuses and ("cpw-pos3", "published") in statuses
    assert [int(r["depth"]) for r in rows if r["id"] == "tricky-align-ep-pinned" and r["status"] == "computed"] == [4, 5]
    assert check_rows(rows) == len(rows)  # every row here is small: python-chess re-counts all
    assert rows[0]["gpu"].startswith("gpu-emulated") and rows[0]["version"] == perft_core.__version__
    # a second run goes on from the file: no row twice, and one more depth with --max-extra 3
    assert deep_counts.main(argv[:-1] + ["3"]) == 0
    _, again = read(out)
    keys = [(r["id"], r["depth"]) for r in again if r["status"] == "computed"]
    assert len(keys) == len(set(keys)) and ("tricky-align-ep-pinned", "6") in keys
    assert "already in" in capsys.readouterr().out


def test_generator_stops_when_the_three_counts_disagree(tmp_path, monkeypatch, capsys):
    real = perft_core.perft

    def tt_off_by_one(fen, depth, **kw):  # a planted hash bug: the TT counts one node too many
        return real(fen, depth, **kw) + (1 if kw.get("tt") and depth >= 4 else 0)

    monkeypatch.setattr(deep_counts.perft_core, "perft", tt_off_by_one)
    out = tmp_path / "deep.csv"
    status = deep_counts.main(["--backend", "gpu-emulated", "--out", str(out), "--row-seconds", "2",
                               "--only", "tricky-align-ep-pinned"])
    assert status == 1 and "DISAGREE" in capsys.readouterr().out
    _, rows = read(out)
    assert all(r["status"] == "published" for r in rows)  # nothing computed was written


def test_generator_bad_arguments(tmp_path):
    with pytest.raises(SystemExit) as info:
        deep_counts.main(["--backend", "gpu-emulated", "--out", str(tmp_path / "x.csv"), "--only", "nosuch"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        deep_counts.main(["--seed2", hex(deep_counts.DEFAULT_SEED), "--out", str(tmp_path / "x.csv")])


@pytest.mark.gpu
def test_deep_table_on_the_gpu():
    """Re-count the table's rows on the GPU (with TT, and without where its recorded time is short),
    cheapest first, within GPU_BUDGET_SECONDS of recorded time."""
    _, rows = read()
    if not rows:
        pytest.skip("the deep table has no row yet (run ci/deep_counts.py on a GPU runner)")
    spent, checked = 0.0, 0
    for row in sorted(rows, key=lambda r: float(r["seconds_tt"])):
        cost = float(row["seconds_tt"]) + (float(row["seconds_nott"]) if float(row["seconds_nott"]) < 10 else 0)
        if spent + cost > GPU_BUDGET_SECONDS:
            break
        spent += cost
        depth, nodes = int(row["depth"]), int(row["nodes"])
        assert perft_core.perft(row["fen"], depth, backend="gpu", tt=True) == nodes, row
        if float(row["seconds_nott"]) < 10:
            assert perft_core.perft(row["fen"], depth, backend="gpu") == nodes, row
        checked += 1
    assert checked > 0
