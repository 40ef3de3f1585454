"""How many of a deep run's repeated positions a table can catch within one call (NOTES.md, session 23).

    python ci/unit_locality.py [--fen FEN] [--split 2] [--ply 6] [--windows 8 16 33] [--greedy]

`perft deep` counts the unique positions at the split ply (the units) one task at a time, and a
worker's tables live as long as its process: on the lent GPUs, one 10-minute call of a few units.
This counts, on the host, the distinct positions at ``--ply`` below each unit (the BFS merges equal
positions of a unit, as a call does), and how much they overlap: across all units (what tables
living the whole run could catch), and within windows of consecutive units in the order `perft
deep` counts them (largest first: what one call's tables can catch). ``--greedy`` also orders the
units so that each shares the most positions with the window before it (slow: about 7 minutes at
ply 6 on one core), as a bound on what an ordering could gain.

Prints, for each window size, the sum of the units' own distinct positions over the distinct
positions of each window (summed): 1.00x means no position is shared between units of a window.
"""
from __future__ import annotations

import argparse

import numpy as np

from perft_core import _core
from perft_core.hostbatch import expand_host, host_keys
from perft_core.position import as_position


def unit_sets(fen: str, split: int, ply: int) -> list[tuple[int, np.ndarray]]:
    """For each unit (distinct position at ``split``): (its paths to ``ply``, its distinct keys there)."""
    root, us, ci = _core.gpu_root(as_position(fen).core_args())
    z = np.frombuffer(_core.zobrist_keys_blob(_core.ZOBRIST_DEFAULT_SEED), dtype=np.uint64).copy()

    def step(boards, side):
        children = expand_host(boards, side, ci)[0]
        keys, first = np.unique(host_keys(children, side ^ 1, ci, z)[:, 0], return_index=True)
        return children, keys, children[first]

    boards, side = np.array([root], dtype=np.uint64), us
    for _ in range(split):
        _, _, boards = step(boards, side)
        side ^= 1
    out = []
    for i in range(len(boards)):
        b, s = boards[i:i + 1], side
        for _ in range(ply - split):
            children, keys, b = step(b, s)
            s ^= 1
        out.append((len(children), keys))
    return out


def sharing(sets: list[np.ndarray], order: list[int], window: int) -> float:
    """Sum of the units' distinct positions over the distinct positions of each window of ``order``."""
    own = union = 0
    for a in range(0, len(order), window):
        chosen = [sets[i] for i in order[a:a + window]]
        own += sum(len(x) for x in chosen)
        union += len(np.unique(np.concatenate(chosen)))
    return own / union


def greedy(sets: list[np.ndarray], first: int, window: int) -> list[int]:
    """Units ordered from ``first``: each next one shares the most positions with the last ``window``."""
    as_sets = [set(x.tolist()) for x in sets]
    left, seq = set(range(len(sets))) - {first}, [first]
    while left:
        recent = set().union(*(as_sets[i] for i in seq[-window:]))
        best = max(left, key=lambda i: (len(as_sets[i] & recent), len(sets[i])))
        seq.append(best)
        left.remove(best)
    return seq


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fen", default="rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    ap.add_argument("--split", type=int, default=2)
    ap.add_argument("--ply", type=int, default=6)
    ap.add_argument("--windows", type=int, nargs="+", default=[4, 8, 16, 33, 100])
    ap.add_argument("--greedy", action="store_true")
    args = ap.parse_args()
    units = unit_sets(args.fen, args.split, args.ply)
    sets = [keys for _, keys in units]
    largest = sorted(range(len(units)), key=lambda i: -units[i][0])
    print(f"{len(units)} units at ply {args.split}; ply {args.ply}: {sum(p for p, _ in units):,} paths from the units' "
          f"distinct parents, {sum(len(s) for s in sets):,} distinct a unit summed, "
          f"{len(np.unique(np.concatenate(sets))):,} distinct in all: {sharing(sets, largest, len(units)):.2f}x")
    order = greedy(sets, largest[0], 8) if args.greedy else None
    for w in args.windows:
        line = f"windows of {w} units: largest first {sharing(sets, largest, w):.2f}x"
        if order is not None:
            line += f", greedy order {sharing(sets, order, w):.2f}x"
        print(line)


if __name__ == "__main__":
    main()
