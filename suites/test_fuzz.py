"""Fuzzing the ``perft`` command (issue 26, item 7): hypothesis over command lines and over the
suite files users write (EPD, CSV), asserting what every input must get: an exit status in
{0, 1, 2, 3}, no traceback, and no process left behind.

Bounded for CI (2 cores, the whole module well under two minutes): depths are small where the
position could be counted, node budgets are small, and ``perft deep`` is only fed arguments it
must refuse before it starts a cluster. Most examples run the command in this process (an
uncaught exception is the traceback); a few run it as a subprocess, where a crash is an exit status.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oracle import tables
from perft_cli import main

from oracle_fakes import live_processes

pytestmark = pytest.mark.core
ROOT = Path(__file__).resolve().parent.parent
STATUSES = {0, 1, 2, 3}
FUZZ = settings(max_examples=100, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# FENs a user may type: published positions, and broken ones (fields, control characters,
# other scripts' digits, the wrong en passant rank, a huge one).
GOOD_FENS = [r.fen for r in tables.load("cpw")[::6]] + [r.fen for r in tables.load("chess960")[:2]]
BAD_FENS = ["", " ", "8/8/8/8/8/8/8/8 w - - 0 1", "not a fen", "4k3/8/8/8/8/8/4p3/K7 w - e3 0 1",
            GOOD_FENS[0].replace(" ", "\n", 1), GOOD_FENS[0] + "\x00", GOOD_FENS[0].replace("0 1", "\u0660 \u0661"),
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR" + "1" * 5000 + " w KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -", "k7/8/8/8/8/8/8/7K w KQkq - 0 1"]
# Weighted towards what gets furthest: real or nearly real FENs, depths that parse.
fens = st.one_of(st.sampled_from(GOOD_FENS), st.sampled_from(BAD_FENS), st.sampled_from(BAD_FENS), st.text(max_size=80))
small_depths = st.one_of(st.integers(0, 3).map(str), st.integers(0, 3).map(str),
                         st.sampled_from(["-1", "", "x", "1.5", "\u0662", "0x2", "+1", " 2"]))
huge_depths = st.sampled_from(["65", "9500", "10000", str(2**70), "-1", "x", "\u0662\u0660"])
numbers = st.one_of(st.integers(-3, 5000).map(str), st.sampled_from(["0", "-0", "nan", "inf", "1e400", "\u0665", "1,000", "50000"]))
engines = st.one_of(st.sampled_from(["python-chess", "cpu", "/nonexistent/engine", ""]),
                    st.sampled_from(["sh -c 'exit 3'", "true", "cat"]))  # programs that are no engine


@contextlib.contextmanager
def children_checked():
    """Fails if a process this one started is still alive (not a zombie) two seconds after the block."""
    def children() -> set[int]:
        return set(live_processes(ppid=os.getpid()))

    before = children()
    yield
    deadline = time.monotonic() + 2
    while (left := children() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes left behind: {sorted(left)}"


def run_in_process(argv: list[str]) -> int:
    """``perft ARGV`` here: its exit status (an uncaught exception fails the test with its traceback)."""
    err = io.StringIO()
    with children_checked(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status in STATUSES, (argv, status, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue(), err.getvalue()[-2000:]
    return status


@st.composite
def run_argv(draw):
    argv = ["run", draw(fens), draw(st.one_of(small_depths, huge_depths))]
    for flag, value in draw(st.lists(st.sampled_from([
            ("--divide", None), ("--json", None), ("--tt", None), ("--force", None), ("--chess960", None),
            ("--threads", numbers), ("--max-seconds", numbers), ("--tt-mb", numbers), ("--verify-seed", numbers),
            ("--backend", st.sampled_from(["cpu", "gpu-emulated", "tpu"]))]), max_size=4, unique_by=lambda x: x[0])):
        argv += [flag] if value is None else [flag, draw(value)]
    return argv


@st.composite
def oracle_argv(draw, tmp: Path):
    command = draw(st.sampled_from(["diff", "suite", "report"]))
    if command == "diff":
        argv = ["diff", "--engine", draw(engines), draw(fens), draw(small_depths), "--timeout", "5",
                "--protocol", draw(st.sampled_from(["uci", "perftree", "cli"]))]
    elif command == "suite":
        argv = ["suite", *draw(st.lists(st.sampled_from([*tables.SUITES, "nope", str(tmp / "missing.epd")]),
                                        min_size=1, max_size=2)),
                "--engine", draw(engines), "--max-nodes", draw(st.sampled_from(["1", "500", "0", "x"])), "--timeout", "5"]
    else:
        argv = ["report", "--suites", "startpos", "--max-nodes", draw(st.sampled_from(["1", "400", "-5"])),
                "--out", str(tmp / draw(st.sampled_from(["out", "a/b", ""]))),
                "--name", draw(st.sampled_from(["r", "../x", "", ".", "a/b", "ok\x01"]))]
    return argv


@st.composite
def deep_argv(draw):
    argv = ["deep", draw(fens), draw(huge_depths.filter(lambda d: d != "-1"))]
    argv += draw(st.sampled_from([[], ["--split-ply", "1"], ["--split-ply", "99"], ["--workers", "0"],
                                  ["--workers", "1", "--gpus", "1"], ["--verify-sample", "2"]]))
    return argv


@FUZZ
@given(argv=run_argv())
def test_perft_run_survives_any_arguments(argv):
    run_in_process(argv)


@FUZZ
@given(data=st.data())
def test_diff_suite_report_survive_any_arguments(tmp_path, data):
    run_in_process(data.draw(oracle_argv(tmp_path)))


@settings(max_examples=25, deadline=None, database=None)
@given(argv=deep_argv())
def test_deep_refuses_what_it_cannot_do_before_any_work(argv):
    assert run_in_process(argv) == 2


# Suite files: EPD lines (FEN ;D<depth> <nodes> ...) and CSV tables, mostly well formed (a broken
# field stops the parse at once, so the FENs behind it would never be tried) with some broken ones.
good_counts = st.builds(lambda d, n: (str(d), str(n)), st.integers(0, 3), st.integers(0, 10**6))
bad_counts = st.sampled_from([("x", "5"), ("1", "\u0662\u0660"), ("1", "-5"), ("", "20"), ("1", "1e3"),
                              ("99999999999999999999", "1"), ("\u0661", "20")])
counts = st.one_of(good_counts, good_counts, good_counts, bad_counts)
epd_lines = st.builds(lambda fen, fields: " ;".join([fen, *(f"D{d} {n}" for d, n in fields)]),
                      st.sampled_from(GOOD_FENS + BAD_FENS), st.lists(counts, max_size=3))
csv_rows = st.builds(lambda fen, c: '"{}",{},{}'.format(fen.replace('"', '""'), *c),
                     st.one_of(st.sampled_from(GOOD_FENS), st.sampled_from(BAD_FENS)), counts)
junk = st.one_of(st.just(""), st.just(""), st.text(max_size=30))


@FUZZ
@given(kind=st.sampled_from(["epd", "csv"]), epd=st.lists(epd_lines, max_size=5),
       rows=st.lists(csv_rows, max_size=4), header=st.sampled_from(["fen,depth,nodes", "\ufefffen,depth,nodes",
                                                                    "fen,depth,nodes", "fen,depth", ""]),
       tail=junk)
def test_suite_files_survive_any_content(tmp_path, kind, epd, rows, header, tail):
    path = tmp_path / f"t.{kind}"
    body = "\n".join(epd + [tail]) if kind == "epd" else "\n".join([header, *rows, tail])
    path.write_bytes(body.encode("utf-8", "surrogatepass"))
    run_in_process(["suite", str(path), "--engine", "cpu", "--max-nodes", "100000"])


@settings(max_examples=8, deadline=None, database=None)
@given(argv=st.one_of(run_argv(), deep_argv()))
def test_the_command_never_crashes_as_a_process(argv):
    """As a subprocess: a segfault or an abort is an exit status here, not a dead test run."""
    assume(not any("\x00" in a for a in argv))  # no operating system passes a NUL in an argument
    p = subprocess.run([sys.executable, "-P", "-m", "perft_cli", *argv], capture_output=True, text=True, timeout=60,
                       cwd=ROOT, start_new_session=True, errors="replace")
    assert p.returncode in STATUSES, (argv, p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
