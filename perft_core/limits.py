"""Bounds on every argument that becomes memory, recursion or threads, checked before any work.

A value out of bounds raises :class:`LimitError` (a ValueError: the ``perft`` command prints it as
one line ``perft: error: ...`` with exit status 2) instead of a crash later: a stack overflow in
the recursion (F1 of issue 26: depth 9500 segfaulted), a thread the system refuses (threads 50000
aborted), a split that fills the memory (``perft deep`` at depth 10000 grew to 24 GB).

The numbers:

- ``MAX_DEPTH`` = 64 plies (the C++ extension's ``pc_host::MAX_DEPTH``, checked there too): the
  recursion takes one stack frame (about 600 bytes) a ply, and a count deeper than 64 plies
  overflows a 64-bit count for any position with at least two legal moves a ply, so no count that
  can be made is refused.
- ``MAX_THREADS`` = 1024 (``pc_host::MAX_THREADS``); a machine that refuses some of them counts on
  the threads it gave.
- ``MAX_SPLIT_PLY`` = 6: ``perft deep`` holds every unique position of its split ply in memory and
  in its store (startpos: 9,417,681 positions at ply 6, about 3 GB of store); and
  ``MAX_SPLIT_CHILDREN`` = 50,000,000 boards (2 GB) at any ply of the expansion.
- CPU tables: at most the memory the system says is available (``MemAvailable`` of /proc/meminfo,
  else the physical memory): their pages are all made when the table is (perft_core/src/tt.h), so a
  larger table would be killed by the system's out-of-memory killer instead of refused.
"""
from __future__ import annotations

import time

MAX_DEPTH = 64
MAX_THREADS = 1024
MAX_SPLIT_PLY = 6
MAX_SPLIT_CHILDREN = 50_000_000
MAX_TT_MB = 1 << 40
"""The largest tables' budget taken, MiB (1 EiB: its bytes fit in 2**60): a bound on the number
itself (``--tt-mb 1e303`` overflowed into a traceback: session 43's hunt); what a machine can give
is checked when tables are made (:func:`check_table_bytes`, the GPU's memory)."""


LOCAL_WORKERS_PER_CORE = 4
"""``perft deep --workers N``: a local cluster has at most this many worker processes a core this
process may run on (each counts on one thread; more only share the cores, and ``--workers 100000``
spent ten minutes and 1.6 GB starting none, deaf to SIGTERM: session 43's hunt)."""


def max_local_workers() -> int:
    """The most workers of a local ``perft deep`` cluster: :data:`LOCAL_WORKERS_PER_CORE` a core
    this process may run on."""
    from .threads import available_cores

    return LOCAL_WORKERS_PER_CORE * available_cores()


def check_local_workers(workers: int) -> None:
    """Raise LimitError when ``workers`` (a positive int) is over :func:`max_local_workers`."""
    from .threads import available_cores

    most = max_local_workers()
    if workers > most:
        raise LimitError(f"workers must be at most {most} ({LOCAL_WORKERS_PER_CORE} a core of the "
                         f"{available_cores()} this process may run on), got {workers}: more local worker "
                         "processes only share the cores")


class LimitError(ValueError):
    """An argument beyond what the machine or the engine can serve; the message names it and its bound."""


