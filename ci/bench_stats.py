"""Statistics' cost against the plain count on the CPU, one thread, in the same run (issue 36).

``python ci/bench_stats.py [ROUNDS] [--more]``: for startpos 7 and Kiwipete 6 (issue 36's target
cases; ``--more`` adds CPW 3-6 and a Chess960 position, positions the leaf was not tuned on, as
NOTES.md sessions 23-25 measured them), ROUNDS (default 2) rounds of a plain count
(``perft_core._core.perft``) and a statistics count (``_core.perft_stats``), alternated so that
both see the same load; prints the best process CPU time of each (``time.process_time``:
the other engineers' load on a shared machine moves wall times by 50 %), their ratio, and the
median (min-max) of each round's own ratio: the two counts of a round run back to back, so a
machine whose speed drifts between rounds (both machines of NOTES.md sessions 37-41, by 25 %) moves
the paired ratios less than the bests, which may come from different rounds. The target: at most
2x (issue 36).
"""
from __future__ import annotations

import statistics
import sys
import time

from perft_core import _core
from perft_core.position import as_position

CASES = (("startpos", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 7),
         ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 6))
MORE = (("cpw3", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 8),
        ("cpw4", "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 6),
        ("cpw5", "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 6),
        ("cpw6", "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 6),
        ("chess960", "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", 6))


def main(rounds: int, more: bool = False) -> None:
    print(f"extension {_core.__name__}; {rounds} rounds, best of each")
    for name, fen, depth in CASES + (MORE if more else ()):
        args = as_position(fen).core_args()
        best = {"plain": float("inf"), "stats": float("inf")}
        paired = []
        for _ in range(rounds):
            seconds = {}
            for kind, count in (("plain", _core.perft), ("stats", _core.perft_stats)):
                t0 = time.process_time()
                result = count(args, depth, 1)
                seconds[kind] = time.process_time() - t0
                best[kind] = min(best[kind], seconds[kind])
            paired.append(seconds["stats"] / seconds["plain"])
        nodes = result[0]
        print(f"{name} {depth}: {nodes:,} nodes; plain {best['plain']:.2f} s ({nodes / best['plain'] / 1e6:.0f} M/s), "
              f"stats {best['stats']:.2f} s ({nodes / best['stats'] / 1e6:.0f} M/s), ratio {best['stats'] / best['plain']:.2f}"
              f"; paired ratios median {statistics.median(paired):.2f} ({min(paired):.2f}-{max(paired):.2f})")


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if a != "--more"]
    main(int(numbers[0]) if numbers else 2, "--more" in sys.argv[1:])
