"""Run an engine on the known tables within a node and/or time budget; the result model of a run.

:func:`run_suite` counts every (fen, depth) row with the engine under test, records expected, got,
seconds and nodes/s, and localizes each failing position against a reference (python-chess by
default: it counts the smallest failing depth of each position, cheapest subtree first, and a
deeper one only where the engine agreed with it there).
:class:`RunResult` is the one model that the report renders to JSON, Markdown and HTML.
"""
from __future__ import annotations

import datetime
import functools
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field

from oracle.engines import Engine, EngineError, PythonChessEngine, board_from, time_limit
from perft_core import provenance
from oracle.drill import locate
from oracle.localize import Localization

__all__ = ["RowResult", "RunResult", "SuiteSummary", "environment", "run_suite", "select_rows"]

STATUSES = ("pass", "fail", "error", "skipped")


@dataclass
class RowResult:
    """One table row as run: ``perft(fen, depth)`` expected vs got.

    ``status``: ``"pass"``, ``"fail"`` (wrong count), ``"error"`` (the engine failed: see
    ``error``) or ``"skipped"`` (the time budget ran out first; or a depth-0 row, which judges no
    engine: :data:`DEPTH_ZERO`). ``seconds``: wall time of the
    count; ``nodes_per_second``: ``got / seconds``. ``localization``: where the engine goes wrong
    (set on the smallest failing depth of each position, and on deeper ones while those agree); ``localized_at``: the :attr:`key` of the
    row that holds it, on every other failing row of the same position (any suite).
    """

    suite: str
    id: str
    fen: str
    depth: int
    expected: int
    got: int | None = None
    status: str = "skipped"
    seconds: float = 0.0
    nodes_per_second: float | None = None
    chess960: bool = False
    tags: list[str] = field(default_factory=list)
    error: str | None = None
    localization: Localization | None = None
    localized_at: str | None = None

    @property
    def key(self) -> str:
        """``"suite/id/depth"``: names the row in a run."""
        return f"{self.suite}/{self.id}/{self.depth}"

    def to_dict(self) -> dict:
        """A JSON-ready dict; ``error``, ``localization`` and ``localized_at`` only when set, times
        rounded to 4 significant digits, nodes/s to an int."""
        data = asdict(self)
        for key in ("error", "localization", "localized_at"):
            if data[key] is None:
                del data[key]
        if self.localization is not None:
            data["localization"] = self.localization.to_dict()
        data["seconds"] = float(f"{self.seconds:.4g}")
        if self.nodes_per_second is not None:
            data["nodes_per_second"] = round(self.nodes_per_second)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "RowResult":
        """Inverse of :meth:`to_dict`. Raises ``TypeError`` naming the field for a value of the
        wrong type (:func:`checked_fields`)."""
        data = checked_fields(cls, data, skip=("localization",))
        if data.get("localization"):
            if not isinstance(data["localization"], dict):
                raise TypeError(f"field 'localization': expected an object, got {data['localization']!r}")
            data["localization"] = Localization.from_dict(data["localization"])
        return cls(**data)


@dataclass
class SuiteSummary:
    """Totals of one suite (or of a whole run, ``suite == "all"``); nodes counted, wall seconds."""

    suite: str
    rows: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    over_budget: int = 0
    nodes: int = 0
    seconds: float = 0.0
    max_depth: int = 0

    @property
    def nodes_per_second(self) -> float | None:
        """Nodes counted per wall second over the rows run, None if none took measurable time."""
        return self.nodes / self.seconds if self.seconds > 0 else None


