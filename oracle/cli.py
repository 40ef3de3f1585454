"""The oracle's subcommands of the ``perft`` console script: ``diff``, ``suite`` and ``report``.

The ``perft`` dispatcher (``perft_cli``) calls :func:`register` with its subparsers and dispatches ``args.func(args)``,
which returns the exit status: 0 the engine agrees (or passes every row), 1 it disagrees (the
localized position, path and missing/extra moves are printed), 2 bad input or a broken engine
(one ``perft: error: ...`` line on stderr). ``python -m oracle.cli`` runs them without perft_core.

Engine specs (``--engine``, ``--reference``): ``python-chess``, ``cpu``, ``gpu``, ``gpu-emulated``,
or a shell-style command line such as ``"stockfish"`` or ``"python my_engine.py --uci"`` spoken to
with ``--protocol uci`` (``go perft``) or ``perftree`` (``CMD depth "fen" "moves"``).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys

import chess

from oracle.engines import DEFAULT_TIMEOUT, EngineError, board_from, make_engine
from oracle.localize import localize
from oracle.runner import RunResult, run_suite, select_rows
from perft_core import cliargs

__all__ = ["DEFAULT_MAX_NODES", "main", "register"]

#: Default node budget of ``perft suite`` and ``perft report``: rows expecting more nodes are not run.
DEFAULT_MAX_NODES = 500_000_000

_BAD_STATUS = (chess.STATUS_NO_WHITE_KING | chess.STATUS_NO_BLACK_KING | chess.STATUS_TOO_MANY_KINGS
               | chess.STATUS_OPPOSITE_CHECK | chess.STATUS_PAWNS_ON_BACKRANK | chess.STATUS_EMPTY
               | chess.STATUS_BAD_CASTLING_RIGHTS | chess.STATUS_INVALID_EP_SQUARE)


class BadInput(ValueError):
    """A command-line argument that cannot be used (exit status 2)."""


def register(subparsers) -> None:
    """Add ``diff``, ``suite`` and ``report`` to an ``argparse`` subparsers object.

    Each sets ``func`` to a callable ``(args) -> int`` returning the exit status.
    """
    p = subparsers.add_parser(
        "diff", help="compare an engine's perft with a reference and localize the first disagreement",
        description="Compare ENGINE's divide with the reference at FEN and DEPTH; when they differ, walk down "
                    "to the position and move where they disagree. Exit 0 agree, 1 differ, 2 bad input or "
                    "broken engine.")
    p.add_argument("fen", metavar="FEN", help="FEN, X-FEN, Shredder-FEN or 4-field EPD (quote it)")
    p.add_argument("depth", metavar="DEPTH", type=cliargs.depth, help="plies to count")
    _engine_args(p, default_engine=None)
    p.add_argument("--max-seconds", type=cliargs.seconds, metavar="S",
                   help="give up localizing after S seconds of wall time (default: no limit)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=cmd_diff)

    p = subparsers.add_parser(
        "suite", help="run an engine on the bundled perft tables",
        description="Run ENGINE on the bundled tables (all suites if none named) within a node and/or time "
                    "budget; every failing position is localized against the reference. Exit 0 all pass, "
                    "1 some count is wrong, 2 bad input or broken engine.")
    p.add_argument("suites", nargs="*", metavar="SUITE", help=f"suites to run (default all: {_suite_names()})")
    _engine_args(p, default_engine="cpu")
    _budget_args(p)
    p.add_argument("--json", action="store_true", help="print the run as one JSON object instead of text")
    p.set_defaults(func=cmd_suite)

    p = subparsers.add_parser(
        "report", help="write the conformance report of our engine (JSON, Markdown, HTML)",
        description="Run our engine on every bundled table within the budget and write OUT/NAME.json, "
                    "OUT/NAME.md and OUT/NAME.html. The published report (docs/conformance.md and .json) "
                    "is regenerated with `perft report --out docs`. Exit 0 all pass, 1 some count is "
                    "wrong, 2 bad input or broken engine.")
    p.add_argument("--out", type=cliargs.output_dir, default="report", metavar="DIR", help="output folder (default: ./report)")
    p.add_argument("--name", default="conformance", metavar="NAME", help="file stem (default: conformance)")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "gpu-emulated"), help="backend (default cpu)")
    p.add_argument("--threads", type=cliargs.positive_int, default=os.cpu_count() or 1, metavar="N",
                   help="threads for the backend (default: all cores)")
    _budget_args(p)
    p.add_argument("--timeout", type=cliargs.seconds, default=DEFAULT_TIMEOUT, metavar="S", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the paths and totals as JSON; no progress bar")
    p.set_defaults(func=cmd_report)


def _engine_args(p: argparse.ArgumentParser, default_engine: str | None) -> None:
    p.add_argument("--engine", required=default_engine is None, default=default_engine, metavar="CMD",
                   help="engine under test: cpu, gpu, python-chess, or a command line"
                        + (f" (default {default_engine})" if default_engine else ""))
    p.add_argument("--protocol", choices=("uci", "perftree"), default="uci",
                   help="how to talk to an engine command (default uci)")
    p.add_argument("--reference", default="python-chess", metavar="REF",
                   help="reference for localizing: python-chess (default), cpu, gpu, or a command line")
    p.add_argument("--reference-protocol", choices=("uci", "perftree"), default="uci",
                   help="protocol of a reference command (default uci)")
    p.add_argument("--threads", type=cliargs.positive_int, default=1, metavar="N",
                   help="threads for our backends (default 1)")
    p.add_argument("--timeout", type=cliargs.seconds, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds an engine command may take (default {DEFAULT_TIMEOUT:g})")


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-nodes", type=cliargs.positive_int, default=DEFAULT_MAX_NODES, metavar="N",
                   help=f"skip rows expecting more than N nodes (default {DEFAULT_MAX_NODES:,})")
    p.add_argument("--max-seconds", type=cliargs.seconds, metavar="S",
                   help="stop starting new rows after S seconds; the rest are 'skipped' (default: no limit)")


# -- argument types ---------------------------------------------------------------------------


def _suite_names() -> str:
    try:
        from oracle import tables

        return ", ".join(tables.SUITES)
    except ImportError:  # pragma: no cover - tables ship with the package
        return "?"


# -- helpers ----------------------------------------------------------------------------------


def _error(message: str) -> int:
    print(f"perft: error: {message}", file=sys.stderr)
    return 2


def _check_fen(fen: str) -> None:
    """Raise BadInput unless python-chess reads ``fen`` as a position that perft can count."""
    try:
        board = board_from(fen)
    except ValueError as exc:
        raise BadInput(f"bad FEN {fen!r}: {exc}") from None
    bad = board.status() & _BAD_STATUS
    if bad:
        names = [flag.name.lower().replace("_", " ") for flag in chess.Status if flag and bad & flag]
        raise BadInput(f"bad FEN {fen!r}: {', '.join(names)}")


def _make(spec: str, protocol: str, args) -> object:
    try:
        return make_engine(spec, protocol=protocol, timeout=args.timeout, threads=args.threads)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def _command_line(command: str, args, keys: list[str]) -> str:
    """``command`` followed by the options ``keys`` that have a value, shell-quoted."""
    parts = []
    for key in keys:
        value = getattr(args, key.replace("-", "_"), None)
        if value is not None:
            parts += [f"--{key}", str(value)]
    return f"{command} {shlex.join(parts)}".strip()


@contextlib.contextmanager
def _progress(enabled: bool, total_nodes: int):
    """Yield a progress callback for :func:`run_suite`: a rich bar on a terminal (stderr), else a no-op."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.table import Column

    with Progress(TextColumn("{task.description}", table_column=Column(width=28, no_wrap=True)), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TextColumn("{task.fields[rows]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("counting", total=max(total_nodes, 1), rows="")

        def update(result, done: int, total: int) -> None:
            bar.update(task, advance=result.expected, rows=f"{done}/{total} rows",
                       description=f"{result.suite} {result.id} d{result.depth}")
        yield update


def _run(args, engine_spec: str, protocol: str, reference_spec: str, reference_protocol: str,
         suites: list[str] | None, command: str) -> RunResult:
    try:
        names, rows = select_rows(suites)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    engine = _make(engine_spec, protocol, args)
    reference = _make(reference_spec, reference_protocol, args)
    budgeted = sum(r.nodes for r in rows if r.nodes <= args.max_nodes)
    with engine, reference, _progress(not args.json, budgeted) as progress:
        engine.divide(chess.STARTING_FEN, 1)  # an engine that cannot even start fails once, here
        run = run_suite(engine, rows, reference=reference, max_nodes=args.max_nodes,
                        max_seconds=args.max_seconds, suites=names, progress=progress)
    run.command = command
    return run


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


def cmd_diff(args) -> int:
    """``perft diff``: localize the first disagreement between ``--engine`` and ``--reference``."""
    try:
        _check_fen(args.fen)
        engine = _make(args.engine, args.protocol, args)
        reference = _make(args.reference, args.reference_protocol, args)
    except BadInput as exc:
        return _error(str(exc))
    try:
        with engine, reference:
            loc = localize(engine, reference, args.fen, args.depth, max_seconds=args.max_seconds)
    except EngineError as exc:
        return _error(str(exc))
    if loc.kind == "gave_up":
        status = 1 if loc.path else 2
    else:
        status = 0 if loc.agree else 1
    if args.json:
        print(json.dumps(loc.to_dict() | {"agree": loc.agree, "exit_status": status}))
    else:
        print(loc.describe())
    if loc.kind == "gave_up" and status == 2:
        print("perft: error: no verdict within --max-seconds", file=sys.stderr)
    return status


def cmd_suite(args) -> int:
    """``perft suite``: run an engine on bundled tables; print a summary and every localized failure."""
    command = _command_line("perft suite", args, ["engine", "max-nodes", "max-seconds"])
    try:
        run = _run(args, args.engine, args.protocol, args.reference, args.reference_protocol, args.suites, command)
    except BadInput as exc:
        return _error(str(exc))
    except EngineError as exc:
        return _error(str(exc))
    if args.json:
        print(json.dumps(run.to_dict()))
    else:
        print(_summary_text(run))
        failures = _failures_text(run)
        if failures:
            print()
            print(failures)
    return run.exit_status


def cmd_report(args) -> int:
    """``perft report``: run our engine on every table and write NAME.json, NAME.md and NAME.html in OUT."""
    from oracle.report import write_report

    keys = ["out", "name", "backend", "threads", "max-nodes", "max-seconds"]
    command = _command_line("perft report", args, keys)
    if args.out.is_dir():  # the files it will write: checked before the run, not after it
        for fmt in ("json", "md", "html"):
            try:
                cliargs.output_file(str(args.out / f"{args.name}.{fmt}"))
            except argparse.ArgumentTypeError as exc:
                return _error(f"argument --out: {exc}")
    try:
        run = _run(args, args.backend, "uci", "python-chess", "uci", None, command)
        paths = write_report(run, args.out, args.name)
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
    return run.exit_status


def main(argv: list[str] | None = None) -> int:
    """Run one oracle subcommand without perft_core's CLI (``python -m oracle.cli diff ...``)."""
    parser = argparse.ArgumentParser(prog="perft", description="perft oracle: diff, suite, report")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
