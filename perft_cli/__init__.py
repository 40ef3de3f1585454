"""The ``perft`` command: one dispatcher above the engine (``perft_core``) and the oracle.

Subcommands: ``run``, ``perftree``, ``uci`` (``perft_core.cli``), ``deep`` (``perft_core.deep.cli``),
``diff``, ``suite``, ``report`` (``oracle.cli``).
``perft_core`` is a library that never imports this package or ``oracle``; this module is the only
place that knows both.

Exit statuses, one rule for every subcommand (:data:`perft_core.cliargs.EXIT_STATUS_HELP`, at the
end of every ``--help``): 0 all agree, 1 at least one count differs (whatever else happened), 2
nothing could be judged (bad input, a broken engine, nothing judged: one line
``perft: error: <message>``, no traceback), 3 stopped by a limit, 130 interrupted (Ctrl-C or
SIGTERM), 141 the output's reader went away (``| head``; nothing on stderr). Bare ``perft`` prints the usage (status 2).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

try:
    from perft_core import cli as core_cli
    from perft_core.deep import cli as deep_cli
    from perft_core import cliargs
    from perft_core.cliargs import Parser, UsageError
    from perft_core.errors import clip
except (ValueError, ImportError) as _exc:  # a bad PERFT_CORE, or a build it names that is not installed,
    _UNUSABLE: Exception | None = _exc  # met while the CPU extension is chosen (perft_core/_core.py)
else:
    _UNUSABLE = None

__all__ = ["build_parser", "main"]


_DEEP_DESCRIPTION = ("Count perft(FEN, DEPTH) as work units on Dask (local processes, local GPUs or an "
                     "existing scheduler) with a durable SQLite store: an interrupted run resumes where it "
                     "stopped (--resume). A progress bar on a terminal, else a line a minute on stderr.")
_DEEP_EXAMPLES = ["perft deep startpos 8 --workers 2 --store s8.sqlite", "perft deep --resume s8.sqlite",
                  'perft deep "FEN" 9 --backend gpu --gpus 2 --tt --store k9.sqlite']


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``perft`` command with all its subcommands."""
    from oracle import cli as oracle_cli
    from perft_core import __version__

    parser = Parser(prog="perft", description="Exact chess perft counts, and an oracle that checks engines.",
                    examples=["perft run startpos 6 --moves e2e4", "perft report",
                              "perft diff --engine /usr/games/stockfish \"FEN\" 5", "perft SUBCOMMAND --help"])
    parser.add_argument("--version", action="version", version=f"perft-oracle {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=Parser)
    core_cli.register(sub)
    deep_cli.register(sub)
    oracle_cli.register(sub)
    deep = sub.choices["deep"]
    deep.set_examples(_DEEP_EXAMPLES)
    deep.description = deep.description or _DEEP_DESCRIPTION
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``perft`` command; returns the exit status (0, 1, 2, 3 or 130: :mod:`perft_core.cliargs`)."""
    if _UNUSABLE is not None:  # one line and status 2, as every error of the command (no traceback)
        print(f"perft: error: {_UNUSABLE}", file=sys.stderr)
        return 2
    parser = build_parser()
    restore = _signals_interrupt()
    try:
        args = parser.parse_args(argv)
        if args.command is None:  # bare ``perft``: the usage and the subcommands, on stderr
            parser.print_help(sys.stderr)
            return cliargs.UNJUDGED
        return int(args.func(args))
    except BrokenPipeError:  # ``perft deep --stats FILE | head``: the reader has what it wanted; no error line
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit would fail again
        return cliargs.PIPE_CLOSED
    except (UsageError, ValueError, OSError) as exc:
        print(f"perft: error: {clip(exc)}", file=sys.stderr)
        return cliargs.UNJUDGED
    except MemoryError as exc:  # a last resort: inputs and splits are bounded before they allocate
        print(f"perft: error: out of memory{': ' + clip(exc) if str(exc) else ''}", file=sys.stderr)
        return cliargs.UNJUDGED
    except KeyboardInterrupt:
        print("perft: interrupted", file=sys.stderr)
        return cliargs.INTERRUPTED
    finally:
        restore()


def _signals_interrupt():
    """SIGTERM stops the command as Ctrl-C does (exit 130), so engines, clusters and files are
    cleaned up by the same ``finally`` blocks, instead of the process dying with them left running.
    Both are noted (``cliargs.note_stop``) before KeyboardInterrupt is raised: Python drops one
    raised inside a garbage collector callback (a loaded machine's CI once saw Ctrl-C lost in
    Dask's), and a deep run's loop then stops at its next result. Returns the function that puts
    the previous handlers back (main() called as a library)."""
    import signal
    import threading

    def interrupt(signum, frame):
        cliargs.note_stop(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    cliargs.note_stop(0)
    old = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    old_hook = sys.unraisablehook

    def unraisable(hook_args):
        """The KeyboardInterrupt that Python drops in a garbage collector callback or a ``__del__``
        (Dask's GC diagnosis, say) printed "Exception ignored in ... Traceback ... KeyboardInterrupt"
        before "perft: interrupted" (session 32's edge hunt): the stop is noted, main() says it."""
        if not isinstance(hook_args.exc_value, KeyboardInterrupt):
            old_hook(hook_args)

    sys.unraisablehook = unraisable

    def restore():
        for sig, handler in old.items():
            signal.signal(sig, handler)
        sys.unraisablehook = old_hook
        cliargs.note_stop(0)

    return restore


if __name__ == "__main__":
    sys.exit(main())
