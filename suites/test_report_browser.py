"""The HTML report rendered by a real browser: headless Chromium loads the page written by
oracle.report, a probe script appended to a copy of it measures what was laid out (the summary
table, one <details> per suite, the speed chart with a non-zero size and its bars), and Chromium's
console log (``--enable-logging=stderr``) must stay empty: the report has no scripts, so any console
message (a script error, a resource that failed to load) is a defect.

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
  const heading = [...document.querySelectorAll('h2')].find(h => h.textContent.trim() === 'Summary');
  let table = heading ? heading.nextElementSibling : null;
  const svg = document.querySelector('svg');
  const out = {
    summary: table && table.tagName === 'TABLE'
      ? [...table.querySelectorAll('tr')].slice(1).map(tr => tr.cells[0].textContent.trim()) : null,
    summaryBox: table ? box(table) : null,
    suites: [...document.querySelectorAll('details > summary')].map(s => s.textContent.split(':')[0].trim()),
    chart: svg ? {box: box(svg),
                  bars: [...svg.querySelectorAll('rect')].filter(r => r.querySelector('title') && r.getBBox().height > 0).length,
                  legend: [...svg.querySelectorAll('text')].map(t => t.textContent)} : null,
  };
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def render_in_chromium(page: str, tmp_path: Path) -> tuple[dict | None, list[str]]:
    """Load ``page`` (HTML text) with the probe appended in headless Chromium.

    Returns (the probe's findings or None when it did not run, Chromium's console messages).
    """
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    proc = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                           "--window-size=1280,2000", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    return (json.loads(html.unescape(found.group(1))) if found else None), console


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