def _int_in(name: str, value: object, low: int, high: int, unit: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise LimitError(f"{name} must be an integer in {low}..{high}{unit}, got {value!r}")


def available_memory_bytes() -> int | None:
    """Bytes of memory the system can give this process now: Linux's ``MemAvailable``
    (/proc/meminfo), else the physical memory (``os.sysconf``), None where neither is known."""
    import os

    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def check_table_bytes(nbytes: int) -> None:
    """Raise LimitError when CPU tables of ``nbytes`` bytes exceed :func:`available_memory_bytes`."""
    avail = available_memory_bytes()
    if avail is not None and nbytes > avail:
        raise LimitError(f"tt_mb: {nbytes / 2**20:,.0f} MiB of tables is more than the memory available on this "
                         f"machine ({avail / 2**20:,.0f} MiB); ask for less")


def check_depth(depth: object) -> None:
    """Raise LimitError unless ``depth`` is an int in 0..MAX_DEPTH (plies)."""
    _int_in("depth", depth, 0, MAX_DEPTH, " plies")


def check_threads(threads: object) -> None:
    """Raise LimitError unless ``threads`` is an int in 1..MAX_THREADS."""
    _int_in("threads", threads, 1, MAX_THREADS)


def check_split_ply(split_ply: object, depth: int | None) -> None:
    """Raise LimitError unless ``split_ply`` is an int in 0..min(depth, MAX_SPLIT_PLY) (plies)."""
    high = MAX_SPLIT_PLY if depth is None else min(depth, MAX_SPLIT_PLY)
    _int_in("split ply", split_ply, 0, high, f" (at most the depth and {MAX_SPLIT_PLY})")


def check_split_children(children: int, ply: int) -> None:
    """Raise LimitError when expanding to ``ply`` would make more than MAX_SPLIT_CHILDREN boards."""
    if children > MAX_SPLIT_CHILDREN:
        raise LimitError(f"splitting at ply {ply} makes {children:,} positions (more than {MAX_SPLIT_CHILDREN:,}, "
                         f"about {MAX_SPLIT_CHILDREN * 40 >> 30} GB): choose a smaller split ply")


SPLIT_BYTES_PER_CHILD = 320
"""Peak bytes a child board costs while a split ply is expanded and merged (boards, parents, keys,
multiplicities, the sort and the normal forms): 199 measured (growth of VmPeak and of the resident
peak, startpos ply 4 -> 5, 1,797,389 children of the 197,281 boards merged, 2026-11-26; tracemalloc
sees 77 of them), with a margin for the arrays of the ply before."""
SPLIT_BYTES_PER_UNIT = 1024
"""Bytes a unit of the split ply costs as Python objects (its FEN text, key, estimate; the store's rows)."""


def memory_headroom_bytes() -> int | None:
    """Bytes this process can still take: :func:`available_memory_bytes`, and under an address-space
    limit (``ulimit -v``, RLIMIT_AS) what is left of it; None where neither is known."""
    import resource

    avail = available_memory_bytes()
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        soft = resource.RLIM_INFINITY
    if soft != resource.RLIM_INFINITY:
        used = 0
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmSize:"):
                        used = int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        left = max(soft - used, 0)
        avail = left if avail is None else min(avail, left)
    return avail


def check_split_memory(nbytes: float, what: str) -> None:
    """Raise LimitError when ``nbytes`` (the memory a split step needs, ``what`` in words) exceeds
    :func:`memory_headroom_bytes`: refused before it is allocated, not a MemoryError traceback."""
    left = memory_headroom_bytes()
    if left is not None and nbytes > left:
        raise LimitError(f"{what} needs about {nbytes / 2**30:,.1f} GiB of memory, more than the "
                         f"{left / 2**30:,.1f} GiB this process can take: choose a smaller split ply")


def check_count(depth: object, threads: object) -> None:
    """The bounds of one count (perft_core.perft / divide): depth and threads.

    Raises LimitError naming the first argument out of bounds.
    """
    check_depth(depth)
    check_threads(threads)


def cpu_count(watch, core_args: tuple, depth: int, threads: int) -> int:
    """``_core.perft(core_args, depth, threads)`` (nodes, int) within the time limit of ``watch``
    (a :class:`perft_core.watch.Watch`): the extension stops at the deadline itself, however long
    the call (``--max-seconds`` with ``--force``, where no estimate splits the count into short calls).

    Raises perft_core.watch.Deadline when the limit passes before the count is done.
    """
    from . import _core

    return cpu_limited(watch, lambda left: _core.perft(core_args, depth, threads, left))


def cpu_limited(watch, count) -> int:
    """``count(max_seconds)`` (an extension call that stops itself after ``max_seconds`` > 0 with
    ``_core.CountStopped``; 0: no limit), given what is left of the time limit of ``watch``: nodes, int.

    Raises perft_core.watch.Deadline when the limit passes before the count is done.
    """
    from . import _core

    watch.check()
    left = 0.0 if watch.max_seconds is None else max(watch.max_seconds - watch.elapsed(), 1e-3)
    try:
        return int(count(left))
    except _core.CountStopped:
        watch.expire()


def seconds_left(max_seconds: float, t0: float) -> float:
    """What a count's time limit leaves after the work since ``t0`` (``time.perf_counter()`` when the
    count was asked for: the tables it makes first count against its limit; making 8 GiB of
    statistics tables took 9.8 s of a 3 s limit): 0 for no limit (``max_seconds`` 0 or less, the
    extension's convention); a limit already passed is 1e-9 s, the extension's smallest deadline (it
    stops at once: CountStopped)."""
    if not max_seconds or max_seconds <= 0:
        return 0.0
    return max(max_seconds - (time.perf_counter() - t0), 1e-9)
