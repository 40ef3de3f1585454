"""The host-driven breadth-first perft: CPU recursion above the launch depth, GPU BFS calls below.

One BFS call takes a batch of root boards (same side to move) and a subtree depth ``d``. It expands
whole levels (count -> prefix sum -> gen -> make) until three plies are left, then counts them with
the fused two-level leaf kernel (or fewer plies with the smaller leaves). Every array comes from one
preallocated buffer through a bump allocator with named sites (``Arena``).

Above the launch depth the host expands levels with the same kernels' host versions and splits the
level into chunks of roots sized from an estimate of the subtree's memory. When a call runs out of
memory (a real shortage or an injected fault), its partial work is thrown away: a chunk of several
roots is split in two and retried; a single root falls back to CPU expansion one ply down, whose
children are retried on the GPU one ply shallower, and the GPU depth stays lowered for the rest of
the count. Nothing partial is ever returned or added.

Statistics (``perft_stats``, ``divide_stats``: a :class:`perft_core.Stats` instead of nodes) take
the same path down to the leaf parents, one ply above the leaves, whose moves the statistics leaf
classifies (kernels/pc_stats.h): a BFS call of depth d stores one level more than a plain one
(whose fused leaf counts the last three plies without boards), so it is sized as a plain call of
depth d + 1.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from ..hostbatch import WORDS, expand_host, host_keys  # noqa: F401 - this module's names too
from ..stats import Stats
from .arena import Arena, DeviceOutOfMemory

# Bytes a BFS level needs per board it holds and per move it expands (see BfsDriver._bfs):
# the board itself, its uint32 count and uint64 offset; a uint16 move and a uint32 parent per move.
BYTES_PER_BOARD = _core.BOARD_BYTES + 4 + 8
BYTES_PER_MOVE = 2 + 4


@dataclass
class GpuStats:
    """What the last ``perft`` / ``divide`` call did.

    gpu_calls: BFS calls made; level_positions: boards per BFS level, one list per call;
    peak_bytes: most arena bytes in use; kernel_seconds / wall_seconds: time inside kernels
    (device events, or the host batch loops when emulated) and the whole call's wall time;
    launch_depth: plies the CPU expanded before the first GPU call; gpu_depth: its subtree depth;
    oom_fallbacks / oom_sites: out-of-memory events and where they happened; chunk_splits: chunks
    of roots halved after running out of memory; allocations: arena allocations made by each
    finished BFS call (so a fault plan can aim at the last one); launch_lowered: times the rest of a
    level was sent one ply down after a single root did not fit.
    """

    gpu_calls: int = 0
    level_positions: list[list[int]] = field(default_factory=list)
    peak_bytes: int = 0
    kernel_seconds: float = 0.0
    wall_seconds: float = 0.0
    launch_depth: int | None = None
    gpu_depth: int | None = None
    oom_fallbacks: int = 0
    oom_sites: list[str] = field(default_factory=list)
    chunk_splits: int = 0
    allocations: list[int] = field(default_factory=list)
    launch_lowered: int = 0

    @property
    def overhead_share(self) -> float:
        """Share of wall time spent outside kernels (Python, launches, copies): 0..1."""
        return 0.0 if self.wall_seconds <= 0 else max(0.0, 1.0 - self.kernel_seconds / self.wall_seconds)


class BfsDriver:
    """Breadth-first perft over a kernel set (``CupyKernels`` or ``EmulatedKernels``).

    Args:
        kernels: the kernel set; its ``xp`` is the array module of the arena.
        memory_bytes: arena size in bytes; default 85 % of the device's free memory.
        fault_plan: optional object with ``should_fail(site, ordinal, nbytes) -> bool`` (tests).
        max_gpu_depth: cap on the subtree depth of one BFS call (default: from the memory estimate).

    ``progress``: None, or a callable ``progress(nodes)`` called after each finished chunk of a
    count with the nodes it added (a progress bar; it may raise to stop the count, whose partial
    work is then discarded).
    """

    def __init__(self, kernels, memory_bytes: int | None = None, fault_plan=None, max_gpu_depth: int | None = None):
        self.k = kernels
        capacity = int(memory_bytes if memory_bytes is not None else kernels.free_bytes() * 0.85)
        self.arena = Arena(kernels.xp, capacity, fault_plan)
        self.max_gpu_depth = max_gpu_depth
        self.stats = GpuStats()
        self.progress = None

    # ----- public API -------------------------------------------------------------------------
    def perft(self, pos, depth: int) -> int:
        """Perft of ``pos`` (a Position) at ``depth`` plies; returns nodes as a Python int."""
        return self._measured(lambda: self._perft(pos, depth))

    def _measured(self, count):
        """``count()`` with fresh ``stats``: its wall and kernel seconds and the arena's peak bytes."""
        self.stats = GpuStats()
        t0 = time.perf_counter()
        k0 = self.k.kernel_seconds
        self.arena.peak = 0
        try:
            return count()
        finally:
            self.stats.wall_seconds = time.perf_counter() - t0
            self.stats.kernel_seconds = self.k.kernel_seconds - k0
            self.stats.peak_bytes = self.arena.peak

    def divide(self, pos, depth: int) -> dict[str, int]:
        """``{uci: nodes}`` for each legal move: perft of the child at ``depth - 1``."""
        if depth == 0:
            return {}
        return {m: self.perft(pos.push(m), depth - 1) for m in sorted(pos.legal_moves())}

    def perft_stats(self, pos, depth: int) -> Stats:
        """Perft statistics of ``pos`` (a Position) at ``depth`` >= 0 plies: the leaf moves counted
        by kind (:class:`perft_core.Stats`; ``Stats(nodes=1)`` at depth 0), without tables."""
        return self._measured(lambda: self._bfs_perft(pos, depth, stats=True))

    def divide_stats(self, pos, depth: int) -> dict[str, Stats]:
        """``{uci: Stats}`` for each legal move of ``pos``, sorted by UCI (``{}`` at depth 0): the
        statistics of the child at ``depth - 1``. At depth 1 each root move is itself the leaf move:
        the root moves are classified on the host by the same shared header (kernels/pc_stats.h
        ``move_stats``, through the CPU extension), as the CPU backend does."""
        if depth == 0:
            return {}
        if depth == 1:
            return {m: Stats.from_tuple(t) for m, t in sorted(_core.divide_stats(pos.core_args(), 1, 1, 0.0))}
        return {m: self.perft_stats(pos.push(m), depth - 1) for m in sorted(pos.legal_moves())}

    # ----- the count ----------------------------------------------------------------------------
    def _perft(self, pos, depth: int) -> int:
        return self._bfs_perft(pos, depth)

    def _bfs_perft(self, pos, depth: int, stats: bool = False):
        """Perft (an int) or, with ``stats``, its statistics (a Stats) of ``pos`` at ``depth``
        through the plain BFS (a subclass's ``_perft`` may count otherwise, e.g. through tables)."""
        if depth == 0:
            return Stats(nodes=1) if stats else 1
        root, us = self._set_root(pos)
        growth = self._growth(pos, depth)
        g = self._gpu_depth(growth, depth, stats)
        self.stats.gpu_depth = g
        self.stats.launch_depth = depth - g
        boards = np.array([root], dtype=np.uint64)
        self._growth_per_ply = growth
        return self._count(boards, us, depth, g, stats)

    def _set_root(self, pos) -> tuple[tuple[int, ...], int]:
        """The root board (its 5 uint64 words) and side to move of ``pos``; uploads its castling geometry."""
        root, us, ci = _core.gpu_root(pos.core_args())
        self.k.set_castle(ci)
        self._ci_bytes = ci
        return root, us

    def _count(self, boards: np.ndarray, us: int, depth: int, g: int, stats: bool = False):
        """Perft summed over host ``boards`` (shape (n, 5)) at ``depth``, GPU calls of depth <= g:
        nodes (an int), or with ``stats`` the statistics (a Stats)."""
        total = Stats() if stats else 0
        if len(boards) == 0:
            return total
        if depth > g:
            children = self._expand_host(boards, us)
            return self._count(children, us ^ 1, depth - 1, g, stats)
        chunk = max(1, int(self.arena.capacity * 0.9 // max(self._bytes_estimate(depth + stats), 1)))
        for part, done in self._chunks(np.arange(len(boards)), chunk,
                                       lambda p: self._bfs(boards[p], us, depth, stats), depth):
            if done is not None:
                total += done
                if self.progress is not None:
                    self.progress(done.nodes if stats else done)
            else:  # the rest of this level goes one ply down on the CPU, GPU one ply shallower
                total += self._count(self._expand_host(boards[part], us), us ^ 1, depth - 1, depth - 1, stats)
        return total

    def _chunks(self, indices: np.ndarray, chunk: int, run, depth: int, adapt=None):
        """Run ``run(part)`` over chunks of root ``indices``; yield ``(part, result)``.

        ``adapt(roots, chunk) -> chunk``, if given, is called after each finished call of ``roots``
        roots and sizes the chunks after it (from what the call really used).
        Out of memory (a real shortage or an injected fault; the failed call's work is discarded):
        a chunk of several roots is halved and retried at the same depth. When a single root does
        not fit, that root and every root not yet run are yielded once as ``(rest, None)``: the
        caller expands them one ply on the CPU and counts their children one ply shallower, so the
        effective launch depth is lowered for the rest of this level (``stats.launch_lowered``).
        Raises DeviceOutOfMemory when even depth 1 does not fit.
        """
        retry: list[np.ndarray] = []  # halves of a chunk that ran out of memory, next one last
        rest = indices  # roots not yet put into a chunk
        while retry or len(rest):
            if retry:
                part = retry.pop()
            else:
                part, rest = rest[:chunk], rest[chunk:]
            try:
                result = run(part)
            except DeviceOutOfMemory as exc:
                self.stats.oom_sites.append(exc.site)
                if len(part) > 1:
                    self.stats.chunk_splits += 1
                    half = len(part) // 2
                    retry += [part[half:], part[:half]]
                    continue
                if depth - 1 < 1:
                    raise
                self.stats.oom_fallbacks += 1
                self.stats.launch_lowered += 1
                yield np.concatenate([part] + retry[::-1] + [rest]), None
                return
            if adapt is not None:
                chunk = max(1, adapt(len(part), chunk))
            yield part, result

    def _expand_host(self, boards: np.ndarray, us: int) -> np.ndarray:
        """All children of host ``boards`` (CPU, the host batch kernels): shape (m, 5)."""
        return expand_host(boards, us, self._ci_bytes)[0]

    def _start_call(self, roots: np.ndarray):
        """Begin a BFS call: reset the arena, count the call, upload the root boards.

        Returns (device boards, this call's list of positions per level, to append to).
        """
        self.arena.reset()
        self.stats.gpu_calls += 1
        levels = [len(roots)]
        self.stats.level_positions.append(levels)
        boards = self.arena.alloc("boards[0]", len(roots) * WORDS, np.uint64)
        self.k.upload(boards, roots)
        return boards, levels

    def _bfs(self, roots: np.ndarray, us: int, depth: int, stats: bool = False):
        """One BFS call: perft summed over ``roots`` (host array (n, 5)) at ``depth`` >= 1; with
        ``stats`` its statistics (a Stats): levels made down to the leaf parents, whose moves the
        statistics leaf classifies (left 2: over the moves that make them; left 1: over the roots)."""
        a, k = self.arena, self.k
        boards, levels = self._start_call(roots)
        n = len(roots)
        side, ply = us, 0
        while True:
            left = depth - ply
            if left == 1:
                result = k.stats_sum(boards, n, side) if stats else k.count_sum(boards, n, side)
                break
            counts = a.alloc(f"counts[{ply}]", n, np.uint32)
            k.count(boards, n, side, counts)
            offsets = a.alloc(f"offsets[{ply}]", n + 1, np.uint64)
            total = k.scan(counts, n, offsets)
            if total == 0:  # an empty level: no leaves below it, and nothing counted so far
                result = Stats() if stats else 0
                break
            moves = a.alloc(f"moves[{ply}]", total, np.uint16)
            parents = a.alloc(f"parents[{ply}]", total, np.uint32)
            k.gen(boards, n, side, offsets, moves, parents)
            if stats and left == 2:
                result = k.stats_leaf(boards, parents, moves, total, side)
                break
            if not stats and left <= 3:
                result = k.leaf(boards, parents, moves, total, side, left)
                break
            if total >= 1 << 32:  # parents index boards with 32 bits
                raise DeviceOutOfMemory(f"boards[{ply + 1}]", total * _core.BOARD_BYTES, a.ordinal, 0)
            children = a.alloc(f"boards[{ply + 1}]", total * WORDS, np.uint64)
            k.make(boards, parents, moves, total, side, children)
            boards, n, side, ply = children, total, side ^ 1, ply + 1
            levels.append(n)
        k.synchronize()
        self.stats.allocations.append(a.ordinal)
        return result if stats else int(result)

    # ----- sizing ---------------------------------------------------------------------------------
    def _growth(self, pos, depth: int) -> list[float]:
        """Estimated branching factor per ply below ``pos``: measured on the CPU for the first
        plies (perft 1..4, stopping after a ply of 50,000 nodes or more, so the estimate costs well
        under a millisecond: Kiwipete's perft 4 alone took 3 ms of a 0.12 s GPU count), then
        extrapolated with 6 % growth per ply and a 15 % margin, because a deeper subtree branches
        more than the root (the root's count does not predict it)."""
        counts = [1]
        for d in range(1, min(depth, 4) + 1):
            if counts[-1] >= 50_000:
                break
            counts.append(_core.perft(pos.core_args(), d, 1))
        ratios = [counts[i + 1] / counts[i] for i in range(len(counts) - 1) if counts[i] > 0]
        last = max(ratios[-2:]) if ratios else 1.0
        return [max(r, 1.0) * 1.15 for r in ratios] + [max(last, 1.0) * 1.15 * 1.06 ** i for i in range(1, 64)]

    def _bytes_estimate(self, depth: int) -> int:
        """Estimated arena bytes of one root's BFS call of subtree depth ``depth``."""
        growth = getattr(self, "_growth_per_ply", None) or [40.0] * 64
        boards, total = 1.0, 0.0
        for ply in range(max(depth - 2, 1)):
            total += boards * BYTES_PER_BOARD
            boards *= growth[min(ply, len(growth) - 1)]
        return int(total + boards * BYTES_PER_MOVE + 4096)

    def _gpu_depth(self, growth: list[float], depth: int, stats: bool = False) -> int:
        """The subtree depth of the count's BFS calls (launch depth = depth - it): the deepest whose
        estimated bytes fit the arena; a statistics call holds one level more (``stats``)."""
        self._growth_per_ply = growth
        g = 1
        while g < depth and self._bytes_estimate(g + 1 + stats) <= self.arena.capacity * 0.9:
            g += 1
        if self.max_gpu_depth is not None:
            g = min(g, self.max_gpu_depth)
        return max(1, g)
