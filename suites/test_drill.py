"""The drill that localizes total-only engines (oracle.drill), in process and through ``perft diff
--protocol cli`` with the fake total-only program (fake_engines/total_only.py).

Every verdict is checked against python-chess, independently of the drill: the path is legal, the
final FEN is the position after it, the planted engine really miscounts there and the reference's
counts are python-chess's.
"""
from __future__ import annotations

import json
import subprocess
import sys

import chess
import pytest

from oracle.drill import drill, locate
from oracle.engines import CoreEngine, EngineError, PythonChessEngine, board_from, fen_of
from oracle.localize import TREE_WALK, Localization

from oracle_fakes import FAKES, TotalOnlyFake, broken

START = chess.STARTING_FEN
SMALL = "7k/8/8/2p5/8/8/1P6/K7 w - - 0 1"  # en passant (c4xb3) first possible at ply 4
CPW3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
TOTAL_ONLY = FAKES / "total_only.py"


def pychess_perft(fen: str, depth: int) -> int:
    return PythonChessEngine().perft(fen, depth)


def check_path(loc: Localization) -> chess.Board:
    """The path is legal from the root and leads to ``loc.fen``; every level's FEN is its node."""
    board = board_from(loc.root_fen)
    for level in loc.levels:
        assert level.fen == fen_of(board)
        if len(level.path) < len(loc.path):
            board.push_uci(loc.path[len(level.path)])
    assert fen_of(board) == loc.fen
    return board


def test_good_engine_agrees():
    engine = TotalOnlyFake("good")
    loc = drill(engine, CoreEngine("cpu"), SMALL, 4)
    assert loc.kind == "agree" and loc.method == "children"
    assert loc.levels[0].engine_total == loc.levels[0].reference_total == pychess_perft(SMALL, 4)
    assert engine.calls == 1 and loc.engine_calls == 1  # agreement costs one call


def test_move_generation_bug_at_depth_4_names_the_missing_move():
    engine = TotalOnlyFake("no-ep")
    loc = drill(engine, CoreEngine("cpu"), SMALL, 4)
    assert loc.kind == "moves" and loc.depth_left == 1 and len(loc.path) == 3
    board = check_path(loc)
    legal = sorted(board.uci(m) for m in board.legal_moves)
    assert loc.legal == legal
    assert any(board.is_en_passant(m) for m in board.legal_moves)  # the planted bug's move is here
    assert loc.missing == [board.uci(m) for m in board.legal_moves if board.is_en_passant(m)] and loc.extra == []
    assert len(broken.no_en_passant(board)) == loc.levels[-1].engine_total != len(legal) == loc.levels[-1].reference_total
    for level in loc.levels[:-1]:  # on the way down: the child descended into really differs
        child = board_from(level.fen)
        child.push_uci(level.mismatch)
        assert level.reference[level.mismatch] == pychess_perft(fen_of(child), level.depth - 1)
        assert level.engine[level.mismatch] != level.reference[level.mismatch]
    assert loc.confirmed is True and any("python-chess" in s for s in loc.judged)
    # one engine call for the root, one per child at each level above the last, the final node
    # asked again (its count must not change), then the probes
    assert loc.engine_calls == 2 + sum(len(level.engine) for level in loc.levels) + loc.evidence["engine_calls"]


def test_children_stop_once_the_difference_is_explained():
    loc = drill(TotalOnlyFake("no-ep"), PythonChessEngine(), SMALL, 4)
    root = loc.levels[0]
    assert len(root.engine) < len(list(board_from(SMALL).legal_moves)) and root.engine_sum is None
    asked = list(root.engine)
    assert asked == sorted(root.reference, key=lambda m: (-root.reference[m], m))[:len(asked)]  # largest first
    assert sum(root.engine[m] - root.reference[m] for m in asked) == root.engine_total - root.reference_total


def test_illegal_king_step_from_the_start_position():
    loc = drill(TotalOnlyFake("illegal-king-step"), CoreEngine("cpu"), START, 4)
    assert loc.kind == "moves"
    board = check_path(loc)
    assert len(broken.illegal_king_step(board)) == len(list(board.legal_moves)) + 1
    assert loc.extra == [board.uci(m) for m in broken.illegal_king_step(board) if not board.is_legal(m)]


