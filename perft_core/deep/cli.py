"""``perft deep``: a deep perft as work units on Dask with a durable store (dispatched by ``perft_cli``).

``perft deep --check FILE`` re-reads a store (the run row's and every unit row's checksum) and counts
a sample of its units again (max(5 %, 20) by default, all with ``--check-sample 1``): exit 0 when all
hold, 1 when a row was changed or a count differs. ``perft deep FEN DEPTH --stats`` counts perft
statistics (``perft_core.Stats``) of every unit (whole; with ``--tt`` on the GPU backends in parts
as a plain run, through statistics tables each worker keeps warm across the run's units), each row's
counters kept in the store under its checksum, and prints the Chess Programming Wiki's columns and the checks and
mates by kind (in ``--json``: ``stats``). ``perft deep --stats FILE``
prints what a store says about its run's speed (units counted, the tables' statistics per remaining
depth) without counting and without its lock, so it reads a store that a run is writing.

A new run estimated to take over a day is refused before any cluster or store (``--force`` runs it);
without ``--store`` the store goes to the user's data folder, said on stderr once it is made.

Exit statuses: 0 success; 1 ``--check`` found a changed row or a count that differs; 2 bad input,
a full disk, a store that cannot serve the run (corrupt, another run's options, in use), Dask
missing, a Zobrist key shared by two positions at the split, or units that failed on every try,
printed as one line ``perft: error: <message>``; 3 stopped at ``--max-seconds`` with units left
(nothing lost: one line saying how far the run is and how to resume it; with ``--json`` an object
with ``"finished": false``); 130 interrupted (the futures cancelled, a local cluster closed, one line).
"""
from __future__ import annotations

import argparse
import json
import sys

from .. import cliargs
from ..cliargs import UsageError


def _split_ply(text: str) -> int:
    """--split-ply: plies, an integer >= 0 (the error names the split ply, not a depth)."""
    return cliargs.plies(text, "the split ply")


def _part_depth(text: str) -> int:
    """--part-depth: remaining plies, an integer >= 3."""
    value = cliargs.depth(text)
    if value < 3:
        raise argparse.ArgumentTypeError(f"part depth must be at least 3 remaining plies, got {value}")
    return value


