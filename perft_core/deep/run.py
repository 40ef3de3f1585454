"""The client of a deep perft: plan the units, run them on Dask, record them, verify, add up.

Phases: (1) count every unit not yet counted; (2) with a verify seed, count the sampled units
again through tables keyed by that seed; (3) count every unit whose two counts differ once more
without tables, and take that count. Each phase submits units largest first with at most a few per
worker in flight, consumes them with ``distributed.as_completed`` and commits each result to the
store as it arrives. Dask reruns the task of a lost worker elsewhere (its scheduler's
``allowed-failures``) and retries a task that raised (``retries=2``).
"""
from __future__ import annotations

import math
import os
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import _core, limits, watch
from ..api import BACKENDS
from ..position import Position
from . import units as units_mod
from . import worker
from .store import PART_DEPTH, RUN_OPTIONS, Store, StoreWriteError, check_new_store_path, default_store_path

_RETRIES = 2


class DeepError(RuntimeError):
    """A deep run that cannot go on: Dask or dask-cuda missing, or a unit failed on every try
    (finished units stay in the store; resume the run)."""


class DeepStopped(DeepError):
    """A deep run stopped at its time limit (``deep_perft(max_seconds=...)``) before every unit was
    counted: nothing is lost, resume it. Attributes: ``store`` (path, str), ``phase`` (the phase it
    stopped in: "count", "verify" or "recount"), ``rows`` / ``counted`` (unit rows of the run / with
    a first count), ``counted_now`` (rows counted by this call), ``done`` (the counted rows' share of
    the run's estimated nodes, 0..1), ``seconds`` (this call's wall time), ``timings`` (as
    ``DeepResult.timings``)."""

    def __init__(self, store: str, phase: str, rows: int, counted: int, counted_now: int, done: float,
                 seconds: float, timings: dict):
        self.store, self.phase, self.rows, self.counted, self.counted_now = store, phase, rows, counted, counted_now
        self.done, self.seconds, self.timings = done, seconds, timings
        super().__init__(f"stopped at the time limit in the {phase} phase after {seconds:.0f} s: {counted} of {rows} "
                         f"unit rows counted ({done:.1%} of the run's estimated nodes), {counted_now} by this command; "
                         f"resume with --resume {store}")

    def as_dict(self) -> dict:
        return {"finished": False, "store": self.store, "phase": self.phase, "rows": self.rows,
                "counted": self.counted, "counted_now": self.counted_now, "done": self.done,
                "seconds": self.seconds, "timings": self.timings}


@dataclass
class DeepResult:
    """The outcome of :func:`deep_perft`.

    nodes: perft(fen, depth) (Python int); seconds: this call's wall time; store: the store's path;
    fen, depth, split_ply, backend, tt: the run; units: unit count; parts: the parts each unit is
    counted in (one per GPU worker with tables, else 1; ``TTBfsDriver.set_part``), split at remaining
    depth part_depth; counted_now:
    unit parts (store rows) counted by this call (the rest came from the store); verified: units
    whose every part was counted again with the verify seed (0 without one); verify: how the run
    was verified, in words; mismatches: unit parts whose two counts differed, as dicts (idx,
    unit, part, fen, count, verify_count, recount); count_seconds: wall time
    of this call's counting phase (first submission to last result, after a small warm-up count
    on every worker; 0 if nothing was left);
    unit_seconds: the workers' seconds over all units of the run, every session (first counts);
    tt_probes / tt_hits: device TT probes and hits over those counts (GPU backends with TTs, else 0);
    tampered: unit rows whose checksum failed when the store was opened (dicts: idx, unit, part,
    fen, count), counted again by this call instead of summed;
    tables / verify_tables: the transposition tables' statistics per remaining depth over the run's
    first counts / its verify counts, every session and worker (``Store.table_statistics``: probes,
    hits and hit rate, host cache probes, hits and rate, stores; slots, occupied and evictions of the
    workers' tables as last read; GPU backends with tables, else {}).
    stats: a statistics run's perft statistics (``perft_core.Stats``: the units' counters times
    their multiplicities, summed), else None.
    timings: wall seconds of this call's steps (floats; a step not taken is absent or 0):
    ``cluster_start`` (the Dask cluster or client until a worker is up), ``calibrate`` (speed counts
    on a worker), ``split`` (the units on the host), ``store_create``, ``warm_up`` (every worker
    makes its driver), ``count`` (= count_seconds), ``dispatch`` (of the count phase, the time its
    busiest worker was not counting), ``store`` (the store's writes of results, every phase),
    ``read_tables``, ``verify``, ``recount``.
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
    parts: int
    counted_now: int
    verified: int
    verify: str
    mismatches: list[dict] = field(default_factory=list)
    count_seconds: float = 0.0
    unit_seconds: float = 0.0
    tt_probes: int = 0
    tt_hits: int = 0
    tampered: list[dict] = field(default_factory=list)
    part_depth: int = PART_DEPTH
    tables: dict = field(default_factory=dict)
    verify_tables: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    stats: object = None

    def summary(self) -> str:
        """The final line: total, time and store."""
        return f"perft {self.depth}: {self.nodes} nodes in {self.seconds:.1f} s (store {self.store})"

    def as_dict(self) -> dict:
        """The result as JSON-ready values (``stats`` as ``Stats.to_json()`` plus its CPW columns)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        if self.stats is not None:
            out["stats"] = self.stats.to_json() | {"cpw": self.stats.cpw()}
        return out


