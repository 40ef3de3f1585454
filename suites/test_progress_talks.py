"""A terminal that talks (issue 35): piped progress of ``perft suite`` / ``report`` starts within
about 5 s and then comes once a minute; no ETA before the rate is measured; the last line of the
text output says the verdict."""
from __future__ import annotations

import io
import json
import re
import shlex
import sys
import time
import types
from pathlib import Path

import pytest

from oracle import cli
from oracle.runner import RunResult
from perft_core import watch

FAKES = Path(__file__).parent / "fake_engines"


def test_piped_lines_first_within_5_s_then_once_a_minute():
    out = io.StringIO()
    lines = watch.ProgressLines("perft report:", first=watch.FIRST_LINE_SECONDS, file=out)
    said = [t for t in (1.0, 4.9, 5.1, 30.0, 64.0, 65.2, 100.0, 125.3) if lines.report("x", 0.5, 10, t)]
    assert said == [5.1, 65.2, 125.3]
    assert watch.FIRST_LINE_SECONDS <= 5.0 < watch.PROGRESS_LINE_SECONDS


def test_perft_report_piped_says_something_within_5_s(monkeypatch, capsys):
    """The callback ``perft suite`` / ``report`` hand to the runner, off a terminal (capsys), on a
    fake clock: silent at 4 s, a line once 5 s have passed (it used to wait a minute)."""
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    row = types.SimpleNamespace(got=100, expected=100, suite="cpw", id="1", depth=2, status="pass")
    with cli._progress(True, 10_000, "perft report") as progress:
        clock[0] += 4.0
        progress(row, 1, 100)
        assert capsys.readouterr().err == ""
        clock[0] += 1.5
        progress(row, 2, 100)
        err = capsys.readouterr().err
    assert re.fullmatch(r"perft report: 2/100 rows \(2\.0 % of the nodes\), 200 nodes in 6 s, 36 nodes/s, ETA 4 min 30 s\n", err), err


def test_a_skipped_row_adds_no_share(monkeypatch, capsys):
    """A suite stopped by its time limit showed 100 % of the nodes with most rows skipped: a row
    the runner skipped counts as a row done, not as nodes counted (session 37)."""
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    counted = types.SimpleNamespace(got=100, expected=100, suite="cpw", id="1", depth=2, status="pass")
    skipped = types.SimpleNamespace(got=None, expected=9_900, suite="cpw", id="2", depth=5, status="skipped")
    with cli._progress(True, 10_000, "perft suite") as progress:
        clock[0] += 6.0
        progress(counted, 1, 2)
        capsys.readouterr()
        clock[0] += 61.0
        progress(skipped, 2, 2)
    err = capsys.readouterr().err.splitlines()
    assert err and all(re.match(r"perft suite: 2/2 rows \(1\.0 % of the nodes\), 100 nodes in", e) for e in err), err


@pytest.mark.parametrize("share, shown", [(1e-7, False), (0.005, False), (0.01, True), (0.5, True)])
def test_no_eta_until_the_rate_is_measured(share, shown):
    """The first rows of a report are tiny: an ETA from them read 332:33:09. None before 1 % of
    the work is done, neither in the piped lines nor in the terminal's bar."""
    assert (watch.eta(3.0, share) is not None) == shown
    out = io.StringIO()
    watch.ProgressLines("p:", every=0, file=out).report("x", share, 10, 3.0)
    assert ("ETA" in out.getvalue()) == shown
    task = types.SimpleNamespace(elapsed=3.0, completed=share * 1e9, total=1e9)
    text = str(cli._eta_column().render(task))
    assert text == ("ETA -" if not shown else f"ETA {watch.duration(3.0 * (1 - share) / share)}")


def _report(tmp_path, capsys, *argv) -> tuple[int, list[str], RunResult]:
    status = cli.main(["report", "--out", str(tmp_path), "--suites", "tricky", "--max-nodes", "3000", *argv])
    out = capsys.readouterr().out.splitlines()
    name = next(line for line in out if line.startswith("wrote ")).split(", ")[0].removeprefix("wrote ")
    return status, out, RunResult.from_dict(json.loads(Path(name).read_text()))


def test_the_last_line_says_pass(tmp_path, capsys):
    status, out, run = _report(tmp_path, capsys)
    total = run.summary()[-1]
    assert status == 0 and total.passed and total.over_budget
    assert out[-1] == f"PASS: {total.passed:,} rows agree, {total.over_budget:,} over budget"


def test_the_last_line_says_fail_and_where_to_look(tmp_path, capsys):
    engine = shlex.join([sys.executable, str(FAKES / "fake_uci.py"), "no-ep"])
    status, out, run = _report(tmp_path, capsys, "--engine", engine)
    failed = run.summary()[-1].failed
    html = tmp_path / f"{cli._report_name(engine)}.html"
    assert status == 1 and failed > 1
    assert out[-1] == f"FAIL: {failed:,} rows differ (see {html})"
    status = cli.main(["suite", "tricky", "--engine", engine, "--max-nodes", "3000"])
    assert status == 1 and capsys.readouterr().out.splitlines()[-1] == f"FAIL: {failed:,} rows differ (see the failures above)"
