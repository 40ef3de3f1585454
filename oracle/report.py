"""The conformance report: one :class:`oracle.runner.RunResult` rendered three ways.

- ``NAME.json``: the model itself (:meth:`RunResult.to_dict`): every row with expected, got,
  status, seconds, nodes/s and its localization, plus backend, version, commit and machine.
- ``NAME.md``: the published report (``docs/conformance.md``): summary, speed table, failures with
  their localized positions, and per-suite tables (every row for small suites, per depth for big ones).
  Each localized failure's board is an SVG file beside it, ``NAME-boards/<anchor>.svg``, shown
  with the divide at that position as a table; each suite links small copies of its boards.
- ``NAME.html``: one self-contained page (template ``oracle/templates/report.html.j2``, no scripts):
  the verdict, then a bar chart of passed / failed / not run per suite and per tag (:func:`glance`:
  failing groups first, each linked to its first localized failure), a small board per failing
  position by suite (linked), the failures (each localized one with its board, inline SVG from
  :mod:`oracle.boards`: extra moves red arrows, missing ones green, a state verdict's move and
  squares blue, beside the divide there, differing moves first), the summary, every row of every
  suite, and, collapsed, the speed (an inline SVG chart of nodes/s by depth).
  Its tables and boards fit a 1400-px window and, as stacked cards, a 390-px one.

Every failure has an anchor (:func:`failure_anchor`) in the Markdown and the HTML, so that the
index of all reports in a folder (:func:`write_index`, ``index.md``: one row per engine, one column
per suite) can link to each localized failure.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path

import jinja2

from perft_core.atomic import write_text, write_texts

from oracle.runner import ESTIMATE_SKIP, RowResult, RunResult, SuiteSummary, at_depth_zero
from oracle.stats import REFERENCE_NODES

__all__ = ["FORMATS", "GLANCE_TAGS", "Group", "boards_folder", "failure_anchor", "glance", "render_html", "render_index", "render_json", "render_markdown",
           "speed_chart_svg", "verdict_line", "write_index", "write_report"]

FORMATS = ("json", "md", "html")
#: Suites with at most this many rows get a row-by-row table in Markdown (the rest: per depth).
MARKDOWN_ROWS_LIMIT = 100
_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")


def write_report(run: RunResult, out_dir: str | Path, name: str = "report",
                 formats: tuple[str, ...] = FORMATS) -> dict[str, Path]:
    """Write ``out_dir/NAME.json``, ``NAME.md`` and ``NAME.html`` (those in ``formats``).

    Creates ``out_dir`` if needed; returns ``{format: path}``. Raises ``ValueError`` for an unknown
    format and ``OSError`` when a file cannot be written.
    """
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"unknown report format(s) {sorted(unknown)}; known: {', '.join(FORMATS)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    folder = boards_folder(name)
    render = {"json": render_json, "md": lambda r: render_markdown(r, boards=folder), "html": render_html}
    paths = {fmt: out / f"{name}.{fmt}" for fmt in formats}
    files = {paths[fmt]: render[fmt](run) for fmt in formats}
    if "md" in formats:  # the Markdown shows each localized failure's board from an SVG file beside it
        svgs = {out / folder / f"{anchor}.svg": svg for anchor, svg in _board_svgs(run).items()}
        if svgs:
            (out / folder).mkdir(exist_ok=True)
            files.update(svgs)
        for old in (out / folder).glob("fail-*.svg") if (out / folder).is_dir() else ():
            if old not in svgs:  # a board of an earlier run's failure: gone with the failure
                old.unlink(missing_ok=True)
    write_texts(files)  # all new files, or the old ones intact
    return paths


def boards_folder(name: str) -> str:
    """The folder beside ``NAME.md`` that holds its boards: ``NAME-boards`` (one SVG per localized
    failure, named by :func:`failure_anchor`)."""
    return f"{name}-boards"


def _localized(run: RunResult) -> list[RowResult]:
    """The failing rows that carry a localization with a verdict (not ``agree``): those get a board."""
    return [row for row in run.failures() if row.localization is not None and row.localization.kind != "agree"]


def _board_svgs(run: RunResult, size: int = 360) -> dict[str, str]:
    """``{failure anchor: SVG text}`` for every localized failure (:func:`oracle.boards.board_svg`)."""
    from oracle.boards import board_svg

    return {failure_anchor(row): board_svg(row.localization, size) for row in _localized(run)}


def render_json(run: RunResult) -> str:
    """The run as JSON text (one row per line, so that diffs of the committed file stay readable)."""
    data = run.to_dict()
    rows = data.pop("rows")
    head = json.dumps(data, indent=1, sort_keys=False)
    body = ",\n".join("  " + json.dumps(row, sort_keys=False, separators=(",", ":")) for row in rows)
    return head[:-2] + ',\n "rows": [\n' + body + "\n ]\n}\n"


# ---------------------------------------------------------------------------------------------
# number formatting


def fmt_int(n: int | None) -> str:
    """``1234567`` -> ``"1,234,567"``; None -> ``"-"``."""
    return "-" if n is None else f"{n:,}"


def fmt_nps(nps: float | None) -> str:
    """Nodes per second with a unit: ``"212.3 M/s"``, ``"85.1 k/s"``; None -> ``"-"``."""
    if nps is None:
        return "-"
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if nps >= scale:
            return f"{nps / scale:.1f} {unit}/s"
    return f"{nps:.0f} /s"


def fmt_s(seconds: float | None) -> str:
    """Seconds with sensible precision: ``"0.0012"``, ``"1.25"``, ``"312"``."""
    if seconds is None:
        return "-"
    if seconds < 0.01:
        return f"{seconds:.4f}"
    if seconds < 100:
        return f"{seconds:.2f}"
    return f"{seconds:.0f}"


def _status_line(run: RunResult) -> str:
    total = run.summary()[-1]
    text = (f"**{run.verdict}**: {total.passed:,} rows passed, {total.failed:,} failed, {total.errors:,} errors"
            f", {total.skipped:,} skipped")
    if total.over_budget:
        text += f"; {total.over_budget:,} rows over the node budget of {fmt_int(run.max_nodes)} nodes not run"
    if run.statistics:
        passed = sum(s["status"] == "pass" for s in run.statistics)
        text += f"; perft statistics: {passed:,} of {len(run.statistics):,} published rows agree in every column"
    return text + "."


def verdict_line(run: RunResult, see: str | None = None) -> str:
    """The last line ``perft suite`` and ``perft report`` print: the verdict by the exit status,
    ``PASS: 6,248 rows agree, 475 over budget``, ``FAIL: 3 rows differ (see SEE)``, ``STOPPED:
    ...`` (the time budget) or ``NO VERDICT: <why>`` (nothing could be judged)."""
    total = run.summary()[-1]

    def rows(count: int, verb: tuple[str, str] = ("", "")) -> str:
        return f"{count:,} {'row' if count == 1 else 'rows'}" + (f" {verb[count != 1]}" if verb[0] else "")

    zero = sum(map(at_depth_zero, run.rows))  # skipped, but by no limit: perft 0 judges no engine
    over = (f", {total.over_budget:,} over budget" if total.over_budget else "") + (
        f", {rows(zero)} at depth 0 not judged" if zero else "")
    status = run.exit_status
    if status == 0:
        return f"PASS: {rows(total.passed, ('agrees', 'agree'))}{over}"
    if status == 1:
        errors = f", {rows(total.errors)} could not be judged" if total.errors else ""
        return f"FAIL: {rows(total.failed, ('differs', 'differ'))}{errors}" + (f" (see {see})" if see else "")
    if status == 3:
        guessed = [r for r in run.rows if r.status == "skipped" and (r.error or "").startswith(ESTIMATE_SKIP)]
        timed = total.skipped - len(guessed) - zero
        why = [f"{rows(timed)} not run (time budget)"] if timed > 0 else []
        if guessed:
            first = guessed[0]
            why.append(f"{rows(len(guessed))} not run (an estimate far over the node budget; first: {first.suite} "
                       f"{first.id} depth {first.depth}, {first.error.removeprefix(ESTIMATE_SKIP)})")
        return f"STOPPED: {', '.join(why)}, {rows(total.passed, ('agrees', 'agree'))}{over}"
    return f"NO VERDICT: {run.problem() or 'nothing was judged'}"


def _budget(run: RunResult) -> str:
    parts = [f"rows up to {fmt_int(run.max_nodes)} nodes" if run.max_nodes is not None else "every row"]
    parts.append(f"{run.max_seconds:g} s of counting" if run.max_seconds is not None else "no time limit")
    return ", ".join(parts)


def _machine(run: RunResult) -> str:
    m = run.environment.get("machine", {})
    text = ", ".join(str(m[k]) for k in ("cpu", "os", "arch") if m.get(k))
    if m.get("cores"):
        text += f", {m['cores']} cores"
    if m.get("python"):
        text += f", Python {m['python']}"
    if m.get("gpu"):
        text += f", GPU {m['gpu']}"
    elif m.get("gpu_present"):
        text += f", GPU present: {m['gpu_present']}"
    return text or "unknown"


def _engine(run: RunResult, literal=str) -> str:
    """The engine: its command (or name), a UCI engine's ``id name`` through ``literal`` (the
    Markdown report's :func:`_md_literal`: the engine, not the user, wrote it), our backend."""
    env = run.environment
    text = run.engine
    if (env.get("engine_id") or {}).get("name"):  # what a UCI engine calls itself, beside the command that ran it
        text += f" (UCI id name: {literal(env['engine_id']['name'])})"
    if env.get("backend"):
        threads = env.get("threads")
        text += f" (backend {env['backend']}" + (f", {threads} thread{'s' if threads != 1 else ''})" if threads else ")")
    return text


