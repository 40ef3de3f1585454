"""What the oracle's verdicts may rest on, and the limits that bound them (session 36's oracle hunt):

- depth 0 judges no engine: ``BaseEngine.perft`` answers 1 there without asking it, so ``perft
  diff ... 0`` is refused as bad input (exit 2) and a depth-0 table row is not a pass (a run of
  depth-0 rows alone judged nothing: exit 2); ``perft run startpos 0`` (our own count) still works;
- ``--max-seconds`` (``perft diff``) and ``--localize-seconds`` (``perft suite``) bound each query
  of the *reference* too, as they bound the engine's (:func:`oracle.engines.time_limit`): our
  backend's count and python-chess's, each through its ``timeout``; before, the reference's
  divide of a deep root ran on for hours past the limit;
- a ``--verify-seed`` equal to the default key seed is refused before any work, with the message
  ``perft run`` gives (before, ``perft diff`` and ``perft suite`` took it and failed mid-walk, or
  passed).

The limit tests run the command in a child process with a wall-time cap far above the limit, so
that code without the bound fails them instead of hanging the test run.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import chess
import pytest

import perft_cli
from oracle import cli
from oracle.engines import EngineError, PythonChessEngine, time_limit
from oracle.runner import DEPTH_ZERO, RunResult, run_suite, select_rows


pytestmark = pytest.mark.core

STARTPOS_EPD = chess.STARTING_FEN.rsplit(" ", 2)[0]
DEFAULT_SEED = "0x5a0b215eedc0ffee"  # perft_core.zobrist's default key seed
CAP = 40  # seconds a limited command may take here at most (limits of 2-3 s, a loaded 2-core machine)


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def crash(tmp_path: Path) -> str:
    """An engine that fails whatever it is asked."""
    return script(tmp_path, "crash.sh", "exit 3\n")


def perft_child(*argv: str, cwd: Path) -> tuple[int, str, str, float]:
    """``perft ARGV`` in a child process (the installed package, as the tests import it: ``-P`` keeps
    the working folder off its path) within CAP seconds: status, stdout, stderr, seconds. Fails the
    test when it runs past CAP (the child is killed)."""
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-P", "-m", "perft_cli", *argv], cwd=cwd, capture_output=True,
                              text=True, timeout=CAP)
    except subprocess.TimeoutExpired:
        pytest.fail(f"perft {' '.join(argv)} ran past {CAP} s: the limit did not bound it")
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


# -- depth 0 judges no engine ---------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["perftree", "uci", "cli"])
def test_diff_at_depth_zero_is_refused_not_agreed(tmp_path, capsys, protocol):
    """The engine crashes on any query; before, ``perft diff ... 0`` said "agree: 1 nodes at depth 0",
    exit 0, without asking it."""
    engine = crash(tmp_path) + (" {fen} {depth}" if protocol == "cli" else "")
    status = cli.main(["diff", "--engine", engine, "--protocol", protocol, "startpos", "0"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "", (status, out, err)
    assert err.count("\n") == 1 and err.startswith("perft: error: depth 0: perft 0 is 1 by definition"), err
    assert "judges no engine" in err and "depth >= 1" in err and "agree" not in err


def test_diff_at_depth_zero_is_refused_for_our_engine_too(capsys):
    assert cli.main(["diff", "--engine", "cpu", "--json", "startpos", "0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "perft 0 is 1 by definition" in err


def test_a_depth_zero_row_alone_judges_nothing(tmp_path, capsys):
    """A CSV row ``fen,0,1`` passed (exit 0) though no engine was asked; now it is skipped as not
    judged, and a run of it alone judged nothing: exit 2, "NO VERDICT", not a stop (3)."""
    table = tmp_path / "zero.csv"
    table.write_text(f"fen,depth,nodes\n{chess.STARTING_FEN},0,1\n")
    status = cli.main(["suite", str(table), "--engine", "cpu", "--json"])
    out, err = capsys.readouterr()
    row = json.loads(out)["rows"][0]
    assert status == 2 and row["status"] == "skipped" and row["error"] == DEPTH_ZERO, (status, row)
    assert "perft: error: nothing was judged" in err and "at depth 0, which judges no engine" in err, err
    assert cli.main(["suite", str(table), "--engine", "cpu"]) == 2
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("NO VERDICT: nothing was judged") and "PASS" not in out, out


def test_a_depth_zero_row_beside_judged_rows_is_neither_a_pass_nor_a_stop(tmp_path, capsys):
    table = tmp_path / "mixed.csv"
    table.write_text(f"fen,depth,nodes\n{chess.STARTING_FEN},0,1\n{chess.STARTING_FEN},2,400\n")
    status = cli.main(["suite", str(table), "--engine", "cpu", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 0 and [r["status"] for r in data["rows"]] == ["skipped", "pass"], data["rows"]
    total = data["summary"][-1]
    assert total["passed"] == 1 and total["skipped"] == 1 and total["errors"] == 0
    assert cli.main(["suite", str(table), "--engine", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "PASS: 1 row agrees, 1 row at depth 0 not judged"


def test_run_suite_never_passes_a_depth_zero_row_of_a_bundled_table():
    """The bundled startpos and cpw tables hold depth-0 rows: listed, not counted as passes; the
    run still passes on its other rows."""
    names, rows = select_rows(["startpos"])
    rows = [r for r in rows if r.depth <= 2]
    assert any(r.depth == 0 for r in rows)
    run = run_suite(PythonChessEngine(), rows, suites=names, localize_failures=False)
    zero = [r for r in run.rows if r.depth == 0]
    assert zero and all(r.status == "skipped" and r.error == DEPTH_ZERO and r.got is None for r in zero)
    assert run.judged == len(rows) - len(zero) and run.exit_status == 0
    assert RunResult.from_dict(run.to_dict()).exit_status == 0  # a report read back says the same


def test_perft_run_at_depth_zero_still_counts(capsys):
    """``perft run`` is our own count, not a judgment of an engine: perft 0 is 1."""
    assert perft_cli.main(["run", "startpos", "0"]) == 0
    assert capsys.readouterr().out == "Nodes searched: 1\n"


# -- the limits bound the reference too -----------------------------------------------------


def test_diff_max_seconds_bounds_the_reference_with_a_divide(tmp_path):
    """A perftree engine that answers at once; the reference (our cpu backend) would count perft 11
    below the root's moves for hours: --max-seconds 2 ends the walk, exit 3, no verdict."""
    one = script(tmp_path, "one.sh", 'printf "e2e4 5\\n\\n5\\n"\n')
    status, out, err, seconds = perft_child("diff", "--protocol", "perftree", "--engine", one, "--reference", "cpu",
                                            "startpos", "12", "--max-seconds", "2", cwd=tmp_path)
    assert status == 3, (status, out, err)
    assert "no verdict" in out and "stopped at the time budget (2 s)" in out and "perft_core[cpu]" in out, out
    assert "perft: stopped: no verdict within --max-seconds" in err, err


