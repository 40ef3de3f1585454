"""Per-call cost of the public API on small counts: what ``perft_core.perft`` adds around a count.

    python ci/api_overhead.py LABEL

Kiwipete with ``progress=False``, four calls (depth 1 with no estimate at all; depth 3 with the
default estimate guard; depth 3 through tables with a verify seed; the emulated GPU at depth 2
through tables): after one warm-up call each, 7 rounds of 200 calls; prints the median
microseconds per call. Compare two trees in one run, interleaved (PYTHONPATH=tree_a, then
tree_b, and again): timings on a shared machine move by tens of percent between runs.
"""
from __future__ import annotations

import statistics
import sys
import time

import perft_core

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CASES = {
    "cpu d1 no estimate": (1, {"max_estimate_seconds": None}),
    "cpu d3 default": (3, {}),
    "cpu d3 tt verify": (3, {"tt": True, "verify_seed": 5}),
    "emu d2 tt": (2, {"backend": "gpu-emulated", "tt": True}),
}


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    pos = perft_core.Position.from_fen(KIWIPETE)
    for name, (depth, options) in CASES.items():
        perft_core.perft(pos, depth, progress=False, **options)
        rounds = []
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(200):
                perft_core.perft(pos, depth, progress=False, **options)
            rounds.append((time.perf_counter() - t) / 200 * 1e6)
        print(f"{label:8s} {name:20s} {statistics.median(rounds):8.1f} us/call")


if __name__ == "__main__":
    main()
