"""What a Dask worker runs for a deep perft: count one unit, or measure the speed of the backend.

Functions here are submitted by ``perft_core.deep.run`` and executed in worker processes; each
process keeps its own GPU driver (``perft_core.gpu.registry.get_driver``, one per device and
process; under dask-cuda a worker sees only its own device) and, with TTs, keeps that driver's
tables warm across the units of a run (``TTBfsDriver.keep_tables``). The CPU backend with TTs keeps
one ``perft_core.zobrist.TranspositionTable`` per run and key seed in the process for the same reason.
"""
from __future__ import annotations

import logging
import os
import socket
import time

from .. import _core
from ..gpu.registry import get_driver, table_statistics
from ..gpu.tables import DEPTH_COUNTERS
from ..position import Position
from .store import PART_CUT_BOARD, PART_DEPTH


def _not_a_cancel(record: logging.LogRecord) -> bool:
    """A client that stops (Ctrl-C, a full disk) cancels its tasks: a worker then says each one
    'ended with CancelledError', which is no news; other records pass."""
    return "ended with CancelledError" not in record.getMessage()


logging.getLogger("distributed.worker.state_machine").addFilter(_not_a_cancel)

_CPU_TABLES: dict[tuple, object] = {}  # (run key, seed, depth) -> TranspositionTable, this process's
_tables_of: dict[str, tuple] = {}  # GPU backend -> (run key, key seed) its driver's tables were last kept for


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


def count_stats(fens: list[str], depth: int, backend: str, tt: bool = False, seed: int | None = None,
                run_key: str | None = None, run_fen: str | None = None, run_depth: int | None = None,
                part: int = 0, parts: int = 1, part_depth: int = PART_DEPTH,
                image: str | None = None, part_cut: str = PART_CUT_BOARD) -> list[tuple[int, ...]]:
    """Perft statistics of each of ``fens`` at ``depth`` on this process's ``backend`` (a statistics
    run's units): ``perft_core.Stats.as_tuple()`` per unit (13 ints, nodes first). The CPU backend
    counts whole units on one thread (a worker is one core), with ``tt`` through statistics tables
    of each unit's own. ``tt`` on the GPU backends: the batch is one
    ``TTBfsDriver.count_roots(stats=True)`` through statistics tables keyed by ``seed`` and kept warm
    across the units of ``run_key`` (the run of ``run_fen`` at ``run_depth``, which sizes them),
    ``part`` of ``parts`` (split at remaining depth ``part_depth`` by ``part_cut``) of each unit, as
    :func:`count_batch` counts a plain run's (``image`` as there); without ``tt`` and in parts,
    the same part counted without any table (a recount after a verify mismatch).

    Raises ValueError: parts on the CPU."""
    from ..backends import BACKENDS

    positions = [Position.from_fen(f) for f in fens]
    if backend == "cpu" or (not tt and parts == 1):
        if parts != 1:
            raise ValueError("the cpu backend counts whole units (parts = 1)")
        if tt:  # through statistics tables of each unit's own, keyed by the run's seed (or the verify pass's)
            from .. import stats_tt, zobrist

            return [stats_tt.perft_stats_tt(p, depth, threads=1, tt_mb=zobrist.DEFAULT_TT_MB, seed=seed).as_tuple()
                    for p in positions]
        return [BACKENDS[backend](threads=1).count_stats(p, depth).as_tuple() for p in positions]
    drv, game = _run_driver(backend, seed, run_key, run_fen, run_depth, part, parts, part_depth, image, part_cut)
    drv.tables = tt  # False: a part counted without any table (a recount after a verify mismatch)
    try:
        return [s.as_tuple() for s in drv.count_roots(positions, depth, game, stats=True)]
    finally:
        drv.tables = True


def _run_driver(backend: str, seed: int, run_key: str, run_fen: str, run_depth: int, part: int, parts: int,
                part_depth: int, image: str | None = None, part_cut: str = PART_CUT_BOARD):
    """This process's GPU driver set for a task of a run with tables: keyed by ``seed``, counting
    ``part`` of ``parts`` split at remaining depth ``part_depth`` by ``part_cut``, its tables kept warm for ``run_key`` (the run of ``run_fen`` at
    ``run_depth``, which sizes them) and loaded from the table image ``image`` when they are
    planned (``TTBfsDriver.keep_tables``). Returns (driver, the run's root Position)."""
    drv = get_driver(backend)
    drv.tt_enabled = True
    if drv.seed != seed:
        drv.reseed(seed)
    game = Position.from_fen(run_fen)
    drv.set_part(part, parts, part_depth, part_cut)
    drv.keep_tables(run_key, run_depth, game, image)
    _tables_of[backend] = (run_key, seed)
    return drv, game


