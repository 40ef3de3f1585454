"""Shared pytest configuration: GPU tests skip with a reason where no CUDA device is usable;
tests marked ``core`` need the built perft_core extension: they skip with the reason where it is
missing or broken, except in CI (``CI=true``, or ``PERFT_REQUIRE_CORE=1``), where the extension is
built by the install and a broken one must fail the run instead of turning tests into skips."""
from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path

import pytest


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """None when CuPy can use a CUDA device, else why not (the skip reason)."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'perft-oracle[gpu]' on a CUDA machine)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError when there is no driver or device
        return f"no usable CUDA device: {exc}"
    return None if count > 0 else "no CUDA device found"


@functools.cache
def core_problem() -> str | None:
    """None when the perft_core extension imports and counts right, else what is wrong."""
    try:
        import perft_core

        n = perft_core.perft("8/8/8/8/8/8/8/K6k w - - 0 1", 1)  # a king in the corner: 3 moves
    except Exception as exc:  # ImportError (not built), or anything a broken build raises
        return f"perft_core extension not built or broken: {type(exc).__name__}: {exc}"
    return None if n == 3 else f"perft_core extension broken: perft(K6k, 1) gave {n}, not 3"


def core_required() -> bool:
    """True in CI (``CI=true``) or with ``PERFT_REQUIRE_CORE=1``: a broken extension fails, not skips."""
    return os.environ.get("CI", "").lower() in ("true", "1") or os.environ.get("PERFT_REQUIRE_CORE") == "1"


def pytest_runtest_setup(item):
    if "core" not in item.keywords:
        return
    problem = core_problem()
    if problem is None:
        return
    if core_required():
        pytest.fail(f"{problem} (CI / PERFT_REQUIRE_CORE=1: this must not be skipped)", pytrace=False)
    pytest.skip(problem)


def pytest_collection_modifyitems(config, items):
    for item in items:  # under pytest-xdist (--dist loadgroup) every GPU test runs on one worker:
        if "gpu" in item.keywords:  # each GPU driver takes most of the device's free memory
            item.add_marker(pytest.mark.xdist_group("gpu"))
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test skipped: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@contextlib.contextmanager
def no_shadowing_sys_path():
    """sys.path without the folders that hold another ``perft_core`` than the one imported, while
    the block runs. A spawned process (a Dask worker) takes this process's sys.path, and tests that
    import a ci/ script put the checkout's root on it (the scripts do, to run from a checkout): in
    CI, where perft_core is installed and the checkout has no built extension, a worker spawned
    then imported the checkout's perft_core and failed on every task, and its run waited forever
    (session 24)."""
    import sys

    import perft_core

    home = Path(perft_core.__file__).resolve().parent

    def shadows(entry: str) -> bool:
        found = Path(entry or ".").resolve() / "perft_core"
        return found.is_dir() and found.resolve() != home

    saved = list(sys.path)
    sys.path[:] = [e for e in sys.path if not shadows(e)]
    try:
        yield
    finally:
        sys.path[:] = saved


def local_cluster():
    """A 2-worker Dask LocalCluster (processes, one thread each; a context manager), its workers
    spawned with :func:`no_shadowing_sys_path`."""
    distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install 'perft-oracle[dist]')")
    from perft_core.deep.cluster import NO_DASHBOARD

    with no_shadowing_sys_path():
        return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, **NO_DASHBOARD)


@pytest.fixture(scope="module")
def cluster():
    """A 2-worker Dask LocalCluster (processes, one thread each) for a test module's deep runs;
    the module skips when Dask is not installed."""
    with local_cluster() as c:
        yield c


@pytest.fixture(autouse=True)
def _data_folder(tmp_path_factory, monkeypatch):
    """The user's data folder (platformdirs: a ``perft deep`` store named by no --store) is the
    test session's own, never the home folder of whoever runs the tests."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.getbasetemp() / "xdg-data"))


@pytest.fixture
def stepping_clock(monkeypatch):
    """``install(step)``: the count watch's clock (``perft_core.watch``) moves ``step`` seconds at
    every reading, and the extension's own wall-clock deadline (``limits.cpu_count``) is left out,
    so a time limit stops a count at the same point on any machine and any load (issue 34 N8)."""
    import types

    from perft_core import _core, limits, watch

    def install(step: float) -> None:
        now = [0.0]

        def monotonic() -> float:
            now[0] += step
            return now[0]

        def cpu_count(watch_, core_args, depth, threads):
            watch_.check()
            return int(_core.perft(core_args, depth, threads))

        monkeypatch.setattr(watch, "time", types.SimpleNamespace(monotonic=monotonic))
        monkeypatch.setattr(limits, "cpu_count", cpu_count)

    return install


@pytest.fixture
def device_tree(tmp_path):
    """The checkout as a device call sees it, for scripts that run from the checkout with it on
    PYTHONPATH (a Path): every top-level entry linked, but perft_core linked to the package Python
    imports, which holds the built extension (in CI's clean install the checkout's own holds none:
    session 21's clean clones failed on that), and ci/ copied without its stores."""
    import shutil

    import perft_core

    root = Path(__file__).resolve().parents[1]
    tree = tmp_path / "tree"
    tree.mkdir()
    for entry in root.iterdir():
        if entry.name not in ("perft_core", ".git", "ci"):
            (tree / entry.name).symlink_to(entry)
    # ci/ copied, not linked: its scripts put Path(__file__).resolve().parents[1] on sys.path
    shutil.copytree(root / "ci", tree / "ci", ignore=shutil.ignore_patterns("stores", "__pycache__"))
    (tree / "perft_core").symlink_to(Path(perft_core.__file__).resolve().parent)
    return tree
