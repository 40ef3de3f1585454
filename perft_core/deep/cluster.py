"""The Dask cluster of a deep run: a client of an existing scheduler, or of a local cluster of
processes or of one worker per GPU (dask-cuda) that this process starts and closes, with the
workers forked where they can be, deaf to Ctrl-C, and quiet when a stopped run closes them.
Dask is imported only here, when a run starts.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from .errors import DeepError

NO_DASHBOARD = {"dashboard_address": ":0", "scheduler_kwargs": {"dashboard": False}}
"""A local cluster's options: no dashboard, and the scheduler's HTTP server (which Dask starts even
without one) on a free port: ``dashboard_address=None`` means its default port 8787, and a second
run on one machine then printed Dask's four-line "Port 8787 is already in use" warning (issue 34 N8)."""


def require_dask(gpus: bool) -> None:
    """Raise DeepError naming the extra to install unless Dask (and with ``gpus`` dask-cuda) imports."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DeepError("deep perft needs Dask: pip install 'perft-oracle[dist]'") from None
    if gpus:
        try:
            import dask_cuda  # noqa: F401
        except ImportError:
            raise DeepError("--gpus needs dask-cuda: pip install 'perft-oracle[dist,gpu]'") from None


def visible_gpus() -> int | None:
    """The GPUs a LocalCUDACluster would start workers on (``CUDA_VISIBLE_DEVICES``, else NVML,
    through ``dask_cuda.utils.get_n_gpus``), without starting CUDA in this process; None when
    dask-cuda or NVML cannot say."""
    try:
        from dask_cuda.utils import get_n_gpus

        return int(get_n_gpus())
    except Exception:  # dask-cuda missing (said where the cluster starts), no NVML, a bad variable
        return None


@contextmanager
def dask_client(backend: str, workers: int | None, gpus: int | None, scheduler: str | None):
    """A dask.distributed Client: of ``scheduler``, or of a LocalCUDACluster of ``gpus`` workers
    (one per device), or of a LocalCluster of ``workers`` processes with one thread each.
    Yields (client, description). Raises DeepError (:func:`require_dask`, or no worker came up)."""
    require_dask(gpus is not None and scheduler is None)
    from distributed import Client, LocalCluster

    if scheduler is not None:
        with Client(scheduler) as client:
            _wait_for_workers(client, 1, f"scheduler {scheduler}")
            yield client, f"scheduler {scheduler}"
        return
    if gpus is not None:
        import dask
        from dask_cuda import LocalCUDACluster

        # Each GPU counts its own part of every unit with that part's tables: a task stolen by
        # another GPU would be counted right but with cold tables (reset for the other part).
        with dask.config.set({"distributed.scheduler.work-stealing": False}), start_method() as how, \
                _workers_ignore_ctrl_c(how) as came:
            cluster = LocalCUDACluster(n_workers=gpus, threads_per_worker=1, **NO_DASHBOARD)
        desc = f"LocalCUDACluster of {gpus} GPU workers ({how})"
    else:
        with start_method() as how, _workers_ignore_ctrl_c(how) as came:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, **NO_DASHBOARD)
        desc = f"LocalCluster of {workers} processes ({how})"
    try:
        if came:  # Ctrl-C or SIGTERM while the cluster started: stop before any work, the cluster closed
            raise KeyboardInterrupt
        with Client(cluster) as client:
            _wait_for_workers(client, 1, desc)
            try:
                yield client, desc
            finally:  # finished or stopped: the workers go down with the cluster, quietly (a worker
                _quiet(client)  # whose heartbeat met the closing scheduler logged a traceback)
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
def start_method():
    """Dask's worker start method set to :func:`worker_start_method` while a local cluster starts;
    yields how the workers start ("forked" or "spawned", for the cluster's description)."""
    import dask

    method = worker_start_method()
    with dask.config.set({"distributed.worker.multiprocessing-method": method}):
        yield "forked" if method == "fork" else "spawned"


@contextmanager
def _workers_ignore_ctrl_c(how: str = "spawned"):
    """SIGINT and SIGTERM kept from the workers while a local cluster starts its processes, which
    inherit this process's handling: Ctrl-C on a terminal (or ``kill -TERM -PGID`` from a batch
    system) reaches the whole process group, and only the client should answer it (it cancels the
    futures and closes the cluster), not every worker with its own traceback, nor nannies that log
    restarting the workers killed under them (issue 34: 2-3 Dask lines before ``perft:
    interrupted``). The cluster's close ends them (its own request, then SIGKILL).

    ``how`` the workers start (:func:`start_method`): "forked" ones inherit a handler that only
    notes the signal in a list, so they do nothing with it, and the client keeps it (yielded: the
    signals that came; :func:`dask_client` stops on them once the cluster is in hand, and
    ``cliargs.note_stop`` records the first). "spawned" ones are new programs, which keep an
    ignored signal but not a handler, so the signals are ignored here too and one that comes
    meanwhile is lost (a Ctrl-C'd run then counts to the end: session 32's edge hunt; blocking the
    signals as well does not keep them pending on every kernel)."""
    import signal
    import threading

    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    action = (lambda signum, frame: came.append(signum)) if how == "forked" else signal.SIG_IGN
    old = {sig: signal.signal(sig, action) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield came
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if came:
            from .. import cliargs

            cliargs.note_stop(came[0])


def _silence_logs() -> None:
    """Run on a worker of a cluster that is closing: its logs would only report the close."""
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL + 1)


def _quiet(client) -> None:
    """Silence the workers' logs before their cluster closes (under a stopped run every worker
    prints the scheduler going away; after a finished one a worker's heartbeat may meet the closing
    scheduler and log an ERROR with a traceback); best effort, never an error of its own."""
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
