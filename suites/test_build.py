"""The build (setup.py): every extension variant and every translation unit compiles in parallel,
at most ``PERFT_BUILD_JOBS`` compilers at once, whatever the number of extensions and sources
(issue 35: three variants compiled one after another took 8.5 minutes under load). A small fake
project (three extensions of three C++ files) is built with ``setup.BuildWithKernels`` through a
compiler wrapper that logs when each compile starts and ends."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++) here")


def load_setup():
    spec = importlib.util.spec_from_file_location("perft_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    os.chdir(ROOT)  # setup.py lists headers relative to the checkout
    try:
        spec.loader.exec_module(module)
    finally:
        os.chdir(cwd)
    return module


def build(tmp_path: Path, monkeypatch, jobs: int, sources: int = 3) -> tuple[list[tuple[float, float, str]], list[str]]:
    """Build three extensions of ``sources`` files each; return the compiles' (start, end, source)
    and the build's output lines."""
    from setuptools import Distribution, Extension

    setup = load_setup()
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "cc"
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in *" -c "*) echo "start $(date +%s.%N) $*" >> {log}; sleep 0.4;; esac\n'
                       f'{CXX} "$@"; rc=$?\ncase " $* " in *" -c "*) echo "end $(date +%s.%N) $*" >> {log};; esac\nexit $rc\n')
    wrapper.chmod(0o755)
    src = tmp_path / "src"
    src.mkdir()
    extensions = []
    for variant in ("base", "v3", "v3magic"):
        files = []
        for i in range(sources):
            path = src / f"{variant}_{i}.cpp"
            path.write_text(f"int perft_{variant}_{i}(int x) {{ return x + {i}; }}\n")
            files.append(str(path))
        extensions.append(Extension(f"fake._core_{variant}", files, define_macros=[("PC_MODULE_NAME", f"_core_{variant}")],
                                    language="c++"))
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("CXX", str(wrapper))
    monkeypatch.setenv("PERFT_BUILD_JOBS", str(jobs))
    monkeypatch.setenv("PERFT_CUDA_ARCHS", "none")
    dist = Distribution({"name": "fake", "ext_modules": extensions})
    command = setup.BuildWithKernels(dist)
    command.build_temp, command.build_lib = str(tmp_path / "temp"), str(tmp_path / "lib")
    command.ensure_finalized()
    command.run()
    events: dict[str, list] = {}
    for line in log.read_text().splitlines():
        kind, stamp, args = line.split(" ", 2)
        source = next(a for a in args.split() if a.endswith(".cpp"))
        events.setdefault(source, []).append(float(stamp))
    built = sorted(p.name.split(".")[0] for p in (tmp_path / "lib" / "fake").iterdir())
    assert built == ["_core_base", "_core_v3", "_core_v3magic"]
    return [(start, end, source) for source, (start, end) in events.items()], built


def most_at_once(intervals) -> int:
    points = sorted([(s, 1) for s, _, _ in intervals] + [(e, -1) for _, e, _ in intervals])
    now = peak = 0
    for _, step in points:
        now += step
        peak = max(peak, now)
    return peak


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_variants_and_sources_compile_in_parallel_within_the_jobs(tmp_path, monkeypatch, jobs, capsys):
    intervals, _ = build(tmp_path, monkeypatch, jobs)
    assert len(intervals) == 9  # every source of every variant compiled once
    assert most_at_once(intervals) == jobs
    out = capsys.readouterr().out
    for variant in ("_core_base", "_core_v3", "_core_v3magic"):  # the log says which variant compiles
        assert out.count(f"perft: compiled {variant} ") == 3


def test_a_fourth_source_is_compiled_too(tmp_path, monkeypatch):
    """SOURCES gains a file (issue 36's statistics): it compiles for every variant, in parallel."""
    intervals, _ = build(tmp_path, monkeypatch, 2, sources=4)
    assert len(intervals) == 12 and most_at_once(intervals) == 2


def test_build_jobs_default_to_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.delenv("PERFT_BUILD_JOBS", raising=False)
    assert load_setup().build_jobs() == len(os.sched_getaffinity(0))
