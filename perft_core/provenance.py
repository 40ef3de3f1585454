"""Where a count was made: the package's version and commit, the machine, the GPU.

Shared by the conformance report, the deep-count store and the deep-count table, so every record
of a count says the same thing the same way.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

__all__ = ["package_version", "package_commit", "machine", "gpu_name"]


def package_version() -> str:
    """The installed distribution's version (``perft-oracle``), else ``perft_core.__version__``."""
    from importlib import metadata

    try:
        return metadata.version("perft-oracle")
    except metadata.PackageNotFoundError:
        import perft_core

        return str(getattr(perft_core, "__version__", "unknown"))


@functools.cache
def package_commit() -> str:
    """The git commit of the package's source tree (``+dirty`` if modified), or ``"unknown"``."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def machine() -> dict:
    """This machine: ``cpu`` (model name), ``cores``, ``os``, ``arch``, ``python`` (a new dict)."""
    return dict(_machine())


@functools.cache
def _machine() -> tuple:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (("cpu", cpu), ("cores", os.cpu_count()), ("os", f"{platform.system()} {platform.release()}"),
            ("arch", platform.machine()), ("python", platform.python_version()))


def gpu_name() -> str:
    """The name of the current CUDA device (CuPy), or ``"unknown"`` without CuPy or a device."""
    try:
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # no CuPy, no device: the report just says so
        return "unknown"