def _positive(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check(fen, depth, backend, tt, workers, gpus, scheduler, split_ply, store, resume, verify_seed,
           verify_sample) -> None:
    if resume is None:
        if fen is None or depth is None:
            raise ValueError("a deep run needs a FEN and a depth (or resume=STORE)")
        if store is not None:
            check_new_store_path(store)  # holds data, or a device, FIFO or socket: refused before any work
    elif store is not None:
        raise ValueError("give either store= (a new run) or resume= (continue one), not both")
    if depth is not None:
        limits.check_depth(depth)
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if tt is not None and not isinstance(tt, bool):
        raise ValueError(f"tt must be True or False, got {tt!r}")
    if sum(x is not None for x in (workers, gpus, scheduler)) > 1:
        raise ValueError("give at most one of workers, gpus and scheduler")
    _positive("workers", workers)
    _positive("gpus", gpus)
    if split_ply is not None:
        limits.check_split_ply(split_ply, depth)
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


NO_DASHBOARD = {"dashboard_address": ":0", "scheduler_kwargs": {"dashboard": False}}
"""A local cluster's options: no dashboard, and the scheduler's HTTP server (which Dask starts even
without one) on a free port: ``dashboard_address=None`` means its default port 8787, and a second
run on one machine then printed Dask's four-line "Port 8787 is already in use" warning (issue 34 N8)."""


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
        import dask

        # Each GPU counts its own part of every unit with that part's tables: a task stolen by
        # another GPU would be counted right but with cold tables (reset for the other part).
        with dask.config.set({"distributed.scheduler.work-stealing": False}), _start_method() as how, \
                _workers_ignore_ctrl_c():
            cluster = LocalCUDACluster(n_workers=gpus, threads_per_worker=1, **NO_DASHBOARD)
        desc = f"LocalCUDACluster of {gpus} GPU workers ({how})"
    else:
        with _start_method() as how, _workers_ignore_ctrl_c():
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, **NO_DASHBOARD)
        desc = f"LocalCluster of {workers} processes ({how})"
    try:
        with Client(cluster) as client:
            _wait_for_workers(client, 1, desc)
            try:
                yield client, desc
            except BaseException:  # stopped: the workers go down with the cluster, quietly
                _quiet(client)
                raise
    finally:
        cluster.close()


START_METHOD_ENV = "PERFT_WORKER_START"
"""Environment variable that forces how a local cluster starts its worker processes: ``fork`` or
``spawn`` (default: :func:`worker_start_method` decides)."""
PROC_FD = "/proc/self/fd"
"""Where :func:`worker_start_method` reads the files this process holds open."""


def worker_start_method() -> str:
    """How a local cluster starts its worker processes (Dask's ``distributed.worker.multiprocessing-
    method``): ``"fork"`` on Linux while this process has not initialised the CUDA driver, else
    ``"spawn"`` (Dask's default); ``PERFT_WORKER_START`` overrides (ValueError for another value).

    Why: a spawned worker is a new interpreter that imports Dask, perft_core and the CLI again before
    it takes a task. On an H200 host that made the start of a one-GPU LocalCUDACluster 2.3 s of
    perft 11's 19.3 s (the one-process command: 16.4 s; NOTES.md, session 16); a forked one starts in
    about 0.1 s. A process that has initialised CUDA cannot be forked into a CUDA worker (the child's
    driver calls fail), so a client that did (an API caller that counted on its GPU first, or used
    CuPy or another CUDA library) spawns as before. Initialised is read from the files it holds open
    (``/proc/self/fd``): the driver opens ``/dev/nvidiactl`` and ``/dev/nvidia<N>`` in ``cuInit`` and
    keeps them; loading the library (``import cupy``) opens none. Unreadable: spawn.
    """
    forced = os.environ.get(START_METHOD_ENV)
    if forced:
        if forced not in ("fork", "spawn"):
            raise ValueError(f"{START_METHOD_ENV}={forced!r}: expected 'fork' or 'spawn'")
        return forced
    if not sys.platform.startswith("linux"):
        return "spawn"
    try:
        for fd in os.listdir(PROC_FD):
            try:
                if os.readlink(os.path.join(PROC_FD, fd)).startswith("/dev/nvidia"):
                    return "spawn"
            except OSError:  # closed since the listing (the listing's own descriptor, say)
                continue
    except OSError:
        return "spawn"
    return "fork"


@contextmanager
def _start_method():
    """Dask's worker start method set to :func:`worker_start_method` while a local cluster starts;
    yields how the workers start ("forked" or "spawned", for the cluster's description)."""
    import dask

    method = worker_start_method()
    with dask.config.set({"distributed.worker.multiprocessing-method": method}):
        yield "forked" if method == "fork" else "spawned"


@contextmanager
def _workers_ignore_ctrl_c():
    """SIGINT and SIGTERM ignored while a local cluster starts its processes, which inherit that:
    Ctrl-C on a terminal (or ``kill -TERM -PGID`` from a batch system) reaches the whole process
    group, and only the client should answer it (it cancels the futures and closes the cluster),
    not every worker with its own traceback, nor nannies that log restarting the workers killed
    under them (issue 34: 2-3 Dask lines before ``perft: interrupted``). The cluster's close ends
    them (its own request, then SIGKILL)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _silence_logs() -> None:
    """Run on a worker of a cluster that is closing: its logs would only report the close."""
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL + 1)


def _quiet(client) -> None:
    """Silence the workers' logs before their cluster closes under a stopped run (else every worker
    prints the scheduler going away); best effort, never an error of its own."""
    try:
        client.run(_silence_logs)
        client.run(_silence_logs, nanny=True)
    except BaseException:  # noqa: BLE001 - a second Ctrl-C or a gone worker: close anyway
        pass


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


MAX_PARTS = 8
"""At most this many parts a unit: every part repeats the levels above the split (measured: nothing
extra at two parts of startpos perft 11, 17 % in total at four parts of perft 10, a 3-s count), so
beyond a host's GPUs the workers share parts: part p goes to workers p, p + MAX_PARTS, ..."""


