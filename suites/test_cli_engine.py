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


def test_an_optional_group_that_matched_nothing_is_an_unreadable_total(capsys):
    # --total-regex 'total=(\d+)?' on a line 'total=': the group is None (was a TypeError traceback)
    import re

    from oracle import cli

    with pytest.raises(ValueError, match="unreadable total in 'total='"):
        parse_total("total=\n", 2, re.compile(r"total=(\d+)?"))
    script = "sh -c 'echo total=' sh {fen} {depth}"
    with pytest.raises(EngineError, match="unreadable total") as info:
        CliEngine(script, total_regex=r"total=(\d+)?").perft(KIWIPETE, 2)
    assert "sh -c" in str(info.value)  # it names the command, like any unreadable total
    status = cli.main(["diff", "--protocol", "cli", "--engine", script, "--total-regex", r"total=(\d+)?",
                       "startpos", "2"])
    err = capsys.readouterr().err
    assert status == 2 and "unreadable total in 'total='" in err and "Traceback" not in err, err


def test_a_line_cut_for_its_length_never_gives_a_total():
    # the output reader cuts a line over 65,536 characters to 200 and a note: its digits are not all there
    import io
    import re

    from oracle.engines.process import bounded

    line = "Nodes searched: " + "1" * 70_000 + "\n"
    cut = "".join(bounded(io.StringIO(line)))
    assert cut.endswith("(a line longer than 65,536 characters, cut)")  # the note the reader adds
    for output in (cut, "Perft(02): 400\n" + cut):
        with pytest.raises(ValueError, match="unreadable total.*cut"):
            parse_total(output, 2)
        with pytest.raises(ValueError, match="unreadable total.*cut"):
            parse_total(output, 2, re.compile(r"searched: (\d+)"))
    with pytest.raises(ValueError, match="unreadable total.*cut"):  # such a line handed over uncut
        parse_total(line, 2)


@pytest.mark.parametrize("output", [
    "Nodes searched: \u0664\u0660\u0660\n",  # Arabic-Indic 400
    "Nodes searched: \uff14\uff10\uff10\n",  # fullwidth 400
    "perft 2: 4\u0660\u0660\n",
    "Perft(\u0662): 400\n",  # the depth too
    "Nodes searched: 400\u00b2\n",
])
def test_digits_that_are_not_ascii_are_an_unreadable_total(output):
    import re

    with pytest.raises(ValueError, match="unreadable total"):
        parse_total(output, 2)
    if not output.startswith("Perft("):
        with pytest.raises(ValueError, match="unreadable total"):  # a user's regex too
            parse_total(output, 2, re.compile(r"[:=]\s*(\d+)"))


@pytest.mark.parametrize("line, regex", [
    ("total=-20", r"total=(\S+)"),  # it said "it counts -20 moves"
    ("total=+400", r"total=(\S+)"),
    ("total=400 nodes", r"total=(.+)"),
    ("total=", r"total=(\d*)"),
    ("total=4,00", r"total=(\S+)"),
    ("total=0x190", r"total=(\w+)"),
    ("total=-20", r"(\d+)"),  # a sign before the digits
    ("total=8902", r"(\d{3})$"),  # a number's last digits only
    ("total=\u066400", r"([0-9]+)$"),  # after a digit that is not ASCII
])
def test_a_regex_group_that_is_not_grouped_ascii_digits_is_an_unreadable_total(line, regex):
    import re

    with pytest.raises(ValueError, match="unreadable total"):
        parse_total(line + "\n", 2, re.compile(regex))
    assert parse_total("total=8,902\n", 2, re.compile(r"total=(\S+)")) == 8902  # grouped digits are read
