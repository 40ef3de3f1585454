"""The oracle's subcommands of the ``perft`` console script: ``diff``, ``suite`` and ``report``.

The ``perft`` dispatcher (``perft_cli``) calls :func:`register` with its subparsers and dispatches ``args.func(args)``,
which returns the exit status by the one rule of :func:`perft_core.cliargs.exit_status`: 0 the
engine agrees (or passes every row), 1 it disagrees somewhere (the localized position, path and
missing/extra moves are printed), 2 nothing could be judged: bad input or a broken engine (one
``perft: error: ...`` line on stderr), 3 a time limit stopped it first. ``python -m oracle.cli``
runs them without perft_cli. ``perft report`` writes ``./perft-report/`` (git-ignored);
``perft report --publish`` writes ``docs/`` and refreshes ``docs/index.md``. Without a terminal,
``suite`` and ``report`` write progress lines (:class:`perft_core.watch.ProgressLines`).

Engine specs (``--engine``, ``--reference``): ``python-chess``, ``cpu``, ``gpu``, ``gpu-emulated``,
or a shell-style command line such as ``"stockfish"`` or ``"python my_engine.py --uci"`` spoken to
with ``--protocol uci`` (``go perft``), ``perftree`` (``CMD depth "fen" "moves"``) or ``cli``
(a program that prints only a total: ``"perft_gpu {fen} {depth} -nott"``, localized by
:func:`oracle.drill.drill`). ``--reference auto`` (the default) is python-chess when the engine
under test is one of our backends, else our gpu backend when CuPy and a device are usable, else cpu.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import sys
import time

import chess

from oracle.drill import locate
from perft_core.threads import available_cores
from oracle.engines import DEFAULT_TIMEOUT, PROTOCOLS, EngineError, board_from, fen_problems, make_engine
from oracle.runner import RunResult, run_suite, select_rows
from perft_core import cliargs

__all__ = ["DEFAULT_MAX_NODES", "main", "register"]

#: Default node budget of ``perft suite`` and ``perft report``: rows expecting more nodes are not run.
DEFAULT_MAX_NODES = 500_000_000
#: Default output folder of ``perft report`` (git-ignored: the main job leaves the checkout clean).
DEFAULT_OUT = "perft-report"
#: Output folder of ``perft report --publish`` (tracked: the published reports and their index).
PUBLISHED_OUT = "docs"


class BadInput(ValueError):
    """A command-line argument that cannot be used (exit status 2)."""


def register(subparsers) -> None:
    """Add ``diff``, ``suite`` and ``report`` to an ``argparse`` subparsers object.

    Each sets ``func`` to a callable ``(args) -> int`` returning the exit status.
    """
    p = subparsers.add_parser(
        "diff", help="compare an engine's perft with a reference and localize the first disagreement",
        description="Compare ENGINE's divide with the reference at FEN and DEPTH; when they differ, walk down "
                    "to the position and move where they disagree.",
        examples=["perft diff --engine /usr/games/stockfish startpos 5",
                     'perft diff --engine "python my_engine.py" --protocol perftree "FEN" 4',
                     'perft diff --protocol cli --engine "my_perft {fen} {depth}" "FEN" 6 --json',
                     'perft diff --engine stockfish "FEN" 5 --svg where.svg'])
    p.add_argument("fen", metavar="FEN", help="FEN, X-FEN, Shredder-FEN or 4-field EPD (quote it), or startpos")
    p.add_argument("depth", metavar="DEPTH", type=cliargs.depth, help="plies to count")
    _engine_args(p, default_engine=None)
    p.add_argument("--max-seconds", type=cliargs.seconds, metavar="S",
                   help="give up localizing after S seconds of wall time (default: no limit)")
    p.add_argument("--force", action="store_true",
                   help="walk even when the reference's count is estimated to take longer than a day "
                        "(refused without it or --max-seconds)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--svg", type=cliargs.output_file, default=None, metavar="FILE",
                   help="also draw the position where the walk ended as an SVG board (extra moves red arrows, "
                        "missing moves green, a state verdict's move and squares blue), as in the HTML report")
    p.set_defaults(func=cmd_diff)

    p = subparsers.add_parser(
        "suite", help="run an engine on the bundled perft tables or your own",
        description="Run ENGINE on the bundled tables (all suites if none named) or on your own FILE.epd "
                    "(FEN ;D1 20 ;D2 400 ...) / FILE.csv (fen,depth,nodes) within a node and/or time "
                    "budget; every failing position is localized against the reference. Rows over "
                    "--max-nodes are left out (a selection: they do not change the exit status).",
        examples=["perft suite tricky chess960 --engine /usr/games/stockfish --max-nodes 10000000",
                     "perft suite my_tests.epd --engine \"python my_engine.py\" --protocol perftree"])
    p.add_argument("suites", nargs="*", metavar="SUITE",
                   help=f"suites to run (default all: {_suite_names()}) or FILE.epd / FILE.csv")
    _engine_args(p, default_engine="cpu")
    _budget_args(p)
    p.add_argument("--json", action="store_true", help="print the run as one JSON object instead of text")
    p.set_defaults(func=cmd_suite)

    p = subparsers.add_parser(
        "report", help="write the conformance report of an engine (JSON, Markdown, HTML)",
        description="Run our engine (--backend) or any engine (--engine CMD --protocol uci|perftree|cli) on "
                    "every bundled table within the budget and write OUT/NAME.json, OUT/NAME.md and "
                    "OUT/NAME.html (OUT: ./perft-report/, not tracked by git). The published report in "
                    "docs/ is regenerated with `perft report --publish`, which also refreshes docs/index.md; "
                    "`perft report --index docs` writes docs/index.md alone.",
        examples=["perft report", "perft report --engine /usr/games/stockfish --max-nodes 20000000",
                     "perft report --publish"])
    p.add_argument("--out", type=cliargs.output_dir, default=None, metavar="DIR",
                   help=f"output folder (default: ./{DEFAULT_OUT}; docs with --publish)")
    p.add_argument("--publish", action="store_true",
                   help="the published report: write to docs/ (or --out) and refresh its index.md")
    p.add_argument("--name", type=cliargs.file_stem, default=None, metavar="NAME",
                   help="file stem (default: conformance for our cpu backend, conformance-BACKEND for the others, "
                        "else the engine's program or script name and a hash of its command: stockfish-e47f7a)")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "gpu-emulated"), help="backend (default cpu)")
    p.add_argument("--engine", default=None, metavar="CMD",
                   help="engine under test instead of our backend: python-chess or a command line")
    _protocol_args(p)
    p.add_argument("--suites", nargs="+", default=None, metavar="SUITE",
                   help="suites (or FILE.epd / FILE.csv) to run (default: every bundled suite)")
    p.add_argument("--index", default=None, metavar="DIR",
                   help="write DIR/index.md from every report DIR/*.json (no engine is run)")
    p.add_argument("--threads", type=cliargs.positive_int, default=None, metavar="N",
                   help=f"threads for the CPU backend (default: every core this process may run on, "
                        f"{available_cores()} here)")
    _budget_args(p)
    p.add_argument("--timeout", type=cliargs.seconds, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds one command of an --engine may take (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="print the paths and totals as JSON; no progress bar")
    p.set_defaults(func=cmd_report)


def _protocol_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--protocol", choices=PROTOCOLS, default="uci",
                   help="how to talk to an engine command: uci (go perft), perftree, or cli (a program "
                        "that prints only a total; the command holds {fen} and {depth}) (default uci)")
    p.add_argument("--total-regex", default=None, metavar="REGEX",
                   help="with --protocol cli: read the total from the first group of the last line matching REGEX")
    p.add_argument("--reference", default="auto", metavar="REF",
                   help="reference for localizing: auto (default: python-chess for our own backends, else gpu "
                        "when usable, else cpu), python-chess, cpu, gpu, or a command line")
    p.add_argument("--reference-protocol", choices=("uci", "perftree"), default="uci",
                   help="protocol of a reference command (default uci)")
    p.add_argument("--reference-tt", action="store_true",
                   help="our reference backend counts through transposition tables")
    p.add_argument("--verify-seed", type=cliargs.seed, default=None, metavar="SEED",
                   help="with --reference-tt: re-count each differing child with this Zobrist key seed before "
                        "believing it")


def _engine_args(p: argparse.ArgumentParser, default_engine: str | None) -> None:
    p.add_argument("--engine", required=default_engine is None, default=default_engine, metavar="CMD",
                   help="engine under test: cpu, gpu, python-chess, or a command line"
                        + (f" (default {default_engine})" if default_engine else ""))
    _protocol_args(p)
    p.add_argument("--threads", type=cliargs.positive_int, default=None, metavar="N",
                   help=f"threads for our CPU backend (default: every core this process may run on, "
                        f"{available_cores()} here)")
    p.add_argument("--timeout", type=cliargs.seconds, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds an engine command may take (default {DEFAULT_TIMEOUT:g})")


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-nodes", type=cliargs.positive_int, default=DEFAULT_MAX_NODES, metavar="N",
                   help=f"skip rows expecting more than N nodes (default {DEFAULT_MAX_NODES:,})")
    p.add_argument("--max-seconds", type=cliargs.seconds, metavar="S",
                   help="stop starting new rows after S seconds; the rest are 'skipped' (default: no limit)")
    p.add_argument("--localize-seconds", type=cliargs.seconds, default=600.0, metavar="S",
                   help="give up localizing one failing position after S seconds (default 600)")


# -- argument types ---------------------------------------------------------------------------


def _suite_names() -> str:
    try:
        from oracle import tables

        return ", ".join(tables.SUITES)
    except ImportError:  # pragma: no cover - tables ship with the package
        return "?"


# -- helpers ----------------------------------------------------------------------------------


def _error(message: str) -> int:
    from perft_core.errors import clip

    print(f"perft: error: {clip(message)}", file=sys.stderr)
    return 2


def _status(run: RunResult) -> int:
    """The run's exit status; when rows could not be judged or none was, why, as one line on stderr
    (not only in the table): ``perft: error: ...``, or ``perft: stopped: ...`` when a time budget
    ended the run (exit 3: nothing went wrong)."""
    problem = run.problem()
    if problem is not None and run.exit_status == cliargs.LIMITED:
        print(f"perft: stopped: {problem}", file=sys.stderr)
    elif problem is not None:
        _error(problem)
    return run.exit_status


def _check_fen(fen: str) -> None:
    """Raise BadInput unless python-chess and perft_core both read ``fen`` as a position that perft
    can count (perft_core is stricter: a fullmove number of 0 was an engine's "FenError while
    counting" half-way through a diff, session 36's hunt)."""
    from perft_core.position import Position

    try:
        board = board_from(fen)
    except ValueError as exc:
        raise BadInput(f"bad FEN {fen!r}: {exc}") from None
    problems = fen_problems(board)
    if problems:
        raise BadInput(f"bad FEN {fen!r}: {', '.join(problems)}")
    try:
        Position.from_fen(fen)
    except ValueError as exc:
        raise BadInput(f"bad FEN {fen!r}: {exc}") from None


def _make(spec: str, protocol: str, args, *, reference: bool = False) -> object:
    """The engine under test (``reference=False``: ``--total-regex`` applies) or the reference
    (``--reference-tt``, ``--verify-seed`` apply)."""
    if reference:
        options = {"tt": args.reference_tt, "verify_seed": args.verify_seed}
        if (args.reference_tt or args.verify_seed is not None) and spec not in ("cpu", "gpu", "gpu-emulated"):
            raise BadInput(f"--reference-tt and --verify-seed need our backend as the reference (cpu, gpu), not {spec!r}")
    else:
        if args.total_regex is not None and protocol != "cli":
            raise BadInput("--total-regex needs --protocol cli")
        options = {"total_regex": args.total_regex}
    try:
        return make_engine(spec, protocol=protocol, timeout=args.timeout, threads=args.threads, **options)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def _reference_spec(spec: str, engine_spec: str) -> str:
    """Resolve ``--reference auto``: python-chess for our own backends (independent code), else the
    fastest of ours that runs here: gpu when CuPy and a device are usable, else cpu."""
    if spec != "auto":
        return spec
    if engine_spec in ("cpu", "gpu", "gpu-emulated"):
        return "python-chess"
    try:
        from perft_core.gpu.registry import get_driver

        get_driver("gpu")
    except Exception:  # ImportError, ValueError: no usable GPU here
        return "cpu"
    return "gpu"


ENGINE_KEYS = ["engine", "protocol", "total-regex", "threads", "timeout", "reference", "reference-protocol",
               "reference-tt", "verify-seed", "max-nodes", "max-seconds", "localize-seconds"]
"""The options of an engine's run (``perft suite``, ``perft report --engine``) that a recorded
command repeats: every one that changes which rows run, how the engine is asked or who judges."""


def _command_line(command: str, args, keys: list[str]) -> str:
    """``command`` followed by the options ``keys`` that have a value, shell-quoted."""
    parts = []
    for key in keys:
        value = getattr(args, key.replace("-", "_"), None)
        if value is True:  # a flag
            parts.append(f"--{key}")
        elif value is not None and value is not False:
            parts += [f"--{key}", str(value)]
    return f"{command} {shlex.join(parts)}".strip()


@contextlib.contextmanager
def _progress(enabled: bool, total_nodes: int, label: str):
    """Yield a progress callback for :func:`run_suite`: a rich bar on a terminal (stderr); else
    :class:`perft_core.watch.ProgressLines` (a line a minute, a summary line when it took over
    ``LINES_SECONDS``); None when not ``enabled``. The share shown is of the ``total_nodes``
    counted: a skipped row (a time limit, depth 0) adds its row to the rows done, not its nodes."""
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        import time

        from perft_core import watch

        lines = watch.ProgressLines(f"{label}:", of=" of the nodes", first=watch.FIRST_LINE_SECONDS)
        t0, state = time.monotonic(), {}

        def line(result, done: int, total: int) -> None:
            state["nodes"] = state.get("nodes", 0) + (result.got or 0)
            state["share"] = state.get("share", 0) + _counted(result) / max(total_nodes, 1)
            state["what"] = f"{done}/{total} rows"
            lines.report(state["what"], state["share"], state["nodes"], time.monotonic() - t0)
        yield line
        if state and time.monotonic() - t0 > watch.LINES_SECONDS:
            lines.report(state["what"], state["share"], state["nodes"], time.monotonic() - t0, final=True)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    with Progress(TextColumn("{task.description}", table_column=Column(width=28, no_wrap=True)), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TextColumn("{task.fields[rows]}"), TimeElapsedColumn(), _eta_column(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("counting", total=max(total_nodes, 1), rows="")

        def update(result, done: int, total: int) -> None:
            bar.update(task, advance=_counted(result), rows=f"{done}/{total} rows",
                       description=f"{result.suite} {result.id} d{result.depth}")
        yield update


def _counted(result) -> int:
    """The nodes a row adds to the progress shown: its expected count, 0 when it was skipped."""
    return 0 if result.status == "skipped" else result.expected


def _eta_column():
    """A rich column: the time left at the rate measured so far (:func:`perft_core.watch.eta`), ``ETA -``
    until the rate is measured (rich's own estimate from the first, tiny rows read ``332:33:09``)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    from perft_core import watch

    class Eta(ProgressColumn):
        def render(self, task) -> Text:
            left = watch.eta(task.elapsed or 0.0, task.completed / task.total) if task.total else None
            return Text("ETA -" if left is None else f"ETA {watch.duration(left)}")

    return Eta()


def _run(args, engine_spec: str, protocol: str, reference_spec: str, reference_protocol: str,
         suites: list[str] | None, command: str) -> RunResult:
    try:
        names, rows = select_rows(suites)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    engine = _make(engine_spec, protocol, args)
    reference = _make(_reference_spec(reference_spec, engine_spec), reference_protocol, args, reference=True)
    budgeted = sum(r.nodes for r in rows if r.nodes <= args.max_nodes)
    with engine, reference, _progress(not args.json, budgeted, command.split(" --")[0]) as progress:
        engine.perft(chess.STARTING_FEN, 1)  # an engine that cannot even start fails once, here
        run = run_suite(engine, rows, reference=reference, max_nodes=args.max_nodes,
                        max_seconds=args.max_seconds, localize_seconds=args.localize_seconds, suites=names,
                        progress=progress)
    if spec_is_our_cpu(engine_spec) and (not suites or "cpw" in names):
        from oracle.stats import check_published_rows

        run.statistics, run.statistics_over_budget = check_published_rows(args.max_nodes)
    run.command = command
    return run


def spec_is_our_cpu(engine_spec: str) -> bool:
    """Is the engine under test our CPU backend (the one that counts perft statistics)?"""
    return engine_spec == "cpu"


def _summary_text(run: RunResult) -> str:
    from oracle.report import fmt_int, fmt_nps, fmt_s

    header = ["suite", "rows", "pass", "fail", "error", "skipped", "over budget", "nodes", "seconds", "nodes/s"]
    table = [header] + [[s.suite, fmt_int(s.rows), fmt_int(s.passed), fmt_int(s.failed), fmt_int(s.errors),
                         fmt_int(s.skipped), fmt_int(s.over_budget), fmt_int(s.nodes), fmt_s(s.seconds),
                         fmt_nps(s.nodes_per_second)] for s in run.summary()]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _failures_text(run: RunResult) -> str:
    out = []
    for row in run.failures():
        head = f"{row.status.upper()} {row.suite}/{row.id} depth {row.depth}: expected {row.expected:,}, got "
        head += f"{row.got:,}" if row.got is not None else "nothing"
        out.append(head)
        if row.status == "error":
            out.append("  " + (row.error or "").replace("\n", "\n  "))
        elif row.localization is not None:
            out.append("  " + row.localization.describe().replace("\n", "\n  "))
        elif row.localized_at is not None:
            out.append(f"  (same position: see the localization of {row.localized_at})")
        elif row.error:
            out.append("  " + row.error.replace("\n", "\n  "))
    return "\n".join(out)


# -- commands ---------------------------------------------------------------------------------


class _WalkLines:
    """``perft diff``'s progress on stderr: a line at most every PROGRESS_LINE_SECONDS while the
    walk goes on (ply, plies left, queries, time), and a summary line at the end of a walk that
    took over LINES_SECONDS or printed a line. Text only, also on a terminal (a walk has no total
    for a bar)."""

    def __init__(self, depth: int):
        self.depth, self.t0, self.last, self.steps, self.printed = depth, time.monotonic(), 0.0, 0, False

    def step(self, level) -> None:
        from perft_core import watch

        self.steps += 1
        now = time.monotonic() - self.t0
        if now - self.last >= watch.PROGRESS_LINE_SECONDS:
            self.last, self.printed = now, True
            print(f"perft diff: ply {len(level.path)} of at most {self.depth} ({level.depth} plies left), "
                  f"{self.steps} queries in {watch.duration(now)}", file=sys.stderr, flush=True)

    def done(self, loc) -> None:
        from perft_core import watch

        now = time.monotonic() - self.t0
        if self.printed or now >= watch.LINES_SECONDS:
            print(f"perft diff: {loc.kind} ({loc.summary()}) at ply {len(loc.path)} after {self.steps} queries "
                  f"in {watch.duration(now)}", file=sys.stderr, flush=True)


def cmd_diff(args) -> int:
    """``perft diff``: localize the first disagreement between ``--engine`` and ``--reference``."""
    if args.fen.strip() == "startpos":
        args.fen = chess.STARTING_FEN
    try:
        if args.depth == 0:  # BaseEngine.perft answers 1 at depth 0 without asking the engine
            raise BadInput("depth 0: perft 0 is 1 by definition (the position itself) and judges no engine; "
                           "ask depth >= 1")
        _check_fen(args.fen)
        reference_spec = _reference_spec(args.reference, args.engine)
        if not args.force and args.max_seconds is None:
            _refuse_a_walk_of_days(args.fen, args.depth, reference_spec, args.threads)
        engine = _make(args.engine, args.protocol, args)
        reference = _make(reference_spec, args.reference_protocol, args, reference=True)
    except BadInput as exc:
        return _error(str(exc))
    lines = None if args.json else _WalkLines(args.depth)
    try:
        with engine, reference:
            loc = locate(engine, reference, args.fen, args.depth, max_seconds=args.max_seconds,
                         on_step=None if lines is None else lines.step)
    except EngineError as exc:
        return _error(str(exc))
    if lines is not None:
        lines.done(loc)
    # stopped early (gave_up): a difference only where the levels already show one (Localization.differs)
    gave_up = loc.kind == "gave_up"
    status = cliargs.exit_status(differ=not loc.agree and (not gave_up or loc.differs), limited=gave_up)
    extra = {}
    if args.svg is not None:
        from oracle.boards import board_svg
        from perft_core.atomic import write_text

        try:
            write_text(args.svg, board_svg(loc))
        except OSError as exc:
            return _error(f"cannot write {str(args.svg)!r}: {exc.strerror or exc}")
        extra["svg"] = str(args.svg)
        if not args.json:
            print(f"perft diff: wrote {args.svg}", file=sys.stderr)
    if args.json:
        print(json.dumps(loc.to_dict() | {"agree": loc.agree, "exit_status": status} | extra))
    else:
        print(loc.describe())
    if status == cliargs.LIMITED:
        print("perft: stopped: no verdict within --max-seconds", file=sys.stderr)
    elif gave_up:
        print(f"perft: stopped: {loc.evidence.get('stopped') or 'the walk ran out of --max-seconds'}; the counts "
              "already differ (above)", file=sys.stderr)
    return status


def _refuse_a_walk_of_days(fen: str, depth: int, reference: str, threads: int | None) -> None:
    """Raise BadInput when the walk's first step, the reference counting perft ``depth`` at ``fen``
    below every root move, is estimated (:func:`perft_core.estimate.estimate`, the reference's own
    backend; the cpu backend's for python-chess and for an engine command, which are not faster)
    to take longer than ``perft run``'s limit of a day: the walk would only start to answer then."""
    from perft_core import estimate

    backend = reference if reference in ("cpu", "gpu", "gpu-emulated") else "cpu"
    try:
        guess = estimate.estimate(board_from(fen).fen(), depth, backend=backend, threads=threads or 1)
    except (ImportError, ValueError):  # no usable backend of that kind here: the walk says so itself
        return
    if guess.seconds > estimate.DEFAULT_MAX_ESTIMATE_SECONDS:
        slower = "" if reference == backend else f"; {reference} is not faster"
        raise BadInput(f"the reference's perft {depth} here is about {guess.nodes:.3g} nodes, about "
                       f"{estimate.format_seconds(guess.seconds)} at our {backend} backend's speed{slower}: add "
                       "--max-seconds S to walk within a budget, or --force to walk anyway")


def cmd_suite(args) -> int:
    """``perft suite``: run an engine on bundled tables; print a summary and every localized failure."""
    command = _command_line("perft suite", args, ENGINE_KEYS)
    if args.suites:
        command += (" -- " if any(name.startswith("-") for name in args.suites) else " ") + shlex.join(args.suites)
    try:
        run = _run(args, args.engine, args.protocol, args.reference, args.reference_protocol, args.suites, command)
    except BadInput as exc:
        return _error(str(exc))
    except EngineError as exc:
        return _error(str(exc))
    if args.json:
        print(json.dumps(run.to_dict()))
    else:
        from oracle.report import verdict_line

        print(_summary_text(run))
        failures = _failures_text(run)
        if failures:
            print()
            print(failures)
        print()
        print(verdict_line(run, see="the failures above"))
    return _status(run)


def cmd_report(args) -> int:
    """``perft report``: run an engine on every table and write NAME.json, NAME.md and NAME.html in
    OUT; with ``--index DIR``, write DIR/index.md from the reports there instead."""
    from oracle.report import write_index

    if args.index is not None:
        try:
            path = write_index(args.index)
        except (ValueError, OSError) as exc:
            return _error(str(exc))
        print(json.dumps({"paths": {"md": str(path)}}) if args.json else f"wrote {path}")
        return cliargs.AGREE
    if args.out is None:
        args.out = cliargs.output_dir(PUBLISHED_OUT if args.publish else DEFAULT_OUT)
    engine_spec = args.engine or args.backend
    if args.name:
        name = args.name
    elif args.engine is not None:
        name = _report_name(args.engine)
    else:  # never overwrite the CPU engine's published report with another backend's
        name = "conformance" if args.backend == "cpu" else f"conformance-{args.backend}"
    keys = ["out", "name", "backend", "threads", "max-nodes", "max-seconds"]
    if args.engine is not None:
        keys = ["out", "name"] + ENGINE_KEYS
    if args.publish:
        keys = ["publish"] + keys
    args.name = name
    command = _command_line("perft report", args, keys)
    if args.suites:
        command += " --suites " + shlex.join(args.suites)
    made = None  # the first folder this command made, removed again if nothing was written in it
    if not args.out.is_dir():  # made before the run (its parents too), and said, so a failure is not after it
        made = next((p for p in reversed([args.out, *args.out.parents]) if not p.exists()), None)
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return _error(f"argument --out: cannot make folder {str(args.out)!r}: {exc.strerror or exc}")
        print(f"perft report: made folder {args.out}", file=sys.stderr)
    status = _report_in(args, engine_spec, name, command)
    if made is not None and status == cliargs.UNJUDGED and not any(p.is_file() for p in made.rglob("*")):
        folders = sorted((p for p in made.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        try:
            for folder in [*folders, made]:  # deepest first; rmdir removes only an empty folder
                folder.rmdir()
            print(f"perft report: removed the empty folder {made} again", file=sys.stderr)
        except OSError:  # something appeared there meanwhile: leave it
            pass
    return status


def _report_in(args, engine_spec: str, name: str, command: str) -> int:
    """The run of ``perft report`` once its folder ``args.out`` exists: check the files it will
    write, run, write the report, print the summary; returns the exit status."""
    from oracle.report import boards_folder, verdict_line, write_index, write_report

    for fmt in ("json", "md", "html"):  # the files it will write: checked before the run, not after it
        try:
            cliargs.output_file(str(args.out / f"{args.name}.{fmt}"))
        except argparse.ArgumentTypeError as exc:
            return _error(f"argument --out: {exc}")
    boards = args.out / boards_folder(args.name)
    if boards.exists() and not boards.is_dir():
        return _error(f"argument --out: {str(boards)!r} (the failures' boards) exists and is not a folder")
    try:
        run = _run(args, engine_spec, args.protocol, args.reference, args.reference_protocol, args.suites, command)
        paths = write_report(run, args.out, name)
        if args.publish:
            paths["index"] = write_index(args.out)
    except BadInput as exc:
        return _error(str(exc))
    except (EngineError, OSError) as exc:
        return _error(str(exc))
    total = run.summary()[-1]
    if args.json:
        print(json.dumps({"paths": {k: str(v) for k, v in paths.items()}, "passed": total.passed,
                          "failed": total.failed, "errors": total.errors, "skipped": total.skipped,
                          "over_budget": total.over_budget, "seconds": run.seconds,
                          "exit_status": run.exit_status}))
    else:
        print(_summary_text(run))
        failures = _failures_text(run)
        if failures:
            print()
            print(failures)
        print()
        print("wrote " + ", ".join(str(p) for p in paths.values()))
        print(verdict_line(run, see=str(paths.get("html", paths["md"]))))
    return _status(run)


#: Programs that run a script named by a later argument: a report is named after the script.
_INTERPRETERS = re.compile(r"(python|pypy|sh|bash|dash|zsh|node|perl|ruby|env|java)[0-9.]*(\.exe)?", re.IGNORECASE)


def _report_name(command: str) -> str:
    """A file stem for an engine's report: the program's name, or the script's where the program is
    an interpreter (``python my_engine.py`` -> ``my_engine``), then ``-`` and the first 6 hex digits
    of the SHA-256 of the whole command as typed, so that two engines never write the same files
    (``/usr/games/stockfish`` -> ``stockfish-3c1f0e``). ``python-chess`` (in-process) keeps its name."""
    if command == "python-chess":
        return command
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    program = words[0] if words else command
    if _INTERPRETERS.fullmatch(os.path.basename(program)):
        script = next((w for w in words[1:] if not w.startswith("-") and "{" not in w and "=" not in w), None)
        program = (script.split() or [program])[0] if script else program  # sh -c 'prog "$1"' -> prog
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", os.path.basename(program.rstrip("/"))).strip("-.")
    stem = re.sub(r"\.(py|sh|js|pl|rb|jar)$", "", stem) or "engine"
    return f"{stem[:40]}-{hashlib.sha256(command.strip().encode()).hexdigest()[:6]}"


def main(argv: list[str] | None = None) -> int:
    """Run one oracle subcommand without perft_core's CLI (``python -m oracle.cli diff ...``)."""
    parser = cliargs.Parser(prog="perft", description="perft oracle: diff, suite, report")
    register(parser.add_subparsers(dest="command", required=True, parser_class=cliargs.Parser))
    try:
        args = parser.parse_args(argv)
    except cliargs.UsageError as exc:
        return _error(str(exc))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