def choose_parts(backend: str, tt: bool, unit_depth: int, workers: int, part_depth: int = PART_DEPTH) -> int:
    """Parts each unit is counted in: one per worker, at most MAX_PARTS, on the GPU backends with
    tables (each GPU counts its part of every unit, ``TTBfsDriver.set_part``: the levels above
    remaining depth ``part_depth`` are the same work on every GPU, the levels from there down are
    split, and no GPU's tables miss what another GPU's hold, which units dealt out whole would: two
    H200s split startpos perft 11 at ply 2 into whole units did 1.71x the work of one), else 1
    (whole units: the CPU backend, counts without tables, units shallower than the split)."""
    if backend in ("gpu", "gpu-emulated") and tt and unit_depth >= part_depth:
        return max(1, min(workers, MAX_PARTS))
    return 1


def sampled(key_hex: str, fraction: float) -> bool:
    """Is the unit of this key in a verify sample of ``fraction``? (low 32 bits of the key: uniform)"""
    return fraction >= 1 or int(key_hex[-8:], 16) < fraction * 2**32


PROGRESS_LINE_SECONDS = watch.PROGRESS_LINE_SECONDS
"""Without a terminal (a log file, a batch job), a progress line at most this often, and one at the
end of each phase (:class:`perft_core.watch.ProgressLines`)."""
_duration = watch.duration


class _Progress:
    """Progress on stderr: a rich bar (units done/total, nodes/s, ETA) on a terminal (``mode``
    True or "bar"), lines of the same facts at most every PROGRESS_LINE_SECONDS and at each phase's
    end without one ("lines"), or nothing (False / None). The ETA is in estimated nodes (the units'
    estimates, ``units.unit_estimates``), so it holds when the estimates are right relative to
    each other, whatever their common scale."""

    def __init__(self, mode: bool | str | None):
        self.bar = None
        self.lines = mode == "lines"
        if mode is True or mode == "bar":
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[units]}"),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                console=Console(stderr=True))

    def phase(self, name: str, rows: list[dict]):
        self.t0, self.nodes, self.done, self.total = time.perf_counter(), 0, 0, len(rows)
        self.name, self.est_total, self.est_done = name, sum(r["estimate"] for r in rows) or 1, 0.0
        self.printer = watch.ProgressLines(f"perft deep: {name}", of=" of the estimated nodes",
                                           every=PROGRESS_LINE_SECONDS)
        if self.bar is None:
            return None
        return self.bar.add_task(name, total=self.est_total, units=f"0/{len(rows)} units", rate="")

    def advance(self, task, rows: list[dict], nodes: int) -> None:
        if self.bar is None and not self.lines:
            return
        est = sum(r["estimate"] for r in rows)
        self.done += len(rows)
        self.nodes += nodes
        self.est_done += est
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        rate = self.nodes / elapsed
        if self.bar is not None:
            self.bar.update(task, advance=est, units=f"{self.done}/{self.total} units",
                            rate=f"{rate / 1e6:,.0f} M nodes/s")
            return
        self.printer.report(f"{self.done}/{self.total} units", self.est_done / self.est_total, self.nodes, elapsed,
                            final=self.done >= self.total)

    def __enter__(self):
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


TASKS_PER_WORKER = 16
"""A phase sends each worker at least this many tasks (batches of units): small enough to bound
what a lost worker or client costs and to spread the work, large enough that one GPU call merges
many units' positions and Dask's few milliseconds a task vanish."""
MAX_UNITS_PER_TASK = 256
BUDGET_MARGIN = 1.25
"""Under a time limit (``deep_perft(max_seconds=...)``) a task is started only if its estimated
seconds times this margin fit in the time left: the measured pace (seconds per estimated node) of a
run's tasks varies from task to task (the first five of perft 13 on four H200s: within 6 % of their
mean; tables warm up, the estimates err)."""
MAX_TASK_SECONDS = 300.0
"""Once the run's speed is known, a task holds at most about this many seconds of work: a killed
client or worker loses the tasks it was counting, so a run of many hours loses minutes, not a
sixteenth of a worker's share (startpos perft 13 on one H200 would otherwise run 55-min tasks)."""


