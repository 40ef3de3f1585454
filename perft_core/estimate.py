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

The speed: on the cpu backend, nodes per second of those counts, with the same number of threads
(the deeper counts run at about the same speed; startpos here: 620 M nodes/s at perft 4, 710 M at
perft 5 and 6), each timed by the CPU time the process spent on it (over the threads counting), not
the wall clock: on a busy machine a 20 ms probe may wait most of its wall time for a core, and the
wall clock then says 0 M nodes/s (issue 34 N7: a 2-core machine at load 6.5 refused perft 9, a 1-2 h
count, as "57 days"). The fastest of the probes of 1 ms or more is taken (the samples' noise only
ever slows a count down), and never less than the backend's ``speed_floor``, a speed every machine
the project has met exceeds under load. So a count is refused only when even that speed says it is
over the limit. On the GPU backends, one count by the backend's own driver of the
deepest ply measured (after a warm-up count that pays the kernels' compile): a small count there
is dominated by launch overhead, so the figure is a lower bound of the speed and the time an upper
bound. With transposition tables (``tt=True``) the count is faster than the plain estimate by
a factor that depends on the position's transpositions; the time is then an upper bound
(``Estimate.upper_bound``), and says so. It also comes with ``tt_fraction``: the share of the plain
count's work that a count through perfect tables would still do, the position's own distinct
positions at ply ``depth - 2`` (each must have its perft 2 counted once; ``perft_core.distinct.distinct_per_ply``:
measured on the host for the first plies, extrapolated) over the paths to that ply. The API refuses
a TT count only when even that ideal count (``tt_seconds``) is over its limit: a walled position's
2**64-node count, which takes a second through its tables, is never refused; startpos perft 14
through tables is (a day at the very least on one core, in fact far more: real tables are finite).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .position import Position, as_position

__all__ = ["Estimate", "estimate", "node_bound", "within_limit", "DEFAULT_MAX_ESTIMATE_SECONDS", "format_seconds",
           "format_speed"]

#: Counts estimated to take longer than this (seconds, one day) are refused unless forced.
DEFAULT_MAX_ESTIMATE_SECONDS = 86_400.0

_PROBE_SECONDS = 0.020       # a probe count this long gives the speed
_PROBE_MAX_NEXT = 0.25       # never start a probe predicted to take longer than this (seconds)
_PROBE_MIN_SPEED_SECONDS = 0.001  # probes shorter than this (CPU seconds) are timer noise, not a speed
_PROBE_MAX_WALL = 1.0        # no further probe once one has taken this long on the wall clock (seconds)
_GROWTH = (1.0, 1.1)         # clamp of the per-ply growth of the branching factor
_TT_MODEL_SECONDS = 1.0      # model the tables' share (tt_fraction) only for counts estimated longer

# The cheap bound (within_limit): plies counted while the next is predicted under this (seconds) ...
_BOUND_PROBE_SECONDS = 0.001
# ... and the margin over their extrapolation at the top growth (the rule is within 0.5..2x; test_estimate).
_BOUND_MARGIN = 2.0
@dataclass(frozen=True)
class Estimate:
    """What a count will cost.

    ``nodes``: leaf nodes (exact when ``exact``), a float (it can exceed any integer type);
    ``seconds``: wall seconds at ``nodes_per_second``; ``measured``: the exact counts ``p(1..k)``
    of the first plies, a tuple of ints; ``backend``, ``threads``, ``tt`` as asked;
    ``upper_bound``: True when ``seconds`` is an upper bound (transposition tables, GPU speed from a
    small count); ``tt_fraction``: with tables, the share of the plain work a count through perfect
    tables still does (0..1; 1.0 without tables, and for counts estimated under a second, where it is
    not modelled), so ``tt_seconds`` is the ideal TT count's time.
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
    tt_fraction: float = 1.0

    @property
    def tt_seconds(self) -> float:
        """Wall seconds of the count through perfect tables (``seconds`` without tables)."""
        return self.seconds * self.tt_fraction

    @property
    def exact(self) -> bool:
        """True when ``nodes`` was counted, not extrapolated (depth within the measured plies)."""
        return self.depth <= len(self.measured)

    def describe(self) -> str:
        """One line: ``perft 8: about 8.9e+10 nodes, about 2 min at 710 M nodes/s (cpu, 1 thread)``."""
        nodes = f"{int(self.nodes):,}" if self.exact else f"about {self.nodes:.2g}"
        when = ("at most " if self.upper_bound else "about ") + format_seconds(self.seconds)
        how = f"{self.backend}, {self.threads} thread{'s' if self.threads != 1 else ''}" + (", tt" if self.tt else "")
        extra = ""
        if self.tt:
            extra = (f"; transposition tables make it faster, at best {format_seconds(self.tt_seconds)}"
                     if self.tt_fraction < 1.0 else "; transposition tables make it faster")
        return f"perft {self.depth}: {nodes} nodes, {when} at {format_speed(self.nodes_per_second)} ({how}){extra}"


def format_speed(nodes_per_second: float) -> str:
    """A speed for people, never "0": ``710 M nodes/s``, ``1.3 G nodes/s``, ``42 k nodes/s``."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if nodes_per_second >= scale:
            v = nodes_per_second / scale
            return f"{v:,.0f} {unit} nodes/s" if v >= 10 else f"{v:.1f} {unit} nodes/s"
    return f"{nodes_per_second:.2g} nodes/s"


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


def extrapolate(measured: list[int] | tuple[int, ...], depth: int, growth: float | None = None,
                upper: bool = False) -> float:
    """Leaf nodes at ``depth`` from the exact counts ``measured = [p(1), ..., p(k)]`` (module rule).

    ``growth``: the branching's growth per ply to use instead of the measured one (an upper bound
    takes the clamp's top, 1.1). ``upper``: an upper bound's branching, the larger of the last two
    branchings instead of their mean where only two plies are measured: the first ply's is the
    root's own move count, which a root in check (one legal move, then 125 replies) makes
    nothing like its side's later ones. Returns ``p(depth)`` itself when ``depth <= k`` and 1.0 at
    depth 0; a float (may be ``inf``).
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
    if upper and len(r) == 2:
        b = max(r)
    g = math.sqrt(r[-1] / r[-3]) if len(r) >= 3 and r[-3] > 0 else 1.0
    g = min(max(g, _GROWTH[0]), _GROWTH[1]) if growth is None else growth
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
    from .backends import get_backend

    pos = as_position(fen_or_position)
    args = pos.core_args()
    engine = get_backend(backend, threads=threads, tt_mb=tt_mb)
    cpu_threads = engine.probe_threads
    measured: list[int] = []
    speed = 0.0
    for d in range(1, max(depth, 2)):  # depth 0 and 1: ply 1 (at most 218 nodes) is counted
        t0, c0 = time.perf_counter(), time.process_time()
        n = int(_core.perft(args, d, cpu_threads))
        dt = time.perf_counter() - t0
        # CPU seconds over the threads that counted: the count's own time, however long it waited for a core
        busy = (time.process_time() - c0) / cpu_threads
        measured.append(n)
        if n > 0 and busy >= _PROBE_MIN_SPEED_SECONDS:
            speed = max(speed, n / min(busy, dt) if dt > 0 else n / busy)
        elif n > 0 and dt > 0 and speed == 0.0:  # too short to time by CPU: the wall clock, floored below
            speed = n / dt
        # the probes stop by CPU time too (a probe that waited for a core has not measured the speed
        # yet), and by wall time at _PROBE_MAX_WALL (a machine so busy that the probes crawl)
        if n == 0 or min(busy, dt) >= _PROBE_SECONDS or dt >= _PROBE_MAX_WALL:
            break
        ratio = n / measured[-2] if len(measured) >= 2 and measured[-2] else float(n)
        if min(busy, dt) * ratio * 1.2 > _PROBE_MAX_NEXT:
            break
    nodes = extrapolate(measured, depth)
    upper = bool(tt)
    if nodes > 1e8 and measured:
        speed, lower = engine.speed(pos, len(measured), measured[-1], speed)
        upper = upper or lower
    # a speed every machine exceeds under load (perft_core.backends), so a busy machine's probe never
    # says "0 M nodes/s"; a count of a few hundred nodes has no measurable speed and gets it too
    speed = max(speed, engine.speed_floor, 1e6)
    # The tables' share is worth its host expansion (up to ~0.2 s) only for counts that take a while.
    fraction = tt_fraction(pos, depth, measured) if tt and nodes / max(speed, 1e6) > _TT_MODEL_SECONDS else 1.0
    return Estimate(depth=depth, nodes=nodes, seconds=nodes / speed, nodes_per_second=speed,
                    measured=tuple(measured), backend=backend, threads=threads, tt=bool(tt), upper_bound=upper,
                    tt_fraction=fraction)


def node_bound(fen_or_position: str | Position, depth: int) -> float:
    """A cheap upper estimate of ``perft(position, depth)`` (nodes, float): plies counted on the CPU
    while the next count is predicted to take under 1 ms (at least plies 1 and 2, at most 218^2
    leaves; never ``depth`` itself),
    extrapolated by this module's rule with the branching's growth at its clamp's top (1.1 a ply),
    from two plies the larger of their branchings (``extrapolate(upper=True)``), and a margin of 2 (the rule is within 0.5..2x of the truth from three plies). Against every
    published and computed count of 10^6 nodes or more in oracle/data (172 rows): 0.92x to 68x of
    the truth, under 1x only where one ply is extrapolated (NOTES "Session 10"). About 0.05-1 ms.
    """
    from . import _core

    pos = as_position(fen_or_position)
    args = pos.core_args()
    measured: list[int] = []
    for d in range(1, max(depth, 2)):
        t0 = time.perf_counter()
        measured.append(int(_core.perft(args, d, 1)))
        ratio = measured[-1] / measured[-2] if len(measured) >= 2 and measured[-2] else float(measured[-1])
        if measured[-1] == 0 or (len(measured) >= 2 and (time.perf_counter() - t0) * ratio * 1.2 > _BOUND_PROBE_SECONDS):
            break  # the next ply's count would take longer than the bound is worth (ply 2 is always counted)
    return extrapolate(measured, depth, growth=_GROWTH[1], upper=True) * _BOUND_MARGIN


def within_limit(fen_or_position: str | Position, depth: int, backend: str, limit_seconds: float) -> bool:
    """True when ``perft(position, depth)`` on ``backend`` surely takes at most ``limit_seconds``:
    :func:`node_bound` over the backend's ``speed_floor`` (perft_core.backends; each 10-100x on the safe side). False means
    "could be longer": only then is the sampled :func:`estimate` (20-250 ms and, on a GPU, two
    small device counts) worth its cost. Tables only make a count faster, so the bound holds for
    them too. Raises KeyError for an unknown backend.
    """
    from .backends import BACKENDS

    return node_bound(fen_or_position, depth) / BACKENDS[backend].speed_floor <= limit_seconds


def tt_fraction(pos: Position, depth: int, measured: list[int] | tuple[int, ...]) -> float:
    """The share (0..1, float) of ``perft(pos, depth)``'s plain work that a count through perfect
    transposition tables still does: with perfect tables every distinct position is expanded once
    (when its first path reaches it), so each distinct position at ply ``depth - 2`` has its perft 2
    counted once: distinct(depth - 2) / paths(depth - 2) of the leaf work. Distinct positions from
    the position's own first plies (``perft_core.distinct.distinct_below``: host expansion within 250,000
    boards, then extrapolated), paths from ``measured`` (:func:`extrapolate`). 1.0 below depth 5
    (transpositions start at ply 3). A model of the ideal, not a prediction: real tables are finite
    and hit less, and the GPU's leaf counts three plies below its last table.
    """
    k = depth - 2
    if k < 3 or not measured:
        return 1.0
    from .distinct import distinct_below

    distinct = distinct_below(pos, k)
    paths = extrapolate(list(measured), k)
    return min(1.0, distinct[k] / max(paths, 1.0))
