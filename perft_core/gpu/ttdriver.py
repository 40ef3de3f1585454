"""GPU perft with transposition tables: device TTs below the launch depth, a host lossless cache and
key-merged roots at and above it.

Within one BFS call every probe of a level happens before any store (counts are stored in the
upsweep, after the leaf), so device TTs pay across calls. The driver therefore expands the top
plies on the host, merges roots with equal Zobrist keys (counting each once, times its
multiplicity), looks each up in a lossless host cache, and sends the rest to the GPU in chunks;
later chunks hit the device entries that earlier chunks stored.

The fused leaf (perft 3 of each remaining-depth-3 position not found) counts each distinct child of
its level's moves once (``merge.leaf_merged``).

Device TTs (``tables.py``): one per remaining depth r from 3 to the GPU depth - 1, 16-byte
XOR-checked entries (kernels/pc_tt.h) in two-way buckets, the budget shared by ``tables.plan_slots`` from the number of
distinct positions at the ply each serves: the count's own (``perft_core.distinct``), measured on
the host for the first plies below its root, then extrapolated (not the start position's sequence,
which undersized CPW position 6's tables 23x at ply 5). The host cache is ``hostcache.py``, the
merges ``merge.py``, the chunk sizing ``chunks.py``, the audit ``audit.py``. Out of memory: no
count of an interrupted call is ever stored — stores happen only in the upsweep of a finished
call — and the fallback is BfsDriver's.

Statistics with tables (``perft_stats``): the same BFS with 13 counters a board instead of one, as 13
slices of n uint64 values (perft_core.stats.STATS_FIELDS order): the levels go down to the leaf
parents (two plies left), whose moves the statistics leaf with tables classifies into their
parents' values (``stats_leaf_values``); the upsweep runs once a slice; the device tables hold
64-byte statistics entries (kernels/pc_tt_stats.h, ``DeviceTables.use_entries``) and the host
cache 13-tuples (``stats_cache``, apart from the node counts). The leaf merge groups the moves of
the remaining-depth-2 level by the leaf parents they make (``merge.stats_leaf_merged``) and
classifies each distinct leaf parent once. A deep statistics run counts its units in parts
(``count_roots(stats=True)`` after ``set_part``), as a plain run does.

This module plans a count and keeps its tables (kept for a run, reset, sized per remaining depth);
``ttlevels.py`` runs its levels: the host levels above the GPU depth, the chunks and one BFS call.
"""
from __future__ import annotations

import itertools
import time

import numpy as np

from .. import _core
from ..distinct import distinct_per_ply
from ..stats import Stats
from .driver import BfsDriver, host_keys
from . import tableimage
from .overflow import safe_gpu_depth
from .hostcache import HostCache
from .kernels import CUT_BOARD, CUTS, PART_DEPTH, Split
from .merge import LEAF_MERGE_SLICE
from .tables import ENTRY_WORDS, LEVEL_VALUE, STATS_ENTRY_WORDS, TT_SHARE, DeviceTables, DeviceTT
from .ttlevels import TTLevels


