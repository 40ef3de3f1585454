"""``perft perftree`` and ``perft uci``: our backends behind the protocols engine authors' tools speak.

Each is driven by a client that knows the protocol and not our code: the oracle's own adapters
(:class:`oracle.engines.PerftreeEngine`, :class:`oracle.engines.UciEngine`) and python-chess's
``chess.engine`` (the UCI handshake and options). Counts are compared with python-chess's
(:class:`oracle.engines.PythonChessEngine`), positions with castling, en passant, promotions and
Chess960, with moves played first.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

import perft_core
from oracle.engines import PerftreeEngine, PythonChessEngine, UciEngine
from perft_cli import main
from perft_core.uci import UciSession

HOME = str(Path(perft_core.__file__).resolve().parents[1])
PERFT = [sys.executable, "-P", "-m", "perft_cli"]
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
SHREDDER = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"  # Chess960
CASTLE960 = "rk2r3/pppppppp/8/8/8/8/PPPPPPPP/RK2R3 w EAea - 0 1"  # Chess960: b1e1 and b1a1 castle
PROMOTIONS = "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1"
EP = "rnbqkb1r/ppppp1pp/7n/4Pp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
CASES = [  # (fen, depth, moves played first)
    (chess.STARTING_FEN, 3, ()),
    (chess.STARTING_FEN, 2, ("e2e4", "e7e5", "g1f3")),
    (KIWIPETE, 2, ("e1g1",)),  # castling as the king's move
    (KIWIPETE, 2, ()),
    (SHREDDER, 2, ()),
    (CASTLE960, 2, ("b1e1", "b8a8")),  # Chess960 castling: king takes rook, both sides
    (PROMOTIONS, 2, ("g2h1q",)),
    (EP, 2, ("e5f6",)),  # en passant first
]
IDS = ["start", "start-moves", "kiwipete-castled", "kiwipete", "chess960", "chess960-castled", "promoted", "ep"]


@pytest.fixture(autouse=True)
def _importable(monkeypatch):
    """Child processes import this perft_core (the installed package under CI, the tree when built in place)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [HOME, os.environ.get("PYTHONPATH")])))


def reference(fen: str, depth: int, moves) -> dict[str, int]:
    return PythonChessEngine().divide(fen, depth, list(moves))


# -- perftree ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fen, depth, moves", CASES, ids=IDS)
def test_perftree_adapter_reads_our_perftree_mode(fen, depth, moves):
    with PerftreeEngine(PERFT + ["perftree"]) as engine:
        assert engine.divide(fen, depth, list(moves)) == reference(fen, depth, moves)