def batches(rows: list[dict], workers: int, seconds_per_estimate: float | None = None,
            merged: bool = False, budget: dict[int, float] | None = None, share: float = 1.0) -> list[list[dict]]:
    """Group a phase's rows into tasks: rows of one part together (one worker counts a part, with
    that part's tables), in row order (largest units first), each part in
    ``max(balance, ceil(rows / MAX_UNITS_PER_TASK), ceil(seconds / cap))`` batches of
    about equal estimated nodes (never more batches than rows), where seconds = the part's
    estimated nodes x ``seconds_per_estimate`` (seconds per estimated node,
    :func:`seconds_per_estimate`; None: no time bound), cap = MAX_TASK_SECONDS (or the part's
    budget, if less) and balance = TASKS_PER_WORKER x workers / parts, so that the workers sharing
    a part's tasks finish together. ``merged``: a task's units
    are counted as one count whose equal positions merge (GPU backends with tables,
    ``TTBfsDriver.count_roots``), so a task split in two costs work: balance is then 1 where no two
    workers share a part (a part's worker counts its part of every unit, balanced by key).
    ``budget``: part -> seconds each of its workers has left (a time limit; needs
    ``seconds_per_estimate``): only rows that fit are taken, in order, each row's seconds counted
    BUDGET_MARGIN times, a part's workers sharing its budget (the rest of the rows are left out of
    the tasks). ``share``: the share of the phase's estimated nodes that ``rows`` are (a phase's rest,
    cut again): balance is scaled by it. Tasks are returned part by part interleaved (batch 0 of every part, then batch 1,
    ...), so every worker starts at once."""
    by_part: dict[int, list[dict]] = {}
    for r in rows:
        by_part.setdefault(r["part"], []).append(r)
    parts = max(len(by_part), 1)
    per_worker = max(1, workers // parts)  # workers counting one part (a pool of them when parts = 1)
    per_part = []
    for part, part_rows in by_part.items():
        cap = MAX_TASK_SECONDS
        if budget is not None and seconds_per_estimate is not None:
            left, cap = budget.get(part, 0.0) * per_worker, min(cap, budget.get(part, 0.0))
            fitting = []
            for r in part_rows:
                s = max(r["estimate"], 1.0) * seconds_per_estimate * BUDGET_MARGIN
                if left > 0 and s <= min(left, cap):  # no time left: nothing starts, however small
                    fitting.append(r)
                    left -= s
            part_rows = fitting
            if not part_rows:
                continue
        total = sum(max(r["estimate"], 1.0) for r in part_rows)
        by_time = math.ceil(total * seconds_per_estimate / cap) if seconds_per_estimate else 1
        balance = math.ceil(share * -(-TASKS_PER_WORKER * workers // parts)) if workers > parts or not merged else 1
        n = min(len(part_rows), max(balance, -(-len(part_rows) // MAX_UNITS_PER_TASK), by_time))
        out, cur, acc = [], [], 0.0
        for r in part_rows:
            cur.append(r)
            acc += max(r["estimate"], 1.0)
            if acc >= total * (len(out) + 1) / n and len(out) < n - 1:
                out.append(cur)
                cur = []
        if cur:
            out.append(cur)
        per_part.append(out)
    tasks = []
    for i in range(max(len(p) for p in per_part) if per_part else 0):
        tasks += [p[i] for p in per_part if i < len(p)]
    return tasks


def seconds_per_estimate(rows: list[dict], nodes_per_second: float | None) -> float | None:
    """Seconds a task takes per estimated node: measured on this run's counted rows (their seconds
    over their estimates, so the estimates' own scale error cancels) when any has seconds, else
    1 / ``nodes_per_second`` (a calibration on a worker; estimates are then taken as nodes), else
    None (unknown)."""
    done = [(r["seconds"], r["estimate"]) for r in rows if r.get("seconds") and r["count"] is not None]
    est = sum(max(e, 1.0) for _, e in done)
    if done and est > 0:
        return sum(t for t, _ in done) / est
    return 1.0 / nodes_per_second if nodes_per_second else None


def _share(total, rows: list[dict]) -> list:
    """``total`` (seconds, or an int count) shared over a task's rows in proportion to their
    estimates (ints: exact sum, the remainder on the last row); None stays None."""
    if total is None:
        return [None] * len(rows)
    w = [max(r["estimate"], 1.0) for r in rows]
    s = sum(w)
    if isinstance(total, float):
        return [total * x / s for x in w]
    out = [int(total * x // s) for x in w]
    out[-1] += total - sum(out)
    return out


def _run_phase(client, st: Store, rows: list[dict], task, on_result, workers: list[str], progress: _Progress,
               name: str, parts: int = 1, pace: float | None = None, merged: bool = False,
               measured: bool = True, deadline: float | None = None) -> tuple[list[str], int]:
    """Submit ``worker.run_task(*task(batch))`` for the ``batches`` of ``rows``, at most a few per
    worker in flight, each preferring the workers of its part (``workers``: addresses; part p of P
    -> workers p, p + P, ...; another worker takes it if those are gone); ``on_result(batch, result)``
    for each result as it completes; ``pace``: seconds per estimated node and ``merged``: a task's
    units merge inside one count (both shape the tasks, see :func:`batches`).

    ``measured`` False: ``pace`` came from a calibration count, not from this run's tasks (a small
    count without deep tables; it was at least 15x slower than perft 13's units on four H200s,
    whose tasks it cut to one unit each): the tasks not yet submitted are cut again with the pace
    of the first result. Once results come in, their pace (this phase's own: tables warm up, later
    units are smaller) is the one later cuts and the deadline use.
    ``deadline`` (``time.perf_counter()`` seconds): a task is submitted only if it is estimated to
    end before it (``batches``' budget, counting the work already in flight for its part); rows
    that fit no more are left pending in the store.

    Returns (failures as lines: tasks that raised on every try, rows left unsubmitted by the
    deadline)."""
    from collections import deque

    from distributed import as_completed

    if not rows:
        return [], 0
    bar = progress.phase(name, rows)
    per_worker = max(1, len(workers) // max(parts, 1))
    unsubmitted = {r["idx"]: r for r in rows}
    inflight: dict[str, float] = {}  # key -> the task's estimated seconds
    ends: dict[int, float] = {}  # part -> when its workers are estimated to finish what they were sent
    tally = [0.0, 0.0]  # this phase's results: seconds, estimates
    phase_estimate = sum(max(r["estimate"], 1.0) for r in rows)

    def est_seconds(batch) -> float:
        return sum(max(r["estimate"], 1.0) for r in batch) * (pace or 0.0)

    def plan() -> deque:
        budget = None
        if deadline is not None and pace is not None:
            now = time.perf_counter()
            budget = {p: max(0.0, deadline - max(now, ends.get(p, now))) for p in {r["part"] for r in unsubmitted.values()}}
        rest = list(unsubmitted.values())
        share = sum(max(r["estimate"], 1.0) for r in rest) / phase_estimate
        return deque(batches(rest, max(len(workers), 1), pace, merged, budget, share))

    tasks = plan()
    futures: dict = {}
    ac = as_completed()
    run_tag = uuid.uuid4().hex[:8]

    def submit_next() -> None:
        if not tasks:
            return
        batch = tasks.popleft()
        for r in batch:
            unsubmitted.pop(r["idx"])
        st.submitted(r["idx"] for r in batch)
        # A part's tasks prefer its workers (their tables hold that part's entries); whole units go anywhere.
        where = [w for i, w in enumerate(workers) if i % parts == batch[0]["part"] % parts] if parts > 1 else None
        where = where or None
        fut = client.submit(worker.run_task, *task(batch), key=f"perft-{name}-{batch[0]['idx']}-{run_tag}",
                            retries=_RETRIES, pure=False, priority=-batch[0]["idx"], workers=where,
                            allow_other_workers=where is not None)
        futures[fut.key] = batch
        inflight[fut.key] = est = est_seconds(batch)
        now, p = time.perf_counter(), batch[0]["part"]
        ends[p] = max(now, ends.get(p, now)) + est / per_worker
        ac.add(fut)

    failures = []
    try:
        for _ in range(max(4 * len(workers), 16)):
            submit_next()
        for fut in ac:
            batch = futures.pop(fut.key)
            est = inflight.pop(fut.key, 0.0)
            try:
                result = fut.result()
            except Exception as exc:  # the task raised on every try, or its workers kept dying
                failures.append(f"units {batch[0]['unit']}.. ({len(batch)} rows, first {batch[0]['fen']}): "
                                f"{type(exc).__name__}: {exc}")
            else:
                nodes = on_result(batch, result, fut.key)
                progress.advance(bar, batch, nodes)
                tally[0] += result["seconds"]
                tally[1] += sum(max(r["estimate"], 1.0) for r in batch)
                p = batch[0]["part"]  # its workers' queue ends as much sooner (later) as it took less (more)
                ends[p] = ends.get(p, 0.0) - (est - result["seconds"]) / per_worker
                pace = tally[0] / tally[1]  # this phase's own pace from now on (tables warm up, units shrink)
                if not measured and unsubmitted:  # the first measured pace: cut the rest again
                    measured = True
                    tasks = plan()
            fut.release()
            if deadline is not None and not tasks and unsubmitted:
                tasks = plan()  # rows passed over for time: smaller ones may fit what is left
            submit_next()
    finally:  # stopped (Ctrl-C, a full disk): nothing left running or queued on the cluster
        if futures:
            client.cancel(list(ac.futures), force=True)
    return failures, len(unsubmitted)


READ_TABLES_SECONDS = 60.0
"""How long the end of a phase waits for the workers' readings of their tables (one pass over
them: milliseconds) before it goes on without them."""


def _calibrate(client, fen: str, depth: int, backend: str, tt: bool, seed: int, stats: bool) -> float:
    """Nodes per second of the run's counts, measured on a worker (``worker.calibrate``, plain
    counts); a statistics run's divided by the backend's ``stats_cost`` (its statistics against its
    plain count: 12 on the GPU). Without it a statistics run's units and tasks were cut for the
    plain count's speed: two H200s counting perft 12 statistics finished no task in 210 s of a
    190-s ``--max-seconds`` (session 16, call C)."""
    speed = client.submit(worker.calibrate, fen, depth, backend, tt, seed, pure=False).result()
    return speed / BACKENDS[backend].stats_cost if stats else speed


def _read_tables(client, st: Store, phase: str, backend: str, run_key: str, seed: int) -> None:
    """At the end of a phase, the tables of each worker there is now as they stand
    (``worker.table_reading``: their last batch may have skipped the occupancy pass), recorded in
    the store's ``tables``. Statistics only: a worker that is gone, fails or does not answer within
    READ_TABLES_SECONDS is skipped (its statistics stay as last recorded), never an error of the run."""
    if backend == "cpu":
        return
    workers = sorted(client.nthreads())  # a worker lost in the phase may have been restarted elsewhere
    futures = [client.submit(worker.table_reading, backend, run_key, seed, pure=False, workers=[addr],
                             allow_other_workers=False) for addr in workers]
    end = time.monotonic() + READ_TABLES_SECONDS
    try:
        for addr, fut in zip(workers, futures):
            try:
                reading = fut.result(timeout=max(end - time.monotonic(), 0.0))
            except Exception:  # noqa: BLE001 - a lost or silent worker (TimeoutError, a CancelledError...)
                continue
            if reading is not None:
                st.tables_read(phase, addr, reading)
    finally:
        client.cancel(futures, force=True)


def _sum_stats(st: Store, rows: list[dict]):
    """A statistics run's total: each row's counters (proven by its checksum: ``rows`` from
    ``Store.checked_rows``; a recounted row's recount's) times its multiplicity. Raises DeepError for
    a counted row without counters or whose nodes differ from its count."""
    from ..stats import Stats

    total = Stats()
    for r in rows:
        recounted = r["recount"] is not None
        text, count = (r.get("recount_stats"), r["recount"]) if recounted else (r.get("stats"), r["count"])
        values = text.split(",") if text else []
        if len(values) != 13 or not all(v.isdigit() for v in values) or values[0] != count:
            raise DeepError(f"store {st.path}: unit {r['unit']} part {r['part']} has statistics {text!r} that do not "
                            f"match its {'recount' if recounted else 'count'} {count}")
        total = total + Stats.from_tuple(int(v) for v in values) * int(r["multiplicity"])
    return total


def check_estimate(pos: Position, depth: int, backend: str, tt: bool, workers: int,
                   max_seconds: float | None = None, cost: float = 1.0) -> None:
    """Refuse (CountRefused) a run of perft(pos, depth) that even a fast speed says takes longer than
    ``max_seconds`` (default ``estimate.DEFAULT_MAX_ESTIMATE_SECONDS``) on ``workers`` workers of
    ``backend``: the cheap node bound over the backend's speed floor first (about 1 ms), the sampled
    CPU estimate (``estimate.estimate``, 20-250 ms) only when that bound is over; the speed is the
    larger of the measured CPU speed and the backend's floor, times the workers (a GPU counts far
    faster than the CPU probe). With ``tt``, only the count through perfect tables is judged.
    ``cost``: the count's time as a multiple of the plain count's (a backend's ``stats_cost`` for
    statistics)."""
    from .. import estimate
    from ..api import BACKENDS as _BACKENDS
    from ..errors import CountRefused

    limits.check_depth(depth)
    limit = estimate.DEFAULT_MAX_ESTIMATE_SECONDS if max_seconds is None else max_seconds
    floor = _BACKENDS[backend].speed_floor
    if estimate.node_bound(pos, depth) / (floor * workers) * cost <= limit:
        return
    est = estimate.estimate(pos, depth, backend="cpu", threads=1, tt=tt)
    speed = max(est.nodes_per_second, floor) * workers / cost
    seconds = est.nodes / speed * (est.tt_fraction if tt else 1.0)
    if seconds > limit:
        how = f"{workers} {backend} worker{'s' * (workers != 1)}"
        raise CountRefused(est, limit, f"perft deep {depth}: about {est.nodes:.2g} nodes, about "
                           f"{estimate.format_seconds(seconds)} at {estimate.format_speed(speed)} ({how}"
                           f"{', tt at best' if tt else ''}): over the limit of {estimate.format_seconds(limit)}")


def deep_perft(fen: str | None = None, depth: int | None = None, *, backend: str | None = None,
               tt: bool | None = None, workers: int | None = None, gpus: int | None = None,
               scheduler: str | None = None, split_ply: int | None = None, store: str | os.PathLike | None = None,
               resume: str | os.PathLike | None = None, verify_seed: int | None = None,
               verify_sample: float | None = None, progress: bool | str = False, force: bool = False,
               max_estimate_seconds: float | None = None, on_new_store=None,
               max_seconds: float | None = None, stats: bool | None = None,
               part_depth: int | None = None) -> DeepResult:
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
        store: the new store's path (default ``store.default_store_path()``: in the user's data
            folder, never the current one); it must not hold data or be a device, FIFO or socket.
            resume: the path of a store to continue; options given must match its run, except
            that a run with tables and without a verify seed takes one (``Store.add_verification``).
        verify_seed: count the units again with tables keyed by this Zobrist seed (needs tt);
            verify_sample: the fraction of units to verify (default 1: all; chosen by key).
        progress: True or "bar": a rich progress bar on stderr; "lines": a line on stderr at most
            every PROGRESS_LINE_SECONDS and at each phase's end (a log file); False: nothing.
        force, max_estimate_seconds: a new run estimated (:func:`check_estimate`) to take longer
            than ``max_estimate_seconds`` (default ``estimate.DEFAULT_MAX_ESTIMATE_SECONDS``, a day)
            is refused before any cluster, split or store is made, unless ``force`` (with
            ``scheduler`` the workers are not known yet: the estimate counts one).
        on_new_store: called with the new store's path (a Path) once the options are checked, before
            the cluster starts (the CLI says where a default store goes).
        max_seconds: a time limit for this call (seconds from its start): tasks are cut and
            started only where they are estimated (the run's measured seconds per estimated node,
            times BUDGET_MARGIN) to end within it, so a batch job of fixed length or a machine lent
            for minutes loses no work; a task that runs past it is waited for. Default: none.
        stats: count perft statistics (``perft_core.Stats``: the leaf moves by kind) of every unit,
            with ``tt`` on the GPU backends in parts as a plain run's (a part's counters are its leaf
            moves') through statistics tables each worker keeps warm across the run's units
            (``worker.count_stats``, ``TTBfsDriver.count_roots``), else whole; the store keeps each
            row's counters under its checksum and the result's ``stats`` is their sum; with a
            verify seed each sampled unit's 13 counters are counted again and compared. A resumed
            run keeps its own (asking otherwise is a StoreError).
        part_depth: the remaining depth (plies, >= 3) at which a unit counted in parts is split
            among them (``TTBfsDriver.set_part``; default PART_DEPTH, 3: splits at 4 measured 1.44x
            slower at perft 12 and about 1.5x slower at perft 13 on four H200s, NOTES.md session
            17). A resumed run keeps its own (asking otherwise is a StoreError); a run of whole
            units ignores it.

    Returns:
        DeepResult (its ``nodes`` is the count, a Python int).

    Raises:
        ValueError: bad options; FenError: a bad FEN; CountRefused (a ValueError): estimated over
        the limit; LimitError: a split that cannot fit the memory; StoreError (a ValueError): the store is
        missing, corrupt, of another run or in use; KeyCollisionError: two positions share a key
        at the split; DeepError: Dask missing, or units failed on every try (finished units stay
        in the store: resume); DeepStopped (a DeepError): ``max_seconds`` reached with units left
        (nothing lost: resume); StatsUnsupported (a ValueError): ``stats`` with ``tt`` on a
        backend without statistics tables (every backend has them now).
    """
    t0 = time.perf_counter()
    _check(fen, depth, backend, tt, workers, gpus, scheduler, split_ply, store, resume, verify_seed, verify_sample)
    if part_depth is not None and (isinstance(part_depth, bool) or not isinstance(part_depth, int) or part_depth < 3):
        raise ValueError(f"part_depth must be an integer >= 3 (remaining plies at the split of parts), got {part_depth!r}")
    if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(max_seconds, (int, float))
                                    or not math.isfinite(max_seconds) or max_seconds <= 0):
        raise ValueError(f"max_seconds must be a positive number of seconds, got {max_seconds!r}")
    if resume is not None:
        st = Store.open(resume)
        try:
            if verify_seed is not None and st.run["verify_seed"] is None:  # a verify pass added to a run without one
                st.add_verification(verify_seed, 1.0 if verify_sample is None else verify_sample)
            asked = dict(zip(RUN_OPTIONS, (None if fen is None else Position.from_fen(fen).fen(), depth, split_ply,
                                           backend, tt, None, verify_seed, verify_sample, stats, part_depth)))
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
        stats = bool(stats)
        if stats and tt and not BACKENDS[backend].stats_tables:
            from ..errors import StatsUnsupported

            raise StatsUnsupported(f"backend {backend!r} counts no statistics through tables")
        if verify_seed is not None and not tt:
            raise ValueError("verify seed needs tt (it counts again through tables keyed by another seed)")
        if verify_seed is not None and verify_sample is None:
            verify_sample = 1.0
        if not force:
            check_estimate(pos, depth, backend, tt, workers or gpus or 1, max_estimate_seconds,
                           BACKENDS[backend].stats_cost if stats else 1.0)
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
    new_run = st is None
    if new_run:
        store = default_store_path() if store is None else store
        if on_new_store is not None:
            on_new_store(store)
        seed = _core.ZOBRIST_DEFAULT_SEED
        split_at = PART_DEPTH if part_depth is None else part_depth

        def create(n_workers: int, split: int):
            return _create_store(store, pos, depth, split, backend, tt, seed, verify_seed, verify_sample, stats,
                                 choose_parts(backend, tt, depth - split, n_workers, split_at), split_at, timings)
    timings: dict[str, float] = {}
    try:
        # A local cluster's workers are known before it starts: with the split given, the store is
        # made first, so a store that cannot be made (a full disk, say) is one error line with no
        # cluster started and torn down under it.
        if new_run and split_ply is not None and scheduler is None:
            st = create(gpus if gpus is not None else workers, split_ply)
        t_cluster = time.perf_counter()
        with _client(backend, workers, gpus, scheduler) as (client, cluster_desc):
            n_workers = max(len(client.nthreads()), 1)  # every worker (some scheduler_info versions list 5)
            speed = None
            timings["cluster_start"] = time.perf_counter() - t_cluster
            if st is None:
                if split_ply is None:
                    t = time.perf_counter()
                    speed = _calibrate(client, pos.fen(), depth, backend, tt, seed, stats)
                    timings["calibrate"] = time.perf_counter() - t
                    # A unit's parts are counted side by side, one a worker: its time is its nodes
                    # over the speed of all its parts' workers.
                    parts = choose_parts(backend, tt, depth - 1, n_workers, split_at)
                    split_ply = units_mod.choose_split_ply(pos, depth, n_workers, speed * parts)
                st = create(n_workers, split_ply)
            if new_run and progress:
                print(f"perft deep: {st.run['units']} units at split ply {st.run['split_ply']}"
                      + (f", each in {st.run['parts']} parts split at remaining depth {st.run['part_depth']}"
                         if st.run["parts"] > 1 else "")
                      + f", on the {cluster_desc}; store {st.path}", file=sys.stderr, flush=True)
            return _work(client, st, cluster_desc, progress, t0, speed, timings,
                         None if max_seconds is None else t0 + max_seconds)
    finally:
        if st is not None:
            try:
                st.end_session()
            except StoreWriteError:  # a full disk: the error that stopped the run is the one to show
                pass
            st.close()


def _create_store(path, pos: Position, depth: int, split_ply: int, backend: str, tt: bool, seed: int,
                  verify_seed: int | None, verify_sample: float | None, stats: bool, parts: int, split_at: int,
                  timings: dict) -> Store:
    """A new run's units (split at ``split_ply``) in a new store at ``path``, each in ``parts``
    parts split at remaining depth ``split_at``; the split's and the store's seconds go into
    ``timings`` ("split", "store_create"). Raises as :func:`units.split` and :meth:`Store.create`."""
    t = time.perf_counter()
    units = units_mod.split(pos, depth, split_ply, seed)
    timings["split"] = time.perf_counter() - t
    t = time.perf_counter()
    st = Store.create(path, {"fen": pos.fen(), "depth": depth, "split_ply": split_ply, "backend": backend, "tt": tt,
                             "seed": seed, "verify_seed": verify_seed, "verify_sample": verify_sample, "stats": stats,
                             # whole units have no split: their identity as before
                             "part_depth": split_at if parts > 1 else PART_DEPTH}, units, parts)
    timings["store_create"] = time.perf_counter() - t
    return st


def _work(client, st: Store, cluster_desc: str, progress: bool | str, t0: float,
          speed: float | None = None, timings: dict[str, float] | None = None,
          deadline: float | None = None) -> DeepResult:
    """Phases 1-3 on ``client``; the result from the store. ``speed``: nodes per second measured on a
    worker (``worker.calibrate``), if any; the tasks' length is bounded by the store's measured
    speed, else by this one, else by one measured now (:func:`batches`), and cut again by the
    first measured task's where the store had none. ``timings``: the seconds
    of the steps before (DeepResult.timings), completed here. ``deadline``
    (``time.perf_counter()`` seconds): no task is started that is estimated to end after it;
    raises DeepStopped when rows are left for it."""
    timings = {} if timings is None else timings
    run = st.run
    st.begin_session(cluster_desc)
    run_key = f"{st.path.resolve()}:{run['started']}"
    backend, tt, seed, parts = run["backend"], run["tt"], run["seed"], run["parts"]
    counted_now = 0

    def stopped(phase: str, left: int) -> None:
        """Raise DeepStopped when the deadline left rows of ``phase`` unsubmitted."""
        if not left:
            return
        timings["count"] = timings.get("count", count_seconds)
        units = st.units()
        est = sum(max(r["estimate"], 1.0) for r in units) or 1.0
        done = [r for r in units if r["count"] is not None]
        raise DeepStopped(str(st.path), phase, len(units), len(done), counted_now,
                          sum(max(r["estimate"], 1.0) for r in done) / est, time.perf_counter() - t0,
                          {k: round(v, 6) for k, v in timings.items()})

    def args(batch, tt_, seed_, tables=True):
        return ([r["fen"] for r in batch], batch[0]["depth"], backend, tt_, seed_, run_key, run["fen"], run["depth"],
                batch[0]["part"], parts, tables, run["stats"], run["part_depth"])

    busy: dict[str, float] = {}  # worker -> seconds its tasks counted in the count phase

    def stored(write):
        """Time a store write (``timings["store"]``)."""
        t = time.perf_counter()
        try:
            return write()
        finally:
            timings["store"] = timings.get("store", 0.0) + time.perf_counter() - t

    def counted(batch, res, task):
        nonlocal counted_now
        busy[res["worker"]] = busy.get(res["worker"], 0.0) + res["seconds"]
        counted_now += stored(lambda: st.finish(batch, res["counts"], _share(res["seconds"], batch), res["worker"],
                                                res["device"], task, _share(res["probes"], batch),
                                                _share(res["hits"], batch), res.get("tables"), res.get("stats")))
        return sum(int(r["multiplicity"]) * c for r, c in zip(batch, res["counts"]))

    def verified(batch, res, task):
        stored(lambda: st.verified(batch, res["counts"], _share(res["seconds"], batch), res["worker"], task,
                                   res.get("tables"), res.get("stats")))
        return sum(int(r["multiplicity"]) * c for r, c in zip(batch, res["counts"]))

    def recounted(batch, res, task):
        stored(lambda: st.recounted(batch, res["counts"], _share(res["seconds"], batch), res.get("stats")))
        return sum(int(r["multiplicity"]) * c for r, c in zip(batch, res["counts"]))

    failures = []
    workers = sorted(client.nthreads())
    merged = backend != "cpu" and (tt or parts > 1)  # a GPU task's units merge in one count (count_roots)
    with _Progress(progress) as bar:
        rows = [r for r in st.units() if r["status"] == "pending"]
        t = time.perf_counter()
        if rows:  # every worker makes its driver before the clock starts (workers that join later: in their first task)
            client.gather([client.submit(worker.warm_up, run["fen"], run["depth"], backend, tt, seed, pure=False,
                                         workers=[addr], allow_other_workers=False) for addr in workers])
        timings["warm_up"] = time.perf_counter() - t
        # A part's row takes about 1/parts of its unit's time (its share of the leaf, which is most
        # of the work), so the calibrated speed of one worker is scaled by the parts.
        pace = seconds_per_estimate(st.units(), speed and speed * parts)
        measured = any(r.get("seconds") and r["count"] is not None for r in st.units())
        if rows and pace is None:
            t = time.perf_counter()
            speed = _calibrate(client, run["fen"], run["depth"], backend, tt, seed, run["stats"])
            pace = seconds_per_estimate([], speed * parts)
            timings["calibrate"] = timings.get("calibrate", 0.0) + time.perf_counter() - t
        t_count = time.perf_counter()
        count_seconds = 0.0
        failed, left = _run_phase(client, st, rows, lambda b: args(b, tt, seed), counted, workers, bar, "count",
                                  parts, pace, merged, measured, deadline)
        failures += failed
        count_seconds = time.perf_counter() - t_count if rows else 0.0
        if not failures:
            stopped("count", left)
        t = time.perf_counter()
        if rows and tt:
            _read_tables(client, st, "count", backend, run_key, seed)
        timings["read_tables"] = time.perf_counter() - t
        pace = seconds_per_estimate(st.units(), speed and speed * parts)
        t = time.perf_counter()
        if run["verify_seed"] is not None and not failures:
            rows = [r for r in st.units() if r["status"] == "counted" and r["verify_count"] is None
                    and sampled(r["key"], run["verify_sample"])]
            failed, left = _run_phase(client, st, rows, lambda b: args(b, True, run["verify_seed"]), verified,
                                      workers, bar, "verify", parts, pace, merged, deadline=deadline)
            failures += failed
            if not failures:
                stopped("verify", left)
            if rows:
                _read_tables(client, st, "verify", backend, run_key, run["verify_seed"])
        timings["verify"] = time.perf_counter() - t
        t = time.perf_counter()
        rows = [r for r in st.units() if r["status"] == "mismatch"]
        failed, left = _run_phase(client, st, rows, lambda b: args(b, False, seed, tables=False), recounted,
                                  workers, bar, "recount", parts, pace, deadline=deadline)
        failures += failed
        if not failures:
            stopped("recount", left)
        timings["recount"] = time.perf_counter() - t
    timings["count"] = count_seconds
    # The count phase's time when its busiest worker was not counting: Dask's submission and
    # results, the store's writes, and the tail where other workers finish.
    timings["dispatch"] = max(0.0, count_seconds - max(busy.values(), default=0.0)) if count_seconds else 0.0
    if failures:
        raise DeepError(f"{len(failures)} tasks failed on every try (finished units are stored; resume "
                        f"with --resume {st.path}); first: {failures[0]}")
    rows = st.checked_rows()  # every row proven by its checksum before it is summed
    nodes = 0
    for r in rows:
        if r["count"] is None:
            raise DeepError(f"unit {r['unit']} part {r['part']} of store {st.path} has no count after the run")
        nodes += int(r["multiplicity"]) * int(r["recount"] if r["recount"] is not None else r["count"])
    units_verified = {r["unit"] for r in rows if r["verify_count"] is not None}
    units_verified -= {r["unit"] for r in rows if r["verify_count"] is None}  # every part counted again
    mismatches = [{k: r[k] for k in ("idx", "unit", "part", "fen", "count", "verify_count", "recount")}
                  for r in rows if r["status"] in ("mismatch", "recounted")]
    n_units = run["units"]
    if run["verify_seed"] is None:
        verify = "not verified (no verify seed)"
    else:
        sample = "all units" if run["verify_sample"] >= 1 else f"a {run['verify_sample']:g} sample of units by key"
        verify = (f"{len(units_verified)} of {n_units} units ({sample}) counted again with tables keyed by seed "
                  f"{run['verify_seed']:#x}: {len(mismatches)} differed"
                  + (" and were counted again without tables" if mismatches else ""))
    tables = st.table_statistics()
    total_stats = _sum_stats(st, rows) if run["stats"] else None
    return DeepResult(nodes=nodes, seconds=time.perf_counter() - t0, store=str(st.path), fen=run["fen"],
                      depth=run["depth"], split_ply=run["split_ply"], backend=backend, tt=tt, units=n_units,
                      parts=parts, part_depth=run["part_depth"], counted_now=counted_now, verified=len(units_verified), verify=verify,
                      mismatches=mismatches, count_seconds=count_seconds,
                      unit_seconds=sum(r["seconds"] or 0.0 for r in rows),
                      tt_probes=sum(r["probes"] or 0 for r in rows), tt_hits=sum(r["hits"] or 0 for r in rows),
                      tampered=[{k: r[k] for k in ("idx", "unit", "part", "fen", "count")} for r in st.tampered],
                      tables=tables.get("count", {}), verify_tables=tables.get("verify", {}),
                      timings={k: round(v, 6) for k, v in timings.items()}, stats=total_stats)