def count_batch(fens: list[str], depth: int, backend: str, tt: bool, seed: int, run_key: str, run_fen: str,
                run_depth: int, part: int = 0, parts: int = 1, tables: bool = True,
                part_depth: int = PART_DEPTH, image: str | None = None, part_cut: str = PART_CUT_BOARD) -> list[int]:
    """perft(fen, depth) of each of ``fens`` (units of the run of ``run_fen`` at ``run_depth``) on
    this process's ``backend``; nodes per unit (Python ints).

    ``tt``: through tables keyed by ``seed``, kept warm across the counts of ``run_key``; on the
    GPU backends the batch is one ``TTBfsDriver.count_roots`` (equal positions below different
    units merged, the run's castling geometry and distinct positions per ply sizing the tables).
    ``part`` of ``parts``: that part of each count, split at remaining depth ``part_depth`` by
    ``part_cut`` (``TTBfsDriver.set_part``; GPU backends only).
    ``tables`` False: a part counted without any table (a recount after a verify mismatch).
    ``image``: the run's table image for this part and seed (GPU backends with tables: loaded when
    the tables are planned for the run, see :func:`load_tables`).
    Without tt and with one part: each unit's plain count.
    """
    positions = [Position.from_fen(f) for f in fens]
    if backend == "cpu":
        if parts != 1:
            raise ValueError("the cpu backend counts whole units (parts = 1)")
        if not tt:
            return [int(_core.perft(p.core_args(), depth, 1)) for p in positions]
        from .. import zobrist

        table = _CPU_TABLES.get((run_key, seed, depth))
        if table is None:
            _CPU_TABLES.clear()
            # Sized for 8 subtrees like this one (zobrist's estimate), at most the default budget:
            # a table far larger than a run's small units costs page faults, not hits.
            fitted = zobrist.fitted_mb(positions[0], depth, zobrist.DEFAULT_TT_MB)
            mb = min(zobrist.DEFAULT_TT_MB, 8 * fitted)
            table = _CPU_TABLES[(run_key, seed, depth)] = zobrist.TranspositionTable(max(depth, 2), mb, seed=seed)
        return [zobrist.perft_tt(p, depth, table=table) for p in positions]
    drv = get_driver(backend)
    if not tt and parts == 1:  # the plain BFS, no tables at all
        drv.whole_counts()
        drv.tt_enabled = False
        return [drv.perft(p, depth) for p in positions]
    drv, game = _run_driver(backend, seed, run_key, run_fen, run_depth, part, parts, part_depth, image, part_cut)
    drv.tables = tt and tables
    try:
        return drv.count_roots(positions, depth, game)
    finally:
        drv.tables = True


def _kernel_seconds(backend: str) -> float:
    """The device seconds of every kernel this process's driver has run (float): its timed launches
    are read (one wait on the stream) first."""
    k = get_driver(backend).k
    k.synchronize()
    return k.kernel_seconds


