"""The device transposition tables of the GPU driver: one table per remaining depth, 16-byte
XOR-checked entries (kernels/pc_tt.h) in two-way buckets of 32 bytes for node counts (way 0 keeps
the bigger count, kernels/pc_bfs.h ``bfs_store``), carved out of one arena, and their statistics.

How the budget is shared between remaining depths is this module's one decision
(``plan_slots``): each slot goes where it saves the most work, from the positions it adds to its
table (a model of a table that keeps the last store; the two ways keep somewhat more) and the work a hit at its remaining depth
saves (LEVEL_VALUE a ply); every table is bounded by SLOTS_PER_POSITION slots for each distinct
position of the ply it serves.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .arena import Arena, DeviceOutOfMemory

ENTRY_BYTES = 16
ENTRY_WORDS = ENTRY_BYTES // 8
STATS_ENTRY_WORDS = 8
"""uint64 words of a statistics entry (kernels/pc_tt_stats.h: check, nodes, the other 12 counters
as 32-bit halves; a count with a wider one is not stored): a statistics count's tables
(``DeviceTables.entry_words``) have 4x fewer slots than a node count's for the same bytes (8x
before session 27's 16-word entries were halved)."""
AUDIT_BYTES = 64
"""Audit mode's record a slot: board (5 words), key (2), tag (1)."""
TT_SHARE = 0.75
"""The tables' default share of the driver's device memory (the BFS arena gets the rest). Measured
on H200s: startpos perft 12 counted 54 % of its nodes in 200 s with 30 % (35.5 GiB: the
remaining-depth-3 table 96 % full, 7.2 G of 9.2 G stores evicted) and 66 % with 88 GiB; perft 11
took 21.1 s with 30 % and 20.8 s with 49 % (NOTES "Session 10"). From 60 % to about 75 %
(session 26, two H200s, both GPU orders): startpos perft 12 215.6 / 215.2 s -> 209.4 / 208.4 s
(remaining-depth-3 table 2.04 -> 2.95 G slots, hits 17.3 -> 23.4 %), Kiwipete perft 9 20.64 ->
20.39 s. Counts of one BFS call use no table."""
HITS_SLOTS = 64  # device hit counters of a BFS call, one per remaining depth
DEPTH_COUNTERS = ("probes", "hits", "host_probes", "host_hits", "stores")
"""The cumulative counters of ``DeviceTables.depth_stats`` (per remaining depth): subtract two
snapshots for the figures between them (a count, a deep run's batch)."""
MIN_SLOTS = 1024
LOWEST_FLOOR = 0.5
"""The least share of its proportional slots (``plan_slots`` with value 1) the lowest table keeps.
A hedge, not a measurement: on four H200s at perft 13 the value-weighted rule gave the r = 3 tables
nothing and counted 5.1 x 10^14 nodes/s against 6.9 x 10^14 for the proportional rule's run of
issue 33 (other units; NOTES.md "Session 14"). It binds only where the lowest table would get
less than half its proportional share: not at perft 12 on one or four H200s, where the
value-weighted rule was measured faster."""
SLOTS_PER_POSITION = 4
"""The most slots a table gets per distinct position of its ply (a load factor of 1/4 keeps
overwrites rare; more slots only cost zeroing). The lowest table of a run's shared tables has no
such bound: it takes what is left."""
LEVEL_VALUE = 10.0
"""How much more work a hit at remaining depth r + 1 saves than one at r (``plan_slots``): a hit at
r + 1 saves a perft r + 1, about one branching factor (10-30 with tables) more than a hit at r, and
the repeats per distinct position are alike across plies. 1 shares the budget in proportion to the
distinct positions (the rule of sessions 2-13). Measured on an H200 (NOTES.md "Session 14"):
startpos perft 12 262 s with 1 (session 12), 214 s with 10; perft 11 with 3 GB of tables 28.6 s
with 1, 18.4 s with 10 and with 1e9 (top-down); perft 11 with the default 71 GB, where every
table fits, 14.7 s either way."""


_M64 = (1 << 64) - 1


def stats_entry_counters(words) -> tuple[int, ...]:
    """The 13 counters (ints, STATS_FIELDS order) a statistics entry holds: ``words`` its
    STATS_ENTRY_WORDS uint64 words (check, nodes, then 12 counters two to a word, the odd-numbered
    one in the low half; kernels/pc_tt_stats.h)."""
    w = [int(x) for x in words]
    halves = [(x >> shift) & 0xFFFFFFFF for x in w[2:STATS_ENTRY_WORDS] for shift in (0, 32)]
    return (w[1], *halves)


