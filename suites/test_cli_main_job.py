"""A new user's first steps, as the README gives them, run as a user runs them (a fresh process of
the ``perft`` console script, or ``python -m perft_cli`` where it is not installed):

- ``perft run startpos 6 --moves e2e4`` prints the count;
- a file of FENs piped into ``perft run -`` gives one line each;
- the README's main job (its first command, ``perft report``) leaves ``git status`` of a fresh
  clone clean (its output folder is git-ignored), and ``perft report --publish`` writes the
  published report and an index that names the commit;
- progress without a terminal: a line on stderr at most every PROGRESS_LINE_SECONDS and a summary.
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
from oracle.engines import PythonChessEngine
from perft_core import watch

ROOT = Path(__file__).resolve().parents[1]
HOME = str(Path(perft_core.__file__).resolve().parents[1])
PERFT = [shutil.which("perft")] if shutil.which("perft") else [sys.executable, "-P", "-m", "perft_cli"]  # -P: not the cwd's copy


def perft(*argv: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [HOME, os.environ.get("PYTHONPATH")])))
    return subprocess.run(PERFT + list(argv), capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
                          input=stdin)


def test_run_startpos_with_moves():
    proc = perft("run", "startpos", "6", "--moves", "e2e4")
    # the e2e4 line of the start position's perft 7 divide: confirmed independently by MPerft 2.0
    # (`mperft -f "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1" -d 6 -b`, 2026-11-24)
    assert proc.returncode == 0 and proc.stdout == "Nodes searched: 309478263\n", proc.stderr


def test_a_file_of_fens_piped_into_run():
    fens = [chess.STARTING_FEN, "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"]
    proc = perft("run", "-", "3", "--json", stdin="\n".join(fens) + "\n")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["nodes"] for r in records] == [PythonChessEngine().perft(f, 3) for f in fens]


def readme_main_job() -> str:
    """The README's first command after ``pip install .`` (the main job)."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    first = block.splitlines()[0].split("#")[0].strip()
    install, _, job = first.partition("&&")
    assert install.strip() == "python -m pip install .", first
    return job.strip()


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_the_readme_main_job_leaves_a_fresh_clone_clean(tmp_path):
    job = readme_main_job()
    assert job == "perft report"  # writes ./perft-report/, not the tracked docs/
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    # the job as the README gives it, with a node budget that keeps CI short (it decides no path)
    proc = perft(*job.split()[1:], "--max-nodes", "20000", cwd=clone, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (clone / "perft-report").iterdir()) == ["conformance.html", "conformance.json",
                                                                       "conformance.md"]
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"the main job changed the checkout:\n{status}"


def test_publish_writes_the_report_and_an_index_naming_the_commit(tmp_path):
    docs = tmp_path / "docs"
    proc = perft("report", "--publish", "--out", str(docs), "--suites", "cpw", "--max-nodes", "20000")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((docs / "conformance.json").read_text())
    assert "--publish" in data["command"]
    index = (docs / "index.md").read_text()
    assert "[conformance](conformance.md)" in index and f"`{data['environment']['commit']}`" in index


def test_progress_lines_without_a_terminal(capsys, monkeypatch):
    """stderr is not a terminal under capsys: with progress="lines" (the perft command's choice) a
    count estimated over LINES_SECONDS writes a line every PROGRESS_LINE_SECONDS (here 0: after each
    root move) and a summary; a short one nothing; a library call (progress None) nothing."""
    assert perft_core.perft(chess.STARTING_FEN, 4, progress="lines") == 197281
    assert capsys.readouterr().err == ""  # estimated well under 10 s: quiet
    monkeypatch.setattr(watch, "LINES_SECONDS", 0.0)
    monkeypatch.setattr(watch, "PROGRESS_LINE_SECONDS", 0.0)
    assert perft_core.perft(chess.STARTING_FEN, 4) == 197281
    assert capsys.readouterr().err == ""  # a library call off a terminal: quiet
    assert perft_core.perft(chess.STARTING_FEN, 4, progress="lines") == 197281
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 21  # one per root move, then the summary
    assert re.fullmatch(r"perft 4: 1/20 root moves \(\d+\.\d %\), [\d,]+ nodes in \d+ s, [\d.,]+ [kMG] nodes/s, ETA \d+ s",
                        lines[0]), lines[0]
    assert re.fullmatch(r"perft 4: 20/20 root moves \(100\.0 %\), 197,281 nodes in \d+ s, [\d.,]+ [kMG] nodes/s", lines[-1])
    assert perft_core.perft(chess.STARTING_FEN, 4, progress=False) == 197281
    assert capsys.readouterr().err == ""  # progress=False: quiet, as --json


