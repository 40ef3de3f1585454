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
    align: int = 256
    used: int = 0
    peak: int = 0
    ordinal: int = 0
    _buf: object = field(default=None, repr=False)

    def __post_init__(self):
        self._buf = self.xp.empty(self.capacity, dtype=self.xp.uint8)

    def reset(self) -> None:
        self.used = 0
        self.ordinal = 0

    def alloc(self, site: str, count: int, dtype) -> object:
        """A view of ``count`` elements of ``dtype`` at the bump pointer; raises DeviceOutOfMemory."""
        dtype = self.xp.dtype(dtype)
        nbytes = int(count) * dtype.itemsize
        start = -(-self.used // self.align) * self.align
        self.ordinal += 1
        if self.fault_plan is not None and self.fault_plan.should_fail(site, self.ordinal, nbytes):
            raise DeviceOutOfMemory(site, nbytes, self.ordinal, self.capacity - start, injected=True)
        if start + nbytes > self.capacity:
            raise DeviceOutOfMemory(site, nbytes, self.ordinal, self.capacity - start)
        self.used = start + nbytes
        self.peak = max(self.peak, self.used)
        return self._buf[start:start + nbytes].view(dtype)
