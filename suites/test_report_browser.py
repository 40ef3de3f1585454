"""The HTML report rendered by a real browser: headless Chromium loads the page written by
oracle.report, a probe script appended to a copy of it measures what was laid out (the summary
table, one <details> per suite, the at-a-glance bars, the speed chart once opened), and Chromium's
console log (``--enable-logging=stderr``) must stay empty: the report has no scripts, so any console
message (a script error, a resource that failed to load) is a defect.

Layout at a 1400-px and a 390-px window: the probe measures that nothing is wider than the window
(the page, every table, cell, bar and block), and screenshots (read with Pillow) show the verdict
banner in the first screen and nothing drawn at the window's right edge.

Boards (issue 35): every localized failure shows its position as an inline SVG board with the
verdict's arrows, beside the divide there, and a small linked board per failing position; the probe
measures them at both widths and a screenshot of the first failure's board is read for its squares
and its arrow. Screenshots are attached to the test's output (``record_property("screenshot", ...)``,
the path printed; ``PERFT_SCREENSHOTS=DIR`` keeps a copy in DIR).

Skips with a reason where Chromium is missing (Debian: ``apt-get install chromium``; CI's .ci/run
tries to install it).
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from oracle.engines import PythonChessEngine
from oracle.report import render_html
from oracle.runner import RunResult, run_suite, select_rows

BROWSER = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(name)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium here (Debian package `chromium`)")

SUITES = ["cpw", "tricky", "chess960"]

PROBE = """<script>
(function () {
  const box = el => { const r = el.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  const rect = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height].map(Math.round); };
  const heading = [...document.querySelectorAll('h2')].find(h => h.textContent.trim() === 'Summary');
  let table = heading ? heading.nextElementSibling : null;
  const width = window.innerWidth;
  const wide = [...document.body.querySelectorAll('*')]
    .filter(el => el.getClientRects().length)
    .filter(el => { const r = el.getBoundingClientRect(); return r.right > width + 0.5 || r.left < -0.5; })
    .map(el => el.tagName + '.' + el.className + ': ' + el.textContent.trim().slice(0, 40));
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);  // text spilling out of its box
  for (let node; (node = texts.nextNode());) {
    const range = document.createRange();
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (r.width && (r.right > width + 0.5 || r.left < -0.5)) wide.push('text in ' + node.parentElement.tagName + ': ' + node.textContent.trim().slice(0, 40));
  }
  const clipped = [...document.querySelectorAll('td, th, .glance > *')]
    .filter(el => el.getClientRects().length && el.scrollWidth > el.clientWidth + 1)
    .map(el => el.tagName + '.' + el.className + ': ' + el.textContent.trim().slice(0, 40));
  for (const el of document.body.querySelectorAll('*')) {  // content hidden in a box that scrolls or clips
    if (getComputedStyle(el).overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 1)
      clipped.push('hidden sideways in ' + el.tagName + '.' + el.className);
  }
  const verdict = document.querySelector('.verdict');
  const bars = [...document.querySelectorAll('.glance .bar')].map(bar => ({
    group: bar.dataset.group, width: bar.getBoundingClientRect().width,
    parts: [...bar.children].map(p => [p.className, p.getBoundingClientRect().width]) }));
  const pageWidth = document.documentElement.scrollWidth;
  const speed = document.querySelector('details.speed');
  if (speed) speed.open = true;  // the speed chart is collapsed: open it to measure it
  const svg = document.querySelector('details.speed svg');
  const out = {
    summary: table && table.tagName === 'TABLE'
      ? [...table.querySelectorAll('tr')].slice(1).map(tr => tr.cells[0].textContent.trim()) : null,
    summaryBox: table ? box(table) : null,
    suites: [...document.querySelectorAll('details:not(.speed) > summary')].map(s => s.textContent.split(':')[0].trim()),
    chart: svg ? {box: box(svg),
                  bars: [...svg.querySelectorAll('rect')].filter(r => r.querySelector('title') && r.getBBox().height > 0).length,
                  legend: [...svg.querySelectorAll('text')].map(t => t.textContent)} : null,
    width: width, pageWidth: pageWidth, openWidth: document.documentElement.scrollWidth, wide: wide, clipped: clipped,
    verdictBottom: verdict ? verdict.getBoundingClientRect().bottom : null, bars: bars,
    boards: [...document.querySelectorAll('.node figure svg')].map(svg => ({rect: rect(svg),
      arrows: [...svg.querySelectorAll('.arrow')].map(a => [a.getAttribute('stroke') || a.getAttribute('fill'), ...box(a)])})),
    thumbs: [...document.querySelectorAll('.thumbs a')].map(a => ({href: a.getAttribute('href'), box: box(a.querySelector('svg')),
      rect: rect(a.querySelector('svg')),
      target: !!document.getElementById(a.getAttribute('href').slice(1))})),
    divides: [...document.querySelectorAll('table.divide')].map(t => [...t.querySelectorAll('tr')].slice(1).map(tr => tr.className)),
  };
  const host = window.parent !== window ? window.parent.document : document;  // srcdoc frame: same origin
  const pre = host.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  host.body.appendChild(pre);
})();
</script>"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def render_in_chromium(page: str, tmp_path: Path, width: int = 1280) -> tuple[dict | None, list[str]]:
    """Load ``page`` (HTML text) with the probe appended in headless Chromium, in a frame ``width``
    px wide (headless Chromium's window is at least 500 px wide; a srcdoc frame can be narrower and
    shares its host's origin, so the probe writes its findings into the host page).

    Returns (the probe's findings or None when it did not run, Chromium's console messages).
    """
    path = tmp_path / "report.html"
    probed = html.escape(page.replace("</body>", PROBE + "\n</body>"), quote=True)
    path.write_text(f'<!DOCTYPE html><html><body style="margin:0"><iframe style="width:{width}px;height:2000px;'
                    f'border:0;display:block" srcdoc="{probed}"></iframe></body></html>', encoding="utf-8")
    proc = _chromium(tmp_path, f"--window-size={max(width, 500) + 20},2000", "--dump-dom", path.as_uri())
    console = [line for line in proc.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    return (json.loads(html.unescape(found.group(1))) if found else None), console


def screenshot(page: str, tmp_path: Path, width: int, height: int):
    """The first screen of ``page`` in a ``width`` x ``height`` window, as an RGB Pillow image."""
    from PIL import Image

    path, shot = tmp_path / "shot.html", tmp_path / f"shot-{width}.png"
    path.write_text(page, encoding="utf-8")
    _chromium(tmp_path, f"--window-size={width},{height}", f"--screenshot={shot}", path.as_uri())
    return Image.open(shot).convert("RGB")


@pytest.fixture(scope="module")
def run() -> RunResult:
    _, rows = select_rows(SUITES)
    rows = [r for r in rows if r.nodes <= 3_000 and (r.suite != "chess960" or int(r.id) < 40)]
    result = run_suite(PythonChessEngine(), rows, suites=SUITES)
    result.command = "pytest"
    return result


def test_report_renders_in_chromium(run, tmp_path):
    probe, console = render_in_chromium(render_html(run), tmp_path)
    assert console == []
    assert probe is not None, "the probe script did not run"
    assert probe["summary"] == SUITES + ["all"]
    assert probe["summaryBox"][0] > 0 and probe["summaryBox"][1] > 0
    assert probe["suites"] == SUITES
    bars = sum(len(per) for per in run.speed_by_depth().values())
    assert probe["chart"]["bars"] == bars > 0  # one drawn bar per (suite, depth) counted
    assert set(SUITES) <= set(probe["chart"]["legend"])
    assert probe["chart"]["box"][0] >= 300 and probe["chart"]["box"][1] >= 100


def test_a_script_error_is_caught(run, tmp_path):
    broken = render_html(run).replace("</body>", "<script>report.draw();</script>\n</body>")
    _, console = render_in_chromium(broken, tmp_path)
    assert any("ReferenceError" in line for line in console)


def test_a_missing_chart_is_caught(run, tmp_path):
    page = re.sub(r"<svg.*?</svg>", "", render_html(run), flags=re.S)
    probe, console = render_in_chromium(page, tmp_path)
    assert console == [] and probe["chart"] is None


class NoEnPassant(PythonChessEngine):
    """python-chess without en passant captures (suites/fake_engines/broken.py): a run with failures."""

    name = "broken:no-ep"

    def moves(self, board):
        import importlib.util

        spec = importlib.util.spec_from_file_location("oracle_test_broken", Path(__file__).parent / "fake_engines" / "broken.py")
        broken = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(broken)
        return broken.no_en_passant(board)


@pytest.fixture(scope="module")
def failing() -> RunResult:
    """cpw, tricky and 40 Chess960 positions with failures (no en passant) and rows over the node budget."""
    _, rows = select_rows(SUITES)
    rows = [r for r in rows if r.nodes <= 3_000 and (r.suite != "chess960" or int(r.id) < 40)]
    result = run_suite(NoEnPassant(), rows, suites=SUITES, max_nodes=2_000)
    result.command = "perft report --engine 'a rather long command line that must wrap rather than widen the page " \
                     "--with --many --options --and /a/very/long/path/to/the/engine/binary/that/goes/on/and/on'"
    return result


@pytest.mark.parametrize("width", [1400, 390])
def test_layout_fits_the_window(failing, tmp_path, width):
    probe, console = render_in_chromium(render_html(failing), tmp_path, width)
    assert console == [] and probe is not None
    assert probe["width"] == width
    assert probe["pageWidth"] <= width, ("the page scrolls sideways", probe["wide"], probe["clipped"])
    assert probe["wide"] == [], "elements reach past the window's edge"
    assert probe["clipped"] == [], "cells whose content is wider than the cell"
    assert 0 < probe["verdictBottom"] < 600, "the verdict is in the first screen"
    groups = [b["group"] for b in probe["bars"]]
    assert groups[:2] == ["suite:tricky", "suite:chess960"] and "tag:en_passant" in groups  # failing first
    for bar in probe["bars"]:
        assert bar["width"] > 40 and abs(sum(w for _, w in bar["parts"]) - bar["width"]) <= 1.5, bar
    ep = next(b for b in probe["bars"] if b["group"] == "tag:en_passant")
    assert any(cls == "failed" and w > 0 for cls, w in ep["parts"])


@pytest.mark.parametrize("width, height", [(1400, 900), (390, 844)])
def test_screenshot_shows_the_verdict_and_nothing_cut_at_the_edge(failing, tmp_path, width, height, record_property):
    pytest.importorskip("PIL", reason="Pillow reads the screenshots (pip install '.[test]')")
    image = screenshot(render_html(failing), tmp_path, width, height)
    _attach(record_property, tmp_path / f"shot-{width}.png", f"report-first-screen-{width}.png")
    assert image.size == (width, height)
    banner = (0xfd, 0xec, 0xea)  # .verdict.fail's background
    rows = [y for y in range(height) if sum(image.getpixel((x, y)) == banner for x in range(0, width, 4)) > width // 8]
    assert rows and rows[0] < height // 3, "the red verdict banner is near the top of the first screen"
    edge = {image.getpixel((x, y)) for x in range(width - 3, width) for y in range(height)}
    assert edge == {(255, 255, 255)}, "something is drawn at the window's right edge (cut off)"


def localized(run: RunResult) -> list:
    """The failing rows with a verdict (not ``agree``): each must show a board."""
    return [r for r in run.failures() if r.localization is not None and r.localization.kind != "agree"]


@pytest.mark.parametrize("width", [1400, 390])
def test_every_failure_shows_its_board_with_arrows(failing, tmp_path, width):
    """One board per localized failure, square and at least 300 px wide at both widths, with two
    drawn arrow parts (shaft and head) in the missing-move green per missing move (this engine
    misses en passant captures); the divide beside it lists the differing rows first; one small
    board per failing position links to a failure that exists."""
    from oracle.boards import COLORS

    probe, console = render_in_chromium(render_html(failing), tmp_path, width)
    assert console == [] and probe is not None
    rows = localized(failing)
    assert len(probe["boards"]) == len(rows) > 0
    for board, row in zip(probe["boards"], rows):
        x, y, w, h = board["rect"]
        assert 300 <= w == h and x >= 0 and x + w <= width, board
        assert row.localization.missing and not row.localization.extra
        green = [a for a in board["arrows"] if a[0] == COLORS["missing"]]
        assert len(green) == 2 * len(row.localization.missing) == len(board["arrows"]), board
        assert all(aw > 0 and ah > 0 for _, aw, ah in green)
    assert len(probe["divides"]) == len(rows)
    for classes, row in zip(probe["divides"], rows):
        differing = len(row.localization.missing) + len(row.localization.extra)
        assert classes[:differing] == ["differs"] * differing and "differs" not in classes[differing:]
    assert len(probe["thumbs"]) == len(rows)
    assert all(t["target"] and t["box"] == [120, 120] for t in probe["thumbs"])


def _attach(record_property, image_path: Path, name: str) -> None:
    """Attach a screenshot to the test's output: its path as a property (JUnit XML) and printed;
    with ``PERFT_SCREENSHOTS=DIR`` a copy ``DIR/NAME`` is kept."""
    import os

    keep = os.environ.get("PERFT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        image_path = Path(shutil.copy(image_path, Path(keep) / name))
    record_property("screenshot", str(image_path))
    print(f"screenshot: {image_path}")


@pytest.mark.parametrize("width", [1400, 390])
def test_screenshot_shows_the_first_failures_board_and_arrow(failing, tmp_path, width, record_property):
    """The first failure's board as Chromium draws it: the board's light and dark squares
    (python-chess's colours) fill most of its box, and the green missing-move arrow is drawn on it;
    the small copy of it at the top (a ``<use>`` of that board) is drawn too."""
    pytest.importorskip("PIL", reason="Pillow reads the screenshots (pip install '.[test]')")
    page = render_html(failing)
    probe, _ = render_in_chromium(page, tmp_path, width)
    x, y, w, h = probe["boards"][0]["rect"]
    image = screenshot(page, tmp_path, width, y + h + 40)
    _attach(record_property, tmp_path / f"shot-{width}.png", f"report-board-{width}.png")
    board = image.crop((x, y, x + w, y + h))
    pixels = list(zip(*[iter(board.tobytes())] * 3))  # RGB triples
    light, dark = (0xff, 0xce, 0x9e), (0xd1, 0x8b, 0x47)  # chess.svg's default square colours
    assert sum(p in (light, dark) for p in pixels) > 0.5 * len(pixels), "no board drawn where the probe found it"
    arrow = [p for p in pixels if p[1] - p[0] > 50 and p[1] - p[2] > 60]  # #2ca02c at 80 % over a square
    assert len(arrow) > 100, "no green arrow on the board"
    tx, ty, tw, th = probe["thumbs"][0]["rect"]
    thumb = list(zip(*[iter(image.crop((tx, ty, tx + tw, ty + th)).tobytes())] * 3))
    assert sum(p in (light, dark) for p in thumb) > 0.3 * len(thumb), "the small board is not drawn"