def _facts(run: RunResult, literal=str) -> list[tuple[str, str]]:
    env = run.environment
    return [
        ("engine", _engine(run, literal)),
        ("package version", str(env.get("version", "unknown"))),
        ("git commit", str(env.get("commit", "unknown"))),
        ("machine", _machine(run)),
        ("started", run.started),
        ("budget", _budget(run)),
        ("wall time", f"{fmt_s(run.seconds)} s"),
        ("localized against", run.reference or "-"),
        ("command", run.command or "-"),
    ]


# ---------------------------------------------------------------------------------------------
# Markdown


def _md(text) -> str:
    """Text from outside the report (engine names, suite names, row ids, tags, sources, messages) in
    Markdown prose, a heading or a table cell: ``<``, ``>`` and ``&`` escaped, so an engine name or
    an EPD id never becomes HTML where the Markdown is rendered (the HTML report escapes too)."""
    return escape(str(text), quote=False)


def _md_literal(text: str) -> str:
    """``text`` with Markdown's inline syntax escaped by backslashes (links, images, emphasis, code
    spans), so that text an engine wrote shows as written; ``_md`` still escapes it for HTML."""
    return re.sub(r"([\\`*_{}\[\]()#+!~])", r"\\\1", text)


def _md_fenced(text: str) -> list[str]:
    """``text`` as a fenced code block whose fence is longer than any run of backticks in it."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return [fence, text, fence]


def _md_table(header: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    """A Markdown table; every cell is escaped (``_md``) and its ``|`` written ``\\|``."""
    align = align or "l" * len(header)
    sep = ["---:" if a == "r" else "---" for a in align]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"] + \
        ["| " + " | ".join(_md(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]


def _summary_cells(s: SuiteSummary) -> list[str]:
    return [s.suite, fmt_int(s.rows), fmt_int(s.passed), fmt_int(s.failed), fmt_int(s.errors), fmt_int(s.skipped),
            fmt_int(s.over_budget), str(s.max_depth or "-"), fmt_int(s.nodes), fmt_s(s.seconds), fmt_nps(s.nodes_per_second)]


_SUMMARY_HEADER = ["suite", "rows run", "pass", "fail", "error", "skipped", "over budget", "deepest",
                   "nodes", "seconds", "nodes/s"]


def _by_depth(rows: list[RowResult]) -> list[list[str]]:
    depths: dict[int, list[RowResult]] = {}
    for row in rows:
        depths.setdefault(row.depth, []).append(row)
    out = []
    for depth in sorted(depths):
        group = depths[depth]
        counted = [r for r in group if r.status in ("pass", "fail") and r.got is not None]
        nodes = sum(r.got for r in counted)
        seconds = sum(r.seconds for r in counted)
        out.append([str(depth), fmt_int(len(group)), fmt_int(sum(r.status == "pass" for r in group)),
                    fmt_int(sum(r.status == "fail" for r in group)), fmt_int(sum(r.status == "error" for r in group)),
                    fmt_int(sum(r.status == "skipped" for r in group)), fmt_int(nodes), fmt_s(seconds),
                    fmt_nps(nodes / seconds if seconds > 0 else None)])
    return out


#: The tags of the at-a-glance view, in this order (see :mod:`oracle.tables` for what each means).
GLANCE_TAGS = ("en_passant", "castling", "promotion", "check", "chess960")


@dataclass
class Group:
    """One line of the at-a-glance view: the rows of a suite (``kind == "suite"``) or of a tag
    (``"tag"``, from :data:`GLANCE_TAGS`) by outcome. ``failed``: wrong counts; ``errors``: the
    engine failed; ``not_run``: over the node budget, skipped by the time budget, or at depth 0
    (which judges no engine: ``runner.DEPTH_ZERO``);
    ``first_failure``: the anchor of its first failing row (:func:`failure_anchor`) or None."""

    kind: str
    name: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    not_run: int = 0
    first_failure: str | None = None

    @property
    def total(self) -> int:
        """Every row of the group, run or not."""
        return self.passed + self.failed + self.errors + self.not_run

    def share(self, outcome: str) -> float:
        """The percentage of the group's rows with ``outcome`` (``passed``, ``failed``, ``errors``, ``not_run``)."""
        return 100.0 * getattr(self, outcome) / self.total if self.total else 0.0


