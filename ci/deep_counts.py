"""Write oracle/data/deep_counts.csv: counts beyond the published depths, each counted three ways.

    python ci/deep_counts.py [--backend gpu] [--out oracle/data/deep_counts.csv]
                             [--row-seconds 60] [--total-seconds 330] [--seed2 0x9e3779b97f4a7c15]
                             [--only ID ...] [--max-extra 6]

For each position of POSITIONS (CPW 2-6 with Kiwipete, tricky and Chess960 positions of the bundled
tables), the script first re-counts a published row (the deepest one that is cheap) three ways
and checks it against the table (status ``published``): the timing it measures predicts the next
depths. Then it counts depth D+1, D+2, ... beyond the deepest published depth D (status
``computed``), in two passes over the positions (rows predicted under an eighth of
``--row-seconds`` first, then up to ``--row-seconds``), as long as the predicted time of a row
(three counts) fits and the whole run fits ``--total-seconds``; at most ``--max-extra`` depths
beyond D. Depths are counted in order, so a row at depth D+k means D+1..D+k-1 are there too.

The three ways: ``perft_core.perft(fen, depth, backend=B)`` without TT; with TT (default Zobrist
key seed); with TT under ``--seed2`` (the driver's ``reseed``; ``zobrist.perft_tt(seed=...)`` on
the CPU). They must agree: a disagreement stops the script with exit status 1 and writes no row
for it. Each row is appended and flushed as soon as it is counted (the header is written when the
file is new or empty); rows already in the file (same id and depth) are not counted again: a second run goes on
beyond them.
Provenance columns come from perft_core.provenance: package version, commit, GPU (or CPU), date,
and the seconds of each method. The lead runs it on an H200 (one ~6-minute command):

    python ci/deep_counts.py --backend gpu --row-seconds 60 --total-seconds 330

CPU CI runs it end to end with ``--backend gpu-emulated`` on tiny depths into a temporary file.
Exit status: 0 done (rows over the budget are reported on stdout, not counted), 1 the three
counts (or a published count) disagree, 2 bad arguments.
"""
from __future__ import annotations

import importlib.util
import argparse
import csv
import datetime
import os
import sys
import time
from pathlib import Path

if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import perft_core  # noqa: E402
from perft_core import provenance  # noqa: E402
from perft_core.zobrist import DEFAULT_SEED  # noqa: E402

from oracle import tables  # noqa: E402

#: (suite, id) of the positions counted, in order.
POSITIONS = [
    ("cpw", "pos2_kiwipete"), ("cpw", "pos3"), ("cpw", "pos4"), ("cpw", "pos5"), ("cpw", "pos6"),
    ("tricky", "xfen-00"), ("tricky", "gotta-love-perft-1"), ("tricky", "ep-unrelated-check"),
    ("tricky", "asymmetrical-and-king-on-h"), ("tricky", "align-ep-pinned"),
    ("chess960", "0"), ("chess960", "518"), ("chess960", "959"),
]
SECOND_SEED = 0x9E3779B97F4A7C15
#: A first guess of the speed without TT (nodes/s) per backend, before anything is measured.
GUESSED_SPEED = {"gpu": 8e11, "gpu-emulated": 3e6, "cpu": 1.5e8}
COMPUTED_SOURCE = ("computed by ci/deep_counts.py: perft_core without TT, with TT and with TT under a "
                   "second Zobrist key seed agree")


class Disagreement(RuntimeError):
    """The three counts of a row (or a count and its published value) differ."""


def count_three_ways(fen: str, depth: int, backend: str, seed2: int) -> tuple[int, list[float]]:
    """Count ``perft(fen, depth)`` without TT, with TT, and with TT under ``seed2``.

    Returns ``(nodes, [seconds of each method])``; raises :class:`Disagreement` when they differ.
    """
    counts, seconds = [], []
    for method in ("nott", "tt", "tt_seed2"):
        start = time.perf_counter()
        if method == "nott":
            nodes = perft_core.perft(fen, depth, backend=backend)
        elif method == "tt":
            nodes = perft_core.perft(fen, depth, backend=backend, tt=True)
        elif backend == "cpu":
            from perft_core import zobrist

            nodes = zobrist.perft_tt(fen, depth, seed=seed2)
        else:
            from perft_core.gpu.registry import get_driver

            driver = get_driver(backend)
            default = driver.seed
            driver.reseed(seed2)
            try:
                nodes = perft_core.perft(fen, depth, backend=backend, tt=True)
            finally:
                driver.reseed(default)
        seconds.append(time.perf_counter() - start)
        counts.append(nodes)
    if len(set(counts)) != 1:
        raise Disagreement(f"perft({fen!r}, {depth}) on {backend}: no TT {counts[0]}, TT {counts[1]}, "
                           f"TT seed {seed2:#x} {counts[2]}")
    return counts[0], seconds


def _rate(nodes: int, seconds: list[float], guessed: float) -> float:
    """Nodes per second of a row's three counts; a row under a second is mostly overhead, so then
    at least a third of the guessed speed (three counts are made)."""
    rate = nodes / max(sum(seconds), 1e-9)
    return max(rate, guessed / 3) if sum(seconds) < 1.0 else rate


