"""Where positions come from: ``startpos``, ``--moves``, FEN / EPD lines on standard input or in a
file (``perft run -``, ``perft run FILE``) with their EPD perft operations checked, and a
``chess.Board`` handed to the API. Also the command's shape: bare ``perft``, ``--version``, every
subcommand's help (description, example, the exit statuses) and the one exit-status rule.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import chess
import pytest

import perft_core
from oracle.engines import PythonChessEngine
from perft_cli import build_parser, main
from perft_core import cliargs
from perft_core.positions import read_epd

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
SHREDDER = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"


def run(capsys, *argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def pychess(fen: str, depth: int, moves=()) -> int:
    return PythonChessEngine().perft(fen, depth, list(moves))


# -- startpos and --moves ------------------------------------------------------------------------


def test_startpos_with_moves(capsys):
    status, out, _ = run(capsys, "run", "startpos", "4", "--moves", "e2e4", "e7e5")
    assert status == 0 and out == f"Nodes searched: {pychess(chess.STARTING_FEN, 4, ['e2e4', 'e7e5'])}\n"
    status, out, _ = run(capsys, "run", "startpos", "3", "--json")
    assert json.loads(out)["nodes"] == 8902 and json.loads(out)["fen"] == chess.STARTING_FEN


def test_moves_divide_and_chess960_castling(capsys):
    status, out, _ = run(capsys, "run", KIWIPETE, "2", "--moves", "e1g1", "--divide")
    want = PythonChessEngine().divide(KIWIPETE, 2, ["e1g1"])
    assert status == 0 and out.endswith(f"\nNodes searched: {sum(want.values())}\n")
    assert {line.split(": ")[0]: int(line.split(": ")[1]) for line in out.splitlines()[:-2]} == want


@pytest.mark.parametrize("moves, problem", [
    (["e2e5"], "move 1 of the moves: 'e2e5' is not a legal move"),
    (["e2e4", "e2e4"], "move 2 of the moves after e2e4"),
    (["castle"], "malformed UCI move"),
])
def test_bad_moves_are_one_line_and_status_2(capsys, moves, problem):
    status, out, err = run(capsys, "run", "startpos", "2", "--moves", *moves)
    assert status == 2 and out == "" and err.count("\n") == 1 and problem in err


def test_api_takes_a_chess_board():
    board = chess.Board()
    board.push_uci("e2e4")
    assert perft_core.perft(board, 3) == pychess(chess.STARTING_FEN, 3, ["e2e4"])
    board960 = chess.Board(SHREDDER, chess960=True)
    assert perft_core.divide(board960, 2) == PythonChessEngine().divide(SHREDDER, 2)
    ep = chess.Board("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")
    assert "e5f6" in perft_core.divide(ep, 1)  # the en passant square survives the hand-over
    with pytest.raises(TypeError, match="chess.Board"):
        perft_core.perft(42, 1)


def test_api_takes_a_subclass_of_chess_board_as_the_board():
    """A user's subclass of chess.Board is a chess.Board (the docstrings accept one): it was refused
    with a TypeError, its class module not being python-chess's (found by session 32's edge hunt)."""
    class Board(chess.Board):
        pass

    board = Board(KIWIPETE)
    board.push_uci("e2a6")
    assert perft_core.perft(board, 2) == perft_core.perft(board.fen(), 2) > 0
    assert perft_core.divide(Board(), 1) == perft_core.divide(chess.STARTING_FEN, 1)


@pytest.mark.parametrize("variant", [v for v in __import__("chess.variant").variant.VARIANTS if v.uci_variant != "chess"],
                         ids=lambda v: v.uci_variant)
def test_api_refuses_a_variant_board(variant):
    """A chess.variant board has rules of its own: counting it as chess gave a wrong count with no
    word (an atomic or antichess start position counted 8,902 at depth 3). Every API entry refuses
    it, naming the variant, before any count."""
    for count in (perft_core.perft, perft_core.divide, perft_core.perft_stats):
        with pytest.raises(ValueError, match=f"plays the '{variant.uci_variant}' variant"):
            count(variant(), 3)


# -- many positions: standard input, a file, EPD operations --------------------------------------


EPD = f"""# a comment, then a blank line