def glance(run: RunResult) -> list[Group]:
    """Per suite, then per tag (:data:`GLANCE_TAGS`, those any row has): passed / failed / errors /
    not run; groups with failures or errors first, order otherwise kept. Groups with no row are left out."""
    groups = {("suite", name): Group("suite", name, not_run=run.over_budget.get(name, 0)) for name in run.suites}
    for tag in GLANCE_TAGS:
        groups[("tag", tag)] = Group("tag", tag, not_run=run.over_budget_tags.get(tag, 0))
    for row in run.rows:
        keys = [("suite", row.suite)] + [("tag", tag) for tag in row.tags if ("tag", tag) in groups]
        for key in keys:
            group = groups.setdefault(key, Group(*key))
            if row.status == "pass":
                group.passed += 1
            elif row.status == "skipped":
                group.not_run += 1
            else:
                group.failed += row.status == "fail"
                group.errors += row.status == "error"
                group.first_failure = group.first_failure or failure_anchor(row)
    kept = [g for g in groups.values() if g.total]
    return sorted(kept, key=lambda g: not (g.failed or g.errors))


def failure_anchor(row: RowResult) -> str:
    """The anchor of a failing row in the Markdown and HTML reports (and its board's file name):
    ``fail-<suite>-<id>-<depth>`` with every character outside ``[A-Za-z0-9_-]`` turned into ``-``,
    and, where that changed a character or the suite's name holds a ``-`` (two rows could then meet:
    ``t.5.epd`` and ``t-5.epd`` shared one anchor and one board, session 43's hunt), the first 8 hex
    digits of the SHA-1 of the row's key."""
    import hashlib
    import re

    text = f"{row.suite}-{row.id}-{row.depth}"
    anchor = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")
    if anchor != text or "-" in row.suite:
        anchor += "-" + hashlib.sha1(row.key.encode()).hexdigest()[:8]
    return "fail-" + anchor