def test_tree_walk_bug_children_agree_node_differs():
    engine = TotalOnlyFake("walk")
    loc = drill(engine, CoreEngine("cpu"), CPW3, 5)
    assert loc.kind == "tree_walk" and loc.depth_left == 4 and len(loc.path) == 1
    board = check_path(loc)
    last = loc.levels[-1]
    right = pychess_perft(loc.fen, 4)
    assert last.reference_total == right == last.engine_sum  # every child agrees ...
    assert last.engine_total != right  # ... but the node does not
    children = {}
    for move in board.legal_moves:
        board.push(move)
        children[board.peek().uci()] = pychess_perft(fen_of(board), 3)
        board.pop()
    assert last.engine == children
    text = loc.describe()
    assert TREE_WALK in text and str(last.engine_total) in text and str(last.engine_sum) in text


def test_tree_walk_at_the_root():
    loc = drill(TotalOnlyFake("walk"), PythonChessEngine(), CPW3, 4)
    assert loc.kind == "tree_walk" and loc.path == []
    assert loc.levels[0].engine_sum == pychess_perft(CPW3, 4) != loc.levels[0].engine_total


def test_largest_difference_first():
    loc = drill(TotalOnlyFake("walk"), PythonChessEngine(), CPW3, 5)
    root = loc.levels[0]
    diffs = {m: abs(root.engine[m] - root.reference[m]) for m in root.engine}
    assert sum(1 for d in diffs.values() if d) > 1  # several children differ here
    assert diffs[root.mismatch] == max(diffs.values())
    assert root.mismatch == min(m for m, d in diffs.items() if d == max(diffs.values()))


@pytest.mark.parametrize("backend", ["cpu", "gpu-emulated"])
def test_reference_recount_with_a_second_seed(backend):
    reference = CoreEngine(backend, tt=True, verify_seed=0x1234)
    loc = drill(TotalOnlyFake("no-ep"), reference, SMALL, 4)
    assert loc.kind == "moves"
    assert sum("re-counted" in s and "0x1234" in s for s in loc.judged) == len(loc.path)


def test_a_reference_whose_recount_disagrees_is_not_believed():
    class Collides(CoreEngine):
        def recount(self, fen, depth, moves=()):
            return super().recount(fen, depth, moves) + 1

    with pytest.raises(EngineError, match="re-count under key seed"):
        drill(TotalOnlyFake("no-ep"), Collides("cpu", tt=True, verify_seed=7), SMALL, 4)


def test_gpu_emulated_reference_keeps_one_driver():
    from perft_core.gpu.registry import get_driver

    driver = get_driver("gpu-emulated")
    loc = drill(TotalOnlyFake("no-ep"), CoreEngine("gpu-emulated", tt=True), SMALL, 4)
    assert loc.kind == "moves"
    assert get_driver("gpu-emulated") is driver


def test_reference_without_divide_and_bad_input():
    with pytest.raises(ValueError, match="no divide"):
        drill(TotalOnlyFake(), TotalOnlyFake(), SMALL, 2)
    with pytest.raises(ValueError):
        drill(TotalOnlyFake(), PythonChessEngine(), SMALL, -1)
    with pytest.raises(EngineError, match="only totals"):
        TotalOnlyFake().divide(SMALL, 2)


def test_gave_up():
    loc = drill(TotalOnlyFake("illegal-king-step"), CoreEngine("cpu"), START, 4, max_seconds=0)
    assert loc.kind == "gave_up"


def test_locate_picks_the_drill_for_total_only_engines_only():
    assert locate(TotalOnlyFake("no-ep"), CoreEngine("cpu"), SMALL, 4).method == "children"
    from oracle_fakes import Broken

    loc = locate(Broken("no-ep"), CoreEngine("cpu"), SMALL, 4)
    assert loc.method == "divide" and loc.kind == "moves"
    assert loc.confirmed is True and any("python-chess lists" in s for s in loc.judged)