def perftree(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(PERFT + ["perftree", *argv], capture_output=True, text=True, timeout=120)


def test_perftree_output_is_move_count_lines_a_blank_line_and_the_total():
    proc = perftree("3", chess.STARTING_FEN)
    lines = proc.stdout.split("\n")
    assert proc.returncode == 0 and lines[-3:] == ["", "8902", ""]
    assert {line.split(" ")[0]: int(line.split(" ")[1]) for line in lines[:-3]} == reference(chess.STARTING_FEN, 3, ())
    # perftree writes promotions with an upper-case letter (a7b8Q); MOVES may be absent or empty
    assert perftree("1", PROMOTIONS, "g2h1Q").stdout == perftree("1", PROMOTIONS, "g2h1q").stdout != ""
    assert perftree("2", "startpos", "").stdout == perftree("2", chess.STARTING_FEN).stdout
    assert perftree("0", chess.STARTING_FEN).stdout == "\n1\n"


def test_perftree_chess960_castling_is_king_takes_rook():
    root = perftree("1", CASTLE960).stdout
    assert "b1e1 1" in root and "b1a1 1" in root and "b1g1" not in root  # not the king's destination
    out = perftree("2", CASTLE960, "b1e1 b8a8").stdout  # both castled, king takes rook
    assert out.endswith(f"\n\n{sum(reference(CASTLE960, 2, ('b1e1', 'b8a8')).values())}\n")


@pytest.mark.parametrize("argv, problem", [
    (["2", "not a fen"], "fields: expected 6 fields"),
    (["2", chess.STARTING_FEN, "e2e5"], "move 1 of the moves"),
    (["2", chess.STARTING_FEN, "e2e4 e2e4"], "move 2 of the moves after e2e4"),
    (["x", chess.STARTING_FEN], "depth must be"),
])
def test_perftree_bad_input_is_one_line_and_status_2(argv, problem):
    proc = perftree(*argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("perft: error: ") and proc.stderr.count("\n") == 1 and problem in proc.stderr


# -- uci -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uci_engine():
    with UciEngine(PERFT + ["uci"]) as engine:
        yield engine


@pytest.mark.parametrize("fen, depth, moves", CASES, ids=IDS)
def test_uci_adapter_drives_our_uci_mode(uci_engine, fen, depth, moves):
    # the adapter sends UCI_Chess960 when the position needs it, isready, position fen ... moves ..., go perft
    assert uci_engine.divide(fen, depth, list(moves)) == reference(fen, depth, moves)


def test_python_chess_engine_handshake_and_options():
    engine = chess.engine.SimpleEngine.popen_uci(PERFT + ["uci", "--tt"], timeout=60)
    try:
        assert engine.id["name"].startswith("perft-oracle ")
        assert engine.options["UCI_Chess960"].type == "check" and engine.options["UCI_Chess960"].default is False
        assert engine.options["Threads"].type == "spin" and engine.options["Hash"].type == "spin"
        engine.configure({"Threads": 2, "Hash": 16})
        engine.ping()  # isready / readyok
    finally:
        engine.quit()


def test_uci_starting_options_lie_within_their_advertised_ranges():
    """``perft uci --tt --tt-mb 0.5`` advertised ``Hash ... default 0 min 1``, ``--tt-mb 2000000`` and
    ``--threads 2000`` defaults past their max, and python-chess's chess.engine refused to start it;
    ``--threads 2000`` started and failed at every go perft (session 43's hunt). Such starting values
    are one error line now; ones in range are advertised as given and python-chess takes them."""
    for flags, words in ((["--tt", "--tt-mb", "0.5"], "--tt-mb must be a whole number of MiB in 1..1048576"),
                         (["--tt", "--tt-mb", "2000000"], "got 2000000 (UCI's Hash option)"),
                         (["--threads", "2000"], "--threads must be an integer in 1..1024, got 2000")):
        p = subprocess.run(PERFT + ["uci", *flags], input="uci\n", capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.startswith("perft: error: ") and words in p.stderr, p
    engine = chess.engine.SimpleEngine.popen_uci(PERFT + ["uci", "--tt", "--tt-mb", "1048576", "--threads", "3"],
                                                 timeout=60)
    try:
        assert engine.options["Hash"].default == 1048576 == engine.options["Hash"].max
        assert engine.options["Threads"].default == 3
    finally:
        engine.quit()


def session(*lines: str, **options) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    uci = UciSession(out=out, err=err, **options)
    for line in lines:
        if not uci.handle(line):
            break
    return out.getvalue(), err.getvalue()


def test_go_perft_prints_stockfish_divide_format():
    out, err = session("position startpos moves e2e4", "go perft 2")
    lines = out.split("\n")
    assert lines[-3:] == ["", "Nodes searched: 600", ""] and err == ""
    assert {m: int(n) for m, n in (line.split(": ") for line in lines[:-3])} == reference(chess.STARTING_FEN, 2, ["e2e4"])


def test_uci_chess960_option_writes_castling_king_takes_rook():
    standard, _ = session(f"position fen {KIWIPETE}", "go perft 1")
    chess960, _ = session("setoption name UCI_Chess960 value true", f"position fen {KIWIPETE}", "go perft 1")
    assert "e1g1: 1" in standard and "e1h1: 1" not in standard
    assert "e1h1: 1" in chess960 and "e1g1: 1" not in chess960


def test_unknown_commands_are_ignored_and_said_on_stderr():
    out, err = session("xyzzy", "joho isready", "go depth 5", "setoption name Frob value 3", "isready", "quit", "isready")
    assert out == "readyok\ninfo string perft uci only counts: use 'go perft N'\nbestmove 0000\nreadyok\n"
    assert "ignored unknown token 'xyzzy'" in err and "ignored unknown token 'joho'" in err
    assert "ignored setoption 'name Frob value 3'" in err  # and nothing after quit


def test_tokens_after_the_perft_depth_are_ignored_and_said():
    """'go perft 2 3' counts perft 2, as Stockfish does, and says the 3 was not read."""
    out, err = session("position startpos", "go perft 2 3 x")
    plain, quiet = session("position startpos", "go perft 2")
    assert out == plain and out.endswith("Nodes searched: 400\n")
    assert "ignored '3 x' after 'go perft 2'" in err and "ignored" not in quiet


def test_a_bad_position_leaves_none_until_the_next():
    out, err = session("position fen not a fen", "go perft 1", "position startpos moves e2e5", "go perft 1",
                       "ucinewgame", "go perft 1")
    assert "error: fields: expected 6 fields" in err and "move 1 of the moves" in err
    assert err.count("go perft: no position") == 2
    counted = "".join(f"{m}: 1\n" for m in sorted(reference(chess.STARTING_FEN, 1, ()))) + "\nNodes searched: 20\n"
    assert [line for line in out.splitlines(True) if not line.startswith("info string error: ")] == counted.splitlines(True)
    assert out.count("info string error: ") == 4


def test_perft_diff_drives_our_uci_mode(capsys):
    assert main(["diff", "--engine", f"{sys.executable} -P -m perft_cli uci", KIWIPETE, "2"]) == 0
    assert "agree" in capsys.readouterr().out
