"""The fixed GPU benchmark set and its timing loop (the timing gate and ci/bench_gpu.py share both).

A workload is one perft call whose node count is known: published (the Chess Programming Wiki's
table, read from oracle/data/cpw_perft_results.csv) or, past that table's depths, computed
(oracle/data/deep_counts.csv rows of status "computed": this project's GPU code without tables,
with them and with a second key seed agreeing, the smaller ones confirmed by an independent CPU
engine: NOTES "Session 10"). Every timed run also checks the count: a wrong count raises
``WrongNodeCount`` and fails louder than slowness.

Workloads with ``tt=True`` are timed with ``perft_core.gpu.ttdriver.TTBfsDriver`` (cold tables every
count); the others with ``BfsDriver``. The gate builds one driver at a time, switching once.

Each timed run is as many back-to-back counts as fill ``MIN_RUN_S`` (at least 0.15 s; a workload of
a few milliseconds is mostly host time and its single counts spread by 10 %), and its time is the
run's seconds per count.
"""
from __future__ import annotations

import importlib.util
import csv
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from a source checkout (ci/ is not a package)
    if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
        sys.path.insert(0, str(ROOT))

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CPW_TABLE = ROOT / "oracle" / "data" / "cpw_perft_results.csv"
DEEP_TABLE = ROOT / "oracle" / "data" / "deep_counts.csv"  # counted three ways on a GPU (issue 11)
MIN_RUN_S = 0.15  # seconds a timed run lasts at least (back-to-back counts)


def published(position: str, depth: int, table: Path = CPW_TABLE) -> tuple[str, int]:
    """(FEN, nodes) of position ``position`` at ``depth`` from ``table``: the CPW table (a
    ``suite,id,fen,depth,nodes,source`` CSV, ids like "pos3") or the deep-count table (ids like
    "cpw-pos3"; only ``published`` or three-way ``computed`` rows). Raises KeyError when the table
    has no such row."""
    with open(table, newline="") as f:
        for row in csv.DictReader(f):
            if row["id"] == position and int(row["depth"]) == depth and row.get("status", "published") in (
                    "published", "computed"):
                return row["fen"], int(row["nodes"])
    raise KeyError(f"{table.name} has no perft {depth} of {position}")


@dataclass(frozen=True)
class Workload:
    """One timed perft call.

    nodes: the expected count (published, or computed: see the module docstring); runs: timed runs after the warm-up counts; tt: counted
    with the GPU transposition tables; peer_s: perft_gpu_2026's seconds on an H200 (bench_gpu.py's
    comparison), or None; tolerance: a fixed tolerance for a new baseline (None: from the spread).
    """

    name: str
    fen: str
    depth: int
    nodes: int
    runs: int = 7
    tt: bool = False
    peer_s: float | None = None
    tolerance: float | None = None


def _cpw(name: str, position: str, depth: int, tt: bool = False) -> Workload:
    """CPW position ``position`` ("pos3") at ``depth``: from the CPW table where it stops deep
    enough, else from the deep-count table (same FEN, counted without, with and with second-seed
    tables; ci/deep_counts.py)."""
    try:
        fen, nodes = published(position, depth)
    except KeyError:
        fen, nodes = published(f"cpw-{position}", depth, DEEP_TABLE)
    return Workload(name, fen, depth, nodes, tt=tt)