def _process() -> str:
    """This worker process, as host:pid (whose tables a statistics row is of)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def run_task(fens: list[str], depth: int, backend: str, tt: bool, seed: int, run_key: str, run_fen: str,
             run_depth: int, part: int = 0, parts: int = 1, tables: bool = True, stats: bool = False,
             part_depth: int = PART_DEPTH, image: str | None = None, part_cut: str = PART_CUT_BOARD) -> dict:
    """Count one task (a batch of units; arguments as for :func:`count_batch`): ``{"counts":
    [nodes] (ints), "seconds": wall seconds of the batch (float), "worker": address, "device":
    name, "probes": device TT probes of the batch, "hits": its device TT hits, "kernel_seconds": the
    device seconds of the batch's kernels (float; CUDA events on a GPU, on the emulated device the
    time of its timed host kernels, which leave out the table paths' steps; None on the CPU),
    "leaf_merge": [moves, positions] its leaf merges grouped and counted (GPU backends with tables,
    else None),
    "tables": {"process":
    host:pid of this process (whose tables they are), "by_depth": the batch's table statistics per
    remaining depth (:func:`batch_tables`)}}`` (probes, hits and tables None on the CPU or without
    tables). ``stats`` (a statistics run, whole units): the result also has ``"stats"``, each
    unit's 13 counters (:func:`count_stats`), and its counts are their nodes."""
    t = time.perf_counter()
    kept = tt and tables and backend != "cpu"
    kernels0 = None if backend == "cpu" else _kernel_seconds(backend)
    if kept:
        drv = get_driver(backend)
        since = {"by_depth": {r: dict(v) for r, v in drv.depth_stats.items()},
                 "leaf_merge": {"moves": drv.tt_stats["leaf_moves"], "positions": drv.tt_stats["leaf_positions"]}}
        before = (drv.tt_stats["probes"], drv.tt_stats["hits"])
    counted = None
    if stats:
        counted = count_stats(fens, depth, backend, tt and tables, seed, run_key, run_fen, run_depth, part, parts,
                              part_depth, image, part_cut)
        counts = [c[0] for c in counted]
    else:
        counts = count_batch(fens, depth, backend, tt, seed, run_key, run_fen, run_depth, part, parts, tables,
                             part_depth, image, part_cut)
    seconds = time.perf_counter() - t
    worker, device = _where(backend)
    probes = hits = stats = leaf = None
    if kept:  # the totals from the driver's own counters, the split by remaining depth from its depth_stats
        probes, hits = drv.tt_stats["probes"] - before[0], drv.tt_stats["hits"] - before[1]
        by_depth, merged = batch_tables(backend, since, seconds)
        stats = {"process": _process(), "by_depth": by_depth}
        leaf = [merged["moves"], merged["positions"]]
    kernel_seconds = None if kernels0 is None else _kernel_seconds(backend) - kernels0
    out = {"counts": counts, "seconds": seconds, "worker": worker, "device": device, "probes": probes, "hits": hits,
           "tables": stats, "kernel_seconds": kernel_seconds, "leaf_merge": leaf}
    if counted is not None:
        out["stats"] = [list(c) for c in counted]
    return out


OCCUPANCY_SHARE = 0.01
"""Reading the tables' occupied slots (one pass over every table: about 17 ms for 65 GB on an
H200, ttdriver.tt_statistics; more on the emulated GPU's NumPy) may take at most this share of a worker's counting time:
after a batch the pass runs only when the batches since the last pass took at least its last
cost / OCCUPANCY_SHARE (the first batch always reads it). A run's tasks hold up to
``dispatch.MAX_TASK_SECONDS`` of work, but its first tasks, a small run's, or a resumed run's last, can
take milliseconds: those rows then carry no occupancy, and the last reading stands."""
_occupancy = {"cost": 0.0, "since": 0.0}  # this process's last pass (seconds), counting seconds since it


def batch_tables(backend: str, since: dict, seconds: float) -> tuple[dict[int, dict], dict]:
    """The table statistics of one batch that took ``seconds``, from ``since`` (``{"by_depth": a copy
    of TTBfsDriver.depth_stats before it, "leaf_merge": {"moves", "positions"} before it}``, as
    ``registry.table_statistics`` takes): (per remaining depth r (int), the batch's ``probes``,
    ``hits``, ``host_probes``, ``host_hits`` and ``stores`` (``gpu.tables.DEPTH_COUNTERS``, each the change over
    the batch), and the driver's table of r as it stands after the batch: ``slots`` (None where no
    table of r exists), ``occupied`` and ``evictions`` (None where no table exists or occupancy was
    not read after this batch, see OCCUPANCY_SHARE), depths the batch never touched and that
    have no table left out; the batch's leaf merge ``{"moves", "positions"}``)."""
    _occupancy["since"] += seconds
    read = _occupancy["since"] * OCCUPANCY_SHARE >= _occupancy["cost"]
    t = time.perf_counter()
    stats = table_statistics(backend, since, occupancy=read)
    if read:
        _occupancy.update(cost=time.perf_counter() - t, since=0.0)
    out = {}
    for r, row in stats["by_depth"].items():
        if "slots" in row or any(row[k] for k in ("probes", "host_probes")):
            out[r] = {k: row.get(k) for k in (*DEPTH_COUNTERS, "slots", "occupied", "evictions")}
    return out, stats["leaf_merge"]


