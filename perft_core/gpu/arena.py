"""One preallocated device buffer handed out by a bump allocator with named allocation sites."""
from __future__ import annotations

from dataclasses import dataclass, field


class DeviceOutOfMemory(MemoryError):
    """A BFS allocation did not fit (or a fault plan made it fail).

    Attributes: ``site`` (the allocation site's name), ``nbytes`` (bytes asked for), ``ordinal``
    (how many allocations the arena had made since its last reset), ``injected`` (True when a fault
    plan, not a real shortage, caused it).
    """

    def __init__(self, site: str, nbytes: int, ordinal: int, free: int, injected: bool = False):
        self.site, self.nbytes, self.ordinal, self.free, self.injected = site, nbytes, ordinal, free, injected
        how = "injected fault" if injected else f"only {free} bytes free"
        super().__init__(f"device out of memory at {site}: {nbytes} bytes asked ({how})")


@dataclass
class Arena:
    """Bump allocator over one buffer of ``capacity`` bytes of array module ``xp``.

    ``alloc`` returns a typed, contiguous view; nothing is freed individually: ``reset`` starts the
    next BFS call from the bottom. ``peak`` is the most bytes ever in use (bytes).
    """

    xp: object
    capacity: int
    fault_plan: object | None = None
    name: str = "bfs"
    align: int = 256
    used: int = 0
    peak: int = 0
    ordinal: int = 0
    _buf: object = field(default=None, repr=False)

    def __post_init__(self):
        self._buf = self.xp.empty(self.capacity, dtype=self.xp.uint8)
        # CuPy: views made straight from the buffer's device pointer (a slice and a view cost two
        # array set-ups in CuPy's indexing, a few microseconds each, at every allocation of a call)
        data = self._buf.data
        self._memptr = data if getattr(data, "ptr", 0) else None

    def reset(self) -> None:
        self.used = 0
        self.ordinal = 0

    def alloc(self, site: str, count: int, dtype) -> object:
        """A view of ``count`` elements of ``dtype`` at the bump pointer; raises DeviceOutOfMemory."""
        dtype = self.xp.dtype(dtype)
        nbytes = int(count) * dtype.itemsize
        start = -(-self.used // self.align) * self.align
        self.ordinal += 1
        if self.fault_plan is not None and self.fault_plan.should_fail(site, self.ordinal, nbytes, self.name):
            raise DeviceOutOfMemory(site, nbytes, self.ordinal, self.capacity - start, injected=True)
        if start + nbytes > self.capacity:
            raise DeviceOutOfMemory(site, nbytes, self.ordinal, self.capacity - start)
        self.used = start + nbytes
        self.peak = max(self.peak, self.used)
        if self._memptr is not None:
            return self.xp.ndarray((int(count),), dtype=dtype, memptr=self._memptr + start)
        return self._buf[start:start + nbytes].view(dtype)


@dataclass
class FaultPlan:
    """Makes chosen arena allocations fail with DeviceOutOfMemory (fault injection for tests).

    An allocation matches when every given criterion holds: ``site`` (a pattern over site names,
    ``*`` and ``?`` wildcards, brackets literal), ``arena`` (``"bfs"`` or ``"tt"``), such as
    ``"moves[*]"`` or ``"boards[2]"``), ``ordinal`` (the n-th allocation since the arena's reset, from
    1), ``min_bytes`` (at least that many bytes). ``times`` is how many matches fail (then the plan is
    spent); ``fired`` counts the failures made, so a test can prove the fault happened.
    Text form (``PERFT_FAULT_PLAN``): ``site=moves[*],arena=bfs,ordinal=3,min_bytes=1000,times=2``.
    """

    site: str | None = None
    arena: str | None = None
    ordinal: int | None = None
    min_bytes: int | None = None
    times: int = 1
    fired: int = 0

    def should_fail(self, site: str, ordinal: int, nbytes: int, arena: str = "bfs") -> bool:
        import fnmatch

        if self.fired >= self.times:
            return False
        if self.arena is not None and arena != self.arena:
            return False
        # Brackets in site names are literal ("moves[2]"); only * and ? are wildcards.
        pattern = None if self.site is None else self.site.replace("[", "\0").replace("]", "[]]").replace("\0", "[[]")
        if pattern is not None and not fnmatch.fnmatchcase(site, pattern):
            return False
        if self.ordinal is not None and ordinal != self.ordinal:
            return False
        if self.min_bytes is not None and nbytes < self.min_bytes:
            return False
        self.fired += 1
        return True

    @classmethod
    def parse(cls, text: str) -> "FaultPlan":
        """Read the text form; raises ValueError naming a bad key or value."""
        kw: dict = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep or key not in ("site", "arena", "ordinal", "min_bytes", "times"):
                raise ValueError(f"fault plan: bad entry {part!r} (keys: site, arena, ordinal, min_bytes, times)")
            try:
                kw[key] = value if key in ("site", "arena") else int(value)
            except ValueError:
                raise ValueError(f"fault plan: {key} needs an integer, got {value!r}") from None
        return cls(**kw)
