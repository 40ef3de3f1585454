"""The process-wide GPU drivers: one per backend and process, made on first use.

``get_driver`` is the only place that knows which driver class serves a backend (``TTBfsDriver``,
which counts with or without tables), so ``driver.BfsDriver`` stays a base that knows no subclass.
"""
from __future__ import annotations

import os

from .arena import FaultPlan

_DRIVERS: dict[str, object] = {}


def get_driver(backend: str, tt_mb: float | None = None):
    """The process-wide driver for ``"gpu"`` (CuPy) or ``"gpu-emulated"`` (NumPy + host kernels).

    One driver per device and process (each holds its arena): a ``TTBfsDriver`` that counts with
    or without transposition tables (its ``tt_enabled``). ``tt_mb`` sizes its TTs (MiB; default
    75 % of its memory, tables.TT_SHARE), fixed when the driver is made: asking later for another size raises
    ValueError. The emulated memory comes from ``PERFT_EMULATED_MB`` (default 256 MiB), the real
    device's from ``PERFT_GPU_MB`` (default 85 % of the free memory: set it to leave room for
    another GPU program, e.g. an engine under test); a fault plan from ``PERFT_FAULT_PLAN``.
    Raises ValueError if ``"gpu"`` is asked for and CuPy or a CUDA device is missing.
    """
    drv = _DRIVERS.get(backend)
    if drv is not None:
        if tt_mb is not None and int(tt_mb * 2**20) != drv.tt_arena.capacity:
            raise ValueError(f"the {backend} driver of this process already has {drv.tt_arena.capacity / 2**20:g} MiB "
                             f"of transposition tables; tt_mb={tt_mb} cannot change it")
        return drv
    if tt_mb is not None:
        from ..zobrist import check_tt_mb

        check_tt_mb(tt_mb)
    _DRIVERS[backend] = drv = _make_driver(backend, tt_mb)
    return drv


def _make_driver(backend: str, tt_mb: float | None):
    from .kernels import CupyKernels, EmulatedKernels
    from .ttdriver import TTBfsDriver  # a module above this one's dependencies: no circle

    plan = FaultPlan.parse(os.environ["PERFT_FAULT_PLAN"]) if os.environ.get("PERFT_FAULT_PLAN") else None
    tt_bytes = None if tt_mb is None else int(tt_mb * 2**20)
    if backend == "gpu-emulated":
        return TTBfsDriver(EmulatedKernels(), memory_bytes=(_env_mib("PERFT_EMULATED_MB") or 256) << 20,
                           fault_plan=plan, tt_bytes=tt_bytes)
    if backend == "gpu":
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # ImportError, CUDARuntimeError: no usable GPU here
            raise ValueError(f"backend 'gpu' needs CuPy and a CUDA device: {exc}") from None
        gpu_mb = _env_mib("PERFT_GPU_MB")
        return TTBfsDriver(CupyKernels(), memory_bytes=gpu_mb << 20 if gpu_mb else None,
                           fault_plan=plan, tt_bytes=tt_bytes)
    raise ValueError(f"unknown GPU backend {backend!r}")


def _env_mib(name: str) -> int | None:
    """The environment variable ``name`` as a positive number of MiB (ASCII digits), None when it is
    unset or empty. Raises ValueError naming the variable for anything else."""
    text = os.environ.get(name, "")
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise ValueError(f"{name} must be a positive number of MiB, got {text!r}")
    return int(text)


def table_statistics(backend: str, since: dict | None = None, occupancy: bool = True) -> dict | None:
    """The process's ``backend`` driver's table statistics (``TTBfsDriver.tt_statistics``), with
    the cumulative counters (``tables.DEPTH_COUNTERS``: probes, hits, host probes and hits,
    stores) and the leaf merge's moves and positions less those of ``since`` (an earlier result of
    this function, or ``{"by_depth": driver.depth_stats}`` copied), so that the difference is one
    count's; ``occupancy``: read the
    tables' occupied slots (one pass over them). None when the backend is not a GPU one or its
    driver was never made (nothing was counted through it)."""
    from .tables import DEPTH_COUNTERS

    drv = _DRIVERS.get(backend)
    if drv is None:
        return None
    stats = drv.tt_statistics(occupancy)
    before = (since or {}).get("by_depth", {})
    for r, row in stats["by_depth"].items():
        for key in DEPTH_COUNTERS:
            row[key] -= before.get(r, {}).get(key, 0)
    for key, value in (since or {}).get("leaf_merge", {}).items():
        stats["leaf_merge"][key] -= value
    return stats
