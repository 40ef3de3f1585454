"""Performance gates for GPU CI runners: kernel timings against a per-GPU baseline, and kernel
resources (registers, local memory, spills) against budgets. `tox -e gpu` runs both after the GPU
suites; CPU CI runs the static gate through suites/test_perf_gate.py where nvcc exists.

    python ci/perf_gate.py timing [--update] [--tolerance 0.03] [--runs N] [--slow PERCENT]
                                  [--leaf3 stream] [--leaf-threads N] [--define NAME[=VALUE]] [--kernel-option OPT]
    python ci/perf_gate.py static [--nvcc | --cupy] [--update] [--define NAME[=VALUE]] [--kernel-option OPT]

timing: the workloads of ci/perfgate/workloads.py, median of N runs after warm-up counts, against
ci/baselines/<gpu-slug>.json, each within max(--tolerance, 2 x its baseline spread). --update
records a new baseline (default kernels only). --slow P plants a P % slowdown in every chess kernel
(-DPC_SLOWDOWN_PERCENT=P) to prove the gate catches one: `timing --slow 5` is expected to FAIL.
--leaf3/--leaf-threads/--define/--kernel-option build experimental kernels and compare them with
the baseline: a known-slower build (`--define PC_GLOBAL_TABLES`, `--leaf3 stream`) makes it fail.
static: nvcc -Xptxas -v (--nvcc, any machine with nvcc) or CuPy's attributes (--cupy, on the GPU)
against ci/kernel_budgets.json; default: --cupy where a GPU is usable, else --nvcc. --update
records the source's numbers in the file and re-derives the budgets from them.

Exit status: 0 pass; 1 the gate failed (slower, over budget, no baseline, a budget without its
reason); 2 cannot run (bad baseline or budget file, no GPU / nvcc, bad arguments); 3 a wrong node count.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfgate import static, timing  # noqa: E402
from perfgate.workloads import (  # noqa: E402  (puts the source root on sys.path)
    WORKLOADS, Variant, WrongNodeCount, HostDelay, build_driver, gpu_info, release_device_memory)
from perft_core.atomic import write_text  # noqa: E402

PASS, FAIL, CANNOT_RUN, WRONG_COUNT = 0, 1, 2, 3


def _fraction(text: str) -> float:
    v = float(text)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"a fraction in [0, 1) is expected (0.05 = 5 %), got {text}")
    return v


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"a positive integer is expected, got {text}")
    return v


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perf_gate.py", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="gate", required=True)
    t = sub.add_parser("timing", help="median timings of the GPU workloads against the baseline")
    t.add_argument("--update", action="store_true", help="write a new baseline for this GPU")
    t.add_argument("--tolerance", type=_fraction, default=timing.DEFAULT_TOLERANCE,
                   help="the floor of each workload's allowed slowdown, a fraction (default 0.03); a workload's "
                        "tolerance is max(floor, 2 x its baseline spread), or its hand-set value in the baseline")
    t.add_argument("--slow", type=_positive, metavar="PERCENT",
                   help="plant a PERCENT %% slowdown in the kernels (-DPC_SLOWDOWN_PERCENT): the gate should FAIL")
    t.add_argument("--host-delay", type=_positive, metavar="MS",
                   help="plant a host-side delay of MS milliseconds before every count (wall time only, kernels "
                        "unchanged): the short workloads, judged on wall and kernel time, should FAIL")
    t.add_argument("--runs", type=_positive, help="timed runs per workload (default: per workload, 5..15)")
    t.add_argument("--leaf3", choices=("list", "stream"), default="list", help="fused-leaf variant (experiment)")
    t.add_argument("--leaf-threads", type=_positive, default=128, help="leaf kernel block size (experiment)")
    t.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]",
                   help="preprocessor define for the kernels, e.g. PC_GLOBAL_TABLES (experiment; repeatable)")
    t.add_argument("--kernel-option", action="append", default=[], metavar="OPT",
                   help="any other NVRTC option (experiment; repeatable)")
    s = sub.add_parser("static", help="kernel registers / local memory / spills against ci/kernel_budgets.json")
    src = s.add_mutually_exclusive_group()
    src.add_argument("--nvcc", action="store_true", help="compile with nvcc -Xptxas -v (no GPU needed)")
    src.add_argument("--cupy", action="store_true", help="CuPy's attributes of the NVRTC build (needs the GPU)")
    s.add_argument("--update", action="store_true",
                   help="record this source's numbers and re-derive the budgets (reasons stay hand-written)")
    s.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]",
                   help="preprocessor define for the kernels (experiment; repeatable)")
    s.add_argument("--kernel-option", action="append", default=[], metavar="OPT",
                   help="any other compiler option (experiment; repeatable)")
    s.add_argument("--budgets", type=Path, default=static.BUDGET_FILE, help=argparse.SUPPRESS)
    return ap


def timing_command(args: argparse.Namespace, gpu: dict[str, str] | None = None,
                   driver_for: Callable | None = None, baseline_dir: Path = timing.BASELINE_DIR,
                   measure: Callable | None = None) -> int:
    """The timing gate; ``gpu``/``driver_for``/``measure`` default to the real device (tests pass fakes)."""
    variant = Variant(args.leaf3, args.leaf_threads, _options(args))
    if args.update and not variant.is_default:
        print("perf_gate: --update records the default kernels only; drop --slow/--leaf3/--leaf-threads/--define/"
              "--kernel-option", file=sys.stderr)
        return CANNOT_RUN
    host_delay = getattr(args, "host_delay", None)
    if args.update and host_delay:
        print("perf_gate: --update records the default kernels only; drop --host-delay", file=sys.stderr)
        return CANNOT_RUN
    if args.slow:
        print(f"timing gate: kernels slowed by {args.slow} % on purpose (PC_SLOWDOWN_PERCENT): expected to FAIL")
    if host_delay:
        print(f"timing gate: {host_delay:g} ms of host time added to every count on purpose: expected to FAIL")
    try:
        gpu = gpu or gpu_info()
    except Exception as exc:  # ImportError, CUDARuntimeError
        print(f"perf_gate: the timing gate needs CuPy and a CUDA device: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return CANNOT_RUN
    path = timing.baseline_path(gpu["name"], baseline_dir)
    try:
        baseline = timing.Baseline.load(path)
    except timing.BaselineError as exc:
        print(f"perf_gate: {exc}", file=sys.stderr)
        return CANNOT_RUN
    print(f"timing gate: {gpu['name']} ({gpu.get('arch', '?')}), CuPy {gpu.get('cupy', '?')}; "
          f"kernels: {'default' if variant.is_default else variant.describe()}")
    if baseline is None:
        print(f"baseline: none at {timing.relpath(path)}")
    else:
        print(f"baseline: {timing.relpath(path)} ({baseline.meta.get('date', '?')}, commit "
              f"{baseline.meta.get('commit', '?')}, {baseline.gpu})")
        if baseline.gpu != gpu["name"]:
            print(f"warning: the baseline was taken on {baseline.gpu!r}, this device is {gpu['name']!r}")
    if driver_for is None:
        live: dict[str, object] = {}

        def driver_for(w):  # one driver at a time: each arena takes most of the device memory
            if live.get("tt") is not w.tt:
                live.clear()
                release_device_memory()
                live.update(tt=w.tt, driver=build_driver(variant, tt=w.tt))
                k = live["driver"].k
                print(f"kernels for {'TT' if w.tt else 'no-TT'} workloads: {k.build} ({k.build_reason})")
            return live["driver"]

    if host_delay:
        undelayed = driver_for

        def driver_for(w):
            return HostDelay(undelayed(w), host_delay / 1e3)

    try:
        result = timing.run_gate(WORKLOADS, driver_for, baseline, args.tolerance, args.runs,
                                 confirm=not args.update, measure=measure)
    except WrongNodeCount as exc:
        bar = "!" * 100
        print(f"{bar}\n{exc}\nThe kernels count wrongly: that fails the gate before any timing matters.\n{bar}")
        return WRONG_COUNT
    except timing.BaselineError as exc:
        print(f"perf_gate: {exc}", file=sys.stderr)
        return CANNOT_RUN
    except ValueError as exc:  # no CuPy / device
        print(f"perf_gate: {exc}", file=sys.stderr)
        return CANNOT_RUN
    print()
    print(timing.render(result.comparisons))
    if args.update:
        new = timing.updated_baseline(baseline, [c.now for c in result.comparisons], WORKLOADS, gpu,
                                      timing.git_commit())
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, new.to_json())  # atomic: a failed write leaves the old baseline
        print(f"\nwrote {timing.relpath(path)} ({len(new.workloads)} workloads, commit {new.meta['commit']}); "
              f"review the spreads above, then commit it")
        return PASS
    for line in timing.summary(result.comparisons, path):
        print(line)
    print("timing gate: " + ("PASS" if result.passed else "FAIL"))
    return PASS if result.passed else FAIL


def static_command(args: argparse.Namespace) -> int:
    """The static gate: resources from nvcc or CuPy, checked against (or, --update, written to) the budgets."""
    options = _options(args)
    if args.update and options:
        print("perf_gate: --update records the default kernels only; drop --define/--kernel-option", file=sys.stderr)
        return CANNOT_RUN
    try:
        raw_text = Path(args.budgets).read_text()
        raw = json.loads(raw_text)
        budgets = None if args.update else static.Budgets.from_json(raw_text, str(args.budgets))
        arch_wanted, threads = raw["arch"], raw["block_threads"]
    except (OSError, ValueError, KeyError, TypeError) as exc:  # BudgetError is a ValueError
        print(f"perf_gate: cannot use the budget file {args.budgets}: {exc}", file=sys.stderr)
        return CANNOT_RUN
    use_cupy = args.cupy or (not args.nvcc and _gpu_usable())
    try:
        if use_cupy:
            resources, arch = static.cupy_resources(options)
            source = "cupy"
        else:
            resources, _ = static.nvcc_resources(arch_wanted, options)
            arch, source = arch_wanted, "nvcc"
    except static.StaticGateError as exc:
        print(f"perf_gate: {exc}", file=sys.stderr)
        return CANNOT_RUN
    extra = f", {' '.join(options)}" if options else ""
    print(f"static gate: {source} ({arch}{extra}) against {timing.relpath(args.budgets)} "
          f"({arch_wanted}, {threads} threads/block)")
    if arch != arch_wanted:
        print(f"FAIL no budgets for {arch}: {timing.relpath(args.budgets)} holds {arch_wanted} budgets "
              f"(registers differ per architecture); measured here:")
        for name, r in sorted(resources.items()):
            print(f"  {name}: {static.describe(r)}")
        return FAIL
    if args.update:
        return _update_budgets(args, raw, resources, source)
    violations = static.check(resources, budgets, source)
    print(static.render(resources, budgets, violations))
    if source == "cupy":
        print("(CuPy reports no spill bytes: spill budgets are checked by the nvcc source)")
    for v in violations:
        print(f"FAIL {v}")
    if violations:
        print("If a change is intended: check the timing gate, then record it with "
              f"`python ci/perf_gate.py static --{source} --update` and give exceptions a reason.")
    print("static gate: " + ("FAIL" if violations else "PASS"))
    return FAIL if violations else PASS


def _update_budgets(args: argparse.Namespace, raw: dict, resources: dict, source: str) -> int:
    who = static.cupy_version() if source == "cupy" else static.nvcc_version()
    provenance = f"{who}; {time.strftime('%Y-%m-%d')}; commit {timing.git_commit()}"
    new, notes = static.updated_budgets(raw, resources, source, provenance)
    write_text(args.budgets, static.dump_budgets(new))
    print(f"wrote {timing.relpath(args.budgets)} from {source} ({provenance}):")
    for line in notes or ["no budget changed"]:
        print(f"  {line}")
    try:
        budgets = static.Budgets.from_json(static.dump_budgets(new), str(args.budgets))
    except static.BudgetError as exc:
        print(f"FAIL the new file does not load yet: {exc}")
        return FAIL
    print(static.render(resources, budgets, static.check(resources, budgets, source)))
    return PASS


def _options(args: argparse.Namespace) -> tuple[str, ...]:
    """NVRTC / nvcc options of an experimental build: --slow, --define NAME[=VALUE] and --kernel-option OPT."""
    slow = (f"-DPC_SLOWDOWN_PERCENT={args.slow}",) if getattr(args, "slow", None) else ()
    return slow + tuple(f"-D{d}" for d in args.define) + tuple(args.kernel_option)


def _gpu_usable() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, CUDARuntimeError
        return False


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return timing_command(args) if args.gate == "timing" else static_command(args)


if __name__ == "__main__":
    sys.exit(main())
