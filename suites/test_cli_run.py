"""``perft run``: Stockfish's divide format, the JSON object, and one-line errors with exit status 2.

Most tests call ``perft_cli.main(argv)`` in-process (capsys); the subprocess tests run the
entry point in a fresh interpreter, and the installed ``perft`` console script when it is on PATH.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import chess
import pytest

import perft_core
from perft_cli import main

START = chess.STARTING_FEN
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
XFEN_00 = "r1k1r2q/p1ppp1pp/8/8/8/8/P1PPP1PP/R1K1R2Q w KQkq - 0 1"  # X-FEN, needs Chess960
SHREDDER = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
PROMOTIONS = "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1"
EP = "rnbqkb1r/ppppp1pp/7n/4Pp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
MOVE_LINE = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?: \d+$")


def pychess_divide(fen: str, depth: int, chess960: bool) -> dict[str, int]:
    board = chess.Board(fen, chess960=chess960)

    def count(depth: int) -> int:
        if depth == 0:
            return 1
        total = 0
        for move in board.legal_moves:
            board.push(move)
            total += count(depth - 1)
            board.pop()
        return total

    split = {}
    for move in board.legal_moves:
        uci = board.uci(move, chess960=chess960)
        board.push(move)
        split[uci] = count(depth - 1)
        board.pop()
    return split


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``perft *argv`` run in-process."""
    try:
        status = main(list(argv))
    except SystemExit as exc:  # tolerated, but main should return the status
        status = exc.code
    out, err = capsys.readouterr()
    return (0 if status is None else status), out, err


def parse_divide(out: str) -> tuple[dict[str, int], int]:
    """Stockfish's ``go perft`` output: "move: count" lines (sorted), a blank line, "Nodes searched: N"."""
    assert out.endswith("\n")
    lines = out[:-1].split("\n")
    assert lines[-2] == "", out
    total = re.fullmatch(r"Nodes searched: (\d+)", lines[-1])
    assert total, out
    moves = lines[:-2]
    assert all(MOVE_LINE.match(line) for line in moves), out
    assert moves == sorted(moves), "move lines are sorted by move"
    split = {line.split(": ")[0]: int(line.split(": ")[1]) for line in moves}
    assert len(split) == len(moves), "each move once"
    return split, int(total.group(1))


@pytest.mark.parametrize(
    "fen, depth, flags, chess960",
    [
        (START, 3, [], False),
        (KIWIPETE, 2, [], False),
        (KIWIPETE, 2, ["--chess960"], True),
        (XFEN_00, 2, ["--chess960"], True),
        (SHREDDER, 2, [], True),  # Chess960 inferred from the Shredder letters
        (PROMOTIONS, 2, [], False),
        (EP, 2, ["--threads", "2"], False),
    ],
    ids=["start", "kiwipete", "kiwipete-960", "xfen", "shredder", "promotions", "ep-threads"],
)
def test_divide_output(capsys, fen, depth, flags, chess960):
    status, out, err = run(capsys, "run", fen, str(depth), "--divide", *flags)
    assert status == 0, err
    split, total = parse_divide(out)
    assert split == pychess_divide(fen, depth, chess960)
    assert total == sum(split.values())


def test_castling_notation_follows_chess960_flag(capsys):
    standard, _ = parse_divide(run(capsys, "run", KIWIPETE, "1", "--divide")[1])
    chess960, _ = parse_divide(run(capsys, "run", KIWIPETE, "1", "--divide", "--chess960")[1])
    assert {"e1g1", "e1c1"} <= standard.keys() and not {"e1h1", "e1a1"} & standard.keys()
    assert {"e1h1", "e1a1"} <= chess960.keys() and not {"e1g1", "e1c1"} & chess960.keys()


def test_divide_depth_zero(capsys):
    status, out, _ = run(capsys, "run", START, "0", "--divide")
    assert status == 0
    assert out == "\nNodes searched: 1\n"


def test_plain_output(capsys):
    status, out, err = run(capsys, "run", START, "4")
    assert status == 0
    assert out == "Nodes searched: 197281\n"
    assert err.strip(), "a timing line on stderr"
    assert "Traceback" not in err


@pytest.mark.parametrize("divide", [False, True])
def test_json(capsys, divide):
    argv = ["run", KIWIPETE, "3", "--json"] + (["--divide"] if divide else [])
    status, out, err = run(capsys, *argv)
    assert status == 0, err
    data = json.loads(out)
    assert set(data) == {"fen", "depth", "nodes", "divide", "seconds", "nodes_per_second", "backend", "version"}
    assert data["fen"] == KIWIPETE
    assert data["depth"] == 3 and type(data["depth"]) is int
    assert data["nodes"] == 97862 and type(data["nodes"]) is int
    assert isinstance(data["seconds"], (int, float)) and data["seconds"] >= 0
    assert isinstance(data["nodes_per_second"], (int, float)) and data["nodes_per_second"] >= 0
    assert data["backend"] == "cpu"
    assert data["version"] == perft_core.__version__
    if divide:
        assert data["divide"] == pychess_divide(KIWIPETE, 3, chess960=False)
    else:
        assert data["divide"] is None


