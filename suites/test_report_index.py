"""``perft report --engine`` for any engine (a total-only one here) and the index of every report
in a folder (``perft report --index DIR``)."""
from __future__ import annotations

import json
import re
import sys
from html import escape
from pathlib import Path

from oracle import cli
from oracle.engines import board_from
from oracle.report import failure_anchor
from oracle.runner import RunResult

from oracle_fakes import FAKES

TOTAL_ONLY = FAKES / "total_only.py"


def test_report_for_a_total_only_engine_and_the_index(tmp_path, capsys):
    engine = f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}} no-ep"
    status = cli.main(["report", "--engine", engine, "--protocol", "cli", "--out", str(tmp_path),
                       "--suites", "tricky", "--max-nodes", "800", "--json"])
    assert status == 1, capsys.readouterr()
    paths = json.loads(capsys.readouterr().out)["paths"]
    stem = cli._report_name(engine)
    assert stem.startswith("total_only-") and paths["md"] == str(tmp_path / f"{stem}.md")  # named after the script
    run = RunResult.from_dict(json.loads((tmp_path / f"{stem}.json").read_text()))
    failures = run.failures()
    assert failures and all(r.status == "fail" for r in failures)
    localized = [r.localization for r in failures if r.localization is not None]
    assert localized and all(loc.method == "children" and loc.kind == "moves" and loc.missing and not loc.extra
                             for loc in localized)
    for loc in localized:  # python-chess: what is named missing is exactly the en passant captures there
        board = board_from(loc.fen)
        assert loc.missing == sorted(board.uci(m) for m in board.legal_moves if board.is_en_passant(m))
    assert "--protocol cli" in run.command and run.reference == "perft_core[cpu]"
    md = (tmp_path / f"{stem}.md").read_text()
    html = (tmp_path / f"{stem}.html").read_text()
    for row in failures:
        assert f'<a id="{failure_anchor(row)}"></a>' in md and f'id="{failure_anchor(row)}"' in html

    assert cli.main(["report", "--out", str(tmp_path), "--suites", "tricky", "--max-nodes", "800", "--json"]) == 0
    capsys.readouterr()
    assert cli.main(["report", "--index", str(tmp_path)]) == 0
    index = (tmp_path / "index.md").read_text()
    table = [line for line in index.splitlines() if line.startswith("| [")]
    assert len(table) == 2
    assert "[conformance](conformance.md) | perft_core[cpu] | PASS" in index
    assert f"[{stem}]({stem}.md) | {engine} | FAIL |" in index  # the command as typed
    links = re.findall(rf"\]\({stem}\.md#([\w-]+)\)", index)
    assert sorted(links) == sorted(failure_anchor(r) for r in failures)
    ours = next(line for line in table if "conformance" in line)
    n = sum(1 for r in RunResult.from_dict(json.loads((tmp_path / "conformance.json").read_text())).rows)
    assert f"{n} pass / 0 fail" in ours


def test_index_errors(tmp_path, capsys):
    assert cli.main(["report", "--index", str(tmp_path)]) == 2
    assert "no conformance report" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert cli.main(["report", "--index", str(tmp_path)]) == 2
    assert "bad.json: not a readable JSON report" in capsys.readouterr().err
    assert cli.main(["report", "--index", str(tmp_path / "nope")]) == 2


def test_report_names():
    """The program's or script's name, then a short hash of the whole command (issue 35: every
    ``python ...`` engine wrote ``python.*``)."""
    import hashlib

    for command, stem in [("/usr/games/stockfish", "stockfish"), ("/opt/perft_gpu {fen} {depth} -nott", "perft_gpu"),
                          ("python my_engine.py --uci", "my_engine"), ("python3 -u ./engines/x.py {fen} {depth}", "x"),
                          ("env HASH=16 /usr/games/stockfish", "stockfish")]:
        assert cli._report_name(command) == f"{stem}-{hashlib.sha256(command.encode()).hexdigest()[:6]}"
    assert cli._report_name("python a.py") != cli._report_name("python a.py --bug")
    assert cli._report_name("python-chess") == "python-chess"


def test_two_python_engines_get_two_reports_and_the_index_lists_both(tmp_path, capsys):
    """Two engines run by the same interpreter: two sets of files, each titled with its command as
    typed (``{fen} {depth}``, not ``'{fen}' '{depth}'``), and both rows in the index."""
    engines = [f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}}", f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}} no-ep"]
    stems = []
    for engine in engines:
        cli.main(["report", "--engine", engine, "--protocol", "cli", "--out", str(tmp_path), "--suites", "tricky",
                  "--max-nodes", "300", "--json"])
        stems.append(json.loads(capsys.readouterr().out)["paths"]["md"])
    assert len(set(stems)) == 2 and all(Path(p).exists() for p in stems)
    for engine, md in zip(engines, stems):
        html = Path(md).with_suffix(".html").read_text()
        assert f"<title>Perft conformance: {escape(engine)}</title>" in html
        assert f"# Perft conformance report: {engine}\n" in Path(md).read_text()
    assert cli.main(["report", "--index", str(tmp_path)]) == 0
    index = (tmp_path / "index.md").read_text()
    for engine, md in zip(engines, stems):
        assert f"[{Path(md).stem}]({Path(md).name}) | {engine} | " in index


def test_another_backend_never_overwrites_the_cpu_report(tmp_path, capsys):
    argv = ["report", "--out", str(tmp_path), "--suites", "tricky", "--max-nodes", "100", "--json"]
    assert cli.main(argv + ["--backend", "gpu-emulated"]) == 0
    assert json.loads(capsys.readouterr().out)["paths"]["md"] == str(tmp_path / "conformance-gpu-emulated.md")


