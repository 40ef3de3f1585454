"""What the deep store's table statistics cost (issue 27, item 1): a batch's time beside the
occupancy pass that reads its tables (``TTBfsDriver.tt_statistics(occupancy=True)``), and how many
batches read it under ``worker.OCCUPANCY_SHARE``.

    python ci/bench_deep_tables.py [--backend gpu-emulated|gpu] [--depth 6 7] [--split-ply 2] [--out DIR]

For each depth: ``perft deep startpos DEPTH --tt`` on one worker (``--gpus 1`` for gpu) into a new
store, then from the store: tasks, their seconds (min / median / max / total), the batches whose
statistics carry an occupancy reading; then, in this process, the occupancy pass over tables
planned as that run plans them (median of 5) and the same call without it. Prints one line per
figure; stores go to DIR (default a temporary folder).
"""
from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def batches(store: Path) -> tuple[list[float], int]:
    """(seconds of each task, tasks whose r = 3 statistics carry an occupancy reading) of a store."""
    conn = sqlite3.connect(store)
    try:
        secs = [s for _, s in conn.execute("SELECT task, SUM(seconds) FROM units GROUP BY task")]
        (reads,), = conn.execute("SELECT COUNT(*) FROM tables WHERE occupied IS NOT NULL AND task != 'tables read' "
                                 "AND r = 3")
        return secs, reads
    finally:
        conn.close()


def occupancy_pass(backend: str, depth: int) -> tuple[int, float, float]:
    """(bytes of tables, seconds of tt_statistics with the occupancy pass, without it; medians of 5) of this
    process's driver with tables planned for startpos ``depth``."""
    from perft_core import Position
    from perft_core.gpu.registry import get_driver
    from perft_core.gpu.tables import ENTRY_BYTES

    drv = get_driver(backend)
    pos = Position.from_fen(STARTPOS)
    drv.tt_enabled = True
    drv.keep_tables("bench", depth, pos)
    drv.count_roots([pos], min(depth - 1, 5), pos)
    out = []
    for occupancy in (True, False):
        took = []
        for _ in range(5):
            t = time.perf_counter()
            drv.tt_statistics(occupancy)
            took.append(time.perf_counter() - t)
        out.append(statistics.median(took))
    return sum(t.slots for t in drv.tts.values()) * ENTRY_BYTES, out[0], out[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("gpu-emulated", "gpu"), default="gpu-emulated")
    ap.add_argument("--depth", type=int, nargs="+", default=[6, 7])
    ap.add_argument("--split-ply", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from perft_core.deep import deep_perft

    out = args.out or Path(tempfile.mkdtemp(prefix="bench_deep_tables-"))
    out.mkdir(parents=True, exist_ok=True)
    where = {"gpus": 1} if args.backend == "gpu" else {"workers": 1}
    for depth in args.depth:
        store = out / f"startpos{depth}-{time.strftime('%Y%m%dT%H%M%S')}.sqlite"
        t = time.perf_counter()
        res = deep_perft(STARTPOS, depth, backend=args.backend, tt=True, split_ply=args.split_ply, store=store, **where)
        wall = time.perf_counter() - t
        secs, reads = batches(store)
        print(f"startpos {depth} ({args.backend}, split ply {args.split_ply}): {res.nodes:,} nodes, {len(secs)} tasks "
              f"of {min(secs):.4f} / {statistics.median(secs):.4f} / {max(secs):.4f} s (min / median / max), "
              f"{sum(secs):.2f} s in all; {reads} batches read the occupancy; wall {wall:.1f} s; store {store}")
    size, with_pass, without = occupancy_pass(args.backend, max(args.depth))
    print(f"tt_statistics over {size / 2**20:,.0f} MiB of tables: {with_pass * 1e3:.3f} ms with the occupancy pass, "
          f"{without * 1e3:.3f} ms without")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
