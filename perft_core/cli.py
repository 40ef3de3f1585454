"""``perft run``, the engine's own subcommand of the ``perft`` command (dispatched by ``perft_cli``),
and the registration of ``perft perftree`` (:mod:`perft_core.perftree`) and ``perft uci``
(:mod:`perft_core.uci`).

Exit statuses by :func:`perft_core.cliargs.exit_status`: 0 counted (and agrees with the EPD
operations), 1 a count differs from an EPD operation or the two key seeds of ``--verify-seed``
disagree, 2 bad input or a count estimated to take longer than a day without ``--force``, printed
as one line ``perft: error: <message>`` with no traceback (by the dispatcher), 3 stopped by
``--max-seconds``: the root moves counted so far are printed as a partial divide, never as a total;
130 interrupted (Ctrl-C or SIGTERM stop the C++ count within milliseconds, piped or not).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import cliargs, positions
from .uci import print_divide
from .cliargs import UsageError
from .errors import CountInterrupted, CountRefused
from .estimate import format_speed
from .threads import available_cores


def _cmd_run(args: argparse.Namespace) -> int:
    if args.verify_seed is not None and not args.tt:
        raise UsageError("--verify-seed needs --tt")
    cliargs.check_tt_mb_needs_tt(args)
    # A FEN's fields are separated by any whitespace, as Position.from_fen splits them: one word is
    # a file (or "-", standard input), unless it is "startpos".
    if args.position == "-" or (len(args.position.split()) <= 1 and args.position.strip() != "startpos"):
        return _run_many(args)
    if args.depth is None:
        raise UsageError("DEPTH is needed (plies), e.g. perft run startpos 5")
    pos = positions.position_from(args.position, args.moves, chess960=True if args.chess960 else None)
    if args.stats:
        return _stats_one(args, pos, args.depth)
    return _count_one(args, pos, args.depth, args.max_seconds)


_CPW_HEADINGS = ("Depth", "Nodes", "Captures", "E.p.", "Castles", "Promotions", "Checks", "Discovery Checks",
                 "Double Checks", "Checkmates")
"""The Chess Programming Wiki's column headings ("Perft Results"), in its order."""


def stats_table_lines(rows: list, first: str = "Depth") -> list[str]:
    """Statistics for people: the Chess Programming Wiki's columns, one line per (label, Stats) of
    ``rows`` under the heading ``first``, then the last row's checks and mates by kind."""
    from .stats import CHECK_KINDS

    table = [(first, *_CPW_HEADINGS[1:])]
    table += [(label, *(f"{v:,}" for v in st.cpw().values())) for label, st in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    out = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
           for r in table]
    total = rows[-1][1]
    kinds = [("Check kind", "Checks", "Mates")] + [
        (kind.replace("_", " "), f"{getattr(total, kind + '_checks'):,}", f"{getattr(total, kind + '_mates'):,}")
        for kind in CHECK_KINDS]
    widths = [max(len(r[i]) for r in kinds) for i in range(3)]
    out.append("")
    out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in kinds]
    return out


def _stats_one(args, pos, depth: int) -> int:
    """``perft run POSITION DEPTH --stats``: the Chess Programming Wiki's row (a row per root move
    too with --divide) and the checks and mates by kind; one JSON object with --json."""
    from . import __version__
    from .api import divide_stats, perft_stats
    from .stats import Stats
    from .zobrist import HashVerificationError

    if args.verify_seed is not None and args.max_seconds is not None:
        raise UsageError("--stats with --verify-seed counts without --max-seconds (no time-limited verify pass)")
    options = {"backend": args.backend, "threads": args.threads, "max_seconds": args.max_seconds, "force": args.force}
    if args.tt:
        options.update(tt=True, tt_mb=args.tt_mb, verify_seed=args.verify_seed)
    t0 = time.perf_counter()
    try:
        parts = divide_stats(pos, depth, **options) if args.divide else None
        total = sum(parts.values(), Stats()) if parts else perft_stats(pos, depth, **options)
    except CountRefused as exc:
        raise UsageError(f"{exc.reason}; add --force to count anyway") from None
    except CountInterrupted as exc:
        return _partial(args, pos, exc)
    except HashVerificationError as exc:  # --verify-seed: the two key seeds disagree
        print(f"perft: error: {exc}", file=sys.stderr)
        return cliargs.DIFFER
    seconds = time.perf_counter() - t0
    nps = total.nodes / seconds if seconds > 0 else 0.0
    if args.json:
        print(json.dumps({
            "fen": pos.fen(), "depth": depth, "stats": total.to_json(), "cpw": total.cpw(),
            "divide": None if parts is None else {m: s.to_json() for m, s in parts.items()},
            "seconds": seconds, "nodes_per_second": nps, "backend": args.backend, "version": __version__,
        }))
        return cliargs.AGREE
    rows = [(move, s) for move, s in (parts or {}).items()] + [(str(depth), total)]
    print("\n".join(stats_table_lines(rows, "Move" if parts is not None else "Depth")))
    print(f"perft {depth} with statistics: {total.nodes} nodes in {seconds:.3f} s ({format_speed(nps)}, "
          f"{args.backend})", file=sys.stderr)
    return cliargs.AGREE