def test_diff_max_seconds_bounds_the_reference_of_a_total_only_engine(tmp_path):
    """``--protocol cli`` (the drill): the reference's divide of startpos 9 is stopped at the limit."""
    five = script(tmp_path, "five.sh", 'echo "Nodes searched: 5"\n')
    status, out, err, seconds = perft_child("diff", "--protocol", "cli", "--engine", f"{five} {{fen}} {{depth}}",
                                            "--reference", "cpu", "startpos", "9", "--max-seconds", "2", cwd=tmp_path)
    assert status == 3 and "no verdict" in out and "stopped at the time budget (2 s)" in out, (status, out, err)
    assert "perft: stopped" in err and "perft: error" not in err, err


@pytest.mark.parametrize("side", ["reference", "engine"])
def test_diff_max_seconds_bounds_python_chess(tmp_path, side):
    """python-chess's own ``timeout`` (checked at its interior nodes; it had none) bounds it, as the
    reference (perft 7 below each missing root move) and as the engine under test (its divide 8)."""
    if side == "reference":
        one = script(tmp_path, "one.sh", 'printf "e2e4 5\\n\\n5\\n"\n')
        argv = ["--protocol", "perftree", "--engine", one, "--reference", "python-chess"]
    else:
        argv = ["--engine", "python-chess", "--reference", "cpu"]
    status, out, err, seconds = perft_child("diff", *argv, "startpos", "8", "--max-seconds", "2", cwd=tmp_path)
    assert status == 3, (status, out, err)
    assert "a query of python-chess was stopped at the time budget (2 s): timed out after 2 s" in out, out


def test_suite_localize_seconds_bounds_the_reference(tmp_path):
    """A total-only engine that says 5 for startpos perft 9: the row fails (exit 1, a count differs)
    and its localization, whose reference would count perft 9 for hours, gives up at
    --localize-seconds."""
    five = script(tmp_path, "five.sh", 'echo "Nodes searched: 5"\n')
    table = tmp_path / "deep.epd"
    table.write_text(f"{STARTPOS_EPD} ;D9 2439530234167\n")
    status, out, err, seconds = perft_child(
        "suite", str(table), "--protocol", "cli", "--engine", f"{five} {{fen}} {{depth}}", "--reference", "cpu",
        "--max-nodes", str(10**13), "--localize-seconds", "2", "--max-seconds", "3", "--json", cwd=tmp_path)
    assert status == 1, (status, out, err)
    row = json.loads(out)["rows"][0]
    assert row["status"] == "fail" and row["got"] == 5
    assert row["localization"]["kind"] == "gave_up", row["localization"]