@dataclass
class RunResult:
    """A suite run: what ran, where, with which budget, and every row's result.

    ``max_nodes`` / ``max_seconds``: the budget (None = none); rows over the node budget are not in
    ``rows`` but counted per suite in ``over_budget``. ``sources``: where each suite's counts come
    from. ``environment``: package version, git commit, backend, machine (see :func:`environment`).
    ``over_budget_tags``: the rows over the node budget counted per tag (the report's per-tag view).
    ``seconds``: wall time of the whole run, localization included.
    ``command``: the command line that produced it (set by the CLI; the report shows it).
    ``statistics``: our CPU backend's perft statistics on the published statistics rows, the Chess
    Programming Wiki's and Grand Chess Tree's (:func:`oracle.stats.check_published_rows`: one dict
    per row, every published column checked; empty
    when not asked for), ``statistics_over_budget``: its rows over the node budget. A failing
    statistics row fails the run as a failing count does.
    """

    engine: str
    reference: str | None
    suites: list[str]
    max_nodes: int | None
    max_seconds: float | None
    rows: list[RowResult] = field(default_factory=list)
    over_budget: dict[str, int] = field(default_factory=dict)
    over_budget_tags: dict[str, int] = field(default_factory=dict)
    sources: dict[str, list[str]] = field(default_factory=dict)
    environment: dict = field(default_factory=dict)
    started: str = ""
    seconds: float = 0.0
    command: str = ""
    statistics: list[dict] = field(default_factory=list)
    statistics_over_budget: int = 0

    @property
    def ok(self) -> bool:
        """True when no row failed or errored (skipped rows do not count against it) and every
        statistics row passed."""
        return (all(row.status in ("pass", "skipped") for row in self.rows)
                and all(s["status"] == "pass" for s in self.statistics))

    @property
    def judged(self) -> int:
        """Rows whose count was compared with the table (pass or fail)."""
        return sum(row.status in ("pass", "fail") for row in self.rows)

    @property
    def verdict(self) -> str:
        """The verdict's word by :attr:`exit_status`, as ``perft suite`` and ``perft report`` print it
        and every report file shows it: ``PASS`` (0), ``FAIL`` (1), ``NO VERDICT`` (2: nothing could be
        judged) or ``STOPPED`` (3: the time budget)."""
        return {0: "PASS", 1: "FAIL", 3: "STOPPED"}.get(self.exit_status, "NO VERDICT")

    @property
    def exit_status(self) -> int:
        """The rule of :func:`perft_core.cliargs.exit_status`: 1 some count was wrong (whatever else
        happened), 2 an engine error or no row counted, 3 the time budget skipped rows, else 0.
        Rows over the node budget are a selection, not a stop: they do not count; nor do depth-0
        rows (:data:`DEPTH_ZERO`: skipped, never judged, and no limit stopped them)."""
        from perft_core.cliargs import exit_status

        statuses = {row.status for row in self.rows} | {s["status"] for s in self.statistics}
        return exit_status(differ="fail" in statuses, broken="error" in statuses,
                           judged=bool(statuses & {"pass", "fail"}),
                           limited=any(row.status == "skipped" and not at_depth_zero(row) for row in self.rows))

    def problem(self) -> str | None:
        """Why rows could not be judged (errors), or that none was, in one line; None when neither
        (the exit status is then 0 or 1, or 3 with some row judged)."""
        errors = [row for row in self.rows if row.status == "error"]
        if errors:
            return (f"{len(errors)} {'row' if len(errors) == 1 else 'rows'} could not be judged; first: {errors[0].suite} {errors[0].id}: "
                    f"{str(errors[0].error).splitlines()[0] if errors[0].error else 'error'}")
        if not self.judged:
            zero = sum(at_depth_zero(row) for row in self.rows)
            return (f"nothing was judged: every row was skipped ({len(self.rows)}"
                    + (f", {zero} at depth 0, which judges no engine" if zero else "")
                    + f") or over the node budget ({sum(self.over_budget.values())})")
        return None

    def failures(self) -> list[RowResult]:
        """The rows that failed or errored, in table order."""
        return [row for row in self.rows if row.status in ("fail", "error")]

    def summary(self) -> list[SuiteSummary]:
        """One :class:`SuiteSummary` per suite (in ``suites`` order), then the total (``"all"``)."""
        per = {name: SuiteSummary(name, over_budget=self.over_budget.get(name, 0)) for name in self.suites}
        total = SuiteSummary("all", over_budget=sum(self.over_budget.values()))
        for row in self.rows:
            for s in (per.setdefault(row.suite, SuiteSummary(row.suite)), total):
                s.rows += 1
                s.passed += row.status == "pass"
                s.failed += row.status == "fail"
                s.errors += row.status == "error"
                s.skipped += row.status == "skipped"
                if row.status in ("pass", "fail") and row.got is not None:
                    s.nodes += row.got
                    s.seconds += row.seconds
                    s.max_depth = max(s.max_depth, row.depth)
        return [*per.values(), total]

    def speed_by_depth(self) -> dict[str, dict[int, float]]:
        """``{suite: {depth: nodes/s}}`` over the rows counted (pass or fail, depth >= 1) that took measurable time."""
        nodes: dict[tuple[str, int], int] = {}
        seconds: dict[tuple[str, int], float] = {}
        for row in self.rows:
            if row.status in ("pass", "fail") and row.got is not None and row.depth > 0:
                key = (row.suite, row.depth)
                nodes[key] = nodes.get(key, 0) + row.got
                seconds[key] = seconds.get(key, 0.0) + row.seconds
        out: dict[str, dict[int, float]] = {}
        for (suite, depth), n in sorted(nodes.items(), key=lambda kv: (self._suite_index(kv[0][0]), kv[0][1])):
            if seconds[(suite, depth)] > 0:
                out.setdefault(suite, {})[depth] = n / seconds[(suite, depth)]
        return out

    def _suite_index(self, suite: str) -> int:
        return self.suites.index(suite) if suite in self.suites else len(self.suites)

    def to_dict(self) -> dict:
        """A JSON-ready dict: every field, the per-suite summary too (``summary``, informative)."""
        data = asdict(self)
        data["rows"] = [row.to_dict() for row in self.rows]
        data["summary"] = [asdict(s) | {"nodes_per_second": s.nodes_per_second} for s in self.summary()]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "RunResult":
        """Inverse of :meth:`to_dict` (the ``summary`` key is recomputed, not read). Raises
        ``TypeError`` naming the field (and row) for a value of the wrong type (:func:`checked_fields`)."""
        data = checked_fields(cls, {k: v for k, v in data.items() if k != "summary"}, skip=("rows",))
        rows = data.get("rows", [])
        if not isinstance(rows, list):
            raise TypeError(f"field 'rows': expected a list, got {rows!r}")
        data["rows"] = []
        for i, row in enumerate(rows):
            try:
                if not isinstance(row, dict):
                    raise TypeError(f"expected an object, got {row!r}")
                data["rows"].append(RowResult.from_dict(row))
            except TypeError as exc:
                raise TypeError(f"rows[{i}]: {exc}") from None
        return cls(**data)