def _count(args, pos, depth: int, max_seconds: float | None, divide: bool):
    """``(nodes, divide or None, seconds, tables or None)`` of one count with the command's backend
    and options; ``tables``: with --tt, the tables' statistics of this count (GPU backends)."""
    from . import estimate
    from .api import divide as api_divide, perft
    from .gpu.registry import table_statistics

    tt = {"tt": args.tt, "tt_mb": args.tt_mb, "verify_seed": args.verify_seed} if args.tt else {}
    limits = {"max_seconds": max_seconds, "force": args.force, "progress": False if args.json else "lines",
              "max_estimate_seconds": estimate.DEFAULT_MAX_ESTIMATE_SECONDS}
    tables0 = table_statistics(args.backend) if args.tt else None
    t0 = time.perf_counter()
    try:
        if divide:
            parts = api_divide(pos, depth, backend=args.backend, threads=args.threads, **tt, **limits)
            nodes = sum(parts.values()) if depth > 0 else 1
        else:
            parts = None
            nodes = perft(pos, depth, backend=args.backend, threads=args.threads, **tt, **limits)
    except CountRefused as exc:
        raise UsageError(f"{exc.reason}; add --force to count anyway") from None
    seconds = time.perf_counter() - t0
    return nodes, parts, seconds, table_statistics(args.backend, tables0) if args.tt else None


def _count_one(args, pos, depth: int, max_seconds: float | None) -> int:
    """``perft run POSITION DEPTH``: print the count (Stockfish's divide format with --divide)."""
    from . import __version__
    from .zobrist import HashVerificationError

    try:
        nodes, parts, seconds, tables = _count(args, pos, depth, max_seconds, args.divide)
    except CountInterrupted as exc:
        return _partial(args, pos, exc)
    except HashVerificationError as exc:  # --verify-seed: the two key seeds disagree
        print(f"perft: error: {exc}", file=sys.stderr)
        return cliargs.DIFFER
    nps = nodes / seconds if seconds > 0 else 0.0
    if args.json:
        print(json.dumps({
            "fen": pos.fen(), "depth": depth, "nodes": nodes, "divide": parts,
            "seconds": seconds, "nodes_per_second": nps, "backend": args.backend, "version": __version__,
            **({"tables": tables} if tables is not None else {}),
        }))
        return cliargs.AGREE
    if parts is not None:
        print_divide(parts, nodes)
    else:
        print(f"Nodes searched: {nodes}")
    print(f"perft {depth}: {nodes} nodes in {seconds:.3f} s ({format_speed(nps)}, {args.backend})",
          file=sys.stderr)
    return cliargs.AGREE


