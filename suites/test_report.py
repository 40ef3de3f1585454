"""The conformance report: one run model rendered to JSON, Markdown and single-file HTML."""
from __future__ import annotations

import importlib.util
import json
import re
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest

from oracle import cli
from oracle.engines import PythonChessEngine
from html import escape as html_escape

from oracle.report import (GLANCE_TAGS, failure_anchor, fmt_nps, glance, render_html, render_markdown,
                           speed_chart_svg, write_report)
from oracle.runner import RunResult, run_suite, select_rows

FAKES = Path(__file__).parent / "fake_engines"
_spec = importlib.util.spec_from_file_location("oracle_test_broken", FAKES / "broken.py")
broken = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(broken)


class NoEnPassant(PythonChessEngine):
    name = "broken:no-ep"

    def moves(self, board):
        return broken.no_en_passant(board)


def rows(max_nodes: int = 3_000) -> list:
    """cpw, tricky and 80 Chess960 positions (> 100 rows: the Markdown condenses it), small counts."""
    _, all_rows = select_rows(["cpw", "tricky", "chess960"])
    return [r for r in all_rows if r.nodes <= max_nodes and (r.suite != "chess960" or int(r.id) < 80)]


@pytest.fixture(scope="module")
def failing_run() -> RunResult:
    run = run_suite(NoEnPassant(), rows(), suites=["cpw", "tricky", "chess960"])
    run.command = "pytest"
    return run


@pytest.fixture(scope="module")
def passing_run() -> RunResult:
    return run_suite(PythonChessEngine(), rows(), suites=["cpw", "tricky", "chess960"], max_nodes=500)


def test_write_report_writes_three_files(failing_run, tmp_path):
    paths = write_report(failing_run, tmp_path / "docs", "conformance")
    assert {k: p.name for k, p in paths.items()} == {"json": "conformance.json", "md": "conformance.md",
                                                     "html": "conformance.html"}
    assert all(p.stat().st_size > 0 for p in paths.values())
    with pytest.raises(ValueError, match="unknown report format"):
        write_report(failing_run, tmp_path, formats=("pdf",))


def test_json_is_the_model(failing_run, tmp_path):
    path = write_report(failing_run, tmp_path, formats=("json",))["json"]
    data = json.loads(path.read_text())
    assert set(data["environment"]) >= {"version", "commit", "backend", "machine"}
    row = data["rows"][0]
    assert set(row) >= {"suite", "id", "fen", "depth", "expected", "got", "status", "seconds", "nodes_per_second"}
    again = RunResult.from_dict(data)
    assert [(r.key, r.status, r.got) for r in again.rows] == [(r.key, r.status, r.got) for r in failing_run.rows]
    assert [r.localization for r in again.rows] == [r.localization for r in failing_run.rows]
    assert data["summary"][-1]["suite"] == "all" and data["summary"][-1]["failed"] == len(failing_run.failures())


def test_markdown_shows_verdict_summary_and_localized_failures(failing_run):
    md = render_markdown(failing_run)
    assert md.startswith("# Perft conformance report: broken:no-ep")
    assert "**FAIL**" in md and "## Summary" in md and "## Failures" in md
    for row in failing_run.failures():
        assert f"### {row.suite} / {row.id}, depth {row.depth}: fail" in md
        if row.localization:
            assert row.localization.fen in md and "missing: " in md
    assert "| chess960 |" in md and "by depth" in md  # the big suite gets a per-depth table
    assert "| cpw |" in md and "| pos2_kiwipete | 1 |" in md  # small suites: every row


def test_markdown_passing(passing_run):
    md = render_markdown(passing_run)
    assert "**PASS**" in md and "## Failures\n\nNone." in md
    assert "over the node budget of 500 nodes" in md


