"""The client of a deep perft: plan the units, run them on Dask, record them, verify, add up.

Phases: (1) count every unit not yet counted; (2) with a verify seed, count the sampled units
again through tables keyed by that seed; (3) count every unit whose two counts differ once more
without tables, and take that count. Each phase submits units largest first with at most a few per
worker in flight, consumes them with ``distributed.as_completed`` and commits each result to the
store as it arrives. Dask reruns the task of a lost worker elsewhere (its scheduler's
``allowed-failures``) and retries a task that raised (``retries=2``).
"""
from __future__ import annotations

import os
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import _core
from ..api import BACKENDS
from ..position import Position
from . import units as units_mod
from . import worker
from .store import RUN_OPTIONS, Store, StoreError

_RETRIES = 2


class DeepError(RuntimeError):
    """A deep run that cannot go on: Dask or dask-cuda missing, or a unit failed on every try
    (finished units stay in the store; resume the run)."""


@dataclass
class DeepResult:
    """The outcome of :func:`deep_perft`.

    nodes: perft(fen, depth) (Python int); seconds: this call's wall time; store: the store's path;
    fen, depth, split_ply, backend, tt: the run; units: unit count; counted_now: units counted by
    this call (the rest came from the store); verified: units counted again with the verify seed
    (0 without one); verify: how the run was verified, in words; mismatches: units whose two
    counts differed, as dicts (idx, fen, count, verify_count, recount); count_seconds: wall time
    of this call's counting phase (first submission to last result, after a small warm-up count
    on every worker; 0 if nothing was left);
    unit_seconds: the workers' seconds over all units of the run, every session (first counts);
    tt_probes / tt_hits: device TT probes and hits over those counts (GPU backends with TTs, else 0).
    """

    nodes: int
    seconds: float
    store: str
    fen: str
    depth: int
    split_ply: int
    backend: str
    tt: bool
    units: int
    counted_now: int
    verified: int
    verify: str
    mismatches: list[dict] = field(default_factory=list)
    count_seconds: float = 0.0
    unit_seconds: float = 0.0
    tt_probes: int = 0
    tt_hits: int = 0

    def summary(self) -> str:
        """The final line: total, time and store."""
        return f"perft {self.depth}: {self.nodes} nodes in {self.seconds:.1f} s (store {self.store})"

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _positive(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check(fen, depth, backend, tt, workers, gpus, scheduler, split_ply, store, resume, verify_seed,
           verify_sample) -> None:
    if resume is None:
        if fen is None or depth is None:
            raise ValueError("a deep run needs a FEN and a depth (or resume=STORE)")
        if store is not None and Path(store).exists() and Path(store).stat().st_size > 0:
            raise StoreError(f"store {store} already exists; continue it with --resume {store} or choose a new file")
    elif store is not None:
        raise ValueError("give either store= (a new run) or resume= (continue one), not both")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if tt is not None and not isinstance(tt, bool):
        raise ValueError(f"tt must be True or False, got {tt!r}")
    if sum(x is not None for x in (workers, gpus, scheduler)) > 1:
        raise ValueError("give at most one of workers, gpus and scheduler")
    _positive("workers", workers)
    _positive("gpus", gpus)
    if split_ply is not None and (isinstance(split_ply, bool) or not isinstance(split_ply, int) or split_ply < 0
                                  or (depth is not None and split_ply > depth)):
        raise ValueError(f"split ply must be an integer in 0..depth, got {split_ply!r}")
    if verify_seed is not None:
        if isinstance(verify_seed, bool) or not isinstance(verify_seed, int) or not 0 <= verify_seed < 2**64:
            raise ValueError(f"verify seed must be an integer in 0..2**64-1, got {verify_seed!r}")
        if verify_seed == _core.ZOBRIST_DEFAULT_SEED:
            raise ValueError(f"verify seed must differ from the key seed {_core.ZOBRIST_DEFAULT_SEED:#x}")
    if verify_sample is not None:
        if isinstance(verify_sample, bool) or not isinstance(verify_sample, (int, float)) or not 0 < verify_sample <= 1:
            raise ValueError(f"verify sample must be a fraction in (0, 1], got {verify_sample!r}")
        if verify_seed is None and resume is None:
            raise ValueError("verify sample needs a verify seed")


@contextmanager
def _client(backend: str, workers: int | None, gpus: int | None, scheduler: str | None):
    """A dask.distributed Client: of ``scheduler``, or of a LocalCUDACluster of ``gpus`` workers
    (one per device), or of a LocalCluster of ``workers`` processes with one thread each.
    Yields (client, description)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise DeepError("deep perft needs Dask: pip install 'perft-oracle[dist]'") from None
    if scheduler is not None:
        with Client(scheduler) as client:
            _wait_for_workers(client, 1, f"scheduler {scheduler}")
            yield client, f"scheduler {scheduler}"
        return
    if gpus is not None:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise DeepError("--gpus needs dask-cuda: pip install 'perft-oracle[dist,gpu]'") from None
        cluster = LocalCUDACluster(n_workers=gpus, threads_per_worker=1, dashboard_address=None)
        desc = f"LocalCUDACluster of {gpus} GPU workers"
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        desc = f"LocalCluster of {workers} processes"
    try:
        with Client(cluster) as client:
            _wait_for_workers(client, 1, desc)
            yield client, desc
    finally:
        cluster.close()


WORKER_START_SECONDS = 120.0
"""How long a run waits for its first worker before it gives up (a worker that cannot import
perft_core, say, is restarted by its nanny for ever: the run must say so, not hang)."""


def _wait_for_workers(client, n: int, desc: str) -> None:
    """Wait up to WORKER_START_SECONDS for ``n`` workers; raise DeepError naming the cluster if not."""
    try:
        client.wait_for_workers(n, timeout=WORKER_START_SECONDS)
    except TimeoutError:
        raise DeepError(f"no Dask worker of the {desc} came up within {WORKER_START_SECONDS:g} s "
                        f"(can the workers import perft_core? see their logs)") from None


def _sampled(key_hex: str, fraction: float) -> bool:
    """Is the unit of this key in a verify sample of ``fraction``? (low 32 bits of the key: uniform)"""
    return fraction >= 1 or int(key_hex[-8:], 16) < fraction * 2**32


class _Progress:
    """A rich progress bar on stderr (units done/total, nodes/s, ETA), or nothing."""

    def __init__(self, enabled: bool):
        self.bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[units]}"),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                console=Console(stderr=True))

    def phase(self, name: str, rows: list[dict]):
        if self.bar is None:
            return None
        self.t0, self.nodes, self.done, self.total = time.perf_counter(), 0, 0, len(rows)
        return self.bar.add_task(name, total=sum(r["estimate"] for r in rows) or 1,
                                 units=f"0/{len(rows)} units", rate="")

    def advance(self, task, row: dict, nodes: int) -> None:
        if self.bar is None:
            return
        self.done += 1
        self.nodes += nodes
        rate = self.nodes / max(time.perf_counter() - self.t0, 1e-9)
        self.bar.update(task, advance=row["estimate"], units=f"{self.done}/{self.total} units",
                        rate=f"{rate / 1e6:,.0f} M nodes/s")

    def __enter__(self):
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


def _run_phase(client, st: Store, rows: list[dict], task, on_result, workers: int, progress: _Progress,
               name: str) -> list[str]:
    """Submit ``task(row)`` (args for worker.count_unit) for ``rows`` in order, at most a few per
    worker in flight; ``on_result(row, result)`` for each result as it completes. Returns the
    failures as lines (a unit whose task raised on every try)."""
    from distributed import as_completed

    if not rows:
        return []
    bar = progress.phase(name, rows)
    pending = iter(rows)
    futures: dict = {}
    ac = as_completed()
    run_tag = uuid.uuid4().hex[:8]

    def submit_next() -> None:
        row = next(pending, None)
        if row is None:
            return
        st.submitted(row["idx"])
        fut = client.submit(worker.count_unit, *task(row), key=f"perft-{name}-{row['idx']}-{run_tag}",
                            retries=_RETRIES, pure=False, priority=-row["idx"])
        futures[fut.key] = row
        ac.add(fut)

    for _ in range(max(4 * workers, 16)):
        submit_next()
    failures = []
    for fut in ac:
        row = futures.pop(fut.key)
        try:
            result = fut.result()
        except Exception as exc:  # the task raised on every try, or its workers kept dying
            failures.append(f"unit {row['idx']} ({row['fen']}): {type(exc).__name__}: {exc}")
        else:
            nodes = on_result(row, result)
            progress.advance(bar, row, nodes)
        fut.release()
        submit_next()
    return failures


def deep_perft(fen: str | None = None, depth: int | None = None, *, backend: str | None = None,
               tt: bool | None = None, workers: int | None = None, gpus: int | None = None,
               scheduler: str | None = None, split_ply: int | None = None, store: str | os.PathLike | None = None,
               resume: str | os.PathLike | None = None, verify_seed: int | None = None,
               verify_sample: float | None = None, progress: bool = False) -> DeepResult:
    """perft(fen, depth) as work units on Dask, recorded in a durable store.

    Args:
        fen, depth: the position (FEN / X-FEN / Shredder-FEN) and plies; omit both with ``resume``.
        backend: "cpu" (default), "gpu" or "gpu-emulated", on the workers; tt: count through
            transposition tables (default False), kept warm across a worker's units.
        workers: a LocalCluster of that many processes (one thread each; default 1 for cpu and
            gpu-emulated); gpus: a dask-cuda LocalCUDACluster of one worker per GPU (backend gpu;
            default 1); scheduler: the address of an existing Dask scheduler (any backend).
        split_ply: plies expanded on the host (default: ``units.choose_split_ply`` from the first
            plies' growth and a speed measured on a worker).
        store: the new store's path (default ``perft-deep-<UTC time>.sqlite`` here); it must not
            hold data. resume: the path of a store to continue; options given must match its run.
        verify_seed: count the units again with tables keyed by this Zobrist seed (needs tt);
            verify_sample: the fraction of units to verify (default 1: all; chosen by key).
        progress: draw a rich progress bar on stderr.

    Returns:
        DeepResult (its ``nodes`` is the count, a Python int).

    Raises:
        ValueError: bad options; FenError: a bad FEN; StoreError (a ValueError): the store is
        missing, corrupt, of another run or in use; KeyCollisionError: two positions share a key
        at the split; DeepError: Dask missing, or units failed on every try (finished units stay
        in the store: resume).
    """
    t0 = time.perf_counter()
    _check(fen, depth, backend, tt, workers, gpus, scheduler, split_ply, store, resume, verify_seed, verify_sample)
    if resume is not None:
        st = Store.open(resume)
        try:
            asked = dict(zip(RUN_OPTIONS, (None if fen is None else Position.from_fen(fen).fen(), depth, split_ply,
                                           backend, tt, None, verify_seed, verify_sample)))
            st.check_options(asked)
        except BaseException:
            st.close()
            raise
        run = st.run
        backend, tt, verify_seed, verify_sample = run["backend"], run["tt"], run["verify_seed"], run["verify_sample"]
    else:
        pos = Position.from_fen(fen)
        backend = backend or "cpu"
        tt = bool(tt)
        if verify_seed is not None and not tt:
            raise ValueError("verify seed needs tt (it counts again through tables keyed by another seed)")
        if verify_seed is not None and verify_sample is None:
            verify_sample = 1.0
        st = None
    if backend == "gpu" and workers is not None:
        if st is not None:
            st.close()
        raise ValueError("backend gpu runs one worker per GPU: use gpus= (or a scheduler), not workers=")
    if gpus is not None and backend != "gpu":
        if st is not None:
            st.close()
        raise ValueError(f"gpus= runs the gpu backend, not {backend!r}")
    if workers is None and gpus is None and scheduler is None:
        if backend == "gpu":
            gpus = 1
        else:
            workers = 1
    try:
        with _client(backend, workers, gpus, scheduler) as (client, cluster_desc):
            n_workers = max(len(client.nthreads()), 1)  # every worker (some scheduler_info versions list 5)
            if st is None:
                seed = _core.ZOBRIST_DEFAULT_SEED
                if split_ply is None:
                    speed = client.submit(worker.calibrate, pos.fen(), depth, backend, tt, seed, pure=False).result()
                    split_ply = units_mod.choose_split_ply(pos, depth, n_workers, speed)
                units = units_mod.split(pos, depth, split_ply, seed)
                if store is None:
                    store = f"perft-deep-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}.sqlite"
                st = Store.create(store, {"fen": pos.fen(), "depth": depth, "split_ply": split_ply,
                                          "backend": backend, "tt": tt, "seed": seed, "verify_seed": verify_seed,
                                          "verify_sample": verify_sample}, units)
            return _work(client, st, cluster_desc, n_workers, progress, t0)
    finally:
        if st is not None:
            st.end_session()
            st.close()


def _work(client, st: Store, cluster_desc: str, n_workers: int, progress: bool, t0: float) -> DeepResult:
    """Phases 1-3 on ``client``; the result from the store."""
    run = st.run
    st.begin_session(cluster_desc)
    run_key = f"{st.path.resolve()}:{run['started']}"
    backend, tt, seed = run["backend"], run["tt"], run["seed"]
    counted_now = 0

    def counted(row, res):
        nonlocal counted_now
        if st.finish(row["idx"], res["count"], res["seconds"], res["worker"], res["device"], res["probes"],
                     res["hits"]):
            counted_now += 1
        return int(row["multiplicity"]) * res["count"]

    def verified(row, res):
        st.verified(row["idx"], res["count"], res["seconds"])
        return int(row["multiplicity"]) * res["count"]

    def recounted(row, res):
        st.recounted(row["idx"], res["count"], res["seconds"])
        return int(row["multiplicity"]) * res["count"]

    failures = []
    with _Progress(progress) as bar:
        rows = [r for r in st.units() if r["status"] == "pending"]
        if rows:  # every worker makes its driver before the clock starts (workers that join later: in their first unit)
            client.gather([client.submit(worker.warm_up, run["fen"], run["depth"], backend, tt, seed, pure=False,
                                         workers=[addr], allow_other_workers=False) for addr in client.nthreads()])
        t_count = time.perf_counter()
        failures += _run_phase(
            client, st, rows, lambda r: (r["fen"], r["depth"], backend, tt, seed, run_key, run["depth"]),
            counted, n_workers, bar, "count")
        count_seconds = time.perf_counter() - t_count if rows else 0.0
        if run["verify_seed"] is not None and not failures:
            rows = [r for r in st.units() if r["status"] == "counted" and _sampled(r["key"], run["verify_sample"])]
            failures += _run_phase(
                client, st, rows,
                lambda r: (r["fen"], r["depth"], backend, True, run["verify_seed"], run_key, run["depth"]),
                verified, n_workers, bar, "verify")
        rows = [r for r in st.units() if r["status"] == "mismatch"]
        failures += _run_phase(client, st, rows, lambda r: (r["fen"], r["depth"], backend, False, seed, run_key),
                               recounted, n_workers, bar, "recount")
    if failures:
        raise DeepError(f"{len(failures)} units failed on every try (finished units are stored; resume "
                        f"with --resume {st.path}); first: {failures[0]}")
    rows = st.units()
    nodes = 0
    for r in rows:
        if r["count"] is None:
            raise DeepError(f"unit {r['idx']} of store {st.path} has no count after the run")
        nodes += int(r["multiplicity"]) * int(r["recount"] if r["recount"] is not None else r["count"])
    verified_rows = [r for r in rows if r["verify_count"] is not None]
    mismatches = [{k: r[k] for k in ("idx", "fen", "count", "verify_count", "recount")}
                  for r in rows if r["status"] in ("mismatch", "recounted")]
    if run["verify_seed"] is None:
        verify = "not verified (no verify seed)"
    else:
        sample = "all units" if run["verify_sample"] >= 1 else f"a {run['verify_sample']:g} sample of units by key"
        verify = (f"{len(verified_rows)} of {len(rows)} units ({sample}) counted again with tables keyed by seed "
                  f"{run['verify_seed']:#x}: {len(mismatches)} differed"
                  + (" and were counted again without tables" if mismatches else ""))
    return DeepResult(nodes=nodes, seconds=time.perf_counter() - t0, store=str(st.path), fen=run["fen"],
                      depth=run["depth"], split_ply=run["split_ply"], backend=backend, tt=tt, units=len(rows),
                      counted_now=counted_now, verified=len(verified_rows), verify=verify, mismatches=mismatches,
                      count_seconds=count_seconds, unit_seconds=sum(r["seconds"] or 0.0 for r in rows),
                      tt_probes=sum(r["probes"] or 0 for r in rows), tt_hits=sum(r["hits"] or 0 for r in rows))