def _failure_text(row: RowResult) -> str:
    if row.status == "error":
        return row.error or "engine error"
    if row.localization is not None:
        return row.localization.describe()
    if row.localized_at is not None:
        return f"same position: see the localization of {row.localized_at}"
    return row.error or "not localized"


def _md_divide(loc) -> list[str]:
    """The divide at the node where ``loc`` stopped, as a Markdown table (rows that differ first)."""
    from oracle.boards import divide_rows

    rows = divide_rows(loc)
    if not rows:
        return []
    level = loc.levels[-1]
    body = [[f"**{r.move}**" if r.differs else r.move, fmt_int(r.engine), fmt_int(r.reference), r.note] for r in rows]
    body.append(["total", fmt_int(level.engine_total), fmt_int(level.reference_total), ""])
    return [f"Divide at this position, {level.depth} {'ply' if level.depth == 1 else 'plies'} "
            "(engine / reference nodes per move; `-`: not generated or not counted):", ""] + \
        _md_table(["move", "engine", "reference", ""], body, "lrrl") + [""]


def render_markdown(run: RunResult, boards: str | None = None) -> str:
    """The report as GitHub-flavoured Markdown (the committed ``docs/conformance.md``).

    ``boards``: the folder (relative to the Markdown file) holding one SVG board per localized
    failure, named by :func:`failure_anchor` (:func:`write_report` writes them); None: no boards."""
    lines = [f"# Perft conformance report: {_md(run.engine)}", "", _status_line(run), ""]
    lines += ["## At a glance", "", "Rows per suite and per tag; suites and tags with failures first. "
              "*Not run*: over the node budget or the time budget.", ""]
    lines += _md_table(["", "group", "passed", "failed", "errors", "not run"],
                       [[g.kind, f"[{g.name}](#{g.first_failure})" if g.first_failure else g.name, fmt_int(g.passed),
                         fmt_int(g.failed), fmt_int(g.errors), fmt_int(g.not_run)] for g in glance(run)], "llrrrr")
    lines += [""]
    lines += _md_table(["", ""], [[k, v.replace("\n", " ")] for k, v in _facts(run, _md_literal)])
    lines += ["", "## Summary", ""]
    lines += _md_table(_SUMMARY_HEADER, [_summary_cells(s) for s in run.summary()], "lrrrrrrrrrr")

    speed = run.speed_by_depth()
    depths = sorted({d for per in speed.values() for d in per})
    if depths:
        lines += ["", "## Speed: nodes per second by suite and depth", "",
                  "Wall time of each count, Python call included (shallow depths measure the overhead).", ""]
        lines += _md_table(["suite"] + [f"depth {d}" for d in depths],
                           [[suite] + [fmt_nps(per.get(d)) for d in depths] for suite, per in speed.items()],
                           "l" + "r" * len(depths))

    failures = run.failures()
    lines += ["", "## Failures", ""]
    if not failures:
        lines.append("None.")
    localized = {id(row) for row in _localized(run)}
    for row in failures:
        lines += [f'<a id="{failure_anchor(row)}"></a>', "",
                  f"### {_md(row.suite)} / {_md(row.id)}, depth {row.depth}: {row.status}", "",
                  f"`{row.fen}` expected {fmt_int(row.expected)}, got {fmt_int(row.got)}", ""]
        if id(row) in localized:
            from oracle.boards import caption

            text = caption(row.localization)
            if boards is not None:
                lines += [f"![the position where the oracle stopped]({boards}/{failure_anchor(row)}.svg)", ""]
            where = f"after {text['path']}" if text["path"] else "at the root"
            lines += [_md(f"{text['to_move']} {where}" + (f"; {text['marks']}" if text["marks"] else "") + "."), ""]
            lines += _md_divide(row.localization)
        lines += _md_fenced(_failure_text(row)) + [""]

    lines += ["", "## Suites"]
    for suite in run.suites:
        rows = [r for r in run.rows if r.suite == suite]
        lines += ["", f"### {_md(suite)}", ""]
        sources = run.sources.get(suite, [])
        if sources:
            lines += ["Source: " + _md("; ".join(sources)), ""]
        shown = [r for r in _localized(run) if r.suite == suite]
        if shown and boards is not None:  # one small board per failing position, linked to its failure
            lines += [" ".join(f'<a href="#{failure_anchor(r)}"><img src="{boards}/{failure_anchor(r)}.svg" width="120" '
                               f'alt="{escape(str(r.id))}, depth {r.depth}"></a>' for r in shown), ""]
        if not rows:
            lines.append("No row within the budget.")
        elif len(rows) <= MARKDOWN_ROWS_LIMIT:
            lines += _md_table(["id", "depth", "expected", "got", "status", "seconds", "nodes/s", "tags"],
                               [[r.id, str(r.depth), fmt_int(r.expected), fmt_int(r.got), r.status, fmt_s(r.seconds),
                                 fmt_nps(r.nodes_per_second), " ".join(r.tags)] for r in rows], "lrrrlrrl")
        else:
            lines += [f"{len(rows):,} rows from {len({r.fen for r in rows}):,} positions, by depth "
                      "(every row is in the JSON and HTML reports):", ""]
            lines += _md_table(["depth", "rows", "pass", "fail", "error", "skipped", "nodes", "seconds", "nodes/s"],
                               _by_depth(rows), "rrrrrrrrr")
    lines += _statistics_markdown(run)
    return "\n".join(lines) + "\n"