def checked_fields(cls, data: dict, skip: Sequence[str] = ()) -> dict:
    """``data`` (a dict read from JSON) checked against the fields of the dataclass ``cls``: every
    key a field, every value of its annotated type (``int``, ``float`` (an int allowed), ``str``,
    ``bool``, ``list[...]``, ``dict[...]``, ``X | None``; the items of lists and dicts are checked
    one level deep). Fields in ``skip`` are the caller's to check. Returns a copy of ``data``.
    Raises ``TypeError`` naming the field, the type expected and the value (a report edited by hand
    or by another program once made ``perft report --index`` end in a traceback deep in the
    rendering, with the exit status of a failed count)."""
    import typing

    hints = typing.get_type_hints(cls)
    out = dict(data)
    for key, value in data.items():
        if key not in hints:
            raise TypeError(f"unknown field {key!r}")
        if key not in skip and not _of_type(value, hints[key]):
            raise TypeError(f"field {key!r}: expected {_type_name(hints[key])}, got {value!r}")
    return out


def _of_type(value, hint) -> bool:
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_of_type(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool):
        return isinstance(value, hint)
    if origin is list or hint is list:
        return isinstance(value, list) and (not args or all(_of_type(v, args[0]) for v in value))
    if origin is dict or hint is dict:
        return isinstance(value, dict) and (not args or all(
            _of_type(k, args[0]) and _of_type(v, args[1]) for k, v in value.items()))
    return True  # other types (nested dataclasses) are the caller's


def _type_name(hint) -> str:
    return str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")