def test_round_trip_through_a_dict():
    loc = drill(TotalOnlyFake("walk"), CoreEngine("cpu"), CPW3, 5)
    again = Localization.from_dict(json.loads(json.dumps(loc.to_dict())))
    assert again == loc


# -- through the command line, with the fake total-only program --------------------------------


def perft_diff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "oracle.cli", "diff", *args], capture_output=True, text=True,
                          timeout=300)


def engine_command(bug: str, fmt: str = "perft_gpu") -> str:
    return f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}} {bug} --format {fmt}"


def test_perft_diff_cli_protocol_localizes_a_move_generation_bug():
    done = perft_diff("--protocol", "cli", "--engine", engine_command("no-ep"), "--reference", "cpu",
                      SMALL, "4", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["kind"] == "moves" and data["method"] == "children" and data["missing"]
    loc = Localization.from_dict({k: v for k, v in data.items() if k not in ("agree", "exit_status")})
    board = check_path(loc)
    assert len(broken.no_en_passant(board)) == data["levels"][-1]["engine_total"] != board.legal_moves.count()
    assert data["engine_calls"] == 2 + sum(len(level["engine"]) for level in data["levels"]) + data["evidence"]["engine_calls"]
    assert all(level["seconds"] > 0 for level in data["levels"][:-1])


def test_perft_diff_cli_protocol_tree_walk_text():
    done = perft_diff("--protocol", "cli", "--engine", engine_command("walk", "stockfish"), CPW3, "5")
    assert done.returncode == 1, done.stderr
    assert TREE_WALK in done.stdout
    assert "path:    b4f4" in done.stdout  # python-chess: the child with the largest difference (see below)
    # the same walk, in process against python-chess, names the same child
    assert drill(TotalOnlyFake("walk"), PythonChessEngine(), CPW3, 5).path == ["b4f4"]


def test_perft_diff_cli_protocol_agrees_with_a_good_engine():
    done = perft_diff("--protocol", "cli", "--engine", engine_command("good"), CPW3, "4")
    assert done.returncode == 0, done.stderr
    assert "agree: 43238 nodes" in done.stdout


@pytest.mark.parametrize("bug, problem", [
    ("crash", "crashed (exit status 3)"),
    ("garbage", "no total in the output"),
    ("wrong-depth", "the last total is for depth 2, not 3"),
])
def test_perft_diff_cli_protocol_broken_program_is_exit_2(bug, problem):
    done = perft_diff("--protocol", "cli", "--engine", engine_command(bug), CPW3, "3")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("perft: error: engine") and problem in done.stderr
    assert "total_only.py" in done.stderr  # the command is quoted


def test_perft_diff_cli_protocol_timeout_is_exit_2():
    done = perft_diff("--protocol", "cli", "--engine", engine_command("hang"), "--timeout", "1", CPW3, "3")
    assert done.returncode == 2 and "timed out after 1 s" in done.stderr


def test_perft_diff_cli_protocol_bad_template_and_options():
    done = perft_diff("--protocol", "cli", "--engine", f"{sys.executable} {TOTAL_ONLY} {{fen}}", CPW3, "3")
    assert done.returncode == 2 and "no {depth} placeholder" in done.stderr
    done = perft_diff("--engine", "cpu", "--total-regex", "(\\d+)", CPW3, "3")
    assert done.returncode == 2 and "--total-regex needs --protocol cli" in done.stderr
    done = perft_diff("--engine", "cpu", "--reference", "python-chess", "--reference-tt", CPW3, "3")
    assert done.returncode == 2 and "need our backend as the reference" in done.stderr
    done = perft_diff("--engine", "cpu", "--reference", "cpu", "--verify-seed", "5", CPW3, "3")
    assert done.returncode == 2 and "--verify-seed needs --reference-tt" in done.stderr


@pytest.mark.gpu
def test_gpu_reference_with_tables_and_a_second_seed_keeps_one_driver():
    from perft_core.gpu.registry import get_driver

    reference = CoreEngine("gpu", tt=True, verify_seed=0x5EED)
    loc = drill(TotalOnlyFake("no-ep"), reference, SMALL, 4)
    driver = get_driver("gpu")
    assert loc.kind == "moves" and loc.confirmed is True
    assert sum("re-counted" in s for s in loc.judged) == len(loc.path)
    assert drill(TotalOnlyFake("walk"), reference, CPW3, 5).kind == "tree_walk"
    assert get_driver("gpu") is driver


def test_divide_localizer_recounts_with_the_second_seed_too():
    from oracle_fakes import Broken

    loc = locate(Broken("no-ep"), CoreEngine("cpu", tt=True, verify_seed=0x77), SMALL, 4)
    assert loc.kind == "moves" and loc.extra == [] and loc.missing
    assert sum("re-counted" in s and "0x77" in s for s in loc.judged) == len(loc.path)


@pytest.mark.timeout(120)
def test_a_program_that_never_answers_on_an_illegal_position_costs_a_short_timeout(monkeypatch):
    """Hypothesis FENs (positions after illegal moves) get a short timeout of their own: the drill
    ends with ranked candidates in seconds, not after --timeout per candidate. Each run of the
    program is recorded: every hypothesis run had the short timeout (at least the minimum, at most
    the factor times the slowest required run before it), at least one looped and was stopped at
    it, and no run outlived its timeout. (The wall time of the whole drill was the bound once: it
    is 80 times one process start, so one slow start on a loaded machine broke it; session 40's
    audit. The factor is 3 here, not 20, to keep the test short.)"""
    import time

    from oracle import explain
    from oracle.engines import CliEngine

    monkeypatch.setattr(explain, "HYPOTHESIS_TIMEOUT_MIN", 1.0)
    monkeypatch.setattr(explain, "HYPOTHESIS_TIMEOUT_FACTOR", 3.0)
    runs: list[tuple[float, float, bool]] = []  # (timeout, seconds, answered)

    class Recorded(CliEngine):
        def _perft(self, fen, depth):
            began, answered = time.monotonic(), False
            try:
                nodes = super()._perft(fen, depth)
                answered = True
                return nodes
            finally:
                runs.append((self.timeout, time.monotonic() - began, answered))

    engine = Recorded(f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}} illegal-king-step --loop-illegal", timeout=600)
    loc = drill(engine, CoreEngine("cpu"), "4k3/8/8/8/2b5/8/8/4K3 w - - 0 1", 2)
    assert loc.kind == "candidates" and all(c["unchecked_depths"] for c in loc.candidates)
    assert engine.timeout == 600
    slowest = 0.0
    for timeout, seconds, answered in runs:
        if timeout == 600:
            slowest = max(slowest, seconds)
        else:
            assert 1.0 <= timeout <= max(1.0, 3.0 * slowest) + 0.1, (timeout, slowest)
        assert seconds < timeout + 10
    assert any(not answered and timeout < 600 for timeout, _, answered in runs), runs


def test_perft_diff_writes_progress_lines_and_a_summary(monkeypatch, capsys):
    """Issue 24: without a terminal, perft diff says where its walk is at most every
    PROGRESS_LINE_SECONDS (here 0: after each query) and ends with one summary line; --json none."""
    from perft_core import watch

    from oracle import cli

    monkeypatch.setattr(watch, "PROGRESS_LINE_SECONDS", 0.0)
    status = cli.main(["diff", "--protocol", "cli", "--engine", engine_command("no-ep"), "--reference", "cpu",
                       SMALL, "4"])
    err = capsys.readouterr().err.splitlines()
    assert status == 1
    assert len(err) > 3 and all(line.startswith("perft diff: ply ") for line in err[:-1])
    assert err[-1].startswith("perft diff: moves (missing c4b3, extra -) at ply 3 after ")
    status = cli.main(["diff", "--protocol", "cli", "--engine", engine_command("no-ep"), "--reference", "cpu",
                       SMALL, "4", "--json"])
    assert status == 1 and capsys.readouterr().err == ""