def _existing(path: Path) -> dict[tuple[str, int], int]:
    """``{(id, depth): nodes}`` of the rows already in ``path``."""
    if not path.exists() or path.stat().st_size == 0:
        return {}
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != tables.DEEP_COLUMNS:
            raise SystemExit(f"deep_counts: error: {path}: header is not {','.join(tables.DEEP_COLUMNS)}")
        return {(row["id"], int(row["depth"])): int(row["nodes"]) for row in reader}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="gpu", choices=("gpu", "gpu-emulated", "cpu"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "oracle" / "data" / "deep_counts.csv"))
    ap.add_argument("--row-seconds", type=float, default=60.0, help="predicted seconds one row (three counts) may take")
    ap.add_argument("--total-seconds", type=float, default=330.0, help="wall time of the whole run")
    ap.add_argument("--seed2", type=lambda t: int(t, 0), default=SECOND_SEED, help="the second Zobrist key seed")
    ap.add_argument("--only", nargs="+", metavar="ID", help="only these positions (suite-id, e.g. cpw-pos3)")
    ap.add_argument("--max-extra", type=int, default=6, help="at most this many depths beyond the published one")
    args = ap.parse_args(argv)
    if args.seed2 == DEFAULT_SEED:
        ap.error("--seed2 must differ from the default key seed")
    positions = [(s, i) for s, i in POSITIONS if not args.only or f"{s}-{i}" in args.only]
    if not positions:
        ap.error(f"--only matches none of {', '.join(f'{s}-{i}' for s, i in POSITIONS)}")

    out = Path(args.out)
    done = _existing(out)
    fresh = not out.exists() or out.stat().st_size == 0
    where = provenance.gpu_name() if args.backend == "gpu" else f"{args.backend} on {provenance.machine().get('cpu', '?')}"
    common = {"version": provenance.package_version(), "commit": provenance.package_commit(), "gpu": where}
    start = time.monotonic()
    speed = GUESSED_SPEED[args.backend]
    with out.open("a", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=tables.DEEP_COLUMNS, lineterminator="\n")
        if fresh:
            writer.writeheader()
            f.flush()

        def write(row_id: str, fen: str, depth: int, nodes: int, source: str, status: str, secs: list[float]) -> None:
            writer.writerow(common | {
                "id": row_id, "fen": fen, "depth": depth, "nodes": nodes, "source": source, "status": status,
                "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
                "seconds_nott": f"{secs[0]:.3f}", "seconds_tt": f"{secs[1]:.3f}", "seconds_tt_seed2": f"{secs[2]:.3f}"})
            f.flush()
            os.fsync(f.fileno())

        state: dict[str, dict] = {}  # per position: fen, deepest published depth, known counts, rate
        for suite, pid in positions:
            rows = sorted((r for r in tables.load(suite) if r.id == pid and r.depth >= 1), key=lambda r: r.depth)
            if not rows:
                print(f"{suite}-{pid}: not in the bundled tables, left out")
                continue
            row_id, fen = f"{suite}-{pid}", rows[0].fen
            # the anchor: the deepest published row that is cheap (a twentieth of a row's budget)
            cheap = [r for r in rows if r.nodes / speed <= args.row_seconds / 20] or rows[:1]
            anchor = cheap[-1]
            try:
                nodes, secs = count_three_ways(fen, anchor.depth, args.backend, args.seed2)
            except Disagreement as exc:
                print(f"deep_counts: DISAGREE: {exc}")
                return 1
            if nodes != anchor.nodes:
                print(f"deep_counts: DISAGREE: {row_id} depth {anchor.depth}: counted {nodes}, published {anchor.nodes}")
                return 1
            if (row_id, anchor.depth) not in done:
                write(row_id, fen, anchor.depth, nodes, anchor.source, "published", secs)
            print(f"{row_id} depth {anchor.depth}: {nodes} (published) in {sum(secs):.2f} s", flush=True)
            state[row_id] = {"fen": fen, "deepest": rows[-1].depth, "known": {r.depth: r.nodes for r in rows},
                             "rate": _rate(nodes, secs, speed), "stopped": False}

        # two passes: every position a few cheap rows first, then the deeper ones while time is left
        for budget in (args.row_seconds / 8, args.row_seconds):
            for row_id, st in state.items():
                while not st["stopped"]:
                    known = st["known"]
                    top = max(known)
                    depth = top + 1
                    if depth > st["deepest"] + args.max_extra:
                        st["stopped"] = True
                        break
                    # nodes grow by the last branching factor; the speed is the last row's
                    predicted = known[top] * max(known[top] / max(known.get(top - 1, 1), 1), 1.0) / st["rate"] * 1.2
                    if predicted > budget:
                        if budget == args.row_seconds:
                            print(f"{row_id} depth {depth}: predicted {predicted:.0f} s > --row-seconds {budget:g}, not counted")
                        break
                    if time.monotonic() - start + predicted > args.total_seconds:
                        print(f"{row_id} depth {depth}: predicted {predicted:.0f} s, over what is left of --total-seconds, "
                              "not counted")
                        st["stopped"] = True
                        break
                    if (row_id, depth) in done:
                        print(f"{row_id} depth {depth}: already in {out}, not counted again")
                        known[depth] = done[(row_id, depth)]
                        continue
                    try:
                        nodes, secs = count_three_ways(st["fen"], depth, args.backend, args.seed2)
                    except Disagreement as exc:
                        print(f"deep_counts: DISAGREE: {exc}")
                        return 1
                    write(row_id, st["fen"], depth, nodes, COMPUTED_SOURCE, "computed", secs)
                    print(f"{row_id} depth {depth}: {nodes} (computed) in {sum(secs):.2f} s (no TT {secs[0]:.2f}, "
                          f"TT {secs[1]:.2f}, TT seed 2 {secs[2]:.2f}; predicted {predicted:.1f})", flush=True)
                    known[depth] = nodes
                    st["rate"] = _rate(nodes, secs, speed)
    print(f"wrote {out} in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
