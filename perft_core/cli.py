"""``perft run``, the engine's own subcommand of the ``perft`` command (dispatched by ``perft_cli``).

Exit statuses: 0 success, 1 the two key seeds of ``--verify-seed`` disagree, 2 bad input or a count
estimated to take longer than a day without ``--force``, printed as one line ``perft: error: <message>``
with no traceback (by the dispatcher), 3 stopped by ``--max-seconds``: the root moves counted so far
are printed as a partial divide, never as a total; 130 interrupted (Ctrl-C or SIGTERM stop the C++
count within milliseconds, piped or not).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import cliargs
from .cliargs import UsageError
from .errors import CountInterrupted, CountRefused


def _cmd_run(args: argparse.Namespace) -> int:
    from . import Position, __version__, divide, perft

    if args.verify_seed is not None and not args.tt:
        raise UsageError("--verify-seed needs --tt")
    pos = Position.from_fen(args.fen, chess960=True if args.chess960 else None)
    tt = {"tt": args.tt, "tt_mb": args.tt_mb, "verify_seed": args.verify_seed} if args.tt else {}
    from . import estimate

    limits = {"max_seconds": args.max_seconds, "force": args.force, "progress": False if args.json else None,
              "max_estimate_seconds": estimate.DEFAULT_MAX_ESTIMATE_SECONDS}
    t0 = time.perf_counter()
    try:
        if args.divide:
            parts = divide(pos, args.depth, backend=args.backend, threads=args.threads, **tt, **limits)
            nodes = sum(parts.values()) if args.depth > 0 else 1
        else:
            parts = None
            nodes = perft(pos, args.depth, backend=args.backend, threads=args.threads, **tt, **limits)
    except CountRefused as exc:
        raise UsageError(f"{exc.reason}; add --force to count anyway") from None
    except CountInterrupted as exc:
        return _partial(args, pos, exc)
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


def _partial(args: argparse.Namespace, pos, exc: CountInterrupted) -> int:
    """Print the root moves counted before ``--max-seconds`` stopped the count, marked partial; exit 3."""
    from . import __version__

    if args.json:
        print(json.dumps({
            "fen": pos.fen(), "depth": args.depth, "partial": True, "divide": exc.partial,
            "moves_counted": len(exc.partial), "moves_total": exc.moves_total, "seconds": exc.seconds,
            "backend": args.backend, "version": __version__,
        }))
        return 3
    for move, count in sorted(exc.partial.items()):
        print(f"{move}: {count}")
    print()
    print(f"Partial: {len(exc.partial)} of {exc.moves_total} root moves counted, stopped by --max-seconds "
          f"after {exc.seconds:.1f} s (no total)")
    print(f"perft: stopped: {exc}", file=sys.stderr)
    return 3


def register(sub) -> None:
    """Add ``run`` to an ``argparse`` subparsers object; its ``func(args)`` returns the exit status."""
    run = sub.add_parser("run", help="count the move paths of a position")
    run.add_argument("fen", help="FEN, X-FEN or Shredder-FEN (quote it)")
    run.add_argument("depth", type=cliargs.depth, help="plies")
    run.add_argument("--divide", action="store_true", help="counts per root move (Stockfish's format)")
    run.add_argument("--backend", choices=("cpu", "gpu", "gpu-emulated"), default="cpu")
    run.add_argument("--threads", type=cliargs.positive_int, default=1, help="CPU threads (cpu backend)")
    run.add_argument("--chess960", action="store_true", help="read the position with Chess960 castling rules")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--tt", action="store_true", help="count through transposition tables (same counts, faster on deep counts)")
    run.add_argument("--tt-mb", type=cliargs.mib, default=256, metavar="MIB", help="table memory budget, MiB (default 256)")
    run.add_argument("--verify-seed", type=cliargs.seed, default=None, metavar="SEED",
                     help="with --tt: count again with this Zobrist key seed; exit 1 if the counts differ")
    run.add_argument("--max-seconds", type=cliargs.seconds, default=None, metavar="S",
                     help="stop after S seconds (checked between root moves): exit 3 with the partial divide")
    run.add_argument("--force", action="store_true",
                     help="count even when the estimate says it takes more than a day")
    run.set_defaults(func=_cmd_run)