def stats_entry_mix(counters) -> int:
    """The digest of a statistics entry's 13 counters (ints, STATS_FIELDS order) that its check word
    holds (check = key.hi ^ digest): ``tts_mix`` of kernels/pc_tt_stats.h, written again in Python
    for the audit (an audit that found no entry valid would show a difference)."""
    h = 0x243F6A8885A308D3
    for k, w in enumerate(counters):
        h ^= (int(w) + 0x9E3779B97F4A7C15 * (k + 1)) & _M64
        h ^= h >> 30
        h = (h * 0xBF58476D1CE4E5B9) & _M64
        h ^= h >> 27
        h = (h * 0x94D049BB133111EB) & _M64
        h ^= h >> 31
    return h


def held_gain(s: float) -> float:
    """The positions one more slot keeps, per slot, in a table of ``s`` slots per distinct
    position (float > 0): with keys spread uniformly and the last store kept, a table of S slots
    holds S (1 - e^(-D/S)) of D positions, whose derivative in S is 1 - e^(-1/s) (1 + 1/s):
    1 for an empty table, 0.26 at one slot a position, 0.09 at two, 0.03 at four."""
    x = 1.0 / s
    return -math.expm1(-x) - x * math.exp(-x)


def _slots_per_position(gain: float) -> float:
    """The inverse of :func:`held_gain` on (0, 1): the s at which one more slot keeps ``gain``."""
    lo, hi = -30.0, 30.0  # log s
    for _ in range(50):  # 60 / 2^50 in log s: far below a slot
        mid = (lo + hi) / 2
        if held_gain(math.exp(mid)) > gain:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def plan_slots(distinct: dict[int, float], budget_slots: float, cap_lowest: bool = True,
               value: float = LEVEL_VALUE, above_lowest: float = 1.0, split: int | None = None) -> dict[int, int]:
    """Slots per remaining depth for a set of tables.

    ``distinct``: {remaining depth r: distinct positions the table of r serves (float)};
    ``budget_slots``: the slots there is memory for. The budget goes where one more slot saves
    the most work: a slot of table r is worth ``value^(r - lowest r)`` x the positions it adds
    (:func:`held_gain`), and slots are added until that worth is equal across the tables
    (bisection on it), each table bounded by SLOTS_PER_POSITION x its positions, except the lowest
    when ``cap_lowest`` is False (a deep run's shared tables: it takes whatever is left). With
    ``value`` 1 every table gets the same slots per position: shares in proportion to the
    positions. ``above_lowest``: the share of the work below a position above remaining depth
    ``split`` (default: the lowest table's) that a hit saves this driver (1 / parts for a count
    split into parts at that depth, ``TTBfsDriver.set_part``: a part counts only its share of the
    work under any position above the split, so a hit there saves it that share, while a hit at or
    below the split level saves the whole count under it). The lowest table keeps at least
    LOWEST_FLOOR of the share the positions alone would give it (the model's one known blind spot:
    the leaf level's repeats are closer in time than uniform keys assume). Returns {r: slots (int, >= MIN_SLOTS)}; their sum is the budget, or
    less when every table is at its bound, or more only through MIN_SLOTS.
    """
    if not distinct:
        return {}
    low = min(distinct)
    split = low if split is None else split
    pos = {r: max(float(d), 1.0) for r, d in distinct.items()}
    bound = {r: (math.inf if (r == low and not cap_lowest) else SLOTS_PER_POSITION * pos[r]) for r in pos}
    logw = {r: (r - low) * math.log(max(value, 1e-300)) + (math.log(above_lowest) if r > split else 0.0)
            for r in pos}  # the worth of a slot, in logs

    def slots_at(log_gain: float, floor: float) -> dict[int, float]:
        """Each table's slots where one more slot's worth falls to e^log_gain (the lowest at least ``floor``)."""
        out = {}
        for r in pos:
            g = log_gain - logw[r]  # the gain table r's next slot must still add
            out[r] = 0.0 if g >= 0 else min(bound[r], pos[r] * _slots_per_position(math.exp(g)))
        out[low] = max(out[low], floor)
        return out

    def fill(floor: float) -> dict[int, float]:
        lo, hi = -700.0, max(logw.values())  # log of the worth of the last slot given
        for _ in range(60):  # 700 / 2^60 in log worth: far below a slot
            mid = (lo + hi) / 2
            if sum(slots_at(mid, floor).values()) > budget_slots:
                lo = mid
            else:
                hi = mid
        slots = slots_at(hi, floor)
        for r in sorted(pos):  # what the bisection left goes to the lowest tables with room
            slots[r] += min(bound[r] - slots[r], budget_slots - sum(slots.values()))
        return slots

    if sum(bound.values()) <= budget_slots:
        slots = dict(bound)
    else:
        floor = LOWEST_FLOOR * min(bound[low], budget_slots * pos[low] / sum(pos.values()))
        slots = fill(floor)
    return {r: max(int(slots[r]), MIN_SLOTS) for r in sorted(pos)}


