"""The fixed GPU benchmark set and its timing loop (the timing gate and ci/bench_gpu.py share both).

A workload is one perft call whose node count is known from a published table, so every timed run
also checks the count: a wrong count raises ``WrongNodeCount`` and fails louder than slowness.

Transposition tables: a workload with ``tt=True`` is timed with ``perft_core.gpu.ttdriver.TTBfsDriver``
(cold tables every run). The list has none yet: add entries such as
``Workload("startpos-9-tt", STARTPOS, 9, 2_439_530_234_167, runs=5, tt=True)`` after the no-TT ones
(the gate builds one driver at a time, switching once), then record them with ``--update``; until
then a workload missing from a baseline fails the gate as "no baseline".
"""
from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from a source checkout (ci/ is not a package)
    sys.path.insert(0, str(ROOT))

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


@dataclass(frozen=True)
class Workload:
    """One timed perft call.

    nodes: the expected count (CPW / OEIS A048987); runs: timed runs after one warm-up run (more
    for short workloads, whose relative noise is larger); tt: needs the GPU transposition tables;
    peer_s: perft_gpu_2026's seconds on an H200 (bench_gpu.py's comparison), or None;
    tolerance: seed for a new baseline's per-workload tolerance override (the baseline file's value
    is the one the gate uses; None = the gate's --tolerance).
    """

    name: str
    fen: str
    depth: int
    nodes: int
    runs: int
    tt: bool = False
    peer_s: float | None = None
    tolerance: float | None = None


# About 0.145 s, 3.7 s, 0.016 s and 0.46 s per run on an H200 (NOTES.md). The timing gate (one warm-up
# plus these runs each) takes about 30 s plus the NVRTC build, at most about 60 s when every workload
# needs its confirmation round.
WORKLOADS: tuple[Workload, ...] = (
    Workload("startpos-8", STARTPOS, 8, 84_998_978_956, runs=9),
    Workload("startpos-9", STARTPOS, 9, 2_439_530_234_167, runs=5, peer_s=3.67),
    # 16 ms, a quarter of it Python and launch overhead: host jitter is several percent of a run.
    Workload("kiwipete-6", KIWIPETE, 6, 8_031_647_685, runs=15, tolerance=0.10),
    Workload("kiwipete-7", KIWIPETE, 7, 374_190_009_323, runs=7, peer_s=0.355),
)


class WrongNodeCount(AssertionError):
    """A timed run returned a node count other than the workload's published one."""

    def __init__(self, workload: Workload, got: int):
        self.workload, self.got = workload, got
        super().__init__(f"WRONG NODE COUNT: {workload.name} (perft {workload.depth} of {workload.fen}) "
                         f"returned {got:,} nodes, expected {workload.nodes:,}")


@dataclass(frozen=True)
class Measurement:
    """Wall times (seconds) of the timed runs of one workload, and each run's overhead share (0..1,
    time outside kernels; None when the driver does not report it)."""

    workload: str
    nodes: int
    times: tuple[float, ...]
    overhead: tuple[float | None, ...] = ()

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def spread(self) -> float:
        """(max - min) / median of the runs: the noise this measurement carries (0.03 = 3 %)."""
        return (max(self.times) - min(self.times)) / self.median if self.median > 0 else 0.0

    def extended(self, more: Measurement) -> Measurement:
        """This measurement's runs pooled with ``more``'s (a confirmation round)."""
        return Measurement(self.workload, self.nodes, self.times + more.times, self.overhead + more.overhead)


def measure(driver, workload: Workload, runs: int | None = None, warmup: int = 1,
            clock: Callable[[], float] = time.perf_counter) -> Measurement:
    """Time ``runs`` (default ``workload.runs``) calls of ``driver.perft`` after ``warmup`` untimed ones.

    ``driver`` is a ``perft_core.gpu.BfsDriver`` / ``TTBfsDriver`` or anything with
    ``perft(position, depth) -> int``. TT workloads start each run with empty tables.
    Raises WrongNodeCount on the first run (warm-up included) whose count is wrong.
    """
    import perft_core

    pos = perft_core.Position.from_fen(workload.fen)
    times, overhead = [], []
    for i in range(warmup + (runs or workload.runs)):
        if workload.tt and hasattr(driver, "host_cache"):
            # Every run counts with cold tables: TTBfsDriver rebuilds its device TTs per count, but
            # its host cache lives on and would answer the next run from the last one.
            driver.host_cache.clear()
        t = clock()
        nodes = driver.perft(pos, workload.depth)
        dt = clock() - t
        if nodes != workload.nodes:
            raise WrongNodeCount(workload, nodes)
        if i >= warmup:
            times.append(dt)
            stats = getattr(driver, "stats", None)
            overhead.append(getattr(stats, "overhead_share", None))
    return Measurement(workload.name, workload.nodes, tuple(times), tuple(overhead))


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