class TTBfsDriver(TTLevels, BfsDriver):
    """BfsDriver with transposition tables (``backend`` option ``tt=True``).

    Args (beyond BfsDriver's): ``tt_bytes`` device bytes for the TTs (default ``TT_SHARE`` of the memory;
    taken out of ``memory_bytes`` when that is not given),
    ``seed`` Zobrist key seed, ``audit`` record every stored entry's position (for tests),
    ``min_roots`` the fewest host roots to split into GPU chunks (sets the launch depth),
    ``host_cache_entries`` bound of the lossless host cache (it stops storing when full; None: from
    the host's memory, ``hostcache.default_entries``),
    ``chunk_leaf_moves`` the most leaf moves one GPU call should hold (None: memory alone decides), ``merge`` merge equal
    positions (equal keys) within each BFS level before expanding it, and the fused leaf's children
    (attribute ``leaf_merge``, see ``merge.leaf_merged``).
    """

    def __init__(self, kernels, memory_bytes: int | None = None, fault_plan=None, max_gpu_depth: int | None = None,
                 tt_bytes: int | None = None, seed: int | None = None, audit: bool = False, min_roots: int = 1,
                 host_cache_entries: int | None = None, chunk_leaf_moves: int | None = None, merge: bool = True):
        # Split the device memory between the BFS arena and the TTs before allocating either.
        total = int(memory_bytes if memory_bytes is not None else kernels.free_bytes() * 0.85)
        if tt_bytes is None:
            tt_bytes = int(total * TT_SHARE)
            total -= tt_bytes
        elif memory_bytes is None:
            if tt_bytes >= total:
                raise ValueError(f"tables of {tt_bytes / 2**20:g} MiB leave nothing for the BFS arena: the driver "
                                 f"has {total / 2**20:g} MiB (85 % of the device's free memory); ask for less")
            total -= tt_bytes
        super().__init__(kernels, total, fault_plan, max_gpu_depth)
        try:
            self.device_tables = DeviceTables(kernels, tt_bytes, fault_plan, audit)
        except (MemoryError, ValueError) as exc:  # NumPy's (or its "maximum allowed dimension") on the
            # emulated device, CuPy's OutOfMemoryError on a GPU
            raise ValueError(f"tables of {tt_bytes / 2**20:g} MiB do not fit in memory ({exc}); ask for less") from None
        # Memory left beside the arenas for the merge's temporaries (with a margin for the rest).
        self.temp_bytes = int(kernels.free_bytes() * 0.8)
        self.tt_enabled = True
        self.audit_mode = audit
        self.host_cache = HostCache(host_cache_entries, audit)
        self.stats_cache = HostCache(host_cache_entries, audit)  # statistics counts: {key: 13-tuple}
        self._stats_mode = False  # a statistics count is under way (perft_stats)
        self.min_roots = min_roots
        self.chunk_leaf_moves = chunk_leaf_moves
        self.merge = merge
        self.reseed(_core.ZOBRIST_DEFAULT_SEED if seed is None else seed)
        self._warm = False  # perft_iterative: keep the tables between counts
        self._level_bound = None  # (count depth, distinct positions per ply): sizes chunks of roots
        self._pending_tts = None  # device TTs to plan once a level needs several BFS calls
        self._keep = None  # keep_tables: the run whose counts share the tables
        self._keep_depth = None  # keep_tables: the run's whole depth, which sizes the tables
        self._keep_game = None  # keep_tables: the run's root Position (its plies size tables and chunks)
        self._kept_shape = None  # (run depth, distinct positions per ply of the run's root) of kept tables
        self._kept_growth = None  # growth per ply of the run's root (chunk sizing of its units' calls)
        self._kept = None  # (run key, castle info bytes, seed, depth) the kept tables were planned for
        self._image = None  # keep_tables: the run's table image (loaded when its tables are planned)
        self.image_loads: list[dict] = []  # tableimage.load's summary of each image load
        self._hits_dev = None
        self._count_depth = None  # depth of the single-root count under way (None: count_roots)
        self.adaptive = True  # size a level's later chunks from what its calls used (not with chunk_leaf_moves: a cap)
        # Roots go out in the order the host made them (children of one parent side by side), so
        # a chunk's roots share ancestors and their transpositions merge inside the call; sorted by
        # key (np.unique's order) a chunk was a random sample of the level with almost none.
        self.locality = True
        self._last_call = (0, 0)  # (arena bytes, boards of its largest merged level) of the last BFS call
        self.parts, self.part = 1, 0  # set_part: this driver counts one part of a count split into parts
        self.part_depth = PART_DEPTH  # ... at this remaining depth
        self.part_cut = CUT_BOARD  # ... cut by the boards' other side (kernels.Split)
        self.tables = True  # False: count without any table (device TT or host cache), parts still apply
        self.tt_stats = {"probes": 0, "hits": 0, "host_hits": 0, "roots": 0, "unique_roots": 0, "tt_disabled": 0,
                         "merged": 0, "other_parts": 0, "leaf_moves": 0, "leaf_positions": 0}
        # With parts: drop the other parts' boards of the split level before it is merged, probed
        # and expanded (merge.keep_part), instead of after (the part filter). Measured on 4x H200
        # (NOTES.md "Session 19"): startpos perft 12 `perft deep --gpus 4 --tt`, count phase 62.25 /
        # 62.38 s with it against 67.34 / 67.27 s without (7.4 % less); no effect on one part.
        self.part_compact = True
        # Merge the children of each remaining-depth-3 level (the fused leaf's moves) by key and
        # count each distinct child once (merge.leaf_merged); needs merge.
        self.leaf_merge = merge
        self.leaf_merge_slice = LEAF_MERGE_SLICE
        self.table_value = LEVEL_VALUE  # tables.plan_slots: how the budget goes to the remaining depths
        # The lowest remaining depth with a statistics table: 3 as the node counts' (2 also tables the
        # leaf parents' parents, whose moves the statistics leaf classifies: an option to measure).
        self.stats_lowest_table = 3

    @property
    def tts(self) -> dict[int, DeviceTT]:
        """The device tables now planned: {remaining depth: DeviceTT}."""
        return self.device_tables.tts

    @tts.setter
    def tts(self, value: dict[int, DeviceTT]) -> None:
        self.device_tables.tts = value

    @property
    def tt_arena(self):
        """The arena the device tables are carved from (its ``capacity`` is the tables' bytes)."""
        return self.device_tables.arena

    @property
    def depth_stats(self) -> dict[int, dict[str, int]]:
        """Per remaining depth r: DEPTH_COUNTERS, cumulative over this driver's counts."""
        return self.device_tables.depth_stats

    def reseed(self, seed: int) -> None:
        """Key with another Zobrist seed from now on; forgets the host cache (its keys change)."""
        self.seed = seed
        self.z_dev = self.k.zobrist(seed)
        self.z_host = np.frombuffer(_core.zobrist_keys_blob(seed), dtype=np.uint64).copy()
        self.host_cache.clear()
        self.stats_cache.clear()

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

    def perft_stats(self, pos, depth: int) -> Stats:
        """Perft statistics of ``pos`` (a Position) at ``depth`` >= 0 plies (:class:`perft_core.Stats`;
        ``Stats(nodes=1)`` at depth 0): through the tables when ``tt_enabled`` (statistics entries,
        see the module docstring; rebuilt for each count, as a plain count's, unless ``keep_tables``
        keeps them), else BfsDriver's. A deep run's units go through ``count_roots(stats=True)``.

        Raises ValueError: the driver counts a part (``set_part``: use count_roots) or is inside
        ``perft_iterative``.
        """
        if not self.tt_enabled:
            return super().perft_stats(pos, depth)
        if self.parts > 1 or self._warm:
            raise ValueError("perft_stats counts whole positions: parts through count_roots, no iterative count")
        return self._measured(lambda: self._perft_stats_tt(pos, depth))

    def _perft_stats_tt(self, pos, depth: int) -> Stats:
        if depth == 0:
            return Stats(nodes=1)
        root, us = self._set_root(pos)
        self._stats_mode = True
        try:
            g = self._prepare(pos, root, us, depth)
            boards = np.array([root], dtype=np.uint64)
            keys = self._host_keys(boards, us)
            self._count_depth = depth
            values = self._values_tt(boards, keys, np.ones(1, dtype=np.uint64), us, depth, g)
            return Stats.from_tuple(int(x) for x in values[0])
        finally:
            self._count_depth = None
            self._stats_mode = False

    def _use_entries(self) -> None:
        """Device tables of this count's entries (node counts, or statistics while ``_stats_mode``):
        a change of kind forgets the tables (and any kept for a run)."""
        if self.device_tables.use_entries(STATS_ENTRY_WORDS if self._stats_mode else ENTRY_WORDS):
            self._kept = None

    def _prepare(self, pos, root, us: int, depth: int) -> int:
        """Plan a count of ``depth`` below ``pos`` (root board ``root``, side ``us``): its GPU depth
        (returned) and its tables (kept, reset, or planned lazily; see keep_tables)."""
        self._use_entries()
        g = self._plan_call(pos, depth)
        if not self.tables:  # no device TT, no host cache: chunks of roots as the plain BFS sizes them
            self._kept, self._level_bound, self._pending_tts = None, None, None
            self.device_tables.reset()
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
                if self._image is not None:
                    self.image_loads.append(tableimage.load(self, self._image))
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
            self.device_tables.reset()  # the tables are rebuilt per count (the castling geometry is per game)
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

    def set_part(self, part: int, parts: int, depth: int = PART_DEPTH, cut: str = CUT_BOARD) -> None:
        """Count only part ``part`` (0 .. parts-1) of every count from now on (``parts`` = 1: whole
        counts, the default), split at remaining depth ``depth`` (>= 3; default ``PART_DEPTH``) by
        ``cut`` (``kernels.CUT_BOARD``, the default, or ``kernels.CUT_KEY``, the cut of every run
        stored before schema 9).

        A count split into parts is split at remaining depth ``depth``: part c of perft(pos, d)
        counts the paths whose position at remaining depth ``depth`` is in part c: by the board
        cut, ``kernels.board_part`` of the position (a hash of the pieces of the side not to move,
        salted by the Zobrist seed), by the key cut ``key_part(key, parts)`` (the top bits of the
        key's high word; kernels/pc_tt.h). The board cut keeps together the split-level parents of
        a leaf position reached by two orders of one side's quiet moves, so each part's leaf merge
        counts it once where the key cut counted it in up to every part (NOTES.md, session 33);
        with d < ``depth`` a path has no such position and every part counts it. The parts of a count
        with d >= ``depth`` add up to the count. The levels above the split are the same work in
        every part; the split level and everything below it are divided among the parts, and so
        are the split level's table entries: a deep run gives each GPU one part, and each GPU's
        table of the split level holds only its own part's positions. Entries above the split
        hold a part's count, so changing the part or its depth resets the tables (entries below
        it hold whole counts).

        Raises ValueError unless 0 <= part < parts, depth is an integer >= 3 and cut is a cut.
        """
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1 or not 0 <= part < parts:
            raise ValueError(f"part must be in 0..parts-1 with parts >= 1, got part {part!r} of {parts!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 3:
            raise ValueError(f"the split depth of parts must be an integer >= 3 (remaining plies), got {depth!r}")
        if cut not in CUTS:
            raise ValueError(f"a part cut is one of {', '.join(CUTS)}, got {cut!r}")
        if (part, parts, depth, cut) != (self.part, self.parts, self.part_depth, self.part_cut):
            self.part, self.parts, self.part_depth, self.part_cut = part, parts, depth, cut
            self._reset_tables()
            self._kept = None

    @property
    def split(self) -> Split:
        """This driver's division of the split level (``set_part``), salted by its Zobrist seed."""
        return Split(self.parts, self.part, self.part_cut, self.seed)

    def whole_counts(self) -> None:
        """Back to whole counts with tables of their own: part 0 of 1, no kept tables, tables on
        (what a deep run's worker set on this process's driver must not leak into a plain count)."""
        self.set_part(0, 1)
        self.keep_tables(None)
        self.tables = True

    def count_roots(self, positions, depth: int, game=None, stats: bool = False) -> list:
        """perft(p, depth) of each of ``positions`` (Positions with one side to move, e.g. a deep
        run's units) through one sequence of BFS calls, so that equal positions below different
        roots are merged and counted once, as inside a single count. With ``set_part``, each value
        is that part's. ``game``: the Position the positions were played from (a deep run's root):
        its castling geometry serves them all, as it serves every descendant inside a count, so
        positions that lost some castling rights share tables with the rest (default: the first
        position's geometry). ``stats``: the perft statistics of each instead (statistics entries
        in the tables; a part's are that part's leaf moves). Returns nodes per position (Python
        ints), or with ``stats`` a :class:`perft_core.Stats` per position.

        Raises ValueError if the positions differ in side to move, or one has a castling right
        whose rook is not the geometry's.
        """
        if not positions:
            return []
        if not self.tt_enabled:
            return [self.perft_stats(p, depth) if stats else self.perft(p, depth) for p in positions]
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
            return [Stats(nodes=1) if stats else 1 for _ in positions]
        us = sides.pop()

        def count() -> list:
            self._set_root(game)
            self._stats_mode = stats
            try:
                g = self._prepare(positions[0], roots[0], us, depth)
                g = min([g] + [safe_gpu_depth(p, depth, g) for p in positions[1:]])  # each root's bound
                self.stats.gpu_depth, self.stats.launch_depth = g, depth - g
                boards = np.array(roots, dtype=np.uint64)
                values = self._values_tt(boards, self._host_keys(boards, us), np.ones(len(boards), dtype=np.uint64),
                                         us, depth, g)
            finally:
                self._stats_mode = False
            if stats:
                return [Stats.from_tuple(int(x) for x in row) for row in values]
            return [int(v) for v in values]

        return self._measured(count)

    def _plan_call(self, pos, depth: int) -> int:
        """GPU subtree depth g of a count (launch depth = depth - g), recorded in the stats."""
        growth = self._growth(pos, depth)
        g_mem = self._gpu_depth(growth, depth, self._stats_mode)
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
        g = safe_gpu_depth(pos, depth, g)  # no call whose subtrees could pass 2^64 (overflow.py)
        self.stats.gpu_depth, self.stats.launch_depth = g, depth - g
        return g

    def keep_tables(self, run_key, plan_depth: int | None = None, game=None, image=None) -> None:
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

        ``image``: the path of the run's table image (``tableimage.image_path``): when the tables
        are planned afresh for the run they are loaded from it, if it is this driver's
        (``tableimage.load``; each load's summary is appended to ``image_loads``), and
        :meth:`save_image` writes them there.
        """
        self._image = image
        self._keep = run_key
        self._keep_depth = plan_depth
        self._keep_game = game

    def prepare_run(self, position, depth: int, game, stats: bool = False) -> list[dict]:
        """Plan the tables of the run set by :meth:`keep_tables` for counts of ``depth`` below
        positions like ``position`` (a Position of the run rooted at the Position ``game``;
        ``stats``: statistics entries), as :meth:`count_roots` would before its first count, or
        keep them if they are planned for it: the run's table image is loaded here, before any
        count is timed. Returns the summaries of the image loads this made ([] or one)."""
        before = len(self.image_loads)
        root, us, _ = _core.gpu_root(position.core_args())
        self._set_root(game)
        self._stats_mode = stats
        try:
            self._prepare(position, root, us, depth)
        finally:
            self._stats_mode = False
        return self.image_loads[before:]

    def save_image(self, path, max_bytes: int) -> dict | None:
        """Write the tables kept for the current run to the image ``path`` within ``max_bytes``
        (:func:`perft_core.gpu.tableimage.save`; its summary returned), or None when no run's
        tables are kept (nothing counted since ``keep_tables``, or tables off)."""
        if self._keep is None or self._kept is None or not self.tts:
            return None
        return tableimage.save(self, path, max_bytes)

    def _replan(self, slots: dict[int, int]) -> bool:
        """Tables of exactly ``slots`` ({r: slots}, a table image's) in place of the planned ones,
        empty. Returns False, with the planned ones back (empty), when they do not fit."""
        planned = {r: tt.slots for r, tt in self.tts.items()}
        self.device_tables.reset()
        if sum(slots.values()) * self.device_tables.slot_bytes() <= self.tt_arena.capacity \
                and not self.device_tables.allocate(slots):
            return True
        self.device_tables.reset()
        self.device_tables.allocate(planned)
        return False

    def _table_plan(self, depth: int) -> tuple:
        """What kept tables are valid for: (run key, castle info bytes, key seed, depth, run depth,
        run root)."""
        game = None if self._keep_game is None else self._keep_game.fen()
        return (self._keep, self._ci_bytes, self.seed, depth, self._keep_depth, game)

    def _reset_tables(self) -> None:
        """Forget every device TT and host cache entry."""
        self.host_cache.clear()
        self.stats_cache.clear()
        self.device_tables.reset()

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
        self._use_entries()
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
        """Allocate device TTs for remaining depths 3 .. g-1 (statistics: ``stats_lowest_table`` .. g-1):
        the TT of remaining depth r serves ply
        ``depth - r`` and its ``distinct[depth - r]`` positions (distinct positions per ply, plies
        0..depth; divided by the parts at and below the split level ``part_depth``, where a part
        meets only its own share of them); ``tables.plan_slots`` shares the budget (``cap``: the lowest table too is
        bounded by its positions; False: a deep run's shared tables, it takes the rest)."""
        rs = list(range(self.stats_lowest_table if self._stats_mode else 3, g))
        if not rs:
            return
        positions = {r: max(float(distinct[depth - r]), 1.0) for r in rs}
        split = self.part_depth if self.parts > 1 else None
        if split is not None:  # a part serves its share of the positions at and below the split level
            positions = {r: (max(p / self.parts, 1.0) if r <= split else p) for r, p in positions.items()}
        # A part counts only its share of the work under a position above the split: a hit there
        # saves it that share; at or below the split a hit saves the whole count under it.
        above = 1.0 / self.parts if split is not None and split < max(positions) else 1.0
        for site in self.device_tables.plan(positions, cap, self.table_value, above, split):
            self.stats.oom_sites.append(site)
            self.tt_stats["tt_disabled"] += 1

    def tt_statistics(self, occupancy: bool = True) -> dict:
        """The tables' statistics per remaining depth, for people (``perft run --json``, deep stores).

        Returns ``{"by_depth": {r: {...}}, "host_cache_entries": int, "leaf_merge": {"moves": int,
        "positions": int}}`` (leaf_merge, cumulative: the fused leaf's moves and the distinct children
        it counted, see ``merge.leaf_merged``); each remaining depth ``r``
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
        out = self.device_tables.statistics(occupancy)
        return {"by_depth": out, "host_cache_entries": len(self.host_cache),
                "leaf_merge": {"moves": self.tt_stats["leaf_moves"], "positions": self.tt_stats["leaf_positions"]}}

    def _host_keys(self, boards: np.ndarray, us: int) -> np.ndarray:
        return host_keys(boards, us, self._ci_bytes, self.z_host)

    # ----- audit ------------------------------------------------------------------------------------
    def audit_entries(self):
        """Every valid device TT entry as (remaining, key, board words (5,), side, count, castle info
        bytes); needs audit=True.

        Raises RuntimeError when the driver was not made with ``audit=True``.
        """
        if not self.audit_mode:
            raise RuntimeError("TT audit needs TTBfsDriver(..., audit=True)")
        return self.device_tables.entries(self._ci_bytes)

    def host_entries(self):
        """Every host cache entry, node counts and statistics (a 13-tuple for a count), shaped as
        audit_entries' tuples; needs audit=True."""
        if not self.audit_mode:
            raise RuntimeError("TT audit needs TTBfsDriver(..., audit=True)")
        return itertools.chain(self.host_cache.entries(), self.stats_cache.entries())

    def audit(self) -> tuple[int, list[tuple]]:
        """Recompute every stored entry, device TTs and host cache, on the CPU
        (:func:`perft_core.gpu.audit.audit`): (entries checked, wrong entries)."""
        from .audit import audit

        return audit(self)


def timed_perft(driver: TTBfsDriver, pos, depth: int) -> tuple[int, float]:
    """(nodes, seconds) of one count (a helper for benchmarks)."""
    t = time.perf_counter()
    n = driver.perft(pos, depth)
    return n, time.perf_counter() - t