def select_rows(suites: Sequence[str] | None = None) -> tuple[list[str], list]:
    """The table rows of ``suites`` (all of :data:`oracle.tables.SUITES` when empty/None): bundled
    suite names, or users' files ``FILE.epd`` / ``FILE.csv`` (:func:`oracle.tables.load_file`).

    A suite named twice (a bundled name, or the same file by any path) is read once: its rows
    would otherwise be counted, and any wrong one reported, twice.

    Returns ``(suite names, rows)``; raises ``ValueError`` for an unknown suite name or a bad file
    (the message names the file and line).
    """
    from oracle import tables

    names, seen = [], set()
    for name in (list(suites) if suites else list(tables.SUITES)):
        key = name if name in tables.SUITES else ("file", os.path.realpath(name))
        if key not in seen:
            seen.add(key)
            names.append(name)
    rows = [row for name in names
            for row in (tables.load(name) if name in tables.SUITES else tables.load_file(name))]
    return names, rows


def run_suite(engine: Engine, rows: Iterable, *, reference: Engine | None = None,
              max_nodes: int | None = None, max_seconds: float | None = None,
              localize_failures: bool = True, localize_seconds: float | None = 600.0,
              suites: Sequence[str] | None = None,
              progress: Callable[[RowResult, int, int], None] | None = None) -> RunResult:
    """Count every row with ``engine`` and compare with the table.

    ``rows``: :class:`oracle.tables.TableRow`-like objects (``suite, id, fen, depth, nodes, source,
    tags, chess960``; sources are gathered per suite). ``max_nodes``: rows expecting more nodes are
    left out (counted in ``over_budget``). ``max_seconds``: wall-time budget for counting; rows not reached in time are
    ``"skipped"``, and so is a row whose estimated time (its expected nodes at the engine's nodes/s
    measured over the rows counted so far in this run) exceeds the budget left: it is not started; a row
    started is stopped when the budget runs out (:func:`oracle.engines.time_limit`) and is ``"skipped"`` too. Rows run cheapest first (so a time budget covers as many as possible) and are
    reported in table order. Engine failures mark the row ``"error"`` and the run goes on. A
    depth-0 row is ``"skipped"`` without asking the engine (:data:`DEPTH_ZERO`): not a pass, not a stop.
    Each failing position is localized at its smallest failing depth (and deeper where a walk finds
    the engine agreeing with the reference: :func:`_localize_failures`) against ``reference``
    (default: :class:`oracle.engines.PythonChessEngine`; total-only engines through
    :func:`oracle.drill.drill`), each search, and each query of the engine and of the reference in
    it, limited to ``localize_seconds``. ``progress(row_result, rows_done, rows_total)`` is called after each row.
    Returns a :class:`RunResult`.
    """
    rows = list(rows)
    if suites is None:
        suites = list(dict.fromkeys(row.suite for row in rows))
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    kept = [row for row in rows if max_nodes is None or row.nodes <= max_nodes]
    over: dict[str, int] = {}
    over_tags: dict[str, int] = {}
    for row in rows:
        if max_nodes is not None and row.nodes > max_nodes:
            over[row.suite] = over.get(row.suite, 0) + 1
            for tag in row.tags:
                over_tags[tag] = over_tags.get(tag, 0) + 1
    results = [RowResult(suite=row.suite, id=row.id, fen=row.fen, depth=row.depth, expected=row.nodes,
                         chess960=row.chess960, tags=sorted(row.tags)) for row in kept]
    sources: dict[str, list[str]] = {}
    for row in rows:
        known = sources.setdefault(row.suite, [])
        if row.source and row.source not in known:
            known.append(row.source)
    order = sorted(range(len(kept)), key=lambda i: (kept[i].nodes, i))
    counted_nodes, counted_seconds = 0, 0.0  # the engine's speed, measured on the rows run so far
    for done, i in enumerate(order, 1):
        result = results[i]
        left = None if max_seconds is None else max_seconds - (time.monotonic() - t0)
        expected_seconds = result.expected * counted_seconds / counted_nodes if counted_nodes > 0 else 0.0
        too_big = _far_over_budget(result, max_nodes)
        if result.depth == 0:  # the engine is not asked (BaseEngine.perft answers 1): not a pass
            result.status, result.error = "skipped", DEPTH_ZERO
        elif too_big:
            result.status, result.error = "skipped", too_big
        elif left is not None and left <= 0:
            result.status, result.error = "skipped", "time budget spent"
        elif left is not None and expected_seconds > left:
            result.status = "skipped"
            result.error = (f"estimated {expected_seconds:.3g} s at the {counted_nodes / counted_seconds:.3g} nodes/s "
                            f"measured so far, more than the {left:.3g} s left of the time budget")
        else:
            with time_limit(engine, left):  # a row never runs past the budget (a wrong tiny count, a hang)
                _count_row(engine, result)
            if result.status == "error" and max_seconds is not None and time.monotonic() - t0 >= max_seconds:
                result.status = "skipped"
                result.error = f"stopped at the time budget ({max_seconds:g} s) after {result.seconds:.3g} s"
            if result.got is not None and result.seconds > 0:
                counted_nodes += result.got
                counted_seconds += result.seconds
        if progress is not None:
            progress(result, done, len(order))

    if localize_failures:
        reference = reference if reference is not None else PythonChessEngine()
        _localize_failures(engine, reference, results, localize_seconds)
    return RunResult(engine=engine.name, reference=reference.name if localize_failures else None,
                     suites=list(suites), max_nodes=max_nodes, max_seconds=max_seconds, rows=results,
                     over_budget=over, over_budget_tags=over_tags, sources=sources, environment=environment(engine), started=started,
                     seconds=time.monotonic() - t0)


