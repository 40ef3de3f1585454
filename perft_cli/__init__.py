"""The ``perft`` command: one dispatcher above the engine (``perft_core``) and the oracle.

Subcommands: ``run`` (``perft_core.cli``), ``deep`` (``perft_core.deep.cli``), ``diff``, ``suite``, ``report`` (``oracle.cli``).
``perft_core`` is a library that never imports this package or ``oracle``; this module is the only
place that knows both.

Exit statuses: 0 success (or engines agree), 1 a disagreement, 2 bad input, a broken engine or
nothing judged, printed as one line ``perft: error: <message>`` with no traceback, 3 stopped by a
limit, 130 interrupted (Ctrl-C or SIGTERM).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from perft_core import cli as core_cli
from perft_core.deep import cli as deep_cli
from perft_core.cliargs import Parser, UsageError
from perft_core.errors import clip

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``perft`` command with all its subcommands."""
    from oracle import cli as oracle_cli

    parser = Parser(prog="perft", description="Exact chess perft counts, and an oracle that checks engines.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    core_cli.register(sub)
    deep_cli.register(sub)
    oracle_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``perft`` command; returns the exit status (0, 1, 2, 3 or 130)."""
    parser = build_parser()
    restore = _sigterm_interrupts()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except (UsageError, ValueError, OSError) as exc:
        print(f"perft: error: {clip(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perft: interrupted", file=sys.stderr)
        return 130
    finally:
        restore()


def _sigterm_interrupts():
    """SIGTERM stops the command as Ctrl-C does (exit 130), so engines, clusters and files are
    cleaned up by the same ``finally`` blocks, instead of the process dying with them left running.
    Returns the function that puts the previous handler back (main() called as a library)."""
    import signal
    import threading

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    sys.exit(main())