{KIWIPETE.rsplit(' ', 2)[0]} ;D1 48 ;D2 2039
startpos
8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1
{SHREDDER.rsplit(' ', 2)[0]} id "shredder"; D1 21;
"""


def test_stdin_lines_one_result_each_epd_checked(capsys, monkeypatch):
    status, out, err = run(capsys, "run", "-", "2", "--json", stdin=EPD, monkeypatch=monkeypatch)
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and err == ""
    assert [r["line"] for r in records] == [3, 4, 5, 6]
    assert [r["nodes"] for r in records] == [2039, 400, 191, pychess(SHREDDER, 2)]
    assert [r["expected"] for r in records] == [2039, None, None, None]  # only an EPD D2 operation is checked at depth 2
    assert [r["status"] for r in records] == ["agrees", "counted", "counted", "counted"]
    assert records[3]["id"] == "shredder"


def test_without_depth_every_epd_operation_is_counted(capsys, tmp_path):
    path = tmp_path / "mine.epd"
    path.write_text(EPD.replace("startpos\n", "").replace("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1\n", ""))
    status, out, _ = run(capsys, "run", str(path))
    assert status == 0
    assert out.splitlines()[0].startswith("line 3 depth 1: 48 nodes, expected 48: agrees")
    assert out.splitlines()[2].startswith("line 4 shredder depth 1: 21 nodes, expected 21: agrees")
    assert len(out.splitlines()) == 3


def test_a_wrong_epd_count_exits_1_whatever_else_happened(capsys, tmp_path):
    path = tmp_path / "wrong.epd"
    path.write_text(f"{KIWIPETE} ;D1 48 ;D2 2040\nnot a fen at all here ;D1 3\n{KIWIPETE} ;D1 48\n")
    status, out, err = run(capsys, "run", str(path))
    assert status == 1  # a count differs (line 1, depth 2), although line 2 could not be read
    assert "line 1 depth 2: 2,039 nodes, expected 2,040: DIFFERS" in out
    assert f"perft: error: {path}:2: board: expected 8 ranks" in err
    assert "line 3 depth 1: 48 nodes, expected 48: agrees" in out  # the lines after a bad one still count


def test_positions_input_errors(capsys, tmp_path, monkeypatch):
    status, out, err = run(capsys, "run", "-", "2", stdin="# nothing\n", monkeypatch=monkeypatch)
    assert status == 2 and err == "perft: error: no position in standard input\n"
    status, out, err = run(capsys, "run", str(tmp_path / "none.epd"), "2")
    assert status == 2 and "does not exist" in err
    status, out, err = run(capsys, "run", "-", stdin=f"{KIWIPETE}\n", monkeypatch=monkeypatch)
    assert status == 2 and "perft: error: stdin:1: no DEPTH given and no EPD perft operation" in err
    status, out, err = run(capsys, "run", "-", "1", "--divide", stdin=f"{KIWIPETE}\n", monkeypatch=monkeypatch)
    assert status == 2 and "--divide counts one position" in err
    path = tmp_path / "one.epd"
    path.write_text(f"{KIWIPETE}\n")
    status, out, err = run(capsys, "run", str(path), "1", "--stats")
    assert status == 2 and "--stats counts one position" in err


@pytest.mark.parametrize("flag", ["--stats", "--divide"])
@pytest.mark.parametrize("position, said", [("", "got an empty path"), ("rnbqkbnr/pppppppp", "does not exist")])
def test_a_position_that_is_no_fen_and_no_file_is_named_before_the_one_position_rule(capsys, flag, position, said):
    """``perft run "" 1 --stats`` said "--stats counts one position; ... not a file" when no file
    was given (session 41's edge hunt): the POSITION is now named first, as without the flag."""
    status, out, err = run(capsys, "run", position, "1", flag)
    assert status == 2 and out == ""
    assert err.startswith("perft: error: argument POSITION: ") and said in err and "counts one position" not in err


def test_read_epd_uses_the_engines_fen_words_and_python_chess_operations():
    line = read_epd(f"{KIWIPETE.rsplit(' ', 2)[0]} hmvc 3; fmvn 7; D1 48; D2 2039; id \"kiwi\";", 9)
    assert (line.fen, line.counts, line.id, line.line) == (KIWIPETE.replace("0 1", "3 7"), {1: 48, 2: 2039}, "kiwi", 9)
    with pytest.raises(perft_core.FenError, match="^castling: "):
        read_epd("4k3/8/8/8/8/8/8/4K3 w K - ;D1 5")
    with pytest.raises(ValueError, match="EPD operation D1: expected a node count"):
        read_epd(f"{KIWIPETE} ;D1 4.5")


@pytest.mark.parametrize("counters, field", [("0 x", "fullmove"), ("-1 1", "halfmove"), ("1.5 1", "halfmove"),
                                             ("0 0", "fullmove")])
def test_a_lines_bad_counter_is_named_as_a_fen_field(counters, field):
    """A bad halfmove or fullmove field of a line is the FEN's error, as for a POSITION argument,
    not an "EPD operation '0'" (found by session 32's edge hunt)."""
    text = f"4k3/8/8/8/8/8/8/4K3 w - - {counters}"
    with pytest.raises(perft_core.FenError, match=f"^{field}: ") as info:
        read_epd(text + " ;D1 5")
    with pytest.raises(perft_core.FenError) as direct:
        perft_core.Position.from_fen(text)
    assert str(info.value) == str(direct.value)
    assert read_epd("4k3/8/8/8/8/8/8/4K3 w - - 3 9 ;D1 5").fen.endswith(" 3 9")


@pytest.mark.parametrize("operand", ["junk", "20x", "", "1e1", "e4"])
def test_a_depth_operation_that_is_not_a_count_is_named_in_our_words(operand):
    """python-chess reads a D<n> operand as a move, a float or an int() call; the message is ours."""
    with pytest.raises(ValueError) as info:
        read_epd(f"{KIWIPETE} ;D1 {operand}")
    assert str(info.value) == f"EPD operation D1: expected a node count (digits only), got {operand!r}"


# -- the command's shape -------------------------------------------------------------------------


def test_bare_perft_prints_usage_and_version(capsys):
    status, out, err = run(capsys)
    assert status == 2 and err.startswith("usage: perft") and "SUBCOMMAND" in err and "exit status" in err
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"perft-oracle {perft_core.__version__}\n"


def test_a_reader_that_goes_away_gets_status_141_and_no_error_line():
    """``perft ... | head``: the output's reader closed the pipe before the command wrote (its end
    closed at once, before Python has started). The command stops with 141, as a program killed
    by SIGPIPE, and writes nothing to stderr; it printed "perft: error: [Errno 32] Broken pipe"
    with status 2 (session 35's note)."""
    proc = subprocess.Popen([sys.executable, "-P", "-m", "perft_cli", "run", "startpos", "3", "--divide"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # -P: the installed package
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cliargs.PIPE_CLOSED == 141 and err == ""


def test_every_subcommand_help_has_a_description_an_example_and_the_exit_statuses():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) >= {"run", "perftree", "uci", "deep", "diff", "suite", "report"}
    for name, parser in sub.choices.items():
        text = parser.format_help()
        assert parser.description, name
        examples = text.split("examples:\n")[1].split("\n\n")[0]
        assert f"perft {name} " in examples, name
        assert text.rstrip().endswith(cliargs.EXIT_STATUS_HELP.rstrip()), name


@pytest.mark.parametrize("facts, status", [
    ({}, 0),
    ({"differ": True, "broken": True, "limited": True}, 1),  # a wrong count wins over everything
    ({"broken": True, "limited": True}, 2),
    ({"judged": False}, 2),
    ({"limited": True}, 3),
    ({"limited": True, "judged": False}, 3),
])
def test_the_exit_status_rule(facts, status):
    assert cliargs.exit_status(**facts) == status


def test_worst_combines_by_the_same_rule():
    assert cliargs.worst([0, 3, 2, 1, 0]) == 1 and cliargs.worst([0, 3, 2]) == 2 and cliargs.worst([0, 3]) == 3
    assert cliargs.worst([0, 0]) == 0 and cliargs.worst([]) == 2


def test_a_suite_with_a_wrong_count_and_a_crashed_engine_exits_1():
    from oracle.runner import RunResult, RowResult

    rows = [RowResult("s", "a", chess.STARTING_FEN, 1, 20, got=20, status="pass"),
            RowResult("s", "b", chess.STARTING_FEN, 2, 400, got=399, status="fail"),
            RowResult("s", "c", chess.STARTING_FEN, 3, 8902, status="error", error="crashed")]
    run = RunResult("e", None, ["s"], None, None, rows=rows)
    assert run.exit_status == 1
    run.rows = rows[::2]
    assert run.exit_status == 2
    run.rows = [rows[0], RowResult("s", "d", chess.STARTING_FEN, 4, 197281, status="skipped")]
    assert run.exit_status == 3
    run.rows = []
    assert run.exit_status == 2  # nothing was judged


def test_a_refused_line_is_one_error_and_the_others_still_count(capsys, monkeypatch):
    from perft_core import estimate

    monkeypatch.setattr(estimate, "DEFAULT_MAX_ESTIMATE_SECONDS", 1e-9)  # every count "takes too long"
    status, out, err = run(capsys, "run", "-", "2", stdin=f"{KIWIPETE}\nstartpos\n", monkeypatch=monkeypatch)
    assert status == 2 and out == ""
    assert err.count("perft: error: stdin:") == 2 and "add --force to count anyway" in err
    status, out, err = run(capsys, "run", "-", "2", "--force", stdin=f"{KIWIPETE}\nstartpos\n", monkeypatch=monkeypatch)
    assert status == 0 and len(out.splitlines()) == 2


def test_run_reads_the_bundled_csv_tables_as_perft_suite_does(capsys):
    """``perft run oracle/data/perftsuite.csv 2`` (README): every position once, its depth-2 row
    checked; it used to print one error line per row. The positions and counts are the ones
    ``perft suite`` reads from the same file (oracle.tables)."""
    from oracle import tables

    path = Path(tables.__file__).parent / "data" / "perftsuite.csv"
    status, out, err = run(capsys, "run", str(path), "2", "--json")
    records = [json.loads(line) for line in out.splitlines()]
    rows = [r for r in tables.load_file(str(path)) if r.depth == 2]
    assert status == 0 and err == ""
    assert [(r["id"], r["expected"], r["nodes"]) for r in records] == [(r.id, r.nodes, r.nodes) for r in rows]
    assert {r["status"] for r in records} == {"agrees"}


def test_a_csv_table_on_stdin_without_depth_counts_every_row_and_names_bad_rows(capsys, monkeypatch):
    table = ("fen,depth,nodes,id\n"
             f"{KIWIPETE},1,48,kiwi\n{KIWIPETE},2,2040,kiwi\n"
             "not a fen,1,3,bad\n"
             f"{chess.STARTING_FEN},x,20,start\n"
             f"{chess.STARTING_FEN},1,20,start\n")
    status, out, err = run(capsys, "run", "-", stdin=table, monkeypatch=monkeypatch)
    assert status == 1  # kiwi at depth 2 is 2,039, not 2,040
    assert out.splitlines() == [
        f"line 2 kiwi depth 1: 48 nodes, expected 48: agrees  ({KIWIPETE})",
        f"line 3 kiwi depth 2: 2,039 nodes, expected 2,040: DIFFERS  ({KIWIPETE})",  # its own row's line
        f"line 6 start depth 1: 20 nodes, expected 20: agrees  ({chess.STARTING_FEN})"]
    with pytest.raises(perft_core.FenError) as bad:  # the line names the problem in the engine's words
        perft_core.Position.from_fen("not a fen")
    assert err.splitlines() == [f"perft: error: stdin:4: {bad.value}",
                                "perft: error: stdin:5: the depth must be a non-negative integer, got 'x'"]


def test_a_table_header_in_any_case_and_a_byte_order_mark_are_read(capsys, monkeypatch, tmp_path):
    """'FEN, Depth ,Nodes' names the columns for perft run and perft suite alike, and a UTF-8 byte
    order mark (as some editors save) starts a file or standard input without being read as a piece."""
    from oracle import cli as oracle_cli

    table = tmp_path / "t.csv"
    table.write_text(f"\ufeffFEN, Depth ,Nodes\n{chess.STARTING_FEN},1,20\n{chess.STARTING_FEN},2,401\n", encoding="utf-8")
    status, out, err = run(capsys, "run", str(table))
    assert status == 1 and err == "" and out.splitlines() == [
        f"line 2 depth 1: 20 nodes, expected 20: agrees  ({chess.STARTING_FEN})",
        f"line 3 depth 2: 400 nodes, expected 401: DIFFERS  ({chess.STARTING_FEN})"]
    assert oracle_cli.main(["suite", str(table), "--engine", "python-chess"]) == 1
    capsys.readouterr()
    epd = tmp_path / "b.epd"
    epd.write_text(f"\ufeff{chess.STARTING_FEN} ;D1 20\n", encoding="utf-8")
    status, out, err = run(capsys, "run", str(epd))
    assert (status, err) == (0, "") and "expected 20: agrees" in out
    status, out, err = run(capsys, "run", "-", "1", stdin="\ufeffstartpos\n", monkeypatch=monkeypatch)
    assert (status, err) == (0, "") and "20 nodes" in out


def test_a_csv_row_the_csv_reader_refuses_is_a_line_error_not_a_traceback(capsys, monkeypatch, tmp_path):
    """A lone carriage return inside a field (hypothesis found 'fen,depth,nodes\\n\\r0'): python's csv
    reader raises csv.Error, which went up as a traceback from perft run and perft suite alike. It is
    now that line's error: perft run goes on with the next line, perft suite refuses the file."""
    from oracle import cli as oracle_cli

    table = f"fen,depth,nodes\n\r0\n{chess.STARTING_FEN},1,20\n"
    status, out, err = run(capsys, "run", "-", stdin=table, monkeypatch=monkeypatch)
    assert status == 2 and "Traceback" not in err
    assert err == "perft: error: stdin:2: cannot read this CSV row: new-line character seen in unquoted field\n"
    assert out == f"line 3 depth 1: 20 nodes, expected 20: agrees  ({chess.STARTING_FEN})\n"
    path = tmp_path / "t.csv"
    path.write_text(table, newline="")
    assert oracle_cli.main(["suite", str(path), "--engine", "python-chess"]) == 2
    assert capsys.readouterr().err == f"perft: error: {path}:2: cannot read this CSV row: new-line character seen in unquoted field\n"


def test_a_numpy_integer_depth_is_the_integer_it_is():
    """``np.int64(3)`` as a depth was refused as "depth must be a non-negative integer, got
    np.int64(3)" (session 32's edge hunt): any numbers.Integral but a bool is taken as its int, in
    every API entry; a bool, a float and a negative NumPy integer are still refused."""
    import numpy as np

    start = chess.STARTING_FEN
    assert perft_core.perft(start, np.int64(3)) == 8902 and perft_core.perft(start, np.uint8(2)) == 400
    assert sum(perft_core.divide(start, np.int32(2)).values()) == 400
    assert perft_core.perft_stats(start, np.int64(2)).nodes == 400
    assert sum(s.nodes for s in perft_core.divide_stats(start, np.int16(2)).values()) == 400
    for bad in (True, 2.0, np.int64(-1)):
        with pytest.raises(ValueError, match="depth must be a non-negative integer"):
            perft_core.perft(start, bad)


@pytest.mark.parametrize("value", ["abc", "BASE", "0"])
def test_a_bad_perft_core_is_one_line_and_status_2(value, tmp_path):
    """PERFT_CORE names the CPU build; a bad one raised its ValueError while perft_cli was imported:
    a traceback and exit status 1, which means "a count differs" (a helper's hunt, session 33). Now
    one line and status 2, as every error of the command; without it the command counts. (The
    subprocesses run in tmp_path: `-m` puts the working folder first on sys.path, and a clean
    clone's tree has no built extension.)"""
    env = dict(os.environ, PERFT_CORE=value)
    out = subprocess.run([sys.executable, "-m", "perft_cli", "run", "startpos", "1"], env=env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == f"perft: error: PERFT_CORE must be one of base, v3, v3magic, got {value!r}"
    del env["PERFT_CORE"]  # the build this machine chooses
    ok = subprocess.run([sys.executable, "-m", "perft_cli", "run", "startpos", "2"], env=env, capture_output=True,
                        text=True, timeout=120, cwd=tmp_path)
    assert ok.returncode == 0 and "400" in ok.stdout


_HIDE_BASE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "perft_core._core_base":
            raise ImportError("No module named 'perft_core._core_base'")
        return None
sys.meta_path.insert(0, Hide())
from perft_cli import main
sys.exit(main(["run", "startpos", "1"]))
"""


def test_a_perft_core_build_that_is_not_installed_is_one_line_and_status_2(tmp_path):
    """PERFT_CORE=base where that build is not installed (a wheel may hold another) raised ImportError
    while perft_cli was imported: a traceback and status 1 (the same defect as a bad value). One line
    and status 2 now. The base build is hidden from the import system here."""
    env = dict(os.environ, PERFT_CORE="base")
    out = subprocess.run([sys.executable, "-c", _HIDE_BASE], env=env, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == "", out.stderr
    assert out.stderr == "perft: error: perft_core: no CPU extension built (No module named 'perft_core._core_base')\n"