DEPTH_ZERO = "not judged: perft 0 is 1 by definition (the position itself) and judges no engine"
"""The error of a depth-0 row: ``"skipped"`` without asking the engine, neither judged (it is no
pass) nor a stop by a limit (:attr:`RunResult.exit_status`: a run of depth-0 rows alone judged
nothing, exit 2)."""


def at_depth_zero(row: RowResult) -> bool:
    """Is ``row`` a depth-0 row, skipped as :data:`DEPTH_ZERO` says?"""
    return row.status == "skipped" and row.depth == 0


ESTIMATE_SKIP = "not run: "
"""How the error of a row left out by :func:`_far_over_budget` starts (the verdict line counts them)."""
ESTIMATE_MARGIN = 100
"""A row is not run when an estimate of its count exceeds ESTIMATE_MARGIN x the node budget
(:func:`_far_over_budget`): far outside the estimate's error (0.5-2x from three plies, module
perft_core.estimate; wider the more plies it extrapolates). Every bundled row runs with budgets of
10^3, 10^4, 10^6 and 10^8 nodes (NOTES.md, session 31)."""


def _far_over_budget(result: RowResult, max_nodes: int | None) -> str | None:
    """Why ``result``'s row is not run although its table's count is within ``max_nodes``: an
    estimate of perft(depth) from plies 1-3 counted by our CPU backend
    (:func:`perft_core.estimate.extrapolate`) over ESTIMATE_MARGIN x the budget: the table's count is
    then too small to be right, and running the row would take the estimate's nodes, not the
    table's. None (run it) with no budget, at depth 4 or less, or when the estimate is within reach."""
    if max_nodes is None or result.depth <= 4:
        return None
    from perft_core.estimate import extrapolate

    measured = _plies_1_to_3(result.fen, result.chess960)
    if measured is None:  # the engine will say what is wrong with the position
        return None
    nodes = extrapolate(measured, result.depth)
    if nodes <= ESTIMATE_MARGIN * max_nodes:
        return None
    noun = "node" if result.expected == 1 else "nodes"
    return (f"{ESTIMATE_SKIP}the table expects {result.expected:,} {noun}, but plies 1-3 ({', '.join(f'{n:,}' for n in measured)}) "
            f"put perft {result.depth} near {nodes:.3g}, over {ESTIMATE_MARGIN} x the node budget of {max_nodes:,}: "
            "is the table's count right?")


