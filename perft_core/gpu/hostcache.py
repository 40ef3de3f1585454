"""The GPU driver's host table: a lossless cache of whole GPU calls' results, at and above the
launch depth, keyed by (key lo, key hi, remaining depth) and bounded by the host's memory.

An entry here saves a whole BFS call's root (perft of the launch depth or more), so it is never
evicted: when the cache is full it stops storing. Its size comes from the memory limit of this
process (the cgroup's limit where one is set, else the machine's memory), not from what is free
when the driver starts: on the multi-GPU device machines ``MemTotal`` starts small and grows as
memory is used (KINDS.md of the device tool), so the limit is read again each time the cache
fills.
"""
from __future__ import annotations

import os
from pathlib import Path

HOST_CACHE_SHARE = 0.05
"""The share of the host's memory limit the cache may take (several GPU workers of one host each
have one)."""
ENTRY_COST_BYTES = 256
"""Host bytes one entry costs in a Python dict (a 3-int tuple key, an int value, the dict slot),
measured with tracemalloc on CPython 3.11: 210 bytes an entry at 10^6 entries (random
128-bit keys); 256 leaves a margin."""
MIN_ENTRIES = 1 << 20


def memory_limit_bytes() -> int:
    """This process's memory limit in bytes: the cgroup v2 ``memory.max`` (or v1
    ``memory.limit_in_bytes``) where it is a number below the machine's memory, else ``MemTotal``
    of /proc/meminfo; 2^33 (8 GiB) where neither can be read."""
    total = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    limit = None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            limit = int(text)
            break
    if limit is not None and (total is None or limit < total):
        return limit
    return total if total is not None else 1 << 33


def default_entries() -> int:
    """Entries the cache may hold: HOST_CACHE_SHARE of :func:`memory_limit_bytes` at
    ENTRY_COST_BYTES an entry, at least MIN_ENTRIES; ``PERFT_HOST_CACHE_ENTRIES`` (an integer)
    overrides it."""
    forced = os.environ.get("PERFT_HOST_CACHE_ENTRIES", "").strip()
    if forced.isascii() and forced.isdigit():
        return int(forced)
    return max(MIN_ENTRIES, int(memory_limit_bytes() * HOST_CACHE_SHARE // ENTRY_COST_BYTES))


class HostCache:
    """{(key lo, key hi, remaining depth): count} with a bound on its entries (None: from the
    host's memory, :func:`default_entries`, read again whenever the cache fills). ``audit``: keep
    (board words, side, castle info bytes) of each entry for ``entries``."""

    def __init__(self, max_entries: int | None = None, audit: bool = False):
        self.fixed = max_entries
        self.max_entries = max_entries if max_entries is not None else default_entries()
        self.audit = audit
        self.counts: dict[tuple[int, int, int], int] = {}
        self.records: dict[tuple[int, int, int], tuple] = {}

    def __len__(self) -> int:
        return len(self.counts)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def get(self, key: tuple[int, int, int]):
        """The count stored for ``key``, or None."""
        return self.counts.get(key)

    def full(self) -> bool:
        """True when no entry may be added (the bound is re-read from the host's memory first)."""
        if len(self.counts) < self.max_entries:
            return False
        if self.fixed is None:
            self.max_entries = max(self.max_entries, default_entries())
        return len(self.counts) >= self.max_entries

    def put(self, key: tuple[int, int, int], count: int, record: tuple | None = None) -> bool:
        """Store ``count`` under ``key`` unless the cache is full (then False: lossless, it never
        evicts). ``record`` (board words, side, castle info bytes) is kept in audit mode."""
        if key not in self.counts and self.full():
            return False
        self.counts[key] = count
        if self.audit and record is not None:
            self.records[key] = record
        return True

    def clear(self) -> None:
        self.counts.clear()
        self.records.clear()

    def entries(self):
        """Every entry as (remaining, key (int), board words, side, count, castle info bytes);
        needs audit mode."""
        for (lo, hi, r), count in self.counts.items():
            words, side, ci = self.records[(lo, hi, r)]
            yield r, (hi << 64) | lo, words, side, count, ci
