"""Where a count was made: the package's version and commit, the machine, the GPU.

Shared by the conformance report, the deep-count store and the deep-count table, so every record
of a count says the same thing the same way.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import re
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


#: Written by setup.py when the package is built from this project's git checkout (git-ignored).
BUILD_INFO = "_build_info.json"


@functools.cache
def package_commit() -> str:
    """The git commit the package was built from (``+dirty`` if its tree was modified), or ``"unknown"``.

    Never another project's commit: git is asked only when the folder above the package is this
    project's own source root (:func:`source_root`), as in a checkout or an editable install. A
    built package reads the commit recorded at build time (``perft_core/_build_info.json``, written by
    setup.py from the same check). A copy of the package inside some other repository has neither,
    and says ``"unknown"``.
    """
    here = Path(__file__).resolve().parent
    root = source_root(here)
    if root is not None:
        return git_commit(root)
    try:
        recorded = json.loads((here / BUILD_INFO).read_text(encoding="utf-8")).get("commit")
    except (OSError, ValueError, AttributeError):
        recorded = None
    return recorded if isinstance(recorded, str) and recorded else "unknown"


def source_root(package_dir: Path) -> Path | None:
    """The project's source root above ``package_dir`` (a ``perft_core`` folder), or None.

    It is the source root when the folder above holds ``pyproject.toml`` naming the ``perft-oracle``
    project and is the top of a git work tree (checked with ``git rev-parse --show-toplevel``), so a
    package copied into another repository does not borrow that repository's commit.
    """
    root = package_dir.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    if package_dir.name != "perft_core" or not re.search(r'(?m)^name\s*=\s*"perft-oracle"', text):
        return None
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve():
        return None
    return root


def git_commit(root: Path) -> str:
    """``git rev-parse --short=12 HEAD`` of the work tree at ``root``, ``+dirty`` when tracked files
    differ from it; ``"unknown"`` when git fails."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
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