def test_every_report_file_shows_the_verdict_the_command_prints():
    """The Markdown and HTML banners and the index said PASS or FAIL by ``run.ok`` alone: a run
    that judged nothing (exit 2) showed PASS, one whose engine only crashed FAIL, one stopped by
    its time budget (exit 3) PASS (session 43's hunt). They now say the printed verdict's word."""
    from oracle.report import render_index, verdict_line
    from oracle.runner import RowResult

    fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    runs = {"PASS": [RowResult("s", "a", fen, 1, 20, got=20, status="pass")],
            "FAIL": [RowResult("s", "a", fen, 1, 20, got=21, status="fail")],
            "NO VERDICT": [RowResult("s", "a", fen, 1, 20, status="error", error="crashed")],
            "STOPPED": [RowResult("s", "a", fen, 1, 20, got=20, status="pass"), RowResult("s", "b", fen, 2, 400)]}
    for word, rows in runs.items():
        run = RunResult("e", None, ["s"], None, None, rows=rows)
        assert verdict_line(run).startswith(word + ":") and run.verdict == word
        assert f"**{word}**:" in render_markdown(run)
        assert f'<strong>{word}</strong>' in render_html(run)
        assert f"| {word} |" in render_index([(Path("r.json"), run)])
        others = {"PASS", "FAIL", "NO VERDICT", "STOPPED"} - {word}
        assert not any(f"**{w}**" in render_markdown(run) or f"<strong>{w}</strong>" in render_html(run) for w in others)


def test_failure_anchors_of_two_tables_named_alike_differ():
    """``t.5.epd`` and ``t-5.epd`` (and suites ``a-b`` / ``a`` with ids ``c`` / ``b-c``) gave one
    anchor and one board file to two failures (session 43's hunt); bundled names keep theirs."""
    from oracle.runner import RowResult

    def row(suite, id_, depth=3):
        return RowResult(suite, id_, "8/8/8/8/8/8/8/K1k5 w - - 0 1", depth, 1)

    pairs = [(row("t.5.epd", "line1"), row("t-5.epd", "line1")), (row("a-b", "c"), row("a", "b-c"))]
    for one, other in pairs:
        assert failure_anchor(one) != failure_anchor(other)
    assert failure_anchor(row("tricky", "ep-unrelated-check", 1)) == "fail-tricky-ep-unrelated-check-1"
    assert all(re.fullmatch(r"fail-[A-Za-z0-9_-]+", failure_anchor(r)) for pair in pairs for r in pair)


def test_html_is_one_self_contained_file(failing_run):
    html = render_html(failing_run)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<script" not in html.lower()
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html)
    assert html.count("<details") == 3 + 1  # a table per suite, and the speed chart (collapsed)
    assert "<svg" in html
    for row in failing_run.failures():
        if row.localization:
            assert row.localization.fen in html
            assert " ".join(row.localization.missing) in html
            # the same verdict as the text and --json: its kind and its few words
            assert f"<th>verdict</th><td>{row.localization.kind}: {html_escape(row.localization.summary())}</td>" in html


def test_glance_counts_every_row_per_suite_and_tag_failures_first(failing_run):
    run = RunResult.from_dict(failing_run.to_dict())
    groups = glance(run)
    failing = [g for g in groups if g.failed or g.errors]
    assert failing and groups[:len(failing)] == failing  # failing groups first
    assert {g.name for g in failing} >= {"tricky", "en_passant"}  # the en passant bug, by suite and by tag
    for g in groups:
        rows = [r for r in run.rows if (r.suite == g.name if g.kind == "suite" else g.name in r.tags)]
        assert g.passed == sum(r.status == "pass" for r in rows) and g.failed == sum(r.status == "fail" for r in rows)
        first = next((r for r in rows if r.status in ("fail", "error")), None)
        assert g.first_failure == (failure_anchor(first) if first else None)
        assert g.total == len(rows) + (run.over_budget.get(g.name, 0) if g.kind == "suite"
                                       else run.over_budget_tags.get(g.name, 0))
    assert {g.name for g in groups if g.kind == "tag"} == {t for t in GLANCE_TAGS if any(
        t in r.tags for r in run.rows) or run.over_budget_tags.get(t)}  # only the tags some row has
    html, md = render_html(run), render_markdown(run)
    for g in failing:  # each failing group links to its first localized failure, which is on the page
        assert f'href="#{g.first_failure}"' in html and f'id="{g.first_failure}"' in html
        assert f"[{g.name}](#{g.first_failure})" in md and f'<a id="{g.first_failure}">' in md


