"""``--protocol cli``: programs that print only a total (oracle.engines.cli), read in every format
the issue names; counts checked against python-chess."""
from __future__ import annotations

import sys

import chess
import pytest

from oracle.engines import CliEngine, EngineError, PythonChessEngine, TotalOnlyEngine, make_engine
from oracle.engines.cli import parse_total

from oracle_fakes import FAKES

TOTAL_ONLY = FAKES / "total_only.py"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


@pytest.mark.parametrize("output, depth, total", [
    ("Nodes searched: 197281\n", 4, 197281),
    ("e2e4: 1\n\nNodes searched : 20\n", 1, 20),
    ("Perft(01): 20, time: 0.001 seconds\nPerft(02): 400, time: 0.002 seconds\n", 2, 400),
    ("Perft(3): 8902\n", 3, 8902),
    ("perft(4) = 197281\n", 4, 197281),
    ("info\nperft 2: 400\nbye\n", 2, 400),
    ("Perft(01): 20\nNodes searched: 400\n", 2, 400),  # the last line with a total wins
])
def test_parse_total_formats(output, depth, total):
    assert parse_total(output, depth) == total


def test_parse_total_refuses_another_depth_and_no_total():
    with pytest.raises(ValueError, match="for depth 7, not 8"):
        parse_total("Perft(06): 1\nPerft(07): 2, time: 1 seconds\n", 8)
    with pytest.raises(ValueError, match="no total"):
        parse_total("done in 3 s\n", 3)


def test_parse_total_with_a_regex():
    import re

    assert parse_total("total=5\ntotal=42 nodes\n", 9, re.compile(r"total=(\d+)")) == 42
    with pytest.raises(ValueError, match="no total"):
        parse_total("Perft(01): 20\n", 1, re.compile(r"total=(\d+)"))


def command(extra: str = "") -> str:
    return f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}} {extra}".strip()


def test_a_total_only_engine_is_an_engine():
    engine = make_engine(command(), protocol="cli")
    assert isinstance(engine, CliEngine) and isinstance(engine, TotalOnlyEngine) and not engine.supports_divide
    with pytest.raises(EngineError, match="only totals"):
        engine.divide(chess.STARTING_FEN, 1)


def test_the_fen_is_one_argument_and_counts_are_right():
    engine = CliEngine(command())
    assert engine.command(KIWIPETE, 3)[2] == KIWIPETE  # spaces and all, one argument
    assert engine.command("8/8/8/8/8/8/8/K1k5 w - -", 1)[2] == "8/8/8/8/8/8/8/K1k5 w - - 0 1"
    assert engine.perft(KIWIPETE, 3) == PythonChessEngine().perft(KIWIPETE, 3)
    assert engine.perft(KIWIPETE, 0) == 1 and engine.calls == 1  # depth 0 runs nothing


def test_moves_become_the_fen_after_them():
    engine = CliEngine(command())
    moves = ["e2e4", "e7e5", "g1f3"]
    assert engine.perft(chess.STARTING_FEN, 3, moves) == PythonChessEngine().perft(chess.STARTING_FEN, 3, moves)
    with pytest.raises(EngineError, match="cannot set up"):
        engine.perft(chess.STARTING_FEN, 2, ["e2e5"])


def test_stockfish_format_and_total_regex():
    assert CliEngine(command("good --format stockfish")).perft(KIWIPETE, 2) == 2039
    engine = CliEngine(command(), total_regex=r"Perft\(02\): (\d+)")  # always depth 2's line
    assert engine.perft(KIWIPETE, 3) == 2039


@pytest.mark.parametrize("template, total_regex, message", [
    ("", None, "empty engine command"),
    ("prog {depth}", None, "no {fen} placeholder"),
    ("prog {fen}", None, "no {depth} placeholder"),
    ("prog {fen} {depth}", "(", "bad --total-regex"),
    ("prog {fen} {depth}", r"\d+", "has no group"),
])
def test_bad_templates(template, total_regex, message):
    with pytest.raises(ValueError, match=message):
        CliEngine(template, total_regex=total_regex)


def test_failures_name_the_command_the_status_and_the_output():
    with pytest.raises(EngineError) as info:
        CliEngine(command("crash")).perft(KIWIPETE, 3)
    text = str(info.value)
    assert "crashed (exit status 3)" in text and "total_only.py" in text and "Perft(01): 48" in text
    with pytest.raises(EngineError, match="cannot start"):
        CliEngine("/nonexistent/perft {fen} {depth}").perft(KIWIPETE, 1)
    with pytest.raises(EngineError, match="timed out"):
        CliEngine(command("hang"), timeout=0.5).perft(KIWIPETE, 1)
