"""ci/bench_cpu.py's random-game rows: seeded, and a program that disagrees with ours is a wrong count."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import chess
import pytest

import perft_core

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_cpu", ROOT / "ci" / "bench_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_walk_rows_are_seeded_unfinished_games(bench):
    rows = bench.walk_rows(3, 7, min_s=0.0)
    assert rows == bench.walk_rows(3, 7, min_s=0.0)
    assert rows != bench.walk_rows(3, 8, min_s=0.0)
    for i, (name, fen, depth, nodes, tables) in enumerate(rows, 1):
        board = chess.Board(fen)
        assert name == f"walk-7-{i}-4" and depth == 4 and nodes is None and tables is False
        assert not board.is_game_over() and 16 <= board.ply() <= 40 and board.is_valid()


def test_a_program_that_disagrees_on_a_walk_is_a_wrong_count(bench, tmp_path, monkeypatch):
    (tmp_path / "mperft").write_text("")  # the peer's file must exist; its runs are replaced below
    rows = bench.walk_rows(1, 3, min_s=0.0)
    name, fen, depth = rows[0][:3]
    truth = perft_core.perft(fen, depth)
    monkeypatch.setattr(bench, "mperft", lambda path, f, d, tables: (truth + 1, 0.1))
    best, wrong, failed, counted = bench.measure(rows, 2, tmp_path, None, 0)
    assert counted == {name: truth} and not failed
    assert wrong == [f"{name}: mperft counted {truth + 1}, ours {truth}"] * 2
    monkeypatch.setattr(bench, "mperft", lambda path, f, d, tables: (truth, 0.1))
    best, wrong, failed, counted = bench.measure(rows, 1, tmp_path, None, 0)
    assert wrong == [] and best[name, "mperft"] == 0.1 and (name, "ours") in best
