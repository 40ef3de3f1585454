"""The table plan of a count, replayed on the CPU under the shipped rule and its variants (NOTES.md,
session 23): what `plan_slots` gives each remaining depth, in G slots a worker, without a GPU.

    python ci/table_value/replay_plans.py [--budget SLOTS] [--depth 13 12 ...] [--fen FEN]

For each depth: one GPU (a deep run's shared tables: the lowest takes the rest) and four GPUs
(parts split at r = 3, as the four-GPU perft 13 run), each under
- the shipped rule (LEVEL_VALUE 10, SLOTS_PER_POSITION 4),
- LEVEL_VALUE 3,
- SLOTS_PER_POSITION 1 (every table but the lowest at one slot a distinct position),
- the tables two or more above the lowest at one slot a position (the others at 4): emulated by
  rewriting that one line of plan_slots' source, which the assert below guards.
The distinct positions per ply are the driver's own estimate (``perft_core.distinct.distinct_below``).
The default budget is the one-GPU perft 13 run's (4,528,596,848 16-byte slots on an H200).
"""
from __future__ import annotations

import argparse
import inspect

import perft_core.gpu.tables as T
from perft_core.distinct import distinct_below
from perft_core.position import as_position

_BOUND = "bound = {r: (math.inf if (r == low and not cap_lowest) else SLOTS_PER_POSITION * pos[r]) for r in pos}"


def _upper_rule():
    """plan_slots with the tables two or more above the lowest bounded at one slot a position."""
    src = inspect.getsource(T.plan_slots)
    assert _BOUND in src, "plan_slots' bound line changed: update this tool"
    src = src.replace(_BOUND, "bound = {r: (math.inf if (r == low and not cap_lowest) else "
                              "(1.0 if r >= low + 2 else SLOTS_PER_POSITION) * pos[r]) for r in pos}")
    ns = dict(vars(T))
    exec(src, ns)  # a benchmark tool's emulation of a rule that does not ship
    return ns["plan_slots"]


def plans(fen: str, depth: int, budget: float) -> list[tuple[str, str, dict[int, int]]]:
    """(setting, rule, {r: slots}) for one and four GPUs under each rule."""
    d = distinct_below(as_position(fen), depth)
    base = {r: max(d[depth - r], 1.0) for r in range(3, min(8, depth - 4) + 1)}
    upper = _upper_rule()
    out = []
    for parts, split in ((1, None), (4, 3)):
        positions, above = dict(base), 1.0
        if split is not None:
            positions = {r: (max(p / parts, 1.0) if r <= split else p) for r, p in positions.items()}
            above = 1.0 / parts
        setting = f"{parts} GPU" + ("s, split at r = 3" if parts > 1 else "")
        spp = T.SLOTS_PER_POSITION
        try:
            out.append((setting, "shipped", T.plan_slots(positions, budget, False, T.LEVEL_VALUE, above, split)))
            out.append((setting, "LEVEL_VALUE 3", T.plan_slots(positions, budget, False, 3.0, above, split)))
            T.SLOTS_PER_POSITION = 1
            out.append((setting, "1 slot a position", T.plan_slots(positions, budget, False, T.LEVEL_VALUE, above, split)))
        finally:
            T.SLOTS_PER_POSITION = spp
        out.append((setting, "upper tables at 1", upper(positions, budget, False, T.LEVEL_VALUE, above, split)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fen", default="rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    ap.add_argument("--depth", type=int, nargs="+", default=[13, 12])
    ap.add_argument("--budget", type=float, default=4_528_596_848)
    args = ap.parse_args()
    for depth in args.depth:
        for setting, rule, slots in plans(args.fen, depth, args.budget):
            print(f"perft {depth}, {setting}, {rule}: " + " ".join(f"r{r} {s / 1e9:.3f}" for r, s in slots.items()))


if __name__ == "__main__":
    main()