# The two tuned positions and CPW positions 3-6, each without and with tables, every count long
# enough (0.03-0.43 s on an H200) that the kernels, not the host, set the time. Seconds per count in the
# H200 baseline (ci/baselines/nvidia-h200.json): startpos 8 0.115, Kiwipete 7 0.326, CPW 3 d9 0.088,
# CPW 4 d7 0.031, CPW 5 d7 0.126, CPW 6 d7 0.243; with tables startpos 9 0.250, Kiwipete 7 0.111, CPW 3
# d10 0.042, CPW 4 d8 0.428, CPW 5 d7 0.043, CPW 6 d7 0.074; runs spread 0.1-1.1 %. CPW 3-5 at the CPW
# table's deepest rows (d8, d6, d5: 0.7-6 ms a count) spread so much between runs that their
# tolerances came out at 5-125 % (session 3). About 25 s for the whole gate on an H200.
WORKLOADS: tuple[Workload, ...] = (
    _cpw("startpos-8", "pos1_initial", 8),
    # Kiwipete perft 7: CPW's text (its table stops at 6), as perft_gpu_2026 and Stockfish count it.
    Workload("kiwipete-7", KIWIPETE, 7, 374_190_009_323, peer_s=0.355),
    _cpw("cpw3-9", "pos3", 9),
    _cpw("cpw4-7", "pos4", 7),
    _cpw("cpw5-7", "pos5", 7),
    _cpw("cpw6-7", "pos6", 7),
    _cpw("startpos-9-tt", "pos1_initial", 9, tt=True),
    Workload("kiwipete-7-tt", KIWIPETE, 7, 374_190_009_323, tt=True),
    _cpw("cpw3-10-tt", "pos3", 10, tt=True),
    _cpw("cpw4-8-tt", "pos4", 8, tt=True),
    _cpw("cpw5-7-tt", "pos5", 7, tt=True),
    _cpw("cpw6-7-tt", "pos6", 7, tt=True),
)


class WrongNodeCount(AssertionError):
    """A timed run returned a node count other than the workload's expected one."""

    def __init__(self, workload: Workload, got: int):
        self.workload, self.got = workload, got
        super().__init__(f"WRONG NODE COUNT: {workload.name} (perft {workload.depth} of {workload.fen}) "
                         f"returned {got:,} nodes, expected {workload.nodes:,}")


@dataclass(frozen=True)
class Measurement:
    """Seconds per count of the timed runs of one workload (each run: ``repeat`` back-to-back counts),
    each run's overhead share (0..1, time outside kernels; None when the driver does not report it)
    and device (kernel) seconds per count (None when not reported)."""

    workload: str
    nodes: int
    times: tuple[float, ...]
    overhead: tuple[float | None, ...] = ()
    repeat: int = 1
    kernel: tuple[float | None, ...] = ()

    @property
    def kernel_median(self) -> float | None:
        k = [x for x in self.kernel if x is not None]
        return statistics.median(k) if k else None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def spread(self) -> float:
        """(max - min) / median of the runs: the noise this measurement carries (0.03 = 3 %)."""
        return (max(self.times) - min(self.times)) / self.median if self.median > 0 else 0.0

    def extended(self, more: Measurement) -> Measurement:
        """This measurement's runs pooled with ``more``'s (a confirmation round)."""
        return Measurement(self.workload, self.nodes, self.times + more.times, self.overhead + more.overhead,
                           self.repeat, self.kernel + more.kernel)


def measure(driver, workload: Workload, runs: int | None = None, warmup: int = 2,
            clock: Callable[[], float] = time.perf_counter, repeat: int | None = None,
            min_run_s: float = MIN_RUN_S) -> Measurement:
    """Time ``runs`` (default ``workload.runs``) runs of ``driver.perft`` after ``warmup`` untimed counts.

    A run is ``repeat`` back-to-back counts; by default as many as fill ``min_run_s`` at the
    fastest warm-up count's pace (at most 1000). ``driver`` is a ``perft_core.gpu.BfsDriver`` /
    ``TTBfsDriver`` or anything with ``perft(position, depth) -> int``. TT workloads start every
    count with empty tables. Raises WrongNodeCount on the first count (warm-ups included) whose
    count is wrong.
    """
    import perft_core

    pos = perft_core.Position.from_fen(workload.fen)
    stats_of = lambda: getattr(driver, "stats", None)  # noqa: E731

    def count() -> tuple[float, float | None]:
        if workload.tt and hasattr(driver, "host_cache"):
            # Every count with cold tables: TTBfsDriver rebuilds its device TTs per count, but
            # its host cache lives on and would answer the next count from the last one.
            driver.host_cache.clear()
        t = clock()
        nodes = driver.perft(pos, workload.depth)
        dt = clock() - t
        if nodes != workload.nodes:
            raise WrongNodeCount(workload, nodes)
        return dt, getattr(stats_of(), "kernel_seconds", None)

    warm = [count()[0] for _ in range(warmup)]
    if repeat is None:
        repeat = min(1000, max(1, math.ceil(min_run_s / max(min(warm), 1e-9)))) if warm else 1
    times, overhead, kernel = [], [], []
    for _ in range(runs or workload.runs):
        done = [count() for _ in range(repeat)]
        times.append(sum(d for d, _ in done) / repeat)
        ks = [k for _, k in done]
        kernel.append(sum(ks) / repeat if all(k is not None for k in ks) else None)
        overhead.append(getattr(stats_of(), "overhead_share", None))
    return Measurement(workload.name, workload.nodes, tuple(times), tuple(overhead), repeat, tuple(kernel))