def _run_many(args: argparse.Namespace) -> int:
    """``perft run -`` / ``perft run FILE``: one result line per position (FEN or EPD line); EPD
    perft operations (``D1 20; D2 400``) are checked. Exit status by :func:`cliargs.worst`."""
    from .lines import bounded_lines

    path = None
    if args.position != "-":  # a POSITION that is neither a FEN nor a file is named as such first
        try:
            path = cliargs.input_file(args.position)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"argument POSITION: {exc} (a FEN needs its fields: quote it)") from None
    if args.divide:
        raise UsageError("--divide counts one position; give a FEN or startpos, not a file")
    if args.stats:
        raise UsageError("--stats counts one position; give a FEN or startpos, not a file")
    source, stream = ("-", sys.stdin) if path is None else (str(path), open(path, encoding="utf-8"))
    t0, statuses = time.monotonic(), []

    def bad_line(message: str) -> None:  # said on stderr; the other lines are still counted
        print(f"perft: error: {message}", file=sys.stderr)
        statuses.append(cliargs.UNJUDGED)

    name = "stdin" if source == "-" else source
    with stream:  # every line bounded (perft_core.lines): /dev/zero is one error line, not a MemoryError
        for entry in positions.read_lines(bounded_lines(stream, name), name, on_error=bad_line):
            statuses.append(_check_line(args, entry, t0))
    if not statuses:
        raise UsageError(f"no position in {'standard input' if source == '-' else source}")
    return cliargs.worst(statuses)


def _check_line(args, entry, t0: float) -> int:
    """Count one line of positions input at DEPTH (or at each of its EPD depths); print one line
    per count (a JSON object with --json); return its exit status."""
    from .errors import CountOverflow, FenError, IllegalMoveError
    from .limits import LimitError
    from .zobrist import HashVerificationError

    depths = [args.depth] if args.depth is not None else sorted(entry.counts)
    name = "stdin" if args.position == "-" else args.position
    where = f"{name}:{entry.line}"
    if not depths:
        print(f"perft: error: {where}: no DEPTH given and no EPD perft operation (D1 20; D2 400) on it",
              file=sys.stderr)
        return cliargs.UNJUDGED
    try:
        pos = positions.position_from(entry.fen, args.moves, chess960=True if args.chess960 else None)
    except (FenError, IllegalMoveError) as exc:
        print(f"perft: error: {where}: {exc}", file=sys.stderr)
        return cliargs.UNJUDGED
    statuses = []
    for depth in depths:
        left = None if args.max_seconds is None else args.max_seconds - (time.monotonic() - t0)
        expected = entry.counts.get(depth) if not args.moves else None
        record = {"line": entry.line_of(depth), "id": entry.id, "fen": pos.fen(), "depth": depth, "expected": expected}
        if left is not None and left <= 0:
            statuses.append(cliargs.LIMITED)
            _print_line(args, record | {"status": "skipped: --max-seconds spent"})
            continue
        try:
            nodes, _, seconds, _ = _count(args, pos, depth, left, False)
        except CountInterrupted as exc:
            statuses.append(cliargs.LIMITED)
            _print_line(args, record | {"status": f"stopped by --max-seconds after {exc.seconds:.1f} s"})
            continue
        except (UsageError, LimitError, HashVerificationError, CountOverflow) as exc:  # refused (over a day or
            # past the depth limit), past what the backend counts in, or the key seeds disagree
            print(f"perft: error: {name}:{entry.line_of(depth)}: depth {depth}: {exc}", file=sys.stderr)
            statuses.append(cliargs.DIFFER if isinstance(exc, HashVerificationError) else cliargs.UNJUDGED)
            continue
        status = cliargs.exit_status(differ=expected is not None and nodes != expected)
        verdict = "counted" if expected is None else "agrees" if status == cliargs.AGREE else "DIFFERS"
        _print_line(args, record | {"nodes": nodes, "seconds": round(seconds, 6), "status": verdict})
        statuses.append(status)
    return cliargs.worst(statuses)


def _print_line(args, record: dict) -> None:
    if args.json:
        print(json.dumps(record), flush=True)
        return
    name = f" {record['id']}" if record["id"] else ""
    text = f"line {record['line']}{name} depth {record['depth']}: "
    text += f"{record['nodes']:,} nodes" if "nodes" in record else "not counted"
    if record["expected"] is not None:
        text += f", expected {record['expected']:,}"
    print(f"{text}: {record['status']}  ({record['fen']})", flush=True)


