"""What a Dask worker runs for a deep perft: count one unit, or measure the speed of the backend.

Functions here are submitted by ``perft_core.deep.run`` and executed in worker processes; each
process keeps its own GPU driver (``perft_core.gpu.registry.get_driver``, one per device and
process; under dask-cuda a worker sees only its own device) and, with TTs, keeps that driver's
tables warm across the units of a run (``TTBfsDriver.keep_tables``). The CPU backend with TTs keeps
one ``perft_core.zobrist.TranspositionTable`` per run and key seed in the process for the same reason.
"""
from __future__ import annotations

import time

from .. import _core
from ..position import Position

_CPU_TABLES: dict[tuple, object] = {}  # (run key, seed, depth) -> TranspositionTable, this process's


def _where(backend: str) -> tuple[str, str]:
    """(worker address or "local", device name) of this process."""
    from .. import provenance

    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = "local"
    if backend == "gpu":
        device = provenance.gpu_name()
    else:
        device = ("emulated GPU on " if backend == "gpu-emulated" else "") + str(provenance.machine()["cpu"])
    return worker, device


def count(fen: str, depth: int, backend: str, tt: bool, seed: int, run_key: str, run_depth: int | None = None,
          probes: dict | None = None) -> int:
    """perft(fen, depth) on this process's ``backend``: ``tt`` through tables keyed by ``seed``
    kept warm across the counts of ``run_key`` (a run of depth ``run_depth`` from its root, which
    sizes the GPU tables); without tt, the plain count (nodes, int). ``probes``, if given, receives
    the count's device TT probes and hits (GPU backends with tt; else left empty)."""
    pos = Position.from_fen(fen)
    if backend == "cpu":
        if not tt:
            return int(_core.perft(pos._core_args(), depth, 1))
        from .. import zobrist

        table = _CPU_TABLES.get((run_key, seed, depth))
        if table is None:
            _CPU_TABLES.clear()
            # Sized for 8 subtrees like this one (zobrist's estimate), at most the default budget:
            # a table far larger than a run's small units costs page faults, not hits.
            mb = min(zobrist.DEFAULT_TT_MB, 8 * zobrist._fitted_mb(pos._core_args(), depth, zobrist.DEFAULT_TT_MB))
            table = _CPU_TABLES[(run_key, seed, depth)] = zobrist.TranspositionTable(max(depth, 2), mb, seed=seed)
        return zobrist.perft_tt(pos, depth, table=table)
    from ..gpu.registry import get_driver

    drv = get_driver(backend)
    drv.tt_enabled = tt
    if tt:
        if drv.seed != seed:
            drv.reseed(seed)
        drv.keep_tables(run_key, run_depth)
    before = (drv.tt_stats["probes"], drv.tt_stats["hits"])
    nodes = drv.perft(pos, depth)
    if tt and probes is not None:
        probes["probes"] = drv.tt_stats["probes"] - before[0]
        probes["hits"] = drv.tt_stats["hits"] - before[1]
    return nodes


def count_unit(fen: str, depth: int, backend: str, tt: bool, seed: int, run_key: str,
               run_depth: int | None = None) -> dict:
    """Count one unit: ``{"count": nodes (int), "seconds": wall seconds (float), "worker": address,
    "device": name, "probes": device TT probes, "hits": device TT hits}`` (probes and hits None on
    the CPU or without tt). Arguments as for :func:`count`."""
    t = time.perf_counter()
    tt_counts: dict = {}
    nodes = count(fen, depth, backend, tt, seed, run_key, run_depth, tt_counts)
    seconds = time.perf_counter() - t
    worker, device = _where(backend)
    return {"count": nodes, "seconds": seconds, "worker": worker, "device": device,
            "probes": tt_counts.get("probes"), "hits": tt_counts.get("hits")}


def warm_up(fen: str, depth: int, backend: str, tt: bool, seed: int) -> str:
    """Make this process's driver and run one small count (perft(fen, min(depth, 3))): kernel
    compilation, CuPy's own kernels and the arena happen here, not in the first unit. Returns
    this worker's address."""
    count(fen, min(depth, 3), backend, tt, seed, "warm-up")
    return _where(backend)[0]


def calibrate(fen: str, depth: int, backend: str, tt: bool, seed: int, seconds: float = 0.5) -> float:
    """Nodes per second of ``backend`` on this worker: perft(fen, d) for d = 1, 2, ... (after one
    untimed warm-up count of depth 2: kernel compilation, tables) until a count takes ``seconds``
    or d reaches ``depth``; the speed of the last count (nodes / wall seconds, float)."""
    count(fen, min(depth, 2), backend, tt, seed, "calibrate")
    speed = 0.0
    for d in range(1, depth + 1):
        t = time.perf_counter()
        nodes = count(fen, d, backend, tt, seed, "calibrate")
        took = time.perf_counter() - t
        speed = nodes / max(took, 1e-9)
        if took >= seconds:
            break
    return speed