def _statistics_markdown(run: RunResult) -> list[str]:
    """The perft statistics section (our CPU backend on the published statistics rows), [] when not run."""
    if not run.statistics and not run.statistics_over_budget:
        return []
    lines = ["", "## Perft statistics: the published rows", "",
             "Our CPU backend's statistics (`perft_core.perft_stats`) against every published column: the Chess "
             "Programming Wiki's detail rows (`cpw`: captures, e.p., castles, promotions, checks, discovery checks, "
             "double checks, checkmates) and Grand Chess Tree's (`gct`: the same and checks and mates by kind), "
             f"and against the python-chess reference up to {fmt_int(REFERENCE_NODES)} nodes; "
             f"{fmt_int(run.statistics_over_budget)} rows over the node budget.", ""]
    lines += _md_table(["table", "row", "depth", "nodes", "columns", "python-chess", "status", "differs"],
                       [[s.get("table", "cpw"), s["id"], str(s["depth"]), fmt_int(s["nodes"]), str(len(s["columns"])),
                         s["reference"] or "", s["status"],
                         ", ".join(f"{c} {fmt_int(s['columns'][c][0])} / {fmt_int(s['columns'][c][1])}"
                                   for c in s["mismatch"])] for s in run.statistics], "llrrrlll")
    return lines