class HostDelay:
    """A driver whose every ``perft`` first sleeps ``seconds`` on the host (kernels untouched): the
    planted wall-only slowdown of ``perf_gate.py timing --host-delay MS``, like the per-call fixed
    costs of issue 27 (a run-time estimate of 0.1-0.25 s before a 0.04 s count). Every other
    attribute is the wrapped driver's (stats, host_cache)."""

    def __init__(self, driver, seconds: float, sleep: Callable[[float], None] = time.sleep):
        self._driver, self._seconds, self._sleep = driver, seconds, sleep

    def perft(self, pos, depth: int) -> int:
        self._sleep(self._seconds)
        return self._driver.perft(pos, depth)

    def __getattr__(self, name: str):
        return getattr(self._driver, name)


def select(names: Sequence[str] | None) -> tuple[Workload, ...]:
    """The workloads named (all when ``names`` is empty or None); ValueError for an unknown name."""
    if not names:
        return WORKLOADS
    known = {w.name: w for w in WORKLOADS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return tuple(known[n] for n in names)


@dataclass(frozen=True)
class Variant:
    """How the kernels are built: the default (what baselines record) or an experiment.

    leaf3: the fused two-level leaf, ``"list"`` (default) or ``"stream"`` (no move list; NOTES.md
    measured it 42 % slower on startpos 9); leaf_threads: threads per block of the leaf kernels
    (also passed as ``-DPC_LEAF_THREADS``); options: extra NVRTC options (``-DNAME=VALUE``).
    """

    leaf3: str = "list"
    leaf_threads: int = 128
    options: tuple[str, ...] = ()

    @property
    def is_default(self) -> bool:
        return self == Variant()

    def describe(self) -> str:
        opts = " ".join(self.options) or "none"
        return f"leaf3={self.leaf3} leaf_threads={self.leaf_threads} options={opts}"


def build_driver(variant: Variant = Variant(), tt: bool = False):
    """A new CuPy driver for ``variant``: ``TTBfsDriver`` for ``tt``, else ``BfsDriver``.

    Its arena takes 85 % of the free device memory, so drop any previous driver and call
    ``release_device_memory`` first. Kernels are compiled once per process per option set.
    Raises ValueError when CuPy or a CUDA device is missing.
    """
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # ImportError, CUDARuntimeError
        raise ValueError(f"the GPU benchmarks need CuPy and a CUDA device: {exc}") from None
    from perft_core.gpu.driver import BfsDriver
    from perft_core.gpu.kernels import CupyKernels
    from perft_core.gpu.ttdriver import TTBfsDriver

    options = variant.options
    if variant.leaf_threads != 128:
        options = (f"-DPC_LEAF_THREADS={variant.leaf_threads}",) + options
    kernels = CupyKernels(options=options, leaf_threads=variant.leaf_threads, leaf3=variant.leaf3)
    return TTBfsDriver(kernels) if tt else BfsDriver(kernels)


def release_device_memory() -> None:
    """Return CuPy's cached blocks to the device (after dropping a driver, before building one)."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()


def gpu_info() -> dict[str, str]:
    """The current CUDA device: ``name`` ("NVIDIA H200"), ``arch`` ("sm_90"), ``driver``, ``runtime``,
    ``cupy`` versions. Needs CuPy."""
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {"name": name, "arch": f"sm_{dev.compute_capability}",
            "driver": str(cupy.cuda.runtime.driverGetVersion()),
            "runtime": str(cupy.cuda.runtime.runtimeGetVersion()), "cupy": cupy.__version__}