def test_glance_counts_rows_over_the_node_budget_per_tag(passing_run):
    over, zero = {}, {}
    for row in rows():
        for tag in row.tags:
            if row.nodes > 500:
                over[tag] = over.get(tag, 0) + 1
            elif row.depth == 0:  # not run either: perft 0 judges no engine
                zero[tag] = zero.get(tag, 0) + 1
    assert passing_run.over_budget_tags == over and over
    by_name = {(g.kind, g.name): g for g in glance(passing_run)}
    for tag in set(over) & set(GLANCE_TAGS):
        assert by_name[("tag", tag)].not_run == over[tag] + zero.get(tag, 0)
    assert all(g.failed == 0 for g in by_name.values())


def test_html_escapes_text(failing_run):
    run = RunResult.from_dict(failing_run.to_dict())
    run.command = "<b>not bold</b>"
    html = render_html(run)
    assert "<b>not bold</b>" not in html and "&lt;b&gt;not bold&lt;/b&gt;" in html


def test_markdown_escapes_text_from_outside(failing_run, tmp_path):
    """An engine name, suite name, row id or message holding HTML or backticks stays text in the
    Markdown: no tag, no attribute broken out of the board's alt text, no code fence closed early."""
    run = RunResult.from_dict(failing_run.to_dict())
    run.engine = '<script>alert(1)</script>|p"q'
    row = next(r for r in run.failures() if r.localization is not None and r.localization.kind != "agree")
    row.id = 'q" onmouseover=alert(1) x=" <b>|'
    other = next(r for r in run.failures() if r is not row)
    other.localization, other.localized_at, other.error = None, None, "```\n<i>engine said</i>"
    md = render_markdown(run, boards="b")
    assert "<script>" not in md and "<b>" not in md  # a code block shows its text as it is
    assert "# Perft conformance report: &lt;script&gt;alert(1)&lt;/script&gt;|p\"q" in md
    assert 'alt="q&quot; onmouseover=alert(1) x=&quot; &lt;b&gt;|, depth' in md
    assert "````\n```\n<i>engine said</i>\n````" in md


def test_speed_chart_is_valid_svg(passing_run):
    svg = speed_chart_svg(passing_run)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    bars = [el for el in root.iter() if el.tag.endswith("rect") and el.find("{*}title") is not None]
    speed = passing_run.speed_by_depth()
    assert len(bars) == sum(len(per) for per in speed.values())
    assert all(float(b.get("height")) >= 0 for b in bars)


def test_empty_run_renders():
    run = run_suite(PythonChessEngine(), [], suites=["tricky"])
    assert speed_chart_svg(run) == ""
    assert "No row within the budget." in render_markdown(run)
    assert "<!DOCTYPE html>" in render_html(run)


def test_number_formatting():
    assert fmt_nps(None) == "-" and fmt_nps(212.3e6) == "212.3 M/s" and fmt_nps(85_100) == "85.1 k/s"
    assert fmt_nps(1.5e9) == "1.5 G/s" and fmt_nps(12) == "12 /s"


def test_template_ships_as_package_data():
    assert resources.files("oracle").joinpath("templates/report.html.j2").is_file()


@pytest.mark.core
def test_cli_report_writes_the_published_files(tmp_path, capsys):
    status = cli.main(["report", "--out", str(tmp_path), "--name", "conformance", "--max-nodes", "20000", "--json"])
    captured = capsys.readouterr()
    assert status == 0 and captured.err == ""
    summary = json.loads(captured.out)
    assert summary["failed"] == summary["errors"] == 0 and summary["passed"] > 1000
    assert Path(summary["paths"]["md"]) == tmp_path / "conformance.md"
    md = (tmp_path / "conformance.md").read_text()
    assert "**PASS**" in md and "perft report --out" in md and "--name conformance" in md
    data = json.loads((tmp_path / "conformance.json").read_text())
    assert data["environment"]["backend"] == "cpu" and data["max_nodes"] == 20000
    assert data["suites"] == ["startpos", "cpw", "tricky", "perftsuite", "chess960", "deep"]
    assert (tmp_path / "conformance.html").read_text().count("<details") == len(data["suites"]) + 1  # + speed