@functools.lru_cache(maxsize=4096)
def _plies_1_to_3(fen: str, chess960: bool) -> list[int] | None:
    """perft 1, 2 and 3 of ``fen`` by our CPU backend (one thread), None for a FEN it refuses."""
    from perft_core import _core
    from perft_core.position import Position

    try:
        args = Position.from_fen(fen, chess960=chess960 or None).core_args()
    except ValueError:
        return None
    return [int(_core.perft(args, d, 1)) for d in (1, 2, 3)]


def _count_row(engine: Engine, result: RowResult) -> None:
    start = time.perf_counter()
    try:
        got = engine.perft(result.fen, result.depth)
    except EngineError as exc:
        result.seconds = time.perf_counter() - start
        result.status, result.error = "error", str(exc)
        return
    result.seconds = time.perf_counter() - start
    result.got = got
    result.nodes_per_second = got / result.seconds if result.seconds > 0 else None
    result.status = "pass" if got == result.expected else "fail"


def _localize_failures(engine: Engine, reference: Engine, results: list[RowResult],
                       max_seconds: float | None) -> None:
    """Localize each failing position (FENs that differ only in move counters are one position) at
    its smallest failing depth, and deeper failing depths in turn while a walk finds the engine and
    the reference agreeing (the table's count is in question there, and a deeper row may hide the
    engine's bug: session 43's hunt); the deeper rows then point to the walk that disagreed."""
    by_position: dict[str, list[RowResult]] = {}
    for result in results:
        if result.status == "fail":
            try:
                board = board_from(result.fen)
                key = board.epd(en_passant="fen", shredder=board.chess960)
            except ValueError:
                key = result.fen
            by_position.setdefault(key, []).append(result)
    for failing in by_position.values():
        held = None  # the row whose walk found where the engine and the reference disagree
        for row in sorted(failing, key=lambda r: r.depth):
            if held is not None:
                row.localized_at = held.key
                continue
            try:
                row.localization = locate(engine, reference, row.fen, row.depth, max_seconds=max_seconds)
            except (EngineError, ValueError) as exc:
                row.error = f"could not localize: {exc}"
                break
            again = _root_count(row.localization)
            if again is not None and again != row.got:  # one question, two answers: no walk can judge it
                row.error = (f"could not localize: engine '{engine.name}': asked twice, it answered differently: "
                             f"perft {row.depth} {row.got}, then {again} (asked again by the walk): a count that "
                             "changes cannot be judged")
                row.localization = None
                break
            if not row.localization.agree:
                held = row
            # agree: the engine and the reference agree here, so the table's count is in question at
            # this depth; a deeper failing row may still hide the engine's own bug: walk it too


def _root_count(loc: Localization) -> int | None:
    """The engine's count of the root at the walk's full depth, as the walk asked it: its divide's
    total at the root, or (a total-only engine) its count of the root node; None when the walk
    did not ask it (a walk at depth 0)."""
    if not loc.levels or loc.levels[0].path or loc.levels[0].depth != loc.depth or loc.depth == 0:
        return None
    return loc.levels[0].engine_total


# ---------------------------------------------------------------------------------------------


def environment(engine: Engine | None = None) -> dict:
    """Where a run happened: ``version`` (package), ``commit`` (git, ``+dirty`` if modified, or
    ``"unknown"``), ``backend`` and ``threads`` (for our engine), ``machine`` (cpu, cores, os,
    python; ``gpu``: the GPU our gpu backend counted on; ``gpu_present``: for another program, the
    GPU this machine shows, which the program may or may not use); ``engine_id``: a UCI engine's
    ``id name`` / ``id author`` as its handshake said them (``{"name": ..., "author": ...}``; absent
    when it gave none or never started)."""
    backend = getattr(engine, "backend", None)
    env = {
        "version": provenance.package_version(),
        "commit": provenance.package_commit(),
        "backend": backend,
        "threads": getattr(engine, "threads", None),
        "machine": provenance.machine(),
    }
    if getattr(engine, "identity", None):
        env["engine_id"] = dict(engine.identity)
    if backend and str(backend).startswith("gpu"):
        env["machine"]["gpu"] = provenance.gpu_name()
    elif backend is None and (gpu := provenance.gpu_name()) != "unknown":
        env["machine"]["gpu_present"] = gpu
    return env
