"""Timing gate: median wall times of the fixed workloads against a per-GPU baseline file.

Baseline files live in ci/baselines/<slug of the CUDA device name>.json ("NVIDIA H200" ->
nvidia-h200.json) and are written by ``python ci/perf_gate.py timing --update``. Layout (schema 1):

    {"schema": 1, "gpu": "NVIDIA H200", "arch": "sm_90", "date": "2026-11-21", "commit": "bd8c096",
     "cupy": "13.6.0", "cuda_driver": "13000", "cuda_runtime": "13000",
     "workloads": {"startpos-9": {"nodes": 2439530234167, "runs": 5, "median_s": 4.036,
                                  "min_s": 4.031, "max_s": 4.05, "spread": 0.0047, "times_s": [...]},
                   "kiwipete-6": {..., "tolerance": 0.10, "tolerance_reason": "..."}}}

Only ``nodes``, ``median_s``, ``repeat`` (counts per timed run, reused when re-measuring), the
run times (for the spread), ``kernel_median_s`` and ``kernel_times_s`` (device seconds per count,
CUDA events, per run) and an optional hand-set ``tolerance`` in 0..1 (with its reason) are read
for the verdict. ``--update`` keeps every hand-set tolerance already in the file.

What is judged: every workload on its wall time; a workload whose baseline count takes under
``WALL_MIN_S`` (0.1 s) and whose baseline recorded kernel times per run on its kernel time too, each
with its own tolerance from its own spread (issue 27). Kernel time alone let a host-side regression
of a short count pass (the run-time estimate's 0.1-0.25 s on a 0.04 s count); wall time alone cries
wolf there, launch gaps and host work moving it by several per cent from one process to the next
(CPW 3 d10 with tables, 0.037 s: +5.6 % wall, +0.8 % kernel time, on unchanged code; NOTES.md
session 9), so a short workload's wall tolerance has a floor of ``SHORT_WALL_FLOOR`` (10 %): a
host cost of a few milliseconds a count fails it, process-to-process noise does not. The verdict
is SLOWER when either time is.

Tolerance of a workload: max(floor, 2 x its baseline spread), spread = (max - min) / median of the
baseline's runs; the floor is ``--tolerance`` (default 3 %, what separates two fresh H200 runs of
unchanged code: NOTES.md). A workload whose runs spread 1 % is judged at 3 %, one whose runs spread
4 % at 8 %: the noise each workload showed decides how much it may move, and a planted 5 % slowdown
of the kernels fails the workloads whose noise is small (``timing --slow 5``).

Noise: each workload is timed ``runs`` times after warm-up counts and judged on the median. A
workload that comes out slower than its tolerance is timed once more (same number of runs) and
judged on the median of all 2N runs: it moves only when more than N runs are slow, so a
disturbance that spoiled most of one round passes, while a real regression, present in every
run, still fails.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .table import markdown
from .workloads import ROOT, Measurement, Workload

SCHEMA = 1
DEFAULT_TOLERANCE = 0.03  # the floor of every workload's tolerance
WALL_MIN_S = 0.1  # a count shorter than this is judged on its kernel time too (see above)
SHORT_WALL_FLOOR = 0.10  # the floor of a short workload's wall tolerance (see above)
SPREAD_FACTOR = 2.0  # tolerance = max(floor, SPREAD_FACTOR x the baseline's spread)
BASELINE_DIR = ROOT / "ci" / "baselines"


class BaselineError(ValueError):
    """A baseline file that cannot be read or does not match the workload list."""


def slug(gpu_name: str) -> str:
    """File-name slug of a CUDA device name: "NVIDIA H200" -> "nvidia-h200"."""
    s = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")
    if not s:
        raise ValueError(f"GPU name {gpu_name!r} has no letters or digits")
    return s


def baseline_path(gpu_name: str, directory: Path = BASELINE_DIR) -> Path:
    return Path(directory) / f"{slug(gpu_name)}.json"


@dataclass(frozen=True)
class BaselineEntry:
    """One workload's recorded timing: median seconds over ``runs`` runs of ``nodes`` nodes."""

    nodes: int
    median_s: float
    runs: int = 0
    min_s: float | None = None
    max_s: float | None = None
    times_s: tuple[float, ...] = ()
    tolerance: float | None = None
    tolerance_reason: str | None = None
    repeat: int | None = None
    kernel_median_s: float | None = None
    kernel_times_s: tuple[float, ...] = ()

    @property
    def on_kernel(self) -> bool:
        """Judged on kernel time too: a count shorter than WALL_MIN_S with per-run kernel times."""
        return self.median_s < WALL_MIN_S and bool(self.kernel_times_s) and bool(self.kernel_median_s)

    @property
    def spread(self) -> float | None:
        """(max - min) / median of the wall times; None when unknown."""
        if self.min_s is None or self.max_s is None:
            return None
        return (self.max_s - self.min_s) / self.median_s

    @property
    def kernel_spread(self) -> float | None:
        """(max - min) / median of the kernel times per run; None when not recorded."""
        k = self.kernel_times_s
        return (max(k) - min(k)) / self.kernel_median_s if k and self.kernel_median_s else None

    def tolerance_for(self, floor: float) -> float:
        """The allowed wall slowdown: the hand-set ``tolerance``, else max(floor, SPREAD_FACTOR x
        spread), the floor at least SHORT_WALL_FLOOR for a short workload judged on both times."""
        if self.tolerance is not None:
            return self.tolerance
        if self.on_kernel:
            floor = max(floor, SHORT_WALL_FLOOR)
        return max(floor, SPREAD_FACTOR * self.spread) if self.spread is not None else floor

    def kernel_tolerance_for(self, floor: float) -> float:
        """The allowed kernel slowdown: the hand-set ``tolerance``, else max(floor, SPREAD_FACTOR x
        kernel spread)."""
        if self.tolerance is not None:
            return self.tolerance
        spread = self.kernel_spread
        return max(floor, SPREAD_FACTOR * spread) if spread is not None else floor