def test_time_limit_bounds_a_python_chess_query_and_leaves_the_engine_as_it_was():
    engine = PythonChessEngine()
    before = dict(vars(engine))
    start = time.monotonic()
    with pytest.raises(EngineError, match="timed out after 0.3 s"):
        with time_limit(engine, 0.3):
            engine.perft(chess.STARTING_FEN, 5)  # about 6 s here
    assert time.monotonic() - start < CAP
    assert vars(engine).keys() == before.keys() and engine.timeout is None  # restored
    with time_limit(engine, 30):  # a query within the limit answers as before
        assert engine.perft(chess.STARTING_FEN, 3) == 8902
        assert engine.divide(chess.STARTING_FEN, 1, ["e2e4"])["e7e5"] == 1
    assert engine.perft(chess.STARTING_FEN, 2) == 400


# -- --verify-seed ---------------------------------------------------------------------------


def _perft_run_message(capsys) -> str:
    assert perft_cli.main(["run", "--tt", "--verify-seed", DEFAULT_SEED, "startpos", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perft: error: verify_seed must differ from the key seed"), err
    return err


def test_diff_refuses_the_default_seed_as_verify_seed_up_front(capsys):
    """Before, the walk ran (python-chess and the reference agree: exit 0), or failed mid-walk with
    a ValueError wrapped as an engine error."""
    message = _perft_run_message(capsys)
    status = cli.main(["diff", "--engine", "python-chess", "--reference", "cpu", "--reference-tt",
                       "--verify-seed", DEFAULT_SEED, "startpos", "3"])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err == message, (status, out, err)
    assert cli.main(["diff", "--engine", "python-chess", "--reference", "cpu", "--reference-tt",
                     "--verify-seed", "0x1234", "startpos", "2"]) == 0  # another seed is taken


def test_suite_refuses_the_default_seed_as_verify_seed_up_front(tmp_path, capsys):
    message = _perft_run_message(capsys)
    table = tmp_path / "t.csv"
    table.write_text(f"fen,depth,nodes\n{chess.STARTING_FEN},2,400\n")
    status = cli.main(["suite", str(table), "--engine", "python-chess", "--reference", "cpu", "--reference-tt",
                       "--verify-seed", DEFAULT_SEED])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err == message, (status, out, err)


def test_a_fen_perft_core_refuses_is_bad_input_before_any_engine_runs(capsys):
    """A fullmove number of 0: python-chess reads it, perft_core does not. It was an engine failure
    ("engine 'perft_core[cpu]': FenError while counting") half-way through the diff; it is bad input,
    said in one line before any engine runs."""
    status = perft_cli.main(["diff", "--engine", "python-chess", "4k3/8/8/8/8/8/8/4K3 w - - 0 0", "2"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("perft: error: bad FEN") and "fullmove" in err
    assert "engine" not in err and len(err.strip().splitlines()) == 1


# -- the judge's count at the end of a walk is inside the walk's time budget -------------------------

def _judged(judge, depth: int, ref_total: int, deadline: float | None):
    """oracle.drill._judge on startpos, whose reference listed the 20 true moves; the Localization's
    fields that _judge reads and writes."""
    from types import SimpleNamespace

    from oracle.drill import _judge

    board = chess.Board()
    result = SimpleNamespace(levels=[SimpleNamespace(reference={board.uci(m): 1 for m in board.legal_moves})],
                             judged=[], confirmed=None)
    _judge(result, judge, board, depth, ref_total, 5_000_000, deadline)
    return result


def test_the_judges_count_stops_at_the_walks_time_budget():
    """drill's last python-chess count (up to 5 M nodes, seconds of Python) ran outside
    ``--localize-seconds``: it is now bounded by what is left of it, and a count stopped there is
    "not re-counted" (it judges nothing), as one over the node budget is."""
    t0 = time.monotonic()
    result = _judged(PythonChessEngine(), 5, 4_865_609, t0 + 0.3)
    assert time.monotonic() - t0 < CAP / 4
    assert "was stopped at the time budget, not re-counted" in result.judged[-1], result.judged
    assert result.confirmed is True  # the move lists agree; no count was compared


def test_the_judge_is_not_asked_once_the_budget_is_spent():
    class Unasked(PythonChessEngine):
        def perft(self, fen, depth):
            raise AssertionError("asked after the budget")

    result = _judged(Unasked(), 5, 4_865_609, time.monotonic() - 1.0)
    assert "not re-counted: the time budget was spent" in result.judged[-1], result.judged


def test_the_judge_counts_when_there_is_time():
    for deadline in (None, time.monotonic() + CAP):
        result = _judged(PythonChessEngine(), 2, 400, deadline)
        assert "it counted 400 nodes at depth 2 there (reference 400)" in result.judged[-1] and result.confirmed
    assert not _judged(PythonChessEngine(), 2, 401, None).confirmed


def test_a_judge_that_fails_within_the_budget_is_not_called_stopped():
    """Only a count the budget stopped is "not re-counted"; a judge that fails with time left is an
    error, never a claim about the time budget."""
    class Broken(PythonChessEngine):
        def perft(self, fen, depth):
            raise EngineError(self.name, "crashed")

    with pytest.raises(EngineError, match="crashed"):
        _judged(Broken(), 2, 400, time.monotonic() + CAP)