BAD_INPUT = {
    "fen-garbage": ["run", "not a fen", "1"],
    "fen-five-fields": ["run", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0", "1"],
    "fen-bad-piece": ["run", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1", "1"],
    "fen-bad-castling": ["run", "4k3/8/8/8/8/8/8/4K3 w K - 0 1", "1"],
    "fen-bad-ep": ["run", "4k3/8/8/8/8/8/8/4K3 w - e9 0 1", "1"],
    "fen-no-king": ["run", "8/8/8/8/8/8/8/4K3 w - - 0 1", "1"],
    "depth-negative": ["run", START, "-1"],
    "depth-word": ["run", START, "x"],
    "depth-float": ["run", START, "2.5"],
    "depth-missing": ["run", START],
    "backend": ["run", START, "1", "--backend", "tpu"],
    "threads-zero": ["run", START, "1", "--threads", "0"],
    "unknown-option": ["run", START, "1", "--frobnicate"],
}


@pytest.mark.parametrize("argv", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_and_status_2(capsys, argv):
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perft: error: "), err


PERFT = shutil.which("perft")
ENTRY_POINT = [sys.executable, "-P", "-c", "import sys; from perft_cli import main; sys.exit(main())"]  # -P: no cwd on sys.path


def subprocess_run(argv: list[str]) -> subprocess.CompletedProcess:
    # The child imports the same perft_core as this test process: the installed package under CI,
    # the source tree when it was built in place.
    import perft_core

    home = str(Path(perft_core.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")])))
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


COMMANDS = [
    pytest.param(ENTRY_POINT, id="entry-point"),
    pytest.param([PERFT or "perft"], id="console-script", marks=pytest.mark.skipif(
        PERFT is None, reason="the `perft` console script is not on PATH (pip install -e .)")),
]


@pytest.mark.parametrize("command", COMMANDS)
def test_subprocess_divide(command):
    proc = subprocess_run(command + ["run", KIWIPETE, "2", "--divide"])
    assert proc.returncode == 0, proc.stderr
    split, total = parse_divide(proc.stdout)
    assert split == pychess_divide(KIWIPETE, 2, chess960=False) and total == 2039


@pytest.mark.parametrize("command", COMMANDS)
def test_subprocess_bad_fen(command):
    proc = subprocess_run(command + ["run", "not a fen", "1"])
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perft: error: "), proc.stderr


def test_json_with_gpu_tables_has_statistics_per_remaining_depth(capsys):
    """Issue 27: `perft run --tt --json` on a GPU backend shows the tables' probes, hits, host cache
    probes and hits of this count per remaining depth (the root's own depth is one host probe)."""
    status, out, err = run(capsys, "run", KIWIPETE, "3", "--backend", "gpu-emulated", "--tt", "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["nodes"] == 97862
    by_depth = data["tables"]["by_depth"]
    assert by_depth["3"]["host_probes"] == 1 and by_depth["3"]["probes"] == 0
    status, out, err = run(capsys, "run", KIWIPETE, "3", "--backend", "gpu-emulated", "--tt", "--json")
    again = json.loads(out)["tables"]["by_depth"]["3"]
    assert again["host_probes"] == 1 and again["host_hits"] == 1  # this count's own figures, answered from the cache
    # Startpos perft 5 in one BFS call: its fused leaf's 8,902 moves reach A083276's 5,362 ply-3 positions.
    status, out, err = run(capsys, "run", "startpos", "5", "--backend", "gpu-emulated", "--tt", "--json")
    assert status == 0, err
    assert json.loads(out)["tables"]["leaf_merge"] == {"moves": 8902, "positions": 5362}
    status, out, err = run(capsys, "run", "startpos", "5", "--backend", "gpu-emulated", "--tt", "--json")
    assert json.loads(out)["tables"]["leaf_merge"] == {"moves": 0, "positions": 0}  # answered by the host cache


@pytest.mark.parametrize("flags", [(), ("--stats",)])
def test_a_small_counts_speed_line_names_its_unit(capsys, monkeypatch, flags):
    """README: speeds print with their unit (``400 k nodes/s``), never ``0 M nodes/s``: perft 1's
    20 nodes took the summary line to "0.0 M nodes/s" (found by session 32's edge hunt)."""
    import time

    clock = iter(range(10**6))  # a slow clock: every reading half a second after the last
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock) / 2)
    status, out, err = run(capsys, "run", "startpos", "1", *flags)
    monkeypatch.undo()
    assert status == 0
    line = [x for x in err.splitlines() if x.startswith("perft 1")][-1]
    assert re.search(r"\(\d[\d.,]* (?:[kMG] )?nodes/s, cpu\)$", line), line
    assert not re.search(r"[ (]0(?:\.0)? [kMG] nodes/s", line), line  # 20 nodes in 1.5 s: "13 nodes/s"