def test_markdown_links_one_board_per_localized_failure_written_beside_it(failing_run, tmp_path):
    """Each localized failure's board is an SVG file in NAME-boards/ (valid SVG with the missing
    moves as arrows), the Markdown shows it and the divide there (differing moves first), each
    suite links a small copy; a board of an earlier run's failure that is gone is removed."""
    from oracle.boards import COLORS

    stale = tmp_path / "conformance-boards" / "fail-cpw-gone-1.svg"
    stale.parent.mkdir()
    stale.write_text("<svg/>")
    paths = write_report(failing_run, tmp_path, "conformance")
    md = paths["md"].read_text()
    shown = [r for r in failing_run.failures() if r.localization is not None and r.localization.kind != "agree"]
    assert shown and not stale.exists()
    assert sorted(p.name for p in (tmp_path / "conformance-boards").iterdir()) == \
        sorted(f"{failure_anchor(r)}.svg" for r in shown)
    for row in shown:
        anchor = failure_anchor(row)
        svg = ET.parse(tmp_path / "conformance-boards" / f"{anchor}.svg").getroot()
        arrows = [el for el in svg.iter() if el.get("class") == "arrow"]
        assert len(arrows) == 2 * len(row.localization.missing) and all(
            (a.get("stroke") or a.get("fill")) == COLORS["missing"] for a in arrows)
        assert f"](conformance-boards/{anchor}.svg)" in md and f'<a href="#{anchor}"><img src="conformance-boards/{anchor}.svg"' in md
        section = md.split(f'<a id="{anchor}"></a>')[1].split("```")[0]
        divide = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith(("| move", "| ---"))]
        first = [line.split(" | ")[0].strip("| *") for line in divide[:len(row.localization.missing)]]
        assert first == row.localization.missing and "missing" in divide[0]


def test_a_state_verdict_highlights_its_move_and_square():
    """The blue arrow of a state verdict is its move, and the filled squares are exactly the en
    passant squares the children's FENs have (python-chess) where the engine counts none."""
    import chess
    import chess.svg

    from oracle.boards import COLORS, board_svg
    from oracle.drill import drill
    from oracle.engines import CoreEngine

    from oracle_fakes import TotalOnlyFake

    loc = drill(TotalOnlyFake("ep-not-set"), CoreEngine("cpu"), "4k3/8/8/8/3p1p2/8/4P1P1/4K3 w - - 0 1", 3)
    assert loc.kind == "state"
    svg = ET.fromstring(board_svg(loc))
    ns = "{http://www.w3.org/2000/svg}"
    size = chess.svg.SQUARE_SIZE  # the board's geometry (White at the bottom): squares inside a margin
    margin = (float(svg.get("viewBox").split()[2]) - 8 * size) // 2
    filled = {chess.square_name(chess.square(int((float(el.get("x")) - margin) // size),
                                             7 - int((float(el.get("y")) - margin) // size)))
              for el in svg.iter(f"{ns}rect") if el.get("fill") == COLORS["state_square"][:7]}
    board = chess.Board(loc.fen)
    want = set()
    for move in loc.state["moves"]:
        child = board.copy()
        child.push_uci(move)
        want.add(chess.square_name(child.ep_square))
    assert filled == want and len(want) == 2
    blue = [el for el in svg.iter() if el.get("class") == "arrow" and (el.get("stroke") or el.get("fill")) == COLORS["state"]]
    assert len(blue) == 2 * len(loc.state["moves"])


def test_perft_diff_svg_writes_the_reports_board(tmp_path, capsys):
    """``perft diff --svg FILE``: the board the HTML report shows for that localization, with the
    missing en passant capture as a green arrow."""
    import shlex
    import sys

    from oracle.boards import COLORS, board_svg
    from oracle.localize import Localization

    engine = shlex.join([sys.executable, str(FAKES / "fake_uci.py"), "no-ep"])
    target = tmp_path / "where.svg"
    status = cli.main(["diff", "--engine", engine, "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", "4", "--svg",
                       str(target), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 1 and data["svg"] == str(target) and data["kind"] == "moves" and data["missing"]
    svg = target.read_text()
    assert svg == board_svg(Localization.from_dict({k: v for k, v in data.items()
                                                    if k not in ("agree", "exit_status", "svg")}))
    arrows = [el for el in ET.fromstring(svg).iter() if el.get("class") == "arrow"]
    assert len(arrows) == 2 * len(data["missing"]) and all(a.get("stroke", a.get("fill")) == COLORS["missing"] for a in arrows)
