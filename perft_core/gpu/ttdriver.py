"""GPU perft with transposition tables: device TTs below the launch depth, a host lossless cache and
key-merged roots at and above it.

Within one BFS call every probe of a level happens before any store (counts are stored in the
upsweep, after the leaf), so device TTs pay across calls. The driver therefore expands the top
plies on the host, merges roots with equal Zobrist keys (counting each once, times its
multiplicity), looks each up in a lossless host cache, and sends the rest to the GPU in chunks;
later chunks hit the device entries that earlier chunks stored.

The fused leaf (perft 3 of each remaining-depth-3 position not found) counts each distinct child of
its level's moves once (``_leaf_merged``).

Device TTs: one per remaining depth r from 3 to the GPU depth - 1, 16-byte XOR-checked entries
(kernels/pc_tt.h), sized from a memory budget in proportion to the number of distinct positions at
the ply they serve, each no larger than 4x that number. The distinct positions are the count's own
(``distinct_per_ply``): measured on the host for the first plies below its root, then extrapolated
(not the start position's sequence, which undersized CPW position 6's tables 23x at ply 5). Out of memory: no count of an interrupted call is ever stored — stores
happen only in the upsweep of a finished call — and the fallback is BfsDriver's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .. import _core
from .arena import Arena, DeviceOutOfMemory
from .driver import BYTES_PER_BOARD, BYTES_PER_MOVE, WORDS, BfsDriver, expand_host, host_keys
from .kernels import key_part

ENTRY_BYTES = 16
# TT mode's extra bytes per board of a level: its key (16), value (8), and its merge group (8).
TT_BYTES_PER_BOARD = 32
AUDIT_BYTES = 64
# The merge of a level's boards takes temporaries outside the arena (CupyKernels.merge_groups): a
# hash table of 2-4 slots a board (uint32), slot, head and group (uint32) and rank (uint64) a board.
MERGE_TEMP_BYTES_PER_BOARD = 36
LEAF_MERGE_TEMP_BYTES_PER_MOVE = 40
"""Temporaries outside the arena a move of a leaf merge's slice takes at once (``leaf_merged``, a
slice of a power of two moves): its child's key (16), 4 hash table slots (16), its group head and
head flag (8); after the insert the key and table make way for the heads and a count (12)."""
LEAF_MERGE_MIN_SLICE = 1 << 12
"""Fewer moves than this fitting the memory beside the arenas: the leaf is not merged (slices that
small find few transpositions and pay a host round trip each)."""
LEAF_MERGE_SLICE = 1 << 30
"""The most moves of a remaining-depth-3 level merged at once (a merge's indices are uint32)."""
TT_SHARE = 0.6
"""The tables' default share of the driver's device memory (the BFS arena gets the rest). Measured
on an H200 (NOTES "Session 10"): startpos perft 12 counted 54 % of its nodes in 200 s with 30 %
(35.5 GiB: the remaining-depth-3 table 96 % full, 7.2 G of 9.2 G stores evicted) and 66 % with
88 GiB; perft 11 took 21.1 s with 30 % and 20.8 s with 49 %; counts of one BFS call use no table."""
HITS_SLOTS = 64  # device hit counters of a BFS call, one per remaining depth
DEPTH_COUNTERS = ("probes", "hits", "host_probes", "host_hits", "stores")
"""The cumulative counters of ``TTBfsDriver.depth_stats`` (per remaining depth): subtract two
snapshots for the figures between them (a count, a deep run's batch)."""


FIRST_TRANSPOSITION_PLY = 3
"""The first ply below one position where two move sequences can reach the same position (two moves
of one side played in either order around a move of the other); at ply 1 and 2 every path reaches a
different position, so a BFS level there is not merged (merging it would find nothing)."""

PART_DEPTH = 3
"""The remaining depth at which a count split into parts (``TTBfsDriver.set_part``) is split: the
level whose positions the fused leaf expands, by far the most expensive one, so a part costs the
whole count's upper levels (the same on every part) plus 1/parts of the leaf work."""

DISTINCT_MEASURE_BOARDS = 20_000
"""Boards the host may make to measure distinct positions past ply 3 (a few ms on one core)."""
DISTINCT_FIRST_MERGE_BOARDS = 250_000
"""Boards the host may make to reach ply 3, the first ply with transpositions (see distinct_per_ply)."""
DISTINCT_RATIO_DECAY = 0.95
"""Per-ply decay of the distinct-position branching ratio past the measured plies. From the start
position's A083276 ratios past ply 4 (11.41, 11.45, 10.24, 10.25, 9.29, 9.30: about 0.95 a ply);
checked at ply 5 on CPW positions 2-6 measured from plies 3-4 (estimate / true: Kiwipete 1.44,
CPW 3 1.00, CPW 4 1.76, CPW 5 1.43, CPW 6 1.25; NOTES.md): a mild overestimate, the safe side for
a table size."""


def distinct_per_ply(boards: np.ndarray, us: int, depth: int, expand, keys_of) -> list[float]:
    """Estimated distinct positions at each ply 0..depth below the root ``boards`` (shape (1, 5)).

    Plies are expanded on the host (``expand(boards, side) -> children``, ``keys_of(boards, side) ->
    (n, 2) uint64 Zobrist keys``), equal keys merged, while the next ply is expected to need at most
    ``DISTINCT_MEASURE_BOARDS`` boards; later plies grow by the last measured ratio, decaying by
    ``DISTINCT_RATIO_DECAY`` a ply (never below 1). Returns floats, ``depth + 1`` of them.
    """
    distinct = [1.0]
    made = 0
    while len(distinct) <= depth:
        ratio = distinct[-1] / distinct[-2] if len(distinct) > 1 else 40.0
        # Transpositions start at ply 3 (two moves of one side in either order): the plies before
        # it branch with no merging at all, so ply 3 is measured whenever it is affordable.
        limit = DISTINCT_MEASURE_BOARDS if len(distinct) > 3 else DISTINCT_FIRST_MERGE_BOARDS
        if len(distinct) > 1 and made + len(boards) * ratio > limit:
            break
        children = expand(boards, us)
        us ^= 1
        made += len(children)
        if len(children) == 0:
            return distinct + [0.0] * (depth + 1 - len(distinct))
        _, first = np.unique(keys_of(children, us)[:, 0], return_index=True)  # low halves: enough to count
        boards = children[first]
        distinct.append(float(len(first)))
    ratio = distinct[-1] / distinct[-2] if len(distinct) > 1 else 1.0
    while len(distinct) <= depth:
        ratio = max(1.0, ratio * DISTINCT_RATIO_DECAY)
        distinct.append(distinct[-1] * ratio)
    return distinct


@dataclass
class DeviceTT:
    """The device table of one remaining depth: ``slots`` entries of two uint64 words (check, data);
    ``audit`` (audit mode) holds 8 words a slot: board (5), key lo, key hi, tag (store launch number
    << 1 | side to move: one board per slot and launch writes entry and record, see bfs_store)."""

    remaining: int
    slots: int
    entries: object
    audit: object | None


class TTBfsDriver(BfsDriver):
    """BfsDriver with transposition tables (``backend`` option ``tt=True``).

    Args (beyond BfsDriver's): ``tt_bytes`` device bytes for the TTs (default ``TT_SHARE`` of the memory;
    taken out of ``memory_bytes`` when that is not given),
    ``seed`` Zobrist key seed, ``audit`` record every stored entry's position (for tests),
    ``min_roots`` the fewest host roots to split into GPU chunks (sets the launch depth),
    ``host_cache_entries`` bound of the lossless host cache (it stops storing when full),
    ``chunk_leaf_moves`` the most leaf moves one GPU call should hold (None: memory alone decides), ``merge`` merge equal
    positions (equal keys) within each BFS level before expanding it, and the fused leaf's children
    (attribute ``leaf_merge``, see ``_leaf_merged``).
    """

    def __init__(self, kernels, memory_bytes: int | None = None, fault_plan=None, max_gpu_depth: int | None = None,
                 tt_bytes: int | None = None, seed: int | None = None, audit: bool = False, min_roots: int = 1,
                 host_cache_entries: int = 1 << 20, chunk_leaf_moves: int | None = None, merge: bool = True):
        # Split the device memory between the BFS arena and the TTs before allocating either.
        total = int(memory_bytes if memory_bytes is not None else kernels.free_bytes() * 0.85)
        if tt_bytes is None:
            tt_bytes = int(total * TT_SHARE)
            total -= tt_bytes
        elif memory_bytes is None:
            total -= tt_bytes
        super().__init__(kernels, total, fault_plan, max_gpu_depth)
        self.tt_arena = Arena(kernels.xp, tt_bytes, fault_plan, name="tt")
        # Memory left beside the arenas for the merge's temporaries (with a margin for the rest).
        self.temp_bytes = int(kernels.free_bytes() * 0.8)
        self.tt_enabled = True
        self.audit_mode = audit
        self.host_cache: dict[tuple[int, int, int], int] = {}
        # audit mode: the position, side to move and castling geometry of each host cache entry
        self.host_audit: dict[tuple[int, int, int], tuple[np.ndarray, int, bytes]] = {}
        self.min_roots = min_roots
        self.host_cache_entries = host_cache_entries
        self.chunk_leaf_moves = chunk_leaf_moves
        self.merge = merge
        self.reseed(_core.ZOBRIST_DEFAULT_SEED if seed is None else seed)
        self.tts: dict[int, DeviceTT] = {}
        self._warm = False  # perft_iterative: keep the tables between counts
        self._level_bound = None  # (count depth, distinct positions per ply): sizes chunks of roots
        self._pending_tts = None  # device TTs to plan once a level needs several BFS calls
        self._keep = None  # keep_tables: the run whose counts share the tables
        self._keep_depth = None  # keep_tables: the run's whole depth, which sizes the tables
        self._keep_game = None  # keep_tables: the run's root Position (its plies size tables and chunks)
        self._kept_shape = None  # (run depth, distinct positions per ply of the run's root) of kept tables
        self._kept_growth = None  # growth per ply of the run's root (chunk sizing of its units' calls)
        self._kept = None  # (run key, castle info bytes, seed, depth) the kept tables were planned for
        self._store_launches = 0  # numbers each store launch (audit records: one writer a slot and launch)
        self._hits_dev = None
        self._count_depth = None  # depth of the single-root count under way (None: count_roots)
        self.adaptive = True  # size a level's later chunks from what its calls used (not with chunk_leaf_moves: a cap)
        # Roots go out in the order the host made them (children of one parent side by side), so
        # a chunk's roots share ancestors and their transpositions merge inside the call; sorted by
        # key (np.unique's order) a chunk was a random sample of the level with almost none.
        self.locality = True
        self._last_call = (0, 0)  # (arena bytes, boards of its largest merged level) of the last BFS call
        self.parts, self.part = 1, 0  # set_part: this driver counts one part of a count split by key
        self.tables = True  # False: count without any table (device TT or host cache), parts still apply
        self.tt_stats = {"probes": 0, "hits": 0, "host_hits": 0, "roots": 0, "unique_roots": 0, "tt_disabled": 0,
                         "merged": 0, "leaf_moves": 0, "leaf_positions": 0}
        # Merge the children of each remaining-depth-3 level (the fused leaf's moves) by key and
        # count each distinct child once (_leaf_merged); needs merge.
        self.leaf_merge = merge
        self.leaf_merge_slice = LEAF_MERGE_SLICE
        # Per remaining depth r: DEPTH_COUNTERS (cumulative), and the stores counted when the
        # present table of r was planned (its evictions are the stores since then, see tt_statistics).
        self.depth_stats: dict[int, dict[str, int]] = {}
        self._stores_at_plan: dict[int, int] = {}

    def reseed(self, seed: int) -> None:
        """Key with another Zobrist seed from now on; forgets the host cache (its keys change)."""
        self.seed = seed
        self.z_dev = self.k.zobrist(seed)
        self.z_host = np.frombuffer(_core.zobrist_keys_blob(seed), dtype=np.uint64).copy()
        self.host_cache.clear()
        self.host_audit.clear()

    # ----- the count ----------------------------------------------------------------------------
    def _perft(self, pos, depth: int) -> int:
        if not self.tt_enabled:
            if self.parts > 1:
                raise ValueError("a count split into parts needs the TT driver's BFS (tt_enabled; tables may be off)")
            return super()._perft(pos, depth)
        if depth == 0:
            return 1
        root, us = self._set_root(pos)
        g = self._prepare(pos, root, us, depth)
        boards = np.array([root], dtype=np.uint64)
        keys = self._host_keys(boards, us)
        self._count_depth = depth
        try:
            return int(self._values_tt(boards, keys, np.ones(1, dtype=np.uint64), us, depth, g)[0])
        finally:
            self._count_depth = None

    def _prepare(self, pos, root, us: int, depth: int) -> int:
        """Plan a count of ``depth`` below ``pos`` (root board ``root``, side ``us``): its GPU depth
        (returned) and its tables (kept, reset, or planned lazily; see keep_tables)."""
        g = self._plan_call(pos, depth)
        if not self.tables:  # no device TT, no host cache: chunks of roots as the plain BFS sizes them
            self.tts, self._kept, self._level_bound, self._pending_tts = {}, None, None, None
            self.tt_arena.reset()
            return g
        self._level_bound = None  # (count depth, distinct positions per ply): sizes chunks of roots
        self._pending_tts = None  # device TTs to plan once a level needs several BFS calls
        if self._warm:  # perft_iterative planned the tables for its deepest count
            pass
        elif self._keep is not None:
            planned = self._table_plan(depth)
            if planned != self._kept:  # a new run, castling geometry, key seed or depth: start afresh
                self._reset_tables()
                # A run's units share the tables, sized as one count of the whole run would size
                # them: by the distinct positions at each ply of the run's root (without the
                # root: this unit's, below plies of 1), the whole budget for the run's many units.
                plan = self._keep_depth or depth
                if self._keep_game is not None:
                    game_root, game_us, _ = _core.gpu_root(self._keep_game.core_args())
                    shape, bound = self._distinct(game_root, game_us, plan), True
                    self._kept_growth = self._growth(self._keep_game, plan)
                else:
                    shape, bound = [1.0] * (plan - depth) + self._distinct(root, us, depth), False
                self._plan_tts(plan, max(g, 4), shape, cap=False)
                self._kept, self._kept_shape = planned, ((plan, shape) if bound else None)
            # The run's distinct positions per ply bound every level of a call of its units, however
            # many roots the call has (a single unit's would not bound a call of several), and the
            # run's growth per ply estimates the level sizes: the chunk sizing indexes both by the
            # run's plies (with the unit's own growth, indexed so, startpos perft 12's depth-10 units
            # went out one root a call: 1,768 calls in 148 s on an H200).
            self._level_bound = self._kept_shape
            if self._level_bound is not None:
                self._growth_per_ply = self._kept_growth
            if self._level_bound is None and g < depth:
                self._level_bound = (depth, self._lazy_distinct(root, us, depth))
        else:
            self.tts = {}  # the tables are rebuilt per count (the castling geometry is per game)
            self.tt_arena.reset()
            # Device TTs pay only when a later BFS call of this count can hit what an earlier one
            # stored (a call stores in its upsweep, after its last probe): a count that is one BFS
            # call skips them (Kiwipete perft 7 on the H200: about 1 ms of zeroing, probes and
            # stores), so they are planned when a level is first sent in more than one chunk.
            # The distinct positions (a host expansion of up to 250,000 boards, ~20 ms) are counted
            # only then too: a count answered from the host cache costs about a millisecond.
            if g < depth:
                distinct = self._lazy_distinct(root, us, depth)
                self._pending_tts = (depth, g, distinct)
                self._level_bound = (depth, distinct)
        return g

    def set_part(self, part: int, parts: int) -> None:
        """Count only part ``part`` (0 .. parts-1) of every count from now on (``parts`` = 1: whole
        counts, the default).

        A count split into parts is split by key at remaining depth ``PART_DEPTH`` (3): part c of
        perft(pos, d) counts the paths whose position at remaining depth 3 has
        ``key_part(key, parts) == c`` (kernels/pc_tt.h: the top bits of the key's high word); with
        d < 3 a path has no such position and every part counts it. The parts of a count with
        d >= 3 add up to the count. The levels above are the same work in every part, the leaf
        level (most of the work) is split, and so are its table entries: a deep run gives each
        GPU one part, and each GPU's tables hold only its own part's positions at that level.
        Every table entry then holds a part's count, so changing the part resets the tables.

        Raises ValueError unless 0 <= part < parts.
        """
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1 or not 0 <= part < parts:
            raise ValueError(f"part must be in 0..parts-1 with parts >= 1, got part {part!r} of {parts!r}")
        if (part, parts) != (self.part, self.parts):
            self.part, self.parts = part, parts
            self._reset_tables()
            self._kept = None

    def whole_counts(self) -> None:
        """Back to whole counts with tables of their own: part 0 of 1, no kept tables, tables on
        (what a deep run's worker set on this process's driver must not leak into a plain count)."""
        self.set_part(0, 1)
        self.keep_tables(None)
        self.tables = True

    def count_roots(self, positions, depth: int, game=None) -> list[int]:
        """perft(p, depth) of each of ``positions`` (Positions with one side to move, e.g. a deep
        run's units) through one sequence of BFS calls, so that equal positions below different
        roots are merged and counted once, as inside a single count. With ``set_part``, each value
        is that part's. ``game``: the Position the positions were played from (a deep run's root):
        its castling geometry serves them all, as it serves every descendant inside a count, so
        positions that lost some castling rights share tables with the rest (default: the first
        position's geometry). Returns nodes per position (Python ints).

        Raises ValueError if the positions differ in side to move, or one has a castling right
        whose rook is not the geometry's.
        """
        if not positions:
            return []
        if not self.tt_enabled:
            return [self.perft(p, depth) for p in positions]
        game = positions[0] if game is None else game
        rooks = game.core_args()[5]
        roots, sides = [], set()
        for p in positions:
            args = p.core_args()
            if any(r >= 0 and r != g for r, g in zip(args[5], rooks)):
                raise ValueError(f"count_roots: {p.fen()} castles with a rook the geometry of {game.fen()} lacks")
            root, us, _ = _core.gpu_root(args)
            roots.append(root)
            sides.add(us)
        if len(sides) > 1:
            raise ValueError("count_roots needs positions with one side to move")
        if depth == 0:
            return [1] * len(positions)
        us = sides.pop()

        def count() -> list[int]:
            self._set_root(game)
            g = self._prepare(positions[0], roots[0], us, depth)
            boards = np.array(roots, dtype=np.uint64)
            values = self._values_tt(boards, self._host_keys(boards, us), np.ones(len(boards), dtype=np.uint64),
                                     us, depth, g)
            return [int(v) for v in values]

        return self._measured(count)

    def _plan_call(self, pos, depth: int) -> int:
        """GPU subtree depth g of a count (launch depth = depth - g), recorded in the stats."""
        growth = self._growth(pos, depth)
        g_mem = self._gpu_depth(growth, depth)
        # Launch depth: the first ply with at least min_roots positions (so there are chunks whose
        # entries later chunks can hit), no shallower than memory allows, and at least one ply of GPU.
        launch, nodes = 0, 1
        while nodes < self.min_roots and launch < depth - 1:
            launch += 1
            nodes = _core.perft(pos.core_args(), launch, 1)
        launch = min(max(launch, depth - g_mem), depth - 1)
        g = depth - launch
        if self.max_gpu_depth is not None:
            g = min(g, self.max_gpu_depth)
        self.stats.gpu_depth, self.stats.launch_depth = g, depth - g
        return g

    def keep_tables(self, run_key, plan_depth: int | None = None, game=None) -> None:
        """Keep the device TTs and the host cache warm across the counts of one run (``run_key``:
        any hashable naming the run, e.g. a deep run's store path; None: back to tables rebuilt
        for every count). ``plan_depth``: the depth of the whole count the run's units belong to
        (plies from its root); the tables are sized by the distinct positions at each ply from
        that root, as a monolithic count of it would size them (default: each count's own depth).
        ``game``: the run's root Position; its distinct positions per ply then size the tables and
        bound the levels of every BFS call (the chunks of roots), as in the monolithic count
        (default: each count's own distinct positions).

        While a run key is set, a count reuses the tables the previous count left when the run
        key, the castling geometry (CastleInfo bytes), the key seed and the depth are those the
        tables were planned for, and otherwise resets them (device TTs zeroed, host cache
        cleared) and plans them for this depth. Valid because an entry is a fact about a
        128-bit key under one geometry and seed, "perft(position, r) = n" for any root (the
        depth only sizes the tables), so the units of a deep run, which share the geometry and
        the seed, hit what earlier units stored, as one monolithic count would.
        """
        self._keep = run_key
        self._keep_depth = plan_depth
        self._keep_game = game

    def _table_plan(self, depth: int) -> tuple:
        """What kept tables are valid for: (run key, castle info bytes, key seed, depth, run depth,
        run root)."""
        game = None if self._keep_game is None else self._keep_game.fen()
        return (self._keep, self._ci_bytes, self.seed, depth, self._keep_depth, game)

    def _reset_tables(self) -> None:
        """Forget every device TT and host cache entry."""
        self.host_cache.clear()
        self.host_audit.clear()
        self.tts = {}
        self.tt_arena.reset()

    def perft_iterative(self, pos, depth: int) -> list[tuple[int, int, float]]:
        """perft(pos, d) for d = 1 .. depth in turn, with the device TTs and the host cache kept warm
        from one depth to the next (perft_gpu_2026's schedule: its published TT times are the last
        depth's own time). The tables are planned once, for ``depth``; the host cache starts empty.

        Returns [(d, nodes, seconds)] with each depth's own wall time (seconds, float).
        Raises ValueError if the driver counts without TTs (``tt_enabled`` False) or depth < 1.
        """
        if not self.tt_enabled:
            raise ValueError("perft_iterative needs the transposition tables (tt_enabled)")
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        root, us = self._set_root(pos)
        self._reset_tables()
        self._plan_tts(depth, max(self._plan_call(pos, depth), 4), self._distinct(root, us, depth))
        out = []
        self._warm = True
        try:
            for d in range(1, depth + 1):
                t = time.perf_counter()
                nodes = self.perft(pos, d)
                out.append((d, nodes, time.perf_counter() - t))
        finally:
            self._warm = False
        return out

    def _lazy_distinct(self, root, us: int, depth: int):
        """A function returning ``_distinct(root, us, depth)``, counted on its first call only."""
        memo: list[list[float]] = []

        def get() -> list[float]:
            if not memo:
                memo.append(self._distinct(root, us, depth))
            return memo[0]

        return get

    def _distinct(self, root, us: int, depth: int) -> list[float]:
        """Distinct positions per ply 0..depth below ``root`` (see :func:`distinct_per_ply`)."""
        return distinct_per_ply(np.array([root], dtype=np.uint64), us, depth, self._expand_host, self._host_keys)

    def _plan_tts(self, depth: int, g: int, distinct: list[float], cap: bool = True) -> None:
        """Allocate device TTs for remaining depths 3 .. g-1: the TT of remaining depth r serves ply
        ``depth - r``, and gets a share of the budget in proportion to ``distinct[depth - r]`` (distinct
        positions per ply, plies 0..depth; divided by the parts at the split level PART_DEPTH, where
        a part stores only its own positions), at most 4x that number when ``cap`` (a load factor of
        1/4 keeps overwrites rare; more slots only cost zeroing)."""
        rs = list(range(3, g))
        if not rs:
            return
        per_slot = ENTRY_BYTES + (AUDIT_BYTES if self.audit_mode else 0)
        weights = {r: max(float(distinct[depth - r]), 1.0) for r in rs}
        if PART_DEPTH in weights:  # a part stores only its own share of the split level's positions
            weights[PART_DEPTH] = max(weights[PART_DEPTH] / self.parts, 1.0)
        total_w = sum(weights.values())
        budget = self.tt_arena.capacity * 0.95
        for r in sorted(rs, key=lambda r: weights[r]):
            share = budget * weights[r] / total_w / per_slot
            slots = int(min(4 * weights[r], share) if cap else share)
            slots = max(slots, 1024)
            try:
                entries = self.tt_arena.alloc(f"tt[{r}]", 2 * slots, np.uint64)
                self.k.zero(entries)
                audit = None
                if self.audit_mode:
                    audit = self.tt_arena.alloc(f"tt_audit[{r}]", 8 * slots, np.uint64)
                    self.k.zero(audit)
            except DeviceOutOfMemory as exc:  # a TT is an optimisation: count on without it
                self.stats.oom_sites.append(exc.site)
                self.tt_stats["tt_disabled"] += 1
                continue
            self.tts[r] = DeviceTT(r, slots, entries, audit)
            self._stores_at_plan[r] = self._depth_stat(r)["stores"]

    def _depth_stat(self, r: int) -> dict[str, int]:
        got = self.depth_stats.get(r)
        if got is None:
            got = self.depth_stats[r] = dict.fromkeys(DEPTH_COUNTERS, 0)
        return got

    def tt_statistics(self, occupancy: bool = True) -> dict:
        """The tables' statistics per remaining depth, for people (``perft run --json``, deep stores).

        Returns ``{"by_depth": {r: {...}}, "host_cache_entries": int, "leaf_merge": {"moves": int,
        "positions": int}}`` (leaf_merge, cumulative: the fused leaf's moves and the distinct children
        it counted, see ``_leaf_merged``); each remaining depth ``r``
        (int) has DEPTH_COUNTERS, cumulative over this driver's counts (subtract two snapshots for
        one count): ``probes`` and ``hits`` (device table lookups and finds), ``host_probes`` and
        ``host_hits`` (the lossless host cache, above the launch depth), ``stores`` (device
        entries written: probed boards not found, zero counts included though never stored, so an
        upper bound); and, where a device table of depth r exists now: ``slots``, and with
        ``occupancy``: ``occupied`` (slots holding an entry: one pass over the table) and
        ``evictions`` (stores since the table was planned that replaced another position's entry
        or were lost to a same-slot store: those stores less ``occupied``, at least 0). Reading
        ``occupied`` costs one device pass over the tables, so only a call with ``occupancy`` pays
        it, never a count: CuPy's count of the non-zero words of the contiguous table, halved (an
        entry's check word is non-zero too, unless key.hi equals its count: 2^-64; one such slot is
        still counted right), 17 ms for 65 GB on an H200 (session 11; a strided view of the count
        words alone took 3.1 s, 180x longer).
        """
        out: dict[int, dict[str, int]] = {r: dict(v) for r, v in self.depth_stats.items()}
        xp = self.k.xp
        for r, tt in self.tts.items():
            row = out.setdefault(r, dict.fromkeys(DEPTH_COUNTERS, 0))
            row["slots"] = int(tt.slots)
            if occupancy:
                occupied = (int(xp.count_nonzero(tt.entries)) + 1) // 2
                since_plan = row["stores"] - self._stores_at_plan.get(r, 0)
                row.update(occupied=occupied, evictions=max(0, since_plan - occupied))
        return {"by_depth": dict(sorted(out.items())), "host_cache_entries": len(self.host_cache),
                "leaf_merge": {"moves": self.tt_stats["leaf_moves"], "positions": self.tt_stats["leaf_positions"]}}

    def _host_keys(self, boards: np.ndarray, us: int) -> np.ndarray:
        return host_keys(boards, us, self._ci_bytes, self.z_host)

    def _values_tt(self, boards, keys, mult, us: int, depth: int, g: int) -> np.ndarray:
        """perft(boards[i], depth) for each host board (uint64 (n, 5), keys uint64 (n, 2)): uint64
        (n,), this driver's part of each (set_part); GPU calls of depth <= g. ``mult`` (uint64 (n,))
        weighs each board for the progress hook (paths from the count's root that reach it)."""
        if len(boards) == 0:
            return np.zeros(0, dtype=np.uint64)
        # Merge equal positions: same key, same subtree (the key covers everything that decides it).
        uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if self.locality:  # keep the boards' own order (siblings together), not the keys' order
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            uniq, first, inverse = uniq[order], first[order], rank[inverse]
        m = np.zeros(len(uniq), dtype=np.uint64)
        np.add.at(m, inverse, mult)
        boards, keys, mult = boards[first], uniq, m
        self.tt_stats["roots"] += int(len(inverse))
        self.tt_stats["unique_roots"] += int(len(uniq))
        values = np.zeros(len(boards), dtype=np.uint64)
        live = np.arange(len(boards))
        if self.parts > 1 and depth == PART_DEPTH:  # the split level: other parts' positions count 0 here
            live = live[key_part(keys, self.parts) == self.part]
        if depth > g:
            children, parents = expand_host(boards[live], us, self._ci_bytes)
            below = self._values_tt(children, self._host_keys(children, us ^ 1), mult[live][parents], us ^ 1,
                                    depth - 1, g)
            np.add.at(values, live[parents], below)
            return values[inverse]
        todo = []
        row = self._depth_stat(depth) if self.tables else None
        for i in live:
            hit = self.host_cache.get((int(keys[i, 0]), int(keys[i, 1]), depth)) if self.tables else None
            if hit is None:
                todo.append(i)
            else:
                self.tt_stats["host_hits"] += 1
                row["host_hits"] += 1
                values[i] = hit
        if row is not None:
            row["host_probes"] += len(live)
        if not todo:
            return values[inverse]
        idx = np.array(todo)
        chunk = self._chunk_tt(len(idx), depth)
        if self._pending_tts is not None and chunk < len(idx):
            plan_depth, g_plan, distinct = self._pending_tts
            self._plan_tts(plan_depth, g_plan, distinct())
            self._pending_tts = None
        for sel, got in self._chunks(idx, chunk, lambda p: self._bfs_tt(boards[p], keys[p], us, depth), depth,
                                     self._adapt_chunk if self.adaptive and self.chunk_leaf_moves is None else None):
            if got is None:  # the rest of this level one ply down, GPU one ply shallower
                sub, sub_parents = expand_host(boards[sel], us, self._ci_bytes)
                below = self._values_tt(sub, self._host_keys(sub, us ^ 1), mult[sel][sub_parents], us ^ 1,
                                        depth - 1, depth - 1)
                np.add.at(values, sel[sub_parents], below)
                continue
            values[sel] = got
            if self.tables:
                for j, i in enumerate(sel):
                    if len(self.host_cache) >= self.host_cache_entries:  # lossless: when full, stop storing
                        break
                    entry = (int(keys[i, 0]), int(keys[i, 1]), depth)
                    self.host_cache[entry] = int(got[j])
                    if self.audit_mode:
                        self.host_audit[entry] = (boards[i].copy(), us, self._ci_bytes)
            if self.progress is not None:
                self.progress(sum(int(v) * int(w) for v, w in zip(got, mult[sel])))
        return values[inverse]

    def _adapt_chunk(self, roots: int, chunk: int) -> int:
        """The next chunk of a level from what the last call of ``roots`` roots really used: its
        arena bytes (the bump allocator's high mark) and its largest merged level's temporaries
        (``MERGE_TEMP_BYTES_PER_BOARD`` a board beside the arena), scaled to 80 % of each, at most
        doubling a call (the next roots may branch more; running out of memory costs a retry
        with half the chunk, never a count). The estimate that sized the first chunk compounds a
        margin a ply (``_growth``: 15 %, then 6 % more a ply) and undersizes deep calls: startpos
        perft 12's depth-8 calls measured 3-4x smaller than estimated."""
        used, merged = self._last_call
        fill = 0.8 * self.arena.capacity / max(used, 1)
        if merged:
            fill = min(fill, 0.8 * self.temp_bytes / (merged * MERGE_TEMP_BYTES_PER_BOARD))
        return max(1, min(2 * roots, int(roots * fill)))

    def _chunk_tt(self, n: int, depth: int) -> int:
        """Roots (of ``n`` at this level, ``depth`` plies left) to send in one BFS call.

        With merging, a level of a call never holds more boards than the distinct positions of its
        ply, however many roots the call has, so a chunk is sized by the call's bytes with each
        level bounded by ``min(roots x growth, distinct positions of the ply)`` (the count's own
        estimate, :func:`distinct_per_ply`): the most roots that fit 90 % of the arena, whose
        largest merged level's temporaries fit the memory beside the arenas, and with at most
        ``chunk_leaf_moves`` leaf moves when that is set. More roots per call means more
        transpositions merged exactly inside the call and fewer launches: a sparse tree (CPW
        position 3) was 14 latency-bound calls of one root. An estimate that is too low costs an
        out-of-memory retry with half the chunk (``_chunks``), never a count. Without a bound
        (no device TTs planned), one root's unmerged estimate sizes the chunk as in BfsDriver.
        """
        if self._level_bound is None or not self.merge:
            per_root = max(self._bytes_estimate(depth), 1)
            chunk = int(self.arena.capacity * 0.9 // per_root)
            if self.chunk_leaf_moves is not None:
                chunk = min(chunk, int(self.chunk_leaf_moves // max(per_root // BYTES_PER_MOVE, 1)))
            return max(1, chunk)
        count_depth, distinct = self._level_bound
        if callable(distinct):  # counted on first use (_lazy_distinct)
            distinct = distinct()
        ply0 = count_depth - depth
        growth = getattr(self, "_growth_per_ply", None) or [40.0] * 64

        def need(c: int) -> tuple[float, float, float]:
            """(arena bytes, leaf moves, boards of the largest merged level) of a call of c roots."""
            boards, total, merged = float(c), 0.0, 0.0
            for p in range(depth):
                left = depth - p
                total += boards * (BYTES_PER_BOARD + TT_BYTES_PER_BOARD)
                if left == 1:
                    return total, 0.0, merged
                made = boards * growth[min(ply0 + p, len(growth) - 1)]
                total += made * BYTES_PER_MOVE
                if left <= 3:
                    return total, made, merged
                total += made * (BYTES_PER_BOARD + TT_BYTES_PER_BOARD)
                merged = max(merged, made)
                boards = min(made, distinct[ply0 + p + 1])
            return total, 0.0, merged

        def fits(c: int) -> bool:
            nbytes, leaf_moves, merged = need(c)
            return (nbytes <= self.arena.capacity * 0.9 and merged * MERGE_TEMP_BYTES_PER_BOARD <= self.temp_bytes
                    and (self.chunk_leaf_moves is None or leaf_moves <= self.chunk_leaf_moves))

        lo, hi = 1, n  # the largest c that fits (need grows with c)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _bfs_tt(self, roots: np.ndarray, root_keys: np.ndarray, us: int, depth: int) -> np.ndarray:
        """One BFS call in TT mode: perft of each root at ``depth`` (host uint64 array)."""
        a, k = self.arena, self.k
        boards, sizes = self._start_call(roots)
        n = len(roots)
        keys = a.alloc("keys[0]", n * 2, np.uint64)
        k.upload(keys, root_keys)
        levels = []
        self._hits_dev = None
        # The roots' ply below the count's single root (None: roots of several counts, count_roots):
        # a level at a ply under FIRST_TRANSPOSITION_PLY below that root holds no two equal
        # positions, and its merge would cost a synchronising read and five launches for nothing.
        root_ply = None if self._count_depth is None else self._count_depth - depth
        side, ply = us, 0
        while True:
            left = depth - ply
            n_made, group_of = n, None
            if ply >= 1 and self.merge and n > 1 and (root_ply is None or root_ply + ply >= FIRST_TRANSPOSITION_PLY):
                boards, keys, n, group_of = self._merge(boards, keys, n, ply)
                self.tt_stats["merged"] += n_made - n
            values = a.alloc(f"values[{ply}]", n, np.uint64)
            counts = a.alloc(f"counts[{ply}]", n, np.uint32)
            level = {"boards": boards, "keys": keys, "n": n, "values": values, "side": side,
                     "tt": self.tts.get(left) if ply >= 1 else None, "parents": None,
                     "group_of": group_of, "n_made": n_made}
            levels.append(level)
            if left == 1:
                k.count(boards, n, side, counts)
                k.widen(counts, n, values)
                break
            tt = level["tt"]
            k.count_probe(boards, keys, n, side, tt.entries if tt else None, tt.slots if tt else 0, counts, values)
            if left == PART_DEPTH and self.parts > 1:
                k.part_filter(keys, n, self.parts, self.part, counts, values)
            if tt is not None:  # hits counted on the device, per remaining depth; read once at the end of the call
                self.tt_stats["probes"] += n
                self._depth_stat(left)["probes"] += n
                if self._hits_dev is None:
                    self._hits_dev = k.xp.empty(HITS_SLOTS, dtype=np.uint64)
                    k.zero(self._hits_dev)
                k.count_hits(counts, values, n, self._hits_dev[left:left + 1])
            offsets = a.alloc(f"offsets[{ply}]", n + 1, np.uint64)
            total = k.scan(counts, n, offsets)
            if total == 0:
                break
            moves = a.alloc(f"moves[{ply}]", total, np.uint16)
            parents = a.alloc(f"parents[{ply}]", total, np.uint32)
            k.gen(boards, n, side, offsets, moves, parents)
            level["parents"] = parents
            if left <= 3:
                if left == 3 and self.leaf_merge and (root_ply is None or root_ply + ply + 1 >= FIRST_TRANSPOSITION_PLY):
                    self._leaf_merged(boards, keys, parents, moves, total, side, values)
                else:
                    k.leaf_values(boards, parents, moves, total, side, left, values)
                break
            if total >= 1 << 32:
                raise DeviceOutOfMemory(f"boards[{ply + 1}]", total * _core.BOARD_BYTES, a.ordinal, 0)
            children = a.alloc(f"boards[{ply + 1}]", total * WORDS, np.uint64)
            child_keys = a.alloc(f"keys[{ply + 1}]", total * 2, np.uint64)
            k.make_key(boards, keys, parents, moves, total, side, self.z_dev, children, child_keys)
            boards, keys, n, side, ply = children, child_keys, total, side ^ 1, ply + 1
            sizes.append(n)
        # Upsweep: each level's values are final once the level below has been added; then store.
        for i in range(len(levels) - 1, -1, -1):
            lv = levels[i]
            tt = lv["tt"]
            if tt is not None:
                self._store_launches += 1
                k.store(lv["boards"], lv["keys"], lv["values"], lv["n"], tt.entries, tt.slots, tt.audit,
                        (self._store_launches << 1) | lv["side"])
            if i > 0:  # each made board takes its merged group's value, then adds it to its parent
                if lv["group_of"] is None:
                    k.upsweep(levels[i - 1]["parents"], lv["values"], lv["n_made"], levels[i - 1]["values"])
                else:
                    k.upsweep_grouped(levels[i - 1]["parents"], lv["group_of"], lv["values"], lv["n_made"],
                                      levels[i - 1]["values"])
        # One synchronisation brings the roots' values and the hit counters back together.
        out, *hits = k.read(levels[0]["values"], *([] if self._hits_dev is None else [self._hits_dev]))
        k.synchronize()  # the stream is idle by now: this only reads the kernels' times
        self.stats.allocations.append(a.ordinal)
        self._last_call = (a.used, max((lv["n_made"] for lv in levels if lv["group_of"] is not None), default=0))
        if hits:
            hits = hits[0]
            for lv in levels:  # each remaining depth is one level of a call
                if lv["tt"] is not None:
                    r, found = lv["tt"].remaining, int(hits[lv["tt"].remaining])
                    self._depth_stat(r)["hits"] += found
                    self.tt_stats["hits"] += found
                    # every board not found stores its count (zero counts excepted, see bfs_store)
                    self._depth_stat(r)["stores"] += lv["n"] - found
        return out

    def _leaf_merged(self, boards, keys, parents, moves, total: int, side: int, values) -> None:
        """The fused leaf of a remaining-depth-3 level with its children merged: the ``total`` moves
        of ``boards`` (side ``side``) are grouped by the Zobrist key of the child each makes, perft 2
        is counted once a group, and every move adds its group's count to its parent's value
        (``kernels.leaf_merged``). The same values as ``leaf_values(..., levels=3)``. The fused leaf
        is most of a deep count's time, and most of its children repeat: startpos perft 11's leaf
        has 29.1 G moves for 9.2 G distinct ply-9 positions (A083276); the slices merged them into
        15.7 G (H200, NOTES.md "Session 12": 20.5 -> 14.7 s; perft 12 343 -> 262 s).
        In slices of a power of two moves, at most ``leaf_merge_slice`` (``LEAF_MERGE_SLICE``) and
        within 3/4 of the memory beside the arenas (``LEAF_MERGE_TEMP_BYTES_PER_MOVE``): a
        transposition whose two moves fall in different slices is counted twice, exactly."""
        k = self.k
        # 3/4 of the memory beside the arenas: the upper levels' groups (uint32 a board) stay there
        # too. Larger slices merge more (startpos perft 11: 1.76x with 2^27 moves, 1.85x with 2^28).
        # A power of two, so the hash table is 4 slots a move (its size is the next power of two of 4n).
        # Too large a slice fails a temporary, and the driver retries the call with half its roots.
        fits = self.temp_bytes * 3 // 4 // LEAF_MERGE_TEMP_BYTES_PER_MOVE
        if fits < LEAF_MERGE_MIN_SLICE:  # too little memory beside the arenas: the plain fused leaf
            k.leaf_values(boards, parents, moves, total, side, 3, values)
            return
        size = max(1, min(self.leaf_merge_slice, fits))
        size = 1 << (size.bit_length() - 1)
        for start in range(0, total, size):
            n = min(size, total - start)
            groups = k.leaf_merged(boards, keys, parents[start:start + n], moves[start:start + n], n, side,
                                   self.z_dev, values)
            self.tt_stats["leaf_moves"] += n
            self.tt_stats["leaf_positions"] += groups

    def _merge(self, boards, keys, n: int, ply: int):
        """Merge boards with equal keys: (unique boards, their keys, count, group of each board).

        The kernel set groups equal (lo, hi) keys (a hash table on the device, ``np.unique`` when
        emulated) and copies one board per group into the arena; group_of (uint32, n) maps each
        board to its group for the upsweep.
        """
        groups, plan = self.k.merge_groups(keys, n)
        if groups == n:
            return boards, keys, n, None
        ub = self.arena.alloc(f"merged_boards[{ply}]", groups * WORDS, np.uint64)
        uk = self.arena.alloc(f"merged_keys[{ply}]", groups * 2, np.uint64)
        group_of = self.k.merge_gather(plan, boards, keys, n, ub, uk)
        return ub, uk, groups, group_of

    # ----- audit ------------------------------------------------------------------------------------
    def audit_entries(self):
        """Every valid device TT entry as (remaining, key, board words (5,), side, count, castle info
        bytes); needs audit=True.

        Raises RuntimeError when the driver was not made with ``audit=True``.
        """
        if not self.audit_mode:
            raise RuntimeError("TT audit needs TTBfsDriver(..., audit=True)")
        for r, tt in sorted(self.tts.items()):
            e = np.asarray(tt.entries.get() if hasattr(tt.entries, "get") else tt.entries).reshape(-1, 2)
            a = np.asarray(tt.audit.get() if hasattr(tt.audit, "get") else tt.audit).reshape(-1, 8)
            for s in np.nonzero(e[:, 1])[0]:
                check, data = int(e[s, 0]), int(e[s, 1])
                lo, hi = int(a[s, 5]), int(a[s, 6])
                if check ^ data != hi:  # overwritten by a later store in the same slot: audit that one
                    continue
                yield r, (hi << 64) | lo, a[s, :5].copy(), int(a[s, 7]) & 1, data, self._ci_bytes

    def host_entries(self):
        """Every host cache entry, shaped as audit_entries' tuples; needs audit=True."""
        if not self.audit_mode:
            raise RuntimeError("TT audit needs TTBfsDriver(..., audit=True)")
        for (lo, hi, r), count in self.host_cache.items():
            words, side, ci = self.host_audit[(lo, hi, r)]
            yield r, (hi << 64) | lo, words, side, count, ci

    def _part_counts(self, boards: np.ndarray, side: int, ci: bytes, r: int) -> np.ndarray:
        """This driver's part (set_part) of perft(b, r) for host boards (uint64 (n, 5)), on the CPU:
        uint64 (n,). The whole count when parts is 1 or r < PART_DEPTH."""
        n = len(boards)
        if self.parts == 1 or r < PART_DEPTH:
            return np.asarray(_core.batch_perft(np.ascontiguousarray(boards).reshape(-1), n, side, ci, r),
                              dtype=np.uint64)
        out = np.zeros(n, dtype=np.uint64)
        if r == PART_DEPTH:
            keys = np.empty((n, 2), dtype=np.uint64)
            _core.batch_keys(np.ascontiguousarray(boards).reshape(-1), n, side, ci, self.z_host, keys)
            mine = np.nonzero(key_part(keys, self.parts) == self.part)[0]
            if len(mine):
                out[mine] = _core.batch_perft(np.ascontiguousarray(boards[mine]).reshape(-1), len(mine), side, ci, r)
            return out
        children, parents = expand_host(boards, side, ci)
        np.add.at(out, parents, self._part_counts(children, side ^ 1, ci, r - 1))
        return out

    def audit(self) -> tuple[int, list[tuple]]:
        """Recompute every stored entry, device TTs and host cache, on the CPU.

        Returns (entries checked, wrong entries); a wrong entry is (remaining, key, stored count,
        CPU count, key matches). An empty list means no entry is poisoned.
        """
        import itertools

        checked, wrong = 0, []
        for r, key, words, side, count, ci in itertools.chain(self.audit_entries(), self.host_entries()):
            flat = np.ascontiguousarray(words, dtype=np.uint64).reshape(-1)
            k = np.empty((1, 2), dtype=np.uint64)
            _core.batch_keys(flat, 1, side, ci, self.z_host, k)
            real_key = (int(k[0, 1]) << 64) | int(k[0, 0])
            real = int(self._part_counts(flat.reshape(1, -1), side, ci, r)[0])
            checked += 1
            if real_key != key or real != count:
                wrong.append((r, key, count, real, real_key == key))
        return checked, wrong


def timed_perft(driver: TTBfsDriver, pos, depth: int) -> tuple[int, float]:
    """(nodes, seconds) of one count (a helper for benchmarks)."""
    t = time.perf_counter()
    n = driver.perft(pos, depth)
    return n, time.perf_counter() - t