def test_the_summary_line_gives_the_count_not_the_work_of_two_passes_and_nothing_for_a_refusal(capsys, monkeypatch):
    """With a verify seed the tree is counted twice: the summary said 2x the count (a helper's hunt,
    session 33: 19,284,384,101,325,319,400 nodes for 9,642,192,050,662,659,700). A count refused
    (past 2^64 on the emulated GPU) printed a summary with a node figure above 2^64 before its error
    line; it prints none now."""
    from perft_core.errors import CountOverflow

    monkeypatch.setattr(watch, "LINES_SECONDS", 0.0)
    monkeypatch.setattr(watch, "PROGRESS_LINE_SECONDS", 1e9)  # the first line and the summary only
    monkeypatch.setattr(watch, "FIRST_LINE_SECONDS", 1e9)
    assert perft_core.perft(chess.STARTING_FEN, 4, tt=True, verify_seed=5, progress="lines") == 197281
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"perft 4: 20/20 root moves \(100\.0 %\), 197,281 nodes in .*", lines[-1]), lines
    kings = "7k/8/8/8/8/8/8/K7 w - - 0 1"
    with pytest.raises(CountOverflow):
        perft_core.perft(kings, 30, backend="gpu-emulated", tt=True, force=True, progress="lines")
    assert capsys.readouterr().err == ""


def test_suite_progress_lines_without_a_terminal(capsys, monkeypatch):
    from oracle import cli

    monkeypatch.setattr(watch, "LINES_SECONDS", 0.0)
    monkeypatch.setattr(watch, "PROGRESS_LINE_SECONDS", 0.0)
    assert cli.main(["suite", "cpw", "--engine", "cpu", "--max-nodes", "10000"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("perft suite: ") for line in err)
    assert re.match(r"perft suite: (\d+)/\1 rows \(100\.0 % of the nodes\), [\d,]+ nodes in", err[-1]), err[-1]


def test_a_time_limit_counts_the_smallest_subtrees_first(monkeypatch):
    """--max-seconds: the root moves are counted smallest subtree first, so the partial divide holds
    a root move whenever the limit allows the smallest one (here the limit strikes after one)."""
    real = watch.Watch.advance

    def one_move_then_stop(self, nodes, moves_done, moves_total):
        real(self, nodes, moves_done, moves_total)
        raise watch.Deadline("stopped after one root move")

    monkeypatch.setattr(watch.Watch, "advance", one_move_then_stop)
    kiwipete = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    full = perft_core.divide(kiwipete, 3, progress=False)
    with pytest.raises(perft_core.CountInterrupted) as info:
        perft_core.divide(kiwipete, 3, max_seconds=3600, progress=False)
    (move, nodes), = info.value.partial.items()
    assert nodes == full[move] == min(full.values())


def test_the_first_progress_line_comes_on_time_while_a_long_root_move_counts(capsys, monkeypatch):
    """Without a terminal the first line is due after FIRST_LINE_SECONDS, but lines were written only
    when a root move finished: `perft run startpos 10` piped said nothing for a minute (a helper's
    hunt, session 33). The watch's clock writes it on time; a finished count still ends with its
    summary, and the clock stops with the watch."""
    import threading
    import time

    from perft_core.estimate import Estimate

    monkeypatch.setattr(watch, "FIRST_LINE_SECONDS", 0.2)
    monkeypatch.setattr(watch, "PROGRESS_LINE_SECONDS", 1e9)
    monkeypatch.setattr(watch, "TICK_SECONDS", 0.02)
    est = Estimate(depth=9, nodes=1e12, seconds=100.0, nodes_per_second=1e10, measured=(20,), backend="cpu",
                   threads=1, tt=False, upper_bound=False)
    with watch.Watch(est, None, bar=False, lines=True) as w:
        # one root move that has not finished: wait for the line (polled, not a fixed sleep, which a
        # loaded machine's late tick could outlast), then a little more for any second line
        first: list[str] = []
        deadline = time.monotonic() + 30
        while not first and time.monotonic() < deadline:
            time.sleep(0.05)
            first += capsys.readouterr().err.splitlines()
        time.sleep(0.3)
        first += capsys.readouterr().err.splitlines()
        w.advance(10**12, 1, 1)
    lines = first + capsys.readouterr().err.splitlines()
    assert len(first) == 1 and re.match(r"perft 9: 0 root moves \(0\.0 %\), 0 nodes in \d+ s", first[0]), first
    assert lines[-1].startswith("perft 9: 1/1 root moves (100.0 %), 1,000,000,000,000 nodes")
    assert not any(t.name == "perft-progress-lines" for t in threading.enumerate())
