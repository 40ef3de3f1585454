"""How many CPU threads a count uses when the caller does not say: every core this process may run on."""
from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on: ``len(os.sched_getaffinity(0))`` (honours taskset, cgroup
    cpusets and container limits set through affinity), ``os.cpu_count()`` where affinity is
    unknown (macOS, Windows); at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_threads(threads: object) -> int:
    """``threads`` checked: None gives :func:`available_cores`, else a positive int (returned).

    Raises:
        ValueError: threads is not None and not an int >= 1 (bool refused).
    """
    if threads is None:
        return available_cores()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    return threads