@dataclass
class DeviceTT:
    """The device table of one remaining depth: ``slots`` entries of two uint64 words (check, data),
    or of STATS_ENTRY_WORDS words in a statistics count's tables (kernels/pc_tt_stats.h);
    ``audit`` (audit mode) holds 8 words a slot: board (5), key lo, key hi, tag (store launch number
    << 1 | side to move: one board per slot and launch writes entry and record, see bfs_store)."""

    remaining: int
    slots: int
    entries: object
    audit: object | None


class DeviceTables:
    """The tables of one driver: ``tts`` {remaining depth: DeviceTT} in an arena of ``nbytes``.

    ``kernels``: the kernel set (its ``xp`` and ``zero``); ``fault_plan``: as for Arena; ``audit``:
    keep a record of each stored slot (tests). ``depth_stats`` {r: DEPTH_COUNTERS} are cumulative
    over the driver's counts and outlive a reset of the tables. ``entry_words``: ENTRY_WORDS (node
    counts, kernels/pc_tt.h) or STATS_ENTRY_WORDS (statistics, kernels/pc_tt_stats.h), set by
    :meth:`use_entries`.
    """

    def __init__(self, kernels, nbytes: int, fault_plan=None, audit: bool = False):
        self.k = kernels
        self.arena = Arena(kernels.xp, nbytes, fault_plan, name="tt")
        self.audit_mode = audit
        self.tts: dict[int, DeviceTT] = {}
        self.depth_stats: dict[int, dict[str, int]] = {}
        self._stores_at_plan: dict[int, int] = {}
        self.store_launches = 0  # numbers each store launch (audit records: one writer a slot and launch)
        self.disabled = 0  # tables that did not fit (a table is an optimisation: the count goes on without)
        self.entry_words = ENTRY_WORDS

    def use_entries(self, words: int) -> bool:
        """Hold entries of ``words`` uint64 words (ENTRY_WORDS or STATS_ENTRY_WORDS) from now on;
        a change forgets every table (:meth:`reset`). Returns True when it changed.

        Raises ValueError for another number of words."""
        if words not in (ENTRY_WORDS, STATS_ENTRY_WORDS):
            raise ValueError(f"entries are {ENTRY_WORDS} or {STATS_ENTRY_WORDS} words, got {words!r}")
        if words == self.entry_words:
            return False
        self.reset()
        self.entry_words = words
        return True

    def reset(self) -> None:
        """Forget every table (the memory goes back to the arena)."""
        self.tts = {}
        self.arena.reset()

    def stat(self, r: int) -> dict[str, int]:
        """The cumulative counters of remaining depth ``r`` (made on first use)."""
        got = self.depth_stats.get(r)
        if got is None:
            got = self.depth_stats[r] = dict.fromkeys(DEPTH_COUNTERS, 0)
        return got

    def plan(self, distinct: dict[int, float], cap_lowest: bool = True, value: float = LEVEL_VALUE,
             above_lowest: float = 1.0, split: int | None = None) -> list[str]:
        """Allocate and zero a table for each remaining depth of ``distinct`` ({r: distinct positions
        it serves}), sized by :func:`plan_slots` (``split``, ``above_lowest`` as there) from 95 % of
        the arena. Returns the arena sites that
        did not fit (those depths get no table)."""
        sizes = plan_slots(distinct, self.arena.capacity * 0.95 / self.slot_bytes(), cap_lowest, value, above_lowest,
                           split)
        return self.allocate(sizes)

    def slot_bytes(self) -> int:
        """Device bytes a slot takes: its entry, and its audit record in audit mode."""
        return 8 * self.entry_words + (AUDIT_BYTES if self.audit_mode else 0)

    def allocate(self, sizes: dict[int, int]) -> list[str]:
        """Allocate and zero a table of ``sizes[r]`` slots for each remaining depth r (after
        :meth:`reset`). Returns the arena sites that did not fit (those depths get no table)."""
        failed = []
        for r in sorted(sizes, key=sizes.get):  # smallest first: a shortfall hits the largest table only
            slots = sizes[r]
            try:
                entries = self.arena.alloc(f"tt[{r}]", self.entry_words * slots, np.uint64)
                self.k.zero(entries)
                audit = None
                if self.audit_mode:
                    audit = self.arena.alloc(f"tt_audit[{r}]", 8 * slots, np.uint64)
                    self.k.zero(audit)
            except DeviceOutOfMemory as exc:
                failed.append(exc.site)
                self.disabled += 1
                continue
            self.tts[r] = DeviceTT(r, slots, entries, audit)
            self._stores_at_plan[r] = self.stat(r)["stores"]
        return failed

    def loaded(self, entries: dict[int, int]) -> None:
        """Count ``entries`` ({r: entries}) loaded into the tables (``tableimage.load``) as stores
        since the plan, so that ``evictions`` (stores since the plan less occupied slots) stays a
        count of this process's evictions."""
        for r, m in entries.items():
            self._stores_at_plan[r] = self._stores_at_plan.get(r, 0) - int(m)

    def statistics(self, occupancy: bool = True) -> dict[int, dict[str, int]]:
        """Per remaining depth r: DEPTH_COUNTERS (cumulative), and where a table of r exists now
        ``slots``, with ``occupancy`` also ``occupied`` and ``evictions`` (see
        ``TTBfsDriver.tt_statistics``)."""
        out: dict[int, dict[str, int]] = {r: dict(v) for r, v in self.depth_stats.items()}
        for r, tt in self.tts.items():
            row = out.setdefault(r, dict.fromkeys(DEPTH_COUNTERS, 0))
            row["slots"] = int(tt.slots)
            if occupancy and self.entry_words != ENTRY_WORDS:  # a statistics entry is held where its nodes are
                occupied = self.k.nonzero_rows(tt.entries[1:], int(tt.slots), self.entry_words, rows=False)[0]
            elif occupancy:
                occupied = (self.k.nonzero_rows(tt.entries, int(tt.entries.size), 1, rows=False)[0] + 1) // 2
            if occupancy:
                since_plan = row["stores"] - self._stores_at_plan.get(r, 0)
                row.update(occupied=occupied, evictions=max(0, since_plan - occupied))
        return dict(sorted(out.items()))

    def entries(self, ci_bytes: bytes):
        """Every valid entry (audit mode) as (remaining, key, board words (5,), side, count, castle
        info bytes ``ci_bytes``); an entry overwritten by a later store in the same slot is skipped.
        In statistics tables the count is the entry's 13 counters (a tuple of ints, STATS_FIELDS
        order)."""
        if self.entry_words != ENTRY_WORDS:
            yield from self._stats_entries(ci_bytes)
            return
        for r, tt in sorted(self.tts.items()):
            e = np.asarray(tt.entries.get() if hasattr(tt.entries, "get") else tt.entries).reshape(-1, 2)
            a = np.asarray(tt.audit.get() if hasattr(tt.audit, "get") else tt.audit).reshape(-1, 8)
            for s in np.nonzero(e[:, 1])[0]:
                check, data = int(e[s, 0]), int(e[s, 1])
                lo, hi = int(a[s, 5]), int(a[s, 6])
                if check ^ data != hi:  # overwritten by a later store in the same slot: audit that one
                    continue
                yield r, (hi << 64) | lo, a[s, :5].copy(), int(a[s, 7]) & 1, data, ci_bytes

    def _stats_entries(self, ci_bytes: bytes):
        """``entries`` of statistics tables: a slot whose check word fails (overwritten by a later
        store in the same slot, or torn) is skipped, as a probe skips it."""
        w = self.entry_words
        for r, tt in sorted(self.tts.items()):
            e = np.asarray(tt.entries.get() if hasattr(tt.entries, "get") else tt.entries).reshape(-1, w)
            a = np.asarray(tt.audit.get() if hasattr(tt.audit, "get") else tt.audit).reshape(-1, 8)
            for s in np.nonzero(e[:, 1])[0]:
                counters = stats_entry_counters(e[s])
                lo, hi = int(a[s, 5]), int(a[s, 6])
                if int(e[s, 0]) ^ stats_entry_mix(counters) != hi:
                    continue
                yield r, (hi << 64) | lo, a[s, :5].copy(), int(a[s, 7]) & 1, counters, ci_bytes