def _parts(text: str) -> int:
    """--parts: an integer from 1 to MAX_PARTS."""
    from .dispatch import MAX_PARTS

    value = cliargs.positive_int(text)
    if value > MAX_PARTS:
        raise argparse.ArgumentTypeError(f"parts must be at most {MAX_PARTS}, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def _file(text: str) -> str:
    """--store, --resume, --check, --stats FILE: a path, not an empty string (which the store would
    have opened as the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file path, got an empty string")
    return text


def _scheduler(text: str) -> str:
    """--scheduler: a Dask address, checked by Dask's own parser (``distributed.comm.addressing``)
    before any store is made: ``tcp://host:8786``, ``host:8786``, ``tls://...``, ``inproc://...``."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:  # no Dask: the run says which extra to install (cluster.require_dask)
        return text
    try:
        scheme, loc = parse_address(text)
        if scheme in ("tcp", "tls", "ws", "wss", "ucx") and not parse_host_port(loc)[0]:
            raise ValueError(f"no host in address {text!r}")
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(f"not a Dask scheduler address ({exc}); e.g. tcp://host:8786") from None
    return text


def _cmd_deep(args: argparse.Namespace) -> int:
    from ..errors import CountRefused, StatsUnsupported
    from .dispatch import NO_TABLES
    from .run import DeepError, DeepStopped, deep_perft
    from .store import TAMPERED_WHY
    from .units import KeyCollisionError

    count_stats = args.stats is True  # --stats after the run's options: count statistics
    if count_stats:
        args.stats = None
    if args.check is not None and args.stats is not None:
        raise UsageError("give --check FILE or --stats FILE, not both")
    if args.check is not None:
        return _check(args, count_stats)
    if args.stats is not None:
        return _stats(args)

    if args.resume is None and (args.fen is None or args.depth is None):
        raise UsageError("deep needs FEN and DEPTH, or --resume FILE")
    if args.verify_seed is not None and not args.tt and args.resume is None:
        raise UsageError("--verify-seed needs --tt")
    if args.verify_sample is not None and args.verify_seed is None and args.resume is None:
        raise UsageError("--verify-sample needs --verify-seed")
    try:
        result = deep_perft(args.fen, args.depth, backend=args.backend, tt=True if args.tt else None,
                            workers=args.workers, gpus=args.gpus, scheduler=args.scheduler,
                            split_ply=args.split_ply, store=args.store, resume=args.resume,
                            verify_seed=args.verify_seed, verify_sample=args.verify_sample,
                            progress=False if args.json else "bar" if sys.stderr.isatty() else "lines",
                            force=args.force,
                            on_new_store=_announce if args.store is None else None,
                            max_seconds=args.max_seconds, stats=True if count_stats else None,
                            part_depth=args.part_depth, part_cut=args.part_cut, parts=args.parts)
    except CountRefused as exc:
        raise UsageError(f"{exc.reason}; add --force to count anyway") from None
    except StatsUnsupported as exc:
        raise UsageError(str(exc)) from None
    except DeepStopped as exc:
        if args.json:
            print(json.dumps(exc.as_dict()))
        print(f"perft deep: {exc}", file=sys.stderr)
        saved = [s for s in exc.images.get("saved", []) if s.get("bytes")]
        for s in exc.images.get("saved", []):
            if s.get("saved") is False and s.get("reason") != NO_TABLES:
                print(f"perft deep: part {s['part']}'s tables were not saved ({s['reason']}): its resume starts "
                      f"with empty tables", file=sys.stderr)
        if saved:
            print(f"perft deep: the tables are saved beside the store for the resume ({len(saved)} image"
                  f"{'s' if len(saved) > 1 else ''}, {_size(sum(s['bytes'] for s in saved))} in "
                  f"{max(s['seconds'] for s in saved):.1f} s)", file=sys.stderr)
        return 3
    except (DeepError, KeyCollisionError) as exc:
        print(f"perft: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.as_dict()))
        return 0
    parts = (f", each in {result.parts} parts (split at remaining depth {result.part_depth}"
             f" by {result.part_cut})" if result.parts > 1 else "")
    print(f"units: {result.units} at split ply {result.split_ply}{parts} ({result.counted_now} unit counts made now); "
          f"verification: {result.verify}")
    for m in result.mismatches:
        summed = f" (its {len(m['rows'])} parts summed)" if len(m["rows"]) > 1 else ""
        print(f"mismatch: unit {m['unit']} {m['fen']}: {', '.join(m['differs']) or 'nothing'} differed under the "
              f"verify seed{summed}: nodes {m['count']} vs {m['verify_count']}, without tables {m['recount']}")
    for line in table_lines(result.tables, "first counts") + table_lines(result.verify_tables, "verify counts"):
        print(line)
    if result.stats is not None:
        from ..cli import stats_table_lines

        print("\n".join(stats_table_lines([(str(result.depth), result.stats)])))
    for r in result.tampered:
        print(f"perft deep: unit {r['unit']} part {r['part']} of the store {TAMPERED_WHY[r['why']]} (count "
              f"{r['count']}): counted again, not summed", file=sys.stderr)
    print(result.summary())
    return 0


def _announce(path) -> None:
    """Say where a run's store went when none was named (the user's data folder), once it is made."""
    print(f"perft deep: new store {path} (continue it with --resume {path})", file=sys.stderr, flush=True)


def _rate(part: int, whole: int) -> str:
    return f"{part / whole:6.1%}" if whole else "     -"


def table_lines(tables: dict, what: str) -> list[str]:
    """The lines of a run's table statistics (``DeepResult.tables``: ``{"by_depth": {r: row},
    "processes": n}``) for people, one remaining depth a line, deepest first; [] without any.
    ``what``: the counts they are of, in words."""
    if not tables.get("by_depth"):
        return []
    n = tables.get("processes", 0)
    m = tables.get("last_processes", n)
    out = [f"tables over the {what} ({n} worker process{'es' * (n != 1)}; slots, occupancy and evictions: the "
           f"last session's {m} process{'es' * (m != 1)}, as last read):",
           f"  {'r':>2} {'probes':>15} {'hits':>15} {'rate':>6} {'host probes':>12} {'host hits':>12} {'rate':>6} "
           f"{'stores':>15} {'slots':>14} {'occupied':>14} {'evictions':>15}"]
    for r, row in sorted(tables["by_depth"].items(), key=lambda kv: -int(kv[0])):
        table = "".join(f" {row[k]:>{w},}" if row.get(k) is not None else f" {'-':>{w}}"
                        for k, w in (("slots", 14), ("occupied", 14), ("evictions", 15)))
        out.append(f"  {int(r):>2} {row['probes']:>15,} {row['hits']:>15,} {_rate(row['hits'], row['probes'])} "
                   f"{row['host_probes']:>12,} {row['host_hits']:>12,} {_rate(row['host_hits'], row['host_probes'])} "
                   f"{row['stores']:>15,}{table}")
    return out


def _stats(args: argparse.Namespace) -> int:
    """``--stats FILE``: the store's run, its units counted so far and its table statistics; exit 0."""
    from .check import store_statistics

    if args.fen is not None or args.resume is not None or args.store is not None:
        raise UsageError("--stats FILE takes no FEN, DEPTH, --store or --resume")
    given = _run_options(args) + [flag for flag, value in (("--backend", args.backend),
                                                          ("--check-sample", args.check_sample)) if value is not None]
    if given:  # ignored, they would promise what a read does not do (session 44's review)
        raise UsageError(f"--stats FILE reads the store (--json); it takes no {', '.join(given)}")
    s = store_statistics(args.stats)
    changed = s["run_row_holds"] is False  # its FEN, depth or options changed outside perft deep: said, exit 1
    if changed:
        print(f"perft deep: store {s['store']}: its run row (FEN, depth, options) fails its checksum: it was "
              "changed outside perft deep, so none of its figures can be trusted (perft deep --check FILE)",
              file=sys.stderr)
    if args.json:
        print(json.dumps(s))
        return 1 if changed else 0
    parts = (f", each unit in {s['parts']} parts (split at remaining depth {s['part_depth']} by {s['part_cut']})"
             if (s.get("parts") or 1) > 1 else "")
    print(f"store {s['store']}: perft {s['depth']} of {s['fen']} on {s['backend']}"
          f"{' with tables' if s['tt'] else ''}{parts}; {s['counted']} of {s['rows']} unit rows counted in "
          f"{s['unit_seconds']:.1f} worker seconds; device TT: {s['tt_hits']:,} hits of {s['tt_probes']:,} probes "
          f"({_rate(s['tt_hits'], s['tt_probes']).strip()})")
    for n, x in enumerate(s["sessions"], 1):  # each command: when, where, on what, and how far it got
        print(f"  command {n}: {x['started']} to {x['ended'] or '(no end recorded: running, or killed)'} on "
              f"{x['host']}, the {x['cluster']}: {x['counted']} unit rows counted (first counts)")
    lines = table_lines(s["tables"], "first counts") + table_lines(s["verify_tables"], "verify counts")
    if not lines:
        lines = [f"no table statistics per remaining depth in this store (schema {s['schema']}: they are kept "
                 "from schema 4 on, for the GPU backends with tables)"]
    print("\n".join(lines))
    return 1 if changed else 0


def _run_options(args: argparse.Namespace, count_stats: bool = False) -> list[str]:
    """The options of a run given on a command that reads or checks a store (--stats FILE,
    --check FILE), which takes none of them."""
    return [flag for flag, value in (
        ("--max-seconds", args.max_seconds), ("--workers", args.workers), ("--gpus", args.gpus),
        ("--scheduler", args.scheduler), ("--tt", args.tt or None), ("--split-ply", args.split_ply),
        ("--part-depth", args.part_depth), ("--part-cut", args.part_cut), ("--parts", args.parts),
        ("--verify-seed", args.verify_seed),
        ("--verify-sample", args.verify_sample), ("--force", args.force or None), ("--stats", count_stats or None))
        if value is not None]


def _check(args: argparse.Namespace, count_stats: bool = False) -> int:
    """``--check FILE``: exit 0 when every row holds its checksum and the sample counts agree, else 1.
    It counts in this process with ``--backend`` and ``--check-sample``: any option of a run is
    refused (UsageError), not ignored (``--max-seconds`` would promise a bound it does not keep)."""
    from .check import check_store

    if args.fen is not None or args.resume is not None or args.store is not None:
        raise UsageError("--check FILE takes no FEN, DEPTH, --store or --resume")
    given = _run_options(args, count_stats)
    if given:
        raise UsageError(f"--check FILE recounts its sample in this process (--backend, --check-sample, --json); "
                         f"it takes no {', '.join(given)}")
    result = check_store(args.check, sample=args.check_sample, backend=args.backend or "cpu")
    if args.json:
        print(json.dumps(result.__dict__ | {"ok": result.ok}))
    else:
        print("\n".join(result.lines()))
    return 0 if result.ok else 1


def register(sub) -> None:
    """Add ``deep`` to an ``argparse`` subparsers object; its ``func(args)`` returns the exit status."""
    p = sub.add_parser("deep", help="deep perft as work units on Dask, with a durable, resumable store")
    p.add_argument("fen", nargs="?", help="FEN, X-FEN or Shredder-FEN (quote it); omit with --resume")
    p.add_argument("depth", nargs="?", type=cliargs.depth, help="plies; omit with --resume")
    p.add_argument("--backend", choices=("cpu", "gpu", "gpu-emulated"), default=None, help="default cpu")
    p.add_argument("--tt", action="store_true", help="count through transposition tables, kept warm per worker")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=cliargs.positive_int, metavar="N",
                       help="a local cluster of N processes (cpu, gpu-emulated; at most 4 a core)")
    where.add_argument("--gpus", type=cliargs.positive_int, metavar="N",
                       help="a local CUDA cluster, one worker per GPU (dask-cuda; default 1, and for a resumed "
                            "run in P parts min(P, the GPUs visible))")
    where.add_argument("--scheduler", type=_scheduler, metavar="ADDR", help="an existing Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--split-ply", type=_split_ply, metavar="K", help="plies expanded on the host (default: chosen)")
    p.add_argument("--part-depth", type=_part_depth, metavar="R",
                   help="the remaining depth (>= 3) at which each unit is split among the GPUs' parts (default 3, "
                        "the fastest measured; a resumed run keeps its own)")
    p.add_argument("--parts", type=_parts, metavar="P",
                   help="count each unit in P parts (1-8; --tt on the gpu backends; default one per worker): fewer "
                        "GPUs than parts take turns at them, each with the whole of its tables for one part at a "
                        "time; a resumed run keeps its own")
    p.add_argument("--part-cut", choices=("board", "key"), default=None,
                   help="how the parts divide that level: board (default: by the pieces of the side not to move, "
                        "so a leaf position two move orders reach is counted in one part) or key (by Zobrist key, "
                        "every run stored before schema 9); a resumed run keeps its own")
    p.add_argument("--store", type=_file, metavar="FILE", help="the new run's SQLite store (default: perft-deep-<time>-<pid>.sqlite in the "
                   "user's data folder, e.g. ~/.local/share/perft-oracle/deep, said on stderr once it is made)")
    p.add_argument("--resume", type=_file, metavar="FILE", help="continue the run of this store")
    p.add_argument("--verify-seed", type=cliargs.seed, metavar="S",
                   help="with --tt: count every unit again with tables keyed by this Zobrist seed (with --resume: "
                   "also a run made without one)")
    p.add_argument("--verify-sample", type=_fraction, metavar="FRACTION",
                   help="verify only this fraction of the units, rounded up (chosen by key: the same "
                   "units every time)")
    p.add_argument("--check", type=_file, metavar="FILE", help="re-read a store (row checksums) and count a sample of its units "
                   "again in this process (--backend, --check-sample, --json; a run's options are refused): "
                   "exit 0 when all hold, 1 when not")
    p.add_argument("--stats", nargs="?", const=True, type=_file, metavar="FILE",
                   help="after FEN DEPTH (or --resume FILE): count perft statistics (captures, e.p., castles, "
                        "promotions, checks and mates by kind) of every unit (whole units; --tt on the GPU "
                        "backends only); alone with a FILE: "
                        "print that store's run, units counted, each command's cluster and table statistics per "
                        "remaining depth, without counting (reads a store a run is writing; exit 1 when "
                        "its run row was changed outside perft deep)")
    p.add_argument("--check-sample", type=_fraction, default=None, metavar="FRACTION",
                   help="with --check: the fraction of units counted again (default max(5 %%, 20 units); 1: all)")
    p.add_argument("--max-seconds", type=cliargs.seconds, metavar="S",
                   help="end this command within S seconds: start only the tasks estimated to finish by then (the "
                        "run's own measured speed), then stop, exit status 3; resume the store later. A split, a new "
                        "store or a resumed store's opening that reaches S stops too, exit 3 (a new run's store "
                        "is then not kept). With --tt on "
                        "the gpu backends the workers' tables are saved beside the store (STORE.tables-*.img, "
                        "within 5 %% of S at 0.5 GB/s and half the free disk; PERFT_TABLE_IMAGE_BYTES=N "
                        "sets the bytes, 0 none) and loaded when the run resumes; removed when it ends")
    p.add_argument("--force", action="store_true", help="start a run estimated to take longer than a day "
                   "(refused without it)")
    p.add_argument("--json", action="store_true", help="print one JSON object, no progress (a bar on a terminal, "
                   "else a line a minute on stderr)")
    p.set_defaults(func=_cmd_deep)


def _size(nbytes: int) -> str:
    """Bytes for people: GB from 1 GB, else MB (decimal units)."""
    return f"{nbytes / 1e9:.2f} GB" if nbytes >= 1e9 else f"{nbytes / 1e6:.1f} MB"