def _partial(args: argparse.Namespace, pos, exc: CountInterrupted) -> int:
    """Print the root moves counted before ``--max-seconds`` stopped the count, marked partial; exit 3."""
    from . import __version__

    if args.json:
        print(json.dumps({
            "fen": pos.fen(), "depth": args.depth, "partial": True,
            "divide": {m: getattr(c, "nodes", c) for m, c in exc.partial.items()},
            **({"stats": {m: c.to_json() for m, c in exc.partial.items()}} if getattr(args, "stats", False) else {}),
            "moves_counted": len(exc.partial), "moves_total": exc.moves_total, "seconds": exc.seconds,
            "backend": args.backend, "version": __version__,
        }))
        return 3
    for move, count in sorted(exc.partial.items()):
        print(f"{move}: {getattr(count, 'nodes', count)}")
    print()
    print(f"Partial: {len(exc.partial)} of {exc.moves_total} root moves counted, stopped by --max-seconds "
          f"after {exc.seconds:.1f} s (no total)")
    print(f"perft: stopped: {exc}", file=sys.stderr)
    return 3


def count_options(p: argparse.ArgumentParser) -> None:
    """The counting options of ``run``, ``perftree`` and ``uci``: backend, threads, transposition tables."""
    p.add_argument("--backend", choices=("cpu", "gpu", "gpu-emulated"), default="cpu")
    p.add_argument("--threads", type=cliargs.positive_int, default=None, metavar="N",
                   help=f"CPU threads (cpu backend); default: every core this process may run on ({available_cores()} here)")
    p.add_argument("--tt", action="store_true", help="count through transposition tables (same counts, faster on deep counts)")
    p.add_argument("--tt-mb", type=cliargs.mib, default=None, metavar="MIB",
                   help="table memory budget with --tt, MiB (default 256 on the CPU, 75 %% of the driver's memory on a GPU)")


def register(sub) -> None:
    """Add ``run``, ``perftree`` and ``uci`` to an ``argparse`` subparsers object; each one's
    ``func(args)`` returns the exit status."""
    from . import perftree, uci

    run = sub.add_parser(
        "run", help="count the move paths of a position (or of every line of a file / standard input)",
        description="Count perft(POSITION, DEPTH): POSITION is a FEN, X-FEN or Shredder-FEN (quoted), "
                    "startpos, - (FEN or EPD lines on standard input) or a FILE of them, one result line "
                    "each; EPD perft operations (D1 20; D2 400) are checked, and without DEPTH every one "
                    "of them is counted. A CSV table with a header naming fen, depth and nodes (perft "
                    "suite's FILE.csv, the bundled oracle/data/*.csv) is read the same way.",
        examples=["perft run startpos 6 --moves e2e4", 'perft run "FEN" 5 --divide', "perft run startpos 6 --stats",
                  "perft run oracle/data/perftsuite.csv 3 --json", "cat positions.epd | perft run -"])
    run.add_argument("position", metavar="POSITION", help="FEN / X-FEN / Shredder-FEN (quote it), startpos, - or FILE")
    run.add_argument("depth", metavar="DEPTH", type=cliargs.depth, nargs="?", default=None,
                     help="plies (optional for EPD lines with D<n> operations)")
    run.add_argument("--moves", nargs="+", default=[], metavar="UCI",
                     help="UCI moves played from POSITION first (e2e4 e7e5; Chess960 castling king-takes-rook)")
    run.add_argument("--divide", action="store_true", help="counts per root move (Stockfish's format)")
    run.add_argument("--stats", action="store_true",
                     help="perft statistics of the leaf moves: the Chess Programming Wiki's columns (captures, e.p., "
                          "castles, promotions, checks, discovery and double checks, checkmates) and checks and "
                          "mates by kind (every backend; with --tt through statistics tables)")
    count_options(run)
    run.add_argument("--chess960", action="store_true", help="read the position with Chess960 castling rules")
    run.add_argument("--json", action="store_true", help="print one JSON object (one per line for many positions)")
    run.add_argument("--verify-seed", type=cliargs.seed, default=None, metavar="SEED",
                     help="with --tt: count again with this Zobrist key seed; exit 1 if the counts differ")
    run.add_argument("--max-seconds", type=cliargs.seconds, default=None, metavar="S",
                     help="stop after S seconds: exit 3 with the partial divide (the root moves counted in full)")
    run.add_argument("--force", action="store_true",
                     help="count even when the estimate says it takes more than a day")
    run.set_defaults(func=_cmd_run)
    for protocol in (perftree, uci):
        p = sub.add_parser(protocol.NAME, help=protocol.HELP, description=protocol.DESCRIPTION,
                           examples=protocol.EXAMPLES)
        protocol.arguments(p)
        count_options(p)
        p.set_defaults(func=protocol.command)
