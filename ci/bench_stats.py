"""Statistics' cost against the plain count on the CPU, one thread, in the same run (issue 36).

``python ci/bench_stats.py [ROUNDS]``: for startpos 7 and Kiwipete 6, ROUNDS (default 2) rounds of a
plain count (``perft_core._core.perft``) and a statistics count (``_core.perft_stats``), alternated
so that both see the same load; prints the best process CPU time of each (``time.process_time``:
the other engineers' load on a shared machine moves wall times by 50 %) and their ratio. The
target: at most 2x (issue 36).
"""
from __future__ import annotations

import sys
import time

from perft_core import _core
from perft_core.position import as_position

CASES = (("startpos", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 7),
         ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 6))


def main(rounds: int) -> None:
    print(f"extension {_core.__name__}; {rounds} rounds, best of each")
    for name, fen, depth in CASES:
        args = as_position(fen).core_args()
        best = {"plain": float("inf"), "stats": float("inf")}
        for _ in range(rounds):
            for kind, count in (("plain", _core.perft), ("stats", _core.perft_stats)):
                t0 = time.process_time()
                result = count(args, depth, 1)
                best[kind] = min(best[kind], time.process_time() - t0)
        nodes = result[0]
        print(f"{name} {depth}: {nodes:,} nodes; plain {best['plain']:.2f} s ({nodes / best['plain'] / 1e6:.0f} M/s), "
              f"stats {best['stats']:.2f} s ({nodes / best['stats'] / 1e6:.0f} M/s), ratio {best['stats'] / best['plain']:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
