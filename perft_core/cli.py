"""The ``perft`` command line: ``perft run`` here; ``diff``, ``suite`` and ``report`` from oracle.cli.

Exit statuses: 0 success (or engines agree), 1 a disagreement (oracle commands), 2 bad input or a
broken engine, printed as one line ``perft: error: <message>`` with no traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Sequence

from . import cliargs


class UsageError(Exception):
    """Bad command-line input; reported on one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: one line, exit 2
        raise UsageError(message)


def _seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed (decimal or 0x hex), got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**64-1, got {text!r}")
    return value


def _cmd_run(args: argparse.Namespace) -> int:
    from . import Position, __version__, divide, perft

    if args.verify_seed is not None and not args.tt:
        raise UsageError("--verify-seed needs --tt")
    pos = Position.from_fen(args.fen, chess960=True if args.chess960 else None)
    tt = {"tt": args.tt, "tt_mb": args.tt_mb, "verify_seed": args.verify_seed} if args.tt else {}
    t0 = time.perf_counter()
    try:
        if args.divide:
            parts = divide(pos, args.depth, backend=args.backend, threads=args.threads, **tt)
            nodes = sum(parts.values()) if args.depth > 0 else 1
        else:
            parts = None
            nodes = perft(pos, args.depth, backend=args.backend, threads=args.threads, **tt)
    except RuntimeError as exc:
        from .zobrist import HashVerificationError

        if not isinstance(exc, HashVerificationError):  # --verify-seed: the two key seeds disagree
            raise
        print(f"perft: error: {exc}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - t0
    nps = nodes / seconds if seconds > 0 else 0.0
    if args.json:
        print(json.dumps({
            "fen": pos.fen(), "depth": args.depth, "nodes": nodes, "divide": parts,
            "seconds": seconds, "nodes_per_second": nps, "backend": args.backend, "version": __version__,
        }))
        return 0
    if parts is not None:
        for move, count in sorted(parts.items()):
            print(f"{move}: {count}")
        print()
    print(f"Nodes searched: {nodes}")
    print(f"perft {args.depth}: {nodes} nodes in {seconds:.3f} s ({nps / 1e6:.1f} M nodes/s, {args.backend})",
          file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``perft`` command with all its subcommands."""
    parser = _Parser(prog="perft", description="Exact chess perft counts, and an oracle that checks engines.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="count the move paths of a position")
    run.add_argument("fen", help="FEN, X-FEN or Shredder-FEN (quote it)")
    run.add_argument("depth", type=cliargs.depth, help="plies")
    run.add_argument("--divide", action="store_true", help="counts per root move (Stockfish's format)")
    run.add_argument("--backend", choices=("cpu", "gpu", "gpu-emulated"), default="cpu")
    run.add_argument("--threads", type=cliargs.positive_int, default=1, help="CPU threads (cpu backend)")
    run.add_argument("--chess960", action="store_true", help="read the position with Chess960 castling rules")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--tt", action="store_true", help="count through transposition tables (cpu backend)")
    run.add_argument("--tt-mb", type=cliargs.mib, default=256, metavar="MIB", help="table memory budget, MiB (default 256)")
    run.add_argument("--verify-seed", type=_seed, default=None, metavar="SEED",
                     help="with --tt: count again with this Zobrist key seed; exit 1 if the counts differ")
    run.set_defaults(func=_cmd_run)
    try:
        from oracle import cli as oracle_cli
    except ImportError:  # the oracle is part of this distribution; tolerate a partial checkout
        oracle_cli = None
    if oracle_cli is not None and hasattr(oracle_cli, "register"):
        oracle_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``perft`` command; returns the exit status (0, 1 or 2)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except (UsageError, ValueError, OSError) as exc:
        print(f"perft: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perft: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