@dataclass(frozen=True)
class Baseline:
    """A parsed baseline file (see the module docstring); ``meta`` holds the descriptive keys."""

    gpu: str
    workloads: dict[str, BaselineEntry]
    meta: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        out: dict[str, object] = {"schema": SCHEMA, "gpu": self.gpu, **self.meta, "workloads": {}}
        for name, e in self.workloads.items():
            w: dict[str, object] = {"nodes": e.nodes, "runs": e.runs, "median_s": round(e.median_s, 6)}
            if e.repeat is not None:
                w["repeat"] = e.repeat
            if e.kernel_median_s is not None:
                w["kernel_median_s"] = round(e.kernel_median_s, 6)
            if e.kernel_times_s:
                w["kernel_times_s"] = [round(t, 6) for t in e.kernel_times_s]
            if e.min_s is not None and e.max_s is not None:
                w.update(min_s=round(e.min_s, 6), max_s=round(e.max_s, 6), spread=round(e.spread, 4))
            if e.times_s:
                w["times_s"] = [round(t, 6) for t in e.times_s]
            if e.tolerance is not None:
                w["tolerance"] = e.tolerance
                w["tolerance_reason"] = e.tolerance_reason or ""
            out["workloads"][name] = w
        text = json.dumps(out, indent=2)
        return re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + ", ".join(re.split(r",\s+", m.group(1))) + "]",
                      text) + "\n"  # lists of numbers on one line

    @classmethod
    def from_json(cls, text: str, source: str = "baseline") -> Baseline:
        """Parse a baseline; raises BaselineError naming ``source`` and the offending key."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{source}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BaselineError(f"{source}: expected a JSON object at the top, got {type(data).__name__}")
        if data.get("schema") != SCHEMA:
            raise BaselineError(f"{source}: schema is {data.get('schema')!r}, this gate reads schema {SCHEMA}")
        gpu = data.get("gpu")
        if not isinstance(gpu, str) or not gpu:
            raise BaselineError(f"{source}: 'gpu' must be the CUDA device name, got {gpu!r}")
        raw = data.get("workloads")
        if not isinstance(raw, dict) or not raw:
            raise BaselineError(f"{source}: 'workloads' must be a non-empty object of workload name -> timing")
        workloads = {name: _entry(w, f"{source}: workloads.{name}") for name, w in raw.items()}
        meta = {k: str(v) for k, v in data.items() if k not in ("schema", "gpu", "workloads")}
        return cls(gpu, workloads, meta)

    @classmethod
    def load(cls, path: Path) -> Baseline | None:
        """The baseline at ``path``, or None when there is no such file; BaselineError if unreadable."""
        path = Path(path)
        if not path.exists():
            return None
        return cls.from_json(path.read_text(), str(path))


def _entry(w: object, where: str) -> BaselineEntry:
    if not isinstance(w, dict):
        raise BaselineError(f"{where}: expected an object, got {type(w).__name__}")

    def number(key: str, kind: type, required: bool = False, positive: bool = True):
        v = w.get(key)
        if v is None:
            if required:
                raise BaselineError(f"{where}: missing '{key}'")
            return None
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and (kind is float or isinstance(v, int))
        if not ok or (positive and v <= 0) or (not positive and v < 0):
            need = "a positive" if positive else "a non-negative"
            raise BaselineError(f"{where}: '{key}' must be {need} {kind.__name__}, got {v!r}")
        return kind(v)

    tolerance = number("tolerance", float)
    if tolerance is not None and tolerance >= 1:
        raise BaselineError(f"{where}: 'tolerance' is a fraction (0.05 = 5 %), got {tolerance!r}")
    def seconds(key: str) -> tuple[float, ...]:
        v = w.get(key, [])
        if not isinstance(v, list) or not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0
                                              for t in v):
            raise BaselineError(f"{where}: '{key}' must be a list of positive seconds, got {v!r}")
        return tuple(float(t) for t in v)

    reason = w.get("tolerance_reason")
    return BaselineEntry(
        nodes=number("nodes", int, required=True), median_s=number("median_s", float, required=True),
        runs=number("runs", int, positive=False) or 0, min_s=number("min_s", float), max_s=number("max_s", float),
        times_s=seconds("times_s"), tolerance=tolerance,
        tolerance_reason=str(reason) if reason is not None else None,
        repeat=number("repeat", int), kernel_median_s=number("kernel_median_s", float),
        kernel_times_s=seconds("kernel_times_s"))


# ----- comparison -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """A workload's current measurement beside its baseline; ``verdict`` is one of
    "ok" (within tolerance), "faster" (beyond tolerance, passes), "SLOWER" (fails),
    "no baseline" (fails)."""

    workload: str
    now: Measurement
    baseline: BaselineEntry | None
    tolerance: float
    confirmed: bool = False  # re-measured after a first SLOWER verdict
    kernel_tolerance: float | None = None  # a short workload's kernel-time tolerance (on_kernel)

    @property
    def ratio(self) -> float | None:
        """Current median / baseline median (1.10 = 10 % slower)."""
        return None if self.baseline is None else self.now.median / self.baseline.median_s

    @property
    def kernel_ratio(self) -> float | None:
        """Current / baseline device seconds per count, when both are known."""
        k, b = self.now.kernel_median, self.baseline.kernel_median_s if self.baseline else None
        return k / b if k is not None and b else None

    @property
    def on_kernel(self) -> bool:
        """Judged on kernel time too (BaselineEntry.on_kernel, and this run has kernel times)."""
        return self.baseline is not None and self.baseline.on_kernel and self.kernel_ratio is not None

    @property
    def judged(self) -> list[tuple[str, float, float]]:
        """(what, ratio, tolerance) of each time the verdict rests on: wall, and kernel for a short workload."""
        if self.ratio is None:
            return []
        out = [("wall", self.ratio, self.tolerance)]
        if self.on_kernel:
            out.append(("kernel", self.kernel_ratio, self.kernel_tolerance if self.kernel_tolerance is not None
                        else self.tolerance))
        return out

    @property
    def judged_ratio(self) -> float | None:
        """The ratio furthest past its tolerance (the one the verdict names)."""
        j = self.judged
        return max(j, key=lambda x: x[1] - x[2])[1] if j else None

    @property
    def verdict(self) -> str:
        j = self.judged
        if not j:
            return "no baseline"
        if any(r > 1 + tol for _, r, tol in j):
            return "SLOWER"
        if all(r < 1 - tol for _, r, tol in j):
            return "faster"
        return "ok"

    @property
    def failed(self) -> bool:
        return self.verdict in ("SLOWER", "no baseline")


def compare_one(m: Measurement, baseline: Baseline | None, tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    """Judge one measurement; ``tolerance`` is the floor (``BaselineEntry.tolerance_for``).
    Raises BaselineError when the baseline records another node count for the workload."""
    entry = baseline.workloads.get(m.workload) if baseline else None
    if entry is not None and entry.nodes != m.nodes:
        raise BaselineError(f"baseline for {m.workload} records {entry.nodes:,} nodes but the workload counts "
                            f"{m.nodes:,}: the workload changed, record a new baseline with --update")
    tol = entry.tolerance_for(tolerance) if entry is not None else tolerance
    ktol = entry.kernel_tolerance_for(tolerance) if entry is not None and entry.on_kernel else None
    return Comparison(m.workload, m, entry, tol, kernel_tolerance=ktol)


def compare(measurements: Sequence[Measurement], baseline: Baseline | None,
            tolerance: float = DEFAULT_TOLERANCE) -> list[Comparison]:
    return [compare_one(m, baseline, tolerance) for m in measurements]


def render(comparisons: Sequence[Comparison]) -> str:
    """The verdict table: baseline and current medians, spreads, ratio, tolerance, verdict."""
    rows = []
    for c in comparisons:
        b, m = c.baseline, c.now
        runs = f"{len(m.times) // 2}+{len(m.times) - len(m.times) // 2}" if c.confirmed else str(len(m.times))
        rows.append([
            c.workload, f"{m.nodes:,}",
            f"{b.median_s:.4f}" if b else "no baseline",
            f"{b.spread:.1%}" if b and b.spread is not None else None,
            f"{m.median:.4f}", f"{min(m.times):.4f}..{max(m.times):.4f}", f"{m.spread:.1%}", runs,
            f"{c.ratio:.3f}" if c.ratio is not None else None,
            f"{c.kernel_ratio:.3f}" if c.kernel_ratio is not None else None,
            "wall + kernel" if c.on_kernel else "wall",
            f"{c.tolerance:.1%}" + (f" / {c.kernel_tolerance:.1%}" if c.on_kernel else ""), c.verdict,
        ])
    return markdown(["workload", "nodes", "baseline s", "base spread", "now s", "now min..max s", "now spread",
                     "runs", "ratio", "kernel ratio", "judged", "tolerance", "verdict"], rows, "lrrrrrrrrrlrl")


def summary(comparisons: Sequence[Comparison], baseline_file: Path) -> list[str]:
    """Lines after the table: failures with their numbers, noise warnings, how to update."""
    lines = []
    for c in comparisons:
        if c.verdict == "SLOWER":
            again = ", confirmed by a second round" if c.confirmed else ""
            for what, r, tol in c.judged:
                if r <= 1 + tol:
                    continue
                now, base = ((c.now.kernel_median, c.baseline.kernel_median_s) if what == "kernel"
                             else (c.now.median, c.baseline.median_s))
                label = "kernel time " if what == "kernel" else ""
                lines.append(f"FAIL {c.workload}: {label}{now:.4f} s vs baseline {base:.4f} s = "
                             f"{r - 1:+.1%} (tolerance {tol:.1%}){again}")
        elif c.verdict == "faster":
            lines.append(f"note {c.workload}: {1 - c.judged_ratio:.1%} faster than the baseline; if that is the new "
                         f"normal, record it with --update")
        if not c.on_kernel and c.now.spread > c.tolerance:
            lines.append(f"noise {c.workload}: runs spread {c.now.spread:.1%}, more than the {c.tolerance:.1%} "
                         f"tolerance; the verdict rests on the median of {len(c.now.times)} runs")
    if any(c.verdict == "SLOWER" for c in comparisons):
        lines.append("A slowdown accepted on purpose is recorded with `python ci/perf_gate.py timing --update` "
                     "(say why in the commit message).")
    if any(c.verdict == "no baseline" for c in comparisons):
        lines.append(f"FAIL no baseline for {', '.join(c.workload for c in comparisons if c.baseline is None)} in "
                     f"{relpath(baseline_file)}: on this GPU run `python ci/perf_gate.py timing --update`, "
                     f"check the table, and commit the file")
    return lines


# ----- the gate ---------------------------------------------------------------------------------------------

@dataclass
class GateResult:
    comparisons: list[Comparison]

    @property
    def passed(self) -> bool:
        return not any(c.failed for c in self.comparisons)


def run_gate(workloads: Sequence[Workload], driver_for: Callable[[Workload], object], baseline: Baseline | None,
             tolerance: float = DEFAULT_TOLERANCE, runs: int | None = None, confirm: bool = True,
             measure: Callable[..., Measurement] | None = None, log: Callable[[str], None] = print) -> GateResult:
    """Measure every workload, compare with ``baseline``, re-measure the SLOWER ones once (``confirm``).

    ``driver_for(workload)`` gives the driver to time (``workloads.build_driver``); ``measure`` is
    ``workloads.measure`` unless a test passes a fake. A workload is timed with the baseline's
    counts per run (``repeat``) where it records them. Raises WrongNodeCount, BaselineError.
    """
    if measure is None:
        from .workloads import measure
    out = []
    for w in workloads:
        driver = driver_for(w)
        entry = baseline.workloads.get(w.name) if baseline else None
        repeat = entry.repeat if entry is not None else None
        m = measure(driver, w, runs, repeat=repeat)
        c = compare_one(m, baseline, tolerance)
        log(f"  {w.name}: median {m.median:.4f} s over {len(m.times)} runs of {m.repeat} counts "
            f"(spread {m.spread:.1%}) -> {c.verdict}")
        if confirm and c.verdict == "SLOWER":
            m = m.extended(measure(driver, w, runs, repeat=m.repeat))
            c = compare_one(m, baseline, tolerance)
            c = Comparison(c.workload, c.now, c.baseline, c.tolerance, confirmed=True,
                           kernel_tolerance=c.kernel_tolerance)
            log(f"  {w.name}: second round, median of {len(m.times)} runs {m.median:.4f} s -> {c.verdict}")
        out.append(c)
        driver = None  # so driver_for can free it before building another
    return GateResult(out)


def updated_baseline(old: Baseline | None, measurements: Sequence[Measurement], workloads: Sequence[Workload],
                     gpu: dict[str, str], commit: str, date: str | None = None) -> Baseline:
    """The baseline ``--update`` writes: these measurements, ``gpu`` (``workloads.gpu_info()``) and
    ``commit``; tolerance overrides come from ``old`` where it has one, else from the workload list."""
    seeds = {w.name: w.tolerance for w in workloads}
    entries = {}
    for m in measurements:
        prev = old.workloads.get(m.workload) if old else None
        if prev is not None and prev.tolerance is not None:
            tol, why = prev.tolerance, prev.tolerance_reason
        elif seeds.get(m.workload) is not None:
            tol, why = seeds[m.workload], "set in ci/perfgate/workloads.py"
        else:
            tol, why = None, None
        kernel = tuple(m.kernel) if m.kernel and all(k is not None for k in m.kernel) else ()
        entries[m.workload] = BaselineEntry(m.nodes, m.median, len(m.times), min(m.times), max(m.times), m.times,
                                            tol, why, m.repeat, m.kernel_median, kernel)
    meta = {"arch": gpu.get("arch", "?"), "date": date or time.strftime("%Y-%m-%d"), "commit": commit,
            "cupy": gpu.get("cupy", "?"), "cuda_driver": gpu.get("driver", "?"),
            "cuda_runtime": gpu.get("runtime", "?"),
            "command": "python ci/perf_gate.py timing --update"}
    return Baseline(gpu["name"], entries, meta)


def git_commit(root: Path = ROOT) -> str:
    """$PERFT_COMMIT when set (a checkout copied without .git), else ``git describe --always --dirty``
    of the checkout, else "unknown"."""
    if os.environ.get("PERFT_COMMIT"):
        return os.environ["PERFT_COMMIT"]
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=root,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def relpath(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