# ---------------------------------------------------------------------------------------------
# HTML


def speed_chart_svg(run: RunResult, width: int = 760, height: int = 320) -> str:
    """An inline SVG bar chart of nodes/s (log scale) grouped by depth, one colour per suite.

    Each bar has a ``<title>`` tooltip with the exact figure. Returns ``""`` when no row was counted.
    """
    speed = run.speed_by_depth()
    depths = sorted({d for per in speed.values() for d in per})
    if not depths:
        return ""
    values = [v for per in speed.values() for v in per.values() if v > 0]
    lo = math.floor(math.log10(min(values)))
    hi = max(math.ceil(math.log10(max(values))), lo + 1)
    left, right, top, bottom = 64, 150, 16, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    suites = list(speed)
    group_w = plot_w / len(depths)
    bar_w = max(2.0, (group_w * 0.8) / len(suites))

    def y(v: float) -> float:
        return top + plot_h * (1 - (math.log10(v) - lo) / (hi - lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="nodes per second by suite and depth" '
           'font-family="sans-serif" font-size="11">']
    for e in range(lo, hi + 1):
        yy = y(10 ** e)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{escape(fmt_nps(10 ** e))}</text>')
    for gi, depth in enumerate(depths):
        gx = left + gi * group_w + group_w * 0.1
        for si, suite in enumerate(suites):
            v = speed[suite].get(depth)
            if not v:
                continue
            x = gx + si * bar_w
            yy = y(v)
            color = _COLORS[si % len(_COLORS)]
            out.append(f'<rect x="{x:.1f}" y="{yy:.1f}" width="{bar_w - 1:.1f}" height="{top + plot_h - yy:.1f}" '
                       f'fill="{color}"><title>{escape(suite)}, depth {depth}: {escape(fmt_nps(v))}</title></rect>')
        out.append(f'<text x="{left + gi * group_w + group_w / 2:.1f}" y="{top + plot_h + 16}" '
                   f'text-anchor="middle">{depth}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle">depth (plies)</text>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#333"/>')
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#333"/>')
    for si, suite in enumerate(suites):
        ly = top + 8 + si * 18
        out.append(f'<rect x="{left + plot_w + 16}" y="{ly - 9}" width="12" height="12" '
                   f'fill="{_COLORS[si % len(_COLORS)]}"/>')
        out.append(f'<text x="{left + plot_w + 34}" y="{ly + 1}">{escape(suite)}</text>')
    out.append("</svg>")
    return "\n".join(out)


@functools.cache
def _environment() -> jinja2.Environment:
    """The Jinja environment over the package's templates (built once per process)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("oracle", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update(int=fmt_int, nps=fmt_nps, secs=fmt_s)
    return env


def render_html(run: RunResult) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG, no scripts, no external links)."""
    suites = []
    for suite in run.suites:
        rows = [r for r in run.rows if r.suite == suite]
        suites.append({"name": suite, "rows": rows, "open": len(rows) <= 200,
                       "summary": next((s for s in run.summary() if s.suite == suite), None),
                       "sources": run.sources.get(suite, [])})
    from oracle.boards import caption, divide_rows

    boards = {anchor: svg.replace("<svg ", f'<svg id="board-{anchor}" ', 1) for anchor, svg in _board_svgs(run).items()}
    failures = []
    for row in run.failures():
        anchor = failure_anchor(row)
        item = {"row": row, "text": _failure_text(row), "anchor": anchor, "board": boards.get(anchor)}
        if item["board"] is not None:
            item.update(caption=caption(row.localization), divide=divide_rows(row.localization),
                        level=row.localization.levels[-1] if row.localization.levels else None)
        failures.append(item)
    thumbs = [{"suite": suite, "boards": [{"row": f["row"], "anchor": f["anchor"], "svg": _thumbnail(f["anchor"])}
                                          for f in failures if f["board"] is not None and f["row"].suite == suite]}
              for suite in run.suites]
    return _environment().get_template("report.html.j2").render(
        run=run, verdict=run.verdict, status_line=_status_line(run).replace("**", ""), facts=_facts(run),
        summary=run.summary(), summary_header=_SUMMARY_HEADER, summary_cells=_summary_cells,
        groups=glance(run), chart=speed_chart_svg(run), suites=suites, failures=failures,
        thumbs=[t for t in thumbs if t["boards"]])


def _thumbnail(anchor: str, size: int = 120) -> str:
    """A small copy of the failure's board, drawn by reference (``<use>`` of the board's ``<svg
    id="board-ANCHOR">`` further down the page, scaled by its viewBox): a few bytes, not a second
    board's ~25 KB."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{size}" '
            f'height="{size}" viewBox="0 0 {size} {size}" role="img"><use href="#board-{anchor}" '
            f'xlink:href="#board-{anchor}" width="{size}" height="{size}"/></svg>')


# ---------------------------------------------------------------------------------------------
# the index of every report in a folder


def _load_reports(folder: Path) -> list[tuple[Path, RunResult]]:
    """Every conformance report ``folder/*.json`` (files that are not a run are left out).

    Raises ``ValueError`` naming a file that is not JSON or not a readable run.
    """
    reports = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a readable JSON report: {exc}") from None
        if not isinstance(data, dict) or "engine" not in data or "rows" not in data:
            continue
        try:
            reports.append((path, RunResult.from_dict(data)))
        except (TypeError, KeyError) as exc:
            raise ValueError(f"{path}: not a conformance report: {exc}") from None
    return reports


def _index_cell(s: SuiteSummary | None) -> str:
    if s is None or (s.rows == 0 and s.over_budget == 0):
        return "-"
    parts = [f"{s.passed:,} pass", f"{s.failed:,} fail"]
    if s.errors:
        parts.append(f"{s.errors:,} error")
    if s.skipped:
        parts.append(f"{s.skipped:,} skipped")
    parts.append(f"{s.over_budget:,} over budget")
    return " / ".join(parts)


def _verdict(loc) -> str:
    """A line for a localization's verdict (the index's failure list): its kind and a few words."""
    return f"{loc.kind}: {loc.summary()}"


def render_index(reports: list[tuple[Path, RunResult]]) -> str:
    """The index page (Markdown) over ``reports`` (``(json path, run)`` pairs): one row per
    engine report, one column per suite (pass / fail / over budget), links to each report and
    to every localized failure in it."""
    from oracle import tables

    suites: list[str] = [name for name in tables.SUITES if any(name in run.suites for _, run in reports)]
    for _, run in reports:
        suites += [name for name in run.suites if name not in suites]
    lines = ["# Perft conformance reports", "",
             "One row per engine report in this folder; each suite's cell gives rows that passed, failed "
             "and were over the node budget (not run); *commit* is the git commit of the package that "
             "made the report. `perft report --publish` regenerates our CPU engine's report and this "
             "index (`perft report --index docs`: the index alone); the commands that produced each "
             "report are in the report itself and in the README.", ""]
    rows = []
    for path, run in reports:
        per = {s.suite: s for s in run.summary()}
        link = f"[{path.stem}]({path.stem}.md)"
        machine = run.environment.get("machine", {})
        where = machine.get("gpu") or machine.get("cpu") or "-"
        if machine.get("gpu_present") and not machine.get("gpu"):  # another program on a GPU machine
            where = f"{where}; GPU present: {machine['gpu_present']}"
        rows.append([link, run.engine, run.verdict, where, run.started[:10] or "-",
                     f"`{run.environment.get('commit', 'unknown')}`"]
                    + [_index_cell(per.get(name)) for name in suites])
    lines += _md_table(["report", "engine", "verdict", "machine", "date", "commit"] + suites, rows)
    lines += ["", "## Localized failures", ""]
    any_failure = False
    for path, run in reports:
        failures = run.failures()
        if not failures:
            continue
        any_failure = True
        lines += [f"### {run.engine} ([{path.stem}]({path.stem}.md))", ""]
        for row in failures:
            loc = row.localization
            what = row.status
            if loc is not None and loc.kind != "agree":
                what = _verdict(loc) + f" at `{loc.fen}`" + (f" after {' '.join(loc.path)}" if loc.path else "")
            elif row.localized_at is not None:
                what = f"same position as {row.localized_at}"
            elif row.status == "error":
                what = "engine error: " + (row.error or "").splitlines()[0]
            lines.append(f"- [{row.suite} / {row.id}, depth {row.depth}]({path.stem}.md#{failure_anchor(row)}): "
                         f"expected {fmt_int(row.expected)}, got {fmt_int(row.got)}; {what}")
        lines.append("")
    if not any_failure:
        lines.append("None.")
    return "\n".join(lines).rstrip() + "\n"


def write_index(folder: str | Path) -> Path:
    """Write ``folder/index.md`` from every report ``folder/*.json``; return its path.

    Raises ``ValueError`` when the folder holds no report or a report cannot be read, ``OSError``
    when the index cannot be written.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder")
    reports = _load_reports(folder)
    if not reports:
        raise ValueError(f"{folder}: no conformance report (*.json) in it")
    path = folder / "index.md"
    return write_text(path, render_index(reports))

