"""How big and how long a count will be, measured before it starts.

:func:`estimate` counts the first plies of the position on the CPU (exact, cheap: it stops after a
count of 20 ms or before one predicted to take more than 0.25 s), extrapolates the node count to
the asked depth, and divides by the speed of the backend measured here and now.

The extrapolation rule. Let ``p(d)`` be the measured perft counts and ``r(d) = p(d) / p(d-1)`` the
branching per ply. Deeper plies branch more than shallow ones (pieces leave the back rank, the
board opens), and ``r`` alternates between plies of the side with more and fewer moves. So the
rule takes the growth of ``r`` over the last two-ply span, ``g = sqrt(r(k) / r(k-2))`` (the
alternation cancels out), clamped to 1.0 .. 1.1, and continues the product from the last measured
ply ``k``: ``p(k + j) = p(k) * prod_{i=1..j} b * g**i`` with ``b = sqrt(r(k) * r(k-1))`` the mean of
the last two branchings. Against published counts: startpos 8 from plies 1..6 within +10 %,
Kiwipete 6 from plies 1..5 within 10 %, CPW position 3 8 within +10 %; suites/test_estimate.py
checks a factor of 2 on CPW positions 2..6 and a Chess960 position.

The speed: on the cpu backend, nodes per second of the deepest of those counts, with the same
number of threads (the deeper counts run at about the same speed; startpos here: 620 M nodes/s at
perft 4, 710 M at perft 5 and 6). On the GPU backends, one count by the backend's own driver of the
deepest ply measured (after a warm-up count that pays the kernels' compile): a small count there
is dominated by launch overhead, so the figure is a lower bound of the speed and the time an upper
bound. With transposition tables (``tt=True``) the count is faster than the plain estimate by
a factor that depends on the position's transpositions; the time is then an upper bound
(``Estimate.upper_bound``), and says so; the API does not refuse such counts on it (a walled
position's 2**64-node count takes a second through its tables).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .position import Position, as_position

__all__ = ["Estimate", "estimate", "DEFAULT_MAX_ESTIMATE_SECONDS", "format_seconds"]

#: Counts estimated to take longer than this (seconds, one day) are refused unless forced.
DEFAULT_MAX_ESTIMATE_SECONDS = 86_400.0

_PROBE_SECONDS = 0.020       # a probe count this long gives the speed
_PROBE_MAX_NEXT = 0.25       # never start a probe predicted to take longer than this (seconds)
_GROWTH = (1.0, 1.1)         # clamp of the per-ply growth of the branching factor


@dataclass(frozen=True)
class Estimate:
    """What a count will cost.

    ``nodes``: leaf nodes (exact when ``exact``), a float (it can exceed any integer type);
    ``seconds``: wall seconds at ``nodes_per_second``; ``measured``: the exact counts ``p(1..k)``
    of the first plies, a tuple of ints; ``backend``, ``threads``, ``tt`` as asked;
    ``upper_bound``: True when ``seconds`` is an upper bound (transposition tables, GPU speed from a
    small count).
    """

    depth: int
    nodes: float
    seconds: float
    nodes_per_second: float
    measured: tuple[int, ...]
    backend: str
    threads: int
    tt: bool
    upper_bound: bool

    @property
    def exact(self) -> bool:
        """True when ``nodes`` was counted, not extrapolated (depth within the measured plies)."""
        return self.depth <= len(self.measured)

    def describe(self) -> str:
        """One line: ``perft 8: about 8.9e+10 nodes, about 2 min at 710 M nodes/s (cpu, 1 thread)``."""
        nodes = f"{int(self.nodes):,}" if self.exact else f"about {self.nodes:.2g}"
        when = ("at most " if self.upper_bound else "about ") + format_seconds(self.seconds)
        how = f"{self.backend}, {self.threads} thread{'s' if self.threads != 1 else ''}" + (", tt" if self.tt else "")
        extra = "; transposition tables make it faster" if self.tt else ""
        return (f"perft {self.depth}: {nodes} nodes, {when} at {self.nodes_per_second / 1e6:,.0f} M nodes/s "
                f"({how}){extra}")


def format_seconds(seconds: float) -> str:
    """A duration for people: ``0.4 s``, ``12 s``, ``3 min 05 s``, ``75 min``, ``5.2 h``, ``1.0 days``, ``3.1e+57 years``."""
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    if seconds < 2 * 365.25 * 86400:
        days = seconds / 86400
        return f"{days:.1f} days" if days < 10 else f"{days:.0f} days"
    years = seconds / (365.25 * 86400)
    return f"{years:.0f} years" if years < 1e6 else f"{years:.1e} years"


def extrapolate(measured: list[int] | tuple[int, ...], depth: int) -> float:
    """Leaf nodes at ``depth`` from the exact counts ``measured = [p(1), ..., p(k)]`` (module rule).

    Returns ``p(depth)`` itself when ``depth <= k`` and 1.0 at depth 0; a float (may be ``inf``).
    """
    if depth == 0:
        return 1.0
    if depth <= len(measured):
        return float(measured[depth - 1])
    p = [1, *measured]
    if p[-1] == 0:
        return 0.0
    r = [p[i] / p[i - 1] if p[i - 1] else 0.0 for i in range(1, len(p))]
    b = math.sqrt(r[-1] * r[-2]) if len(r) >= 2 else r[-1]
    g = math.sqrt(r[-1] / r[-3]) if len(r) >= 3 and r[-3] > 0 else 1.0
    g = min(max(g, _GROWTH[0]), _GROWTH[1])
    nodes = float(p[-1])
    for i in range(1, depth - len(measured) + 1):
        nodes *= b * g ** i
        if math.isinf(nodes):
            break
    return nodes


def estimate(fen_or_position: str | Position, depth: int, *, backend: str = "cpu", threads: int = 1,
             tt: bool = False, tt_mb: float | None = None) -> Estimate:
    """Estimate the leaf nodes and wall seconds of ``perft(position, depth)`` on ``backend``.

    Counts plies 1, 2, ... below the position on the CPU (never ``depth`` itself) and times them;
    see the module docstring for the rule. Costs at most about 0.3 s (plus, on the GPU backends, two
    small counts by the driver when more than 1e8 nodes are expected).

    Args and errors as for :func:`perft_core.perft` (depth, backend, threads are not re-checked here);
    ``tt_mb`` only matters on the GPU backends, where it is passed on when the process's driver is made.
    Returns an :class:`Estimate`.
    """
    from . import _core

    pos = as_position(fen_or_position)
    args = pos._core_args()
    cpu_threads = threads if backend == "cpu" else 1
    measured: list[int] = []
    speed = 0.0
    for d in range(1, max(depth, 2)):  # depth 0 and 1: ply 1 (at most 218 nodes) is counted
        t0 = time.perf_counter()
        n = int(_core.perft(args, d, cpu_threads))
        dt = time.perf_counter() - t0
        measured.append(n)
        if dt > 0 and n > 0:
            speed = n / dt
        if n == 0 or dt >= _PROBE_SECONDS:
            break
        ratio = n / measured[-2] if len(measured) >= 2 and measured[-2] else float(n)
        if dt * ratio * 1.2 > _PROBE_MAX_NEXT:
            break
    nodes = extrapolate(measured, depth)
    upper = bool(tt)
    if backend != "cpu" and nodes > 1e8 and measured:
        speed = _driver_speed(pos, backend, tt_mb, len(measured), measured[-1])
        upper = True
    if speed <= 0:  # nothing measurable: a count of at most a few hundred nodes
        speed = 1e6
    return Estimate(depth=depth, nodes=nodes, seconds=nodes / speed, nodes_per_second=speed,
                    measured=tuple(measured), backend=backend, threads=threads, tt=bool(tt), upper_bound=upper)


def _driver_speed(pos: Position, backend: str, tt_mb: float | None, depth: int, nodes: int) -> float:
    """Nodes/s of the process's GPU driver on ``perft(pos, depth) == nodes`` without tables, after
    a warm-up count at depth 1 (kernel compile, first-use costs)."""
    from .gpu import get_driver

    drv = get_driver(backend, tt_mb)
    drv.whole_counts()
    was = drv.tt_enabled
    drv.tt_enabled = False
    try:
        drv.perft(pos, 1)
        t0 = time.perf_counter()
        drv.perft(pos, depth)
        dt = time.perf_counter() - t0
    finally:
        drv.tt_enabled = was
    return nodes / dt if dt > 0 else 0.0
