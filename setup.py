"""Build the CPU backend: the chess core in kernels/ compiled by the host C++ compiler.

A portable build by default: on x86-64 three copies of the extension, ``perft_core._core_base``
(the compiler's baseline instruction set), ``perft_core._core_v3`` (``-march=x86-64-v3``: AVX2,
BMI1/BMI2, with PEXT slider lookups, ``-DPC_HOST_PEXT``) and ``perft_core._core_v3magic`` (the same
level with magic slider lookups, for the AMD processors whose PEXT is microcoded);
``perft_core/_core.py`` loads the best one for the CPU (run-time dispatch, perft_core/isa.py), so one
wheel runs everywhere at full speed. Elsewhere only ``_core_base`` is built. ``PERFT_MARCH=native``
(or any ``-march`` value, or ``none``) asks for one local build for that target instead
(``_core_base`` alone; add ``PERFT_PEXT=1`` where the target has a fast BMI2 PEXT).

When nvcc is found, the build also compiles the GPU kernels (kernels/pc_kernels.cu) to one cubin
per architecture beside the kernel sources, so a first GPU count on a fresh machine pays no NVRTC
compile (perft_core/gpu/prebuilt.py). ``PERFT_CUDA_ARCHS=sm_90`` (comma-separated) picks the
architectures (default sm_80, sm_90, sm_100, those nvcc supports); ``PERFT_CUDA_ARCHS=none`` skips it.
"""
import importlib.util
import json
import os
import platform
import sys

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

FLAGS = ["-O3", "-fno-plt", "-Wall", "-Wextra", "-Wno-unused-parameter"]
SOURCES = ["perft_core/_core.cpp", "perft_core/src/zobrist.cpp", "perft_core/src/batch.cpp", "perft_core/src/stats.cpp"]
HEADERS = [os.path.join(d, f) for d in ("kernels", "perft_core/src") for f in os.listdir(d) if f.endswith(".h")]


def core_extension(suffix: str, march: str | None, pext: bool) -> Pybind11Extension:
    """The extension ``perft_core._core_<suffix>`` built for ``-march=<march>`` (None: the compiler's
    default); ``pext``: slider attacks by BMI2 PEXT (kernels/pc_tables.h, ``PC_HOST_PEXT``)."""
    flags = FLAGS + ([f"-march={march}"] if march else []) + (["-DPC_HOST_PEXT"] if pext else [])
    return Pybind11Extension(
        f"perft_core._core_{suffix}", SOURCES, include_dirs=["kernels", "perft_core"], cxx_std=17,
        extra_compile_args=flags, extra_link_args=["-pthread"], depends=HEADERS,
        define_macros=[("PC_MODULE_NAME", f"_core_{suffix}")],
    )


def core_extensions() -> list[Pybind11Extension]:
    """The CPU extension builds this environment asks for (module docstring)."""
    march = os.environ.get("PERFT_MARCH", "").strip()
    if march:
        return [core_extension("base", None if march == "none" else march, os.environ.get("PERFT_PEXT") == "1")]
    if platform.machine().lower() in ("x86_64", "amd64"):
        return [core_extension("base", None, False), core_extension("v3", "x86-64-v3", True),
                core_extension("v3magic", "x86-64-v3", False)]
    return [core_extension("base", None, False)]


def record_build_commit() -> None:
    """Write perft_core/_build_info.json with the commit of this source tree, when it is this
    project's own git checkout (the rule of perft_core.provenance.source_root). Elsewhere (an
    unpacked sdist, a copy inside another repository) an existing record is kept, never replaced by
    another repository's commit."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "perft_core"))
    try:
        import provenance  # the module alone: perft_core's __init__ needs the extension built here
    finally:
        sys.path.pop(0)
    from pathlib import Path

    package = Path(here, "perft_core")
    root = provenance.source_root(package)
    if root is None:
        return
    (package / provenance.BUILD_INFO).write_text(json.dumps({"commit": provenance.git_commit(root)}) + "\n")


def _prebuilt():
    """perft_core/gpu/prebuilt.py, loaded by path (the package is not importable before its build)."""
    spec = importlib.util.spec_from_file_location("perft_prebuilt", os.path.join("perft_core", "gpu", "prebuilt.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithKernels(build_ext):
    """build_ext, then the precompiled GPU kernels (in place: into kernels/; else into the build tree)."""

    def build_extension(self, ext):
        """Each extension compiles into its own temporary folder: _core_base, _core_v3 and
        _core_v3magic compile the same sources with other flags into the same object paths
        otherwise, and two builds at once in one tree overwrote each other's objects (a _core_v3
        with _core_base's module init was seen).
        A build alone recompiles every object of an extension it builds, so it was never wrong
        (checked: no PEXT instruction in a _core_base rebuilt after the v3 build). One extension at
        a time: this sets ``build_temp`` for the duration (no ``-j``)."""
        temp = self.build_temp
        self.build_temp = os.path.join(temp, ext.name.rsplit(".", 1)[-1])
        try:
            super().build_extension(ext)
        finally:
            self.build_temp = temp

    def run(self):
        super().run()
        if self.inplace:  # an extension named perft_core._core (before the run-time dispatch) would
            # shadow perft_core/_core.py, the dispatcher, and load the old code
            for name in os.listdir("perft_core"):
                if name.startswith("_core.") and name.endswith((".so", ".pyd")):
                    os.remove(os.path.join("perft_core", name))
        archs = os.environ.get("PERFT_CUDA_ARCHS", "")
        if archs.strip().lower() == "none":
            return
        out = "kernels" if self.inplace else os.path.join(self.build_lib, "perft_core", "kernels")
        prebuilt = _prebuilt()  # build_py has copied the sources to ``out``: the run-time digest is theirs
        try:
            prebuilt.build("kernels", out, [a.strip() for a in archs.split(",") if a.strip()] or None)
        except (prebuilt.PrebuildError, OSError) as exc:  # NVRTC compiles at run time instead
            print(f"perft: warning: no precompiled GPU kernels: {exc}")


record_build_commit()
setup(ext_modules=core_extensions(), cmdclass={"build_ext": BuildWithKernels})