def test_localize_seconds_bounds_each_localization(capsys):
    engine = f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}} no-ep"
    status = cli.main(["suite", "tricky", "--engine", engine, "--protocol", "cli", "--max-nodes", "800",
                       "--localize-seconds", "0.001", "--json"])
    data = json.loads(capsys.readouterr().out)
    kinds = {row["localization"]["kind"] for row in data["rows"] if "localization" in row}
    assert status == 1 and kinds == {"gave_up"}


def test_another_programs_report_names_the_gpu_of_its_machine(tmp_path, capsys, monkeypatch):
    """A total-only program run on a GPU machine (perft_gpu_2026 on an H200): the index's machine
    cell and the report say which GPU the machine has (the program may use it), not only the CPU."""
    from perft_core import provenance

    monkeypatch.setattr(provenance, "gpu_name", lambda: "NVIDIA H200")
    engine = f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}}"
    assert cli.main(["report", "--engine", engine, "--protocol", "cli", "--out", str(tmp_path),
                     "--suites", "tricky", "--max-nodes", "800", "--json"]) == 0, capsys.readouterr()
    capsys.readouterr()
    assert cli.main(["report", "--index", str(tmp_path)]) == 0
    stem = cli._report_name(engine)
    row = next(line for line in (tmp_path / "index.md").read_text().splitlines() if line.startswith(f"| [{stem}]"))
    assert "GPU present: NVIDIA H200" in row
    assert "GPU present: NVIDIA H200" in (tmp_path / f"{stem}.md").read_text()


def test_a_uci_engines_report_gives_the_name_it_calls_itself(tmp_path, capsys):
    """A UCI engine's report names it by its command and by its handshake's ``id name`` (a command
    such as ``./engine`` or ``stockfish`` says little of the build that ran; session 43 left this
    out). An engine without ``id`` lines is named by its command only."""
    engine = f"{sys.executable} {FAKES / 'fake_uci.py'} good"
    assert cli.main(["report", "--engine", engine, "--out", str(tmp_path), "--suites", "tricky",
                     "--max-nodes", "300", "--json"]) == 0
    paths = json.loads(capsys.readouterr().out)["paths"]
    run = RunResult.from_dict(json.loads(Path(paths["json"]).read_text()))
    assert run.environment["engine_id"] == {"name": "fake-good"}
    md, html = Path(paths["md"]).read_text(), Path(paths["html"]).read_text()
    assert f"{engine} (UCI id name: fake-good)" in md and escape(f"{engine} (UCI id name: fake-good)") in html
    assert cli.main(["report", "--engine", f"{sys.executable} {TOTAL_ONLY} {{fen}} {{depth}}", "--protocol", "cli",
                     "--out", str(tmp_path / "cli"), "--suites", "tricky", "--max-nodes", "300", "--json"]) == 0
    paths = json.loads(capsys.readouterr().out)["paths"]
    assert "engine_id" not in RunResult.from_dict(json.loads(Path(paths["json"]).read_text())).environment
    assert "UCI id name" not in Path(paths["md"]).read_text()


def test_an_id_name_is_shown_as_written_never_as_markdown_or_control_characters(tmp_path, capsys):
    """The id name is the engine's text, not the user's: in the Markdown report its link, image and
    emphasis syntax is escaped, and a character that is not printable (an escape sequence) is
    U+FFFD (session 44's review: a name ``![x](u)`` showed as an image). The fake engine's id name is
    ``fake-`` and its MODE, here a correct engine's under an odd name."""
    mode = "*![x](http://e/i.png)*_\x1b[31m\u00a0\u200b"  # NO-BREAK SPACE stays; ZERO WIDTH SPACE (a format character) not
    engine = f"{sys.executable} {FAKES / 'fake_uci.py'} '{mode}'"
    assert cli.main(["report", "--engine", engine, "--out", str(tmp_path), "--suites", "tricky",
                     "--max-nodes", "300", "--json"]) == 0
    paths = json.loads(capsys.readouterr().out)["paths"]
    assert RunResult.from_dict(json.loads(Path(paths["json"]).read_text())).environment["engine_id"] == {
        "name": "fake-*![x](http://e/i.png)*_\ufffd[31m\u00a0\ufffd"}
    md = Path(paths["md"]).read_text()
    assert "(UCI id name: fake-\\*\\!\\[x\\]\\(http://e/i.png\\)\\*\\_\ufffd\\[31m\u00a0\ufffd)" in md


def test_a_uci_engine_keeps_its_id_name_when_a_restart_fails():
    """An engine that crashed is started again at the next query; when that start fails, the id
    name of its last handshake stays (it was cleared: the report then named no build for exactly
    the flaky engine; session 44's review)."""
    from oracle.engines import EngineError, UciEngine

    engine = UciEngine(f"{sys.executable} {FAKES / 'fake_uci.py'} good", timeout=30)
    try:
        assert engine.perft("8/8/8/8/8/8/8/K6k w - - 0 1", 1) == 3
        assert engine.identity == {"name": "fake-good"}
        engine.close()
        engine.argv = [sys.executable, "-c", "pass"]  # starts, then ends before its handshake
        try:
            engine.perft("8/8/8/8/8/8/8/K6k w - - 0 1", 1)
        except EngineError:
            pass
        assert engine.identity == {"name": "fake-good"}
    finally:
        engine.close()
