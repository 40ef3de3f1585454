"""The levels of a GPU count with transposition tables (``TTLevels``, a part of
``ttdriver.TTBfsDriver``): the host levels above the GPU depth (equal positions merged by key, the
host cache, the split level of a part), the chunks of roots sent to the GPU, and one BFS call in
table mode (probes, the part filter, the fused or statistics leaf with its merge, the upsweep and
its stores, the hit counters). ``ttdriver.py`` plans the count and owns the tables these use.
"""
from __future__ import annotations

import numpy as np

from .. import _core
from ..distinct import FIRST_TRANSPOSITION_PLY
from ..stats import STATS_FIELDS
from .arena import DeviceOutOfMemory
from .chunks import roots_per_call
from .driver import BYTES_PER_MOVE, WORDS, expand_host
from .merge import (
    MERGE_TEMP_BYTES_PER_BOARD,
    keep_part,
    leaf_merged,
    merge_level,
    stats_leaf_merged,
    then_group,
)
from .overflow import add_counts
from .tables import HITS_SLOTS

OWN_SLOT = 0
"""The word of a call's hit counters (one per remaining depth, HITS_SLOTS; no table has remaining
depth 0) that counts this part's boards at the split level (``set_part``)."""


class TTLevels:
    """The level sweeps of :class:`perft_core.gpu.ttdriver.TTBfsDriver` (a mixin: the state it reads,
    the arena, kernels, tables, host caches, part and statistics mode, is the driver's)."""

    def _values_tt(self, boards, keys, mult, us: int, depth: int, g: int) -> np.ndarray:
        """perft(boards[i], depth) for each host board (uint64 (n, 5), keys uint64 (n, 2)): uint64
        (n,), this driver's part of each (set_part); GPU calls of depth <= g. ``mult`` (uint64 (n,))
        weighs each board for the progress hook (paths from the count's root that reach it).
        While ``_stats_mode``: the statistics of each, uint64 (n, 13) (STATS_FIELDS order)."""
        shape = (len(STATS_FIELDS),) if self._stats_mode else ()
        cache = self.stats_cache if self._stats_mode else self.host_cache
        if len(boards) == 0:
            return np.zeros((0,) + shape, dtype=np.uint64)
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
        values = np.zeros((len(boards),) + shape, dtype=np.uint64)
        live = np.arange(len(boards))
        if self.parts > 1 and depth == self.part_depth:  # the split level: other parts' positions count 0 here
            live = live[self.split.mine(keys, boards, us)]
        if depth > g:
            children, parents = expand_host(boards[live], us, self._ci_bytes)
            below = self._values_tt(children, self._host_keys(children, us ^ 1), mult[live][parents], us ^ 1,
                                    depth - 1, g)
            add_counts(values, live[parents], below)  # refused past 2^64 - 1
            return values[inverse]
        todo = []
        row = self.device_tables.stat(depth) if self.tables else None
        for i in live:
            hit = cache.get((int(keys[i, 0]), int(keys[i, 1]), depth)) if self.tables else None
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
                add_counts(values, sel[sub_parents], below)
                continue
            values[sel] = got
            if self.tables:
                for j, i in enumerate(sel):
                    entry = (int(keys[i, 0]), int(keys[i, 1]), depth)
                    record = (boards[i].copy(), us, self._ci_bytes) if self.audit_mode else None
                    value = tuple(int(x) for x in got[j]) if self._stats_mode else int(got[j])
                    if not cache.put(entry, value, record):  # lossless: when full, stop storing
                        break
            if self.progress is not None:
                nodes = got[:, 0] if self._stats_mode else got
                self.progress(sum(int(v) * int(w) for v, w in zip(nodes, mult[sel])))
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
        words = len(STATS_FIELDS) if self._stats_mode else 1
        if self._level_bound is None or not self.merge:
            per_root = max(self._bytes_estimate(depth + self._stats_mode), 1)
            chunk = int(self.arena.capacity * 0.9 // per_root)
            if self.chunk_leaf_moves is not None:
                chunk = min(chunk, int(self.chunk_leaf_moves // max(per_root // BYTES_PER_MOVE, 1)))
            return max(1, chunk)
        count_depth, distinct = self._level_bound
        if callable(distinct):  # counted on first use (_lazy_distinct)
            distinct = distinct()
        growth = getattr(self, "_growth_per_ply", None) or [40.0] * 64
        return roots_per_call(n, depth, count_depth - depth, growth, distinct, self.arena.capacity * 0.9,
                              self.temp_bytes, self.chunk_leaf_moves, words)

    def _bfs_tt(self, roots: np.ndarray, root_keys: np.ndarray, us: int, depth: int) -> np.ndarray:
        """One BFS call in TT mode: perft of each root at ``depth`` (host uint64 array (n,)); while
        ``_stats_mode`` the statistics of each (host uint64 array (n, 13)): each level's values are
        13 slices of its boards, the levels go down to the leaf parents, whose moves the statistics
        leaf classifies into their parents' values, and the upsweep adds each slice."""
        a, k = self.arena, self.k
        stats = self._stats_mode
        words = len(STATS_FIELDS) if stats else 1
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
            if ply >= 1 and self.part_compact and self.parts > 1 and left == self.part_depth and n > 1:
                # the split level: only this part's boards go on (merge.keep_part)
                boards, keys, n, group_of = keep_part(k, a, boards, keys, n, ply, side, self.split)
                self.tt_stats["other_parts"] += n_made - n
            if ply >= 1 and self.merge and n > 1 and (root_ply is None or root_ply + ply >= FIRST_TRANSPOSITION_PLY):
                kept, kept_of = n, group_of
                boards, keys, n, group_of = merge_level(k, a, boards, keys, n, ply)
                self.tt_stats["merged"] += kept - n
                group_of = then_group(k, kept_of, group_of)
            values = a.alloc(f"values[{ply}]", n * words, np.uint64)
            counts = a.alloc(f"counts[{ply}]", n, np.uint32)
            level = {"boards": boards, "keys": keys, "n": n, "values": values, "side": side,
                     "tt": self.tts.get(left) if ply >= 1 else None, "parents": None,
                     "group_of": group_of, "n_made": n_made}
            levels.append(level)
            if left == 1:
                if stats:
                    k.stats_values(boards, n, side, values)
                else:
                    k.count(boards, n, side, counts)
                    k.widen(counts, n, values)
                break
            tt = level["tt"]
            if stats:  # every board's move count, then the statistics table's hits take their 13 values
                k.zero(values)
                k.count_probe(boards, keys, n, side, None, 0, counts, values)
                if tt is not None:
                    k.stats_probe(keys, n, tt.entries, tt.slots, counts, values)
            else:
                k.count_probe(boards, keys, n, side, tt.entries if tt else None, tt.slots if tt else 0, counts, values)
            split = left == self.part_depth and self.parts > 1
            if (tt is not None or split) and self._hits_dev is None:
                self._hits_dev = k.xp.empty(HITS_SLOTS, dtype=np.uint64)
                k.zero(self._hits_dev)
            if split:  # this part's boards (slot OWN_SLOT): the probes the part made here
                # Statistics: the filter zeroes a board's count and node value only. Its other 12
                # counters stay 0 (no children); none came from the table, whose split-level
                # entries are all this part's positions (set_part resets the tables).
                k.part_filter(keys, boards, n, side, self.split, counts, values, self._hits_dev[OWN_SLOT:OWN_SLOT + 1])
            if tt is not None:  # hits counted on the device, per remaining depth; read once at the end of the call
                level["probes"] = None if split else n  # a split level's: read with the hits
                k.count_hits(counts, values, n, self._hits_dev[left:left + 1])
            offsets = a.alloc(f"offsets[{ply}]", n + 1, np.uint64)
            total = k.scan(counts, n, offsets)
            if total == 0:
                break
            moves = a.alloc(f"moves[{ply}]", total, np.uint16)
            parents = a.alloc(f"parents[{ply}]", total, np.uint32)
            k.gen(boards, n, side, offsets, moves, parents)
            level["parents"] = parents
            if stats and left == 2:  # the leaf parents' moves, classified into these boards' values
                if self.leaf_merge and (root_ply is None or root_ply + ply + 1 >= FIRST_TRANSPOSITION_PLY):
                    merged, groups = stats_leaf_merged(k, self.z_dev, boards, keys, parents, moves, total, side, values,
                                                       n, self.temp_bytes, self.leaf_merge_slice)
                    self.tt_stats["leaf_moves"] += merged
                    self.tt_stats["leaf_positions"] += groups
                else:
                    k.stats_leaf_values(boards, parents, moves, total, side, values, n)
                break
            if left <= 3 and not stats:
                if left == 3 and self.leaf_merge and (root_ply is None or root_ply + ply + 1 >= FIRST_TRANSPOSITION_PLY):
                    merged, groups = leaf_merged(k, self.z_dev, boards, keys, parents, moves, total, side, values,
                                                 self.temp_bytes, self.leaf_merge_slice)
                    self.tt_stats["leaf_moves"] += merged
                    self.tt_stats["leaf_positions"] += groups
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
                self.device_tables.store_launches += 1
                store = k.stats_store if stats else k.store
                store(lv["boards"], lv["keys"], lv["values"], lv["n"], tt.entries, tt.slots, tt.audit,
                      (self.device_tables.store_launches << 1) | lv["side"])
            if i > 0:  # each made board takes its merged group's value, then adds it to its parent
                up = levels[i - 1]
                if words == 1:
                    pairs = [(lv["values"], up["values"])]
                else:  # the same upsweep once a counter: slice c of a level of n boards is [c n, (c + 1) n)
                    pairs = [(lv["values"][c * lv["n"]:(c + 1) * lv["n"]], up["values"][c * up["n"]:(c + 1) * up["n"]])
                             for c in range(words)]
                for child_values, parent_values in pairs:
                    if lv["group_of"] is None:
                        k.upsweep(up["parents"], child_values, lv["n_made"], parent_values)
                    else:
                        k.upsweep_grouped(up["parents"], lv["group_of"], child_values, lv["n_made"], parent_values)
        # One synchronisation brings the roots' values and the hit counters back together.
        out, *hits = k.read(levels[0]["values"], *([] if self._hits_dev is None else [self._hits_dev]))
        if stats:
            out = np.ascontiguousarray(out.reshape(words, -1).T)
        k.synchronize()  # the stream is idle by now: this only reads the kernels' times
        self.stats.allocations.append(a.ordinal)
        self._last_call = (a.used, max((lv["n_made"] for lv in levels if lv["group_of"] is not None), default=0))
        if hits:
            hits = hits[0]
            for lv in levels:  # each remaining depth is one level of a call
                if lv["tt"] is not None:
                    r, found = lv["tt"].remaining, int(hits[lv["tt"].remaining])
                    # A split level probes every board but only this part's can be found or stored
                    # (others count 0 here): its probes are this part's boards.
                    probes = int(hits[OWN_SLOT]) if lv["probes"] is None else lv["probes"]
                    row = self.device_tables.stat(r)
                    row["probes"] += probes
                    row["hits"] += found
                    self.tt_stats["probes"] += probes
                    self.tt_stats["hits"] += found
                    # every board not found stores its count (zero counts excepted, see bfs_store)
                    row["stores"] += probes - found
        return out