def table_reading(backend: str, run_key: str, seed: int) -> dict | None:
    """This process's tables as they stand, read at the end of a phase (the statistics of its last
    batch may carry no occupancy, see OCCUPANCY_SHARE): ``{"process": host:pid, "by_depth": {r:
    {DEPTH_COUNTERS all 0, "slots", "occupied", "evictions"}}}`` for each device table; None when
    this process's driver last kept tables for another run or key seed, or never counted."""
    if _tables_of.get(backend) != (run_key, seed):
        return None
    stats = table_statistics(backend)
    by_depth = {r: dict.fromkeys(DEPTH_COUNTERS, 0) | {k: row[k] for k in ("slots", "occupied", "evictions")}
                for r, row in stats["by_depth"].items() if "slots" in row}
    return {"process": _process(), "by_depth": by_depth}


def load_tables(fen: str, depth: int, backend: str, seed: int, run_key: str, run_fen: str, run_depth: int,
                part: int, parts: int, part_depth: int, image: str, stats: bool = False,
                part_cut: str = PART_CUT_BOARD) -> list[dict]:
    """Before a phase of a run with tables on a GPU backend: set this process's driver for the run
    (as a task of ``part`` would, :func:`count_batch`) and plan its tables for units of ``depth``
    like ``fen``, loading the table image ``image`` if the tables are planned afresh (not when
    this process already keeps them for the run). Returns the loads' summaries
    (``tableimage.load``: [] when the tables were already the run's)."""
    drv, game = _run_driver(backend, seed, run_key, run_fen, run_depth, part, parts, part_depth, image, part_cut)
    return drv.prepare_run(Position.from_fen(fen), depth, game, stats)


def save_tables(backend: str, run_key: str, seed: int, part: int, parts: int, image: str, max_bytes: int) -> dict | None:
    """At a run's time limit: write this process's tables to the table image ``image`` within
    ``max_bytes`` (``TTBfsDriver.save_image``'s summary, with ``"part"``), or None when its tables
    are not the run's (another run, seed or part last, or none planned). A save the disk refuses
    (full, a name too long, no permission: OSError) is ``{"part", "saved": False, "reason"}``,
    not a failed task (whose traceback Dask would log on the worker): the run's units are stored."""
    if _tables_of.get(backend) != (run_key, seed):
        return None
    drv = get_driver(backend)
    if (drv.part, drv.parts) != (part, parts):
        return None
    try:
        out = drv.save_image(image, max_bytes)
    except OSError as exc:
        return {"part": part, "saved": False, "reason": f"{type(exc).__name__}: {exc}"}
    return None if out is None else out | {"part": part}


def count(fen: str, depth: int, backend: str, tt: bool, seed: int, run_key: str) -> int:
    """perft(fen, depth) as a one-unit run of its own (calibration and warm-up counts)."""
    return count_batch([fen], depth, backend, tt, seed, run_key, fen, depth)[0]


def warm_up(fen: str, depth: int, backend: str, tt: bool, seed: int) -> str:
    """Make this process's driver and run one small count (perft(fen, min(depth, 3))): kernel
    compilation, CuPy's own kernels and the arena happen here, not in the first unit. Returns
    this worker's address."""
    count(fen, min(depth, 3), backend, tt, seed, f"warm-up-{time.time()}")
    return _where(backend)[0]


def calibrate(fen: str, depth: int, backend: str, tt: bool, seed: int, seconds: float = 0.5) -> float:
    """Nodes per second of ``backend`` on this worker: perft(fen, d) for d = 1, 2, ... (after one
    untimed warm-up count of depth 2: kernel compilation, tables) until a count takes ``seconds``,
    or d reaches ``depth``, or a count of at least ``seconds`` / 10 predicts (its time x its own
    branching factor) that the next would take over 4 x ``seconds``: the speed of the last count
    (nodes / wall seconds, float). The last rule keeps the calibration within a few seconds: one
    more ply costs ~30x, and a CPU count of startpos perft 6 (0.14 s) was followed by perft 7 (3.7 s)."""
    count(fen, min(depth, 2), backend, tt, seed, "calibrate")
    speed, last = 0.0, 0
    for d in range(1, depth + 1):
        t = time.perf_counter()
        nodes = count(fen, d, backend, tt, seed, "calibrate")
        took = time.perf_counter() - t
        speed = nodes / max(took, 1e-9)
        branching = nodes / last if last else 0.0
        last = nodes
        if took >= seconds or (took >= seconds / 10 and took * branching > 4 * seconds):
            break
    return speed
