"""Build the CPU backend: the chess core in kernels/ compiled by the host C++ compiler.

A portable build by default: on x86-64 three copies of the extension, ``perft_core._core_base``
(the compiler's baseline instruction set), ``perft_core._core_v3`` (``-march=x86-64-v3``: AVX2,
BMI1/BMI2, with PEXT slider lookups, ``-DPC_HOST_PEXT``) and ``perft_core._core_v3magic`` (the same
level with magic slider lookups, for the AMD processors whose PEXT is microcoded);
``perft_core/_core.py`` loads the best one for the CPU (run-time dispatch, perft_core/isa.py), so one
wheel runs everywhere at full speed. Elsewhere only ``_core_base`` is built. ``PERFT_MARCH=native``
(or any ``-march`` value, or ``none``) asks for one local build for that target instead
(``_core_base`` alone; add ``PERFT_PEXT=1`` where the target has a fast BMI2 PEXT).

Every extension and every translation unit compiles at once, at most ``PERFT_BUILD_JOBS`` compilers
(default: the cores this process may use) running together; each compile prints which variant and
source it is and its seconds (``pip install -v .`` shows them).

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
import time

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


def build_jobs() -> int:
    """How many compiler processes run at once: ``PERFT_BUILD_JOBS``, else the cores this process
    may run on."""
    text = os.environ.get("PERFT_BUILD_JOBS", "").strip()
    if text:
        return max(1, int(text))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _variant(macros, args) -> str:
    """``_core_v3 (-march=x86-64-v3, PEXT)``: which extension a compile belongs to, for the log."""
    name = next((value for key, *value in macros or [] if key == "PC_MODULE_NAME" and value), ["?"])[0]
    march = next((a for a in args or [] if a.startswith("-march=")), "-march=default")
    return f"{name} ({march}{', PEXT' if '-DPC_HOST_PEXT' in (args or []) else ''})"


class BuildWithKernels(build_ext):
    """build_ext with every extension and every translation unit compiled in parallel (at most
    :func:`build_jobs` compilers at once), then the precompiled GPU kernels (in place: into
    kernels/; else into the build tree). Each compile says which variant it is for and how long it
    took (``pip install -v .`` shows the lines)."""

    def build_extensions(self):
        """Every extension in its own thread; every source of an extension in its own thread; one
        gate on the compiler's process spawns bounds the compilers (and linkers) running at once.
        Works for any number of extensions and of SOURCES."""
        import threading
        import types
        from concurrent.futures import ThreadPoolExecutor

        self.check_extensions_list(self.extensions)
        for ext in self.extensions:  # pybind11's build_ext: the C++ level, before any compile
            if getattr(ext, "_cxx_level", None) == 0:
                from pybind11.setup_helpers import auto_cpp_level

                ext.cxx_std = auto_cpp_level(self.compiler)
        jobs = build_jobs()
        gate = threading.BoundedSemaphore(jobs)
        held = threading.local()  # a compile holds the gate itself, to time what it alone takes
        spawn = self.compiler.spawn

        def gated_spawn(cmd, **kwargs):
            if getattr(held, "gate", False):
                return spawn(cmd, **kwargs)
            with gate:
                return spawn(cmd, **kwargs)

        def compile_all(compiler, sources, output_dir=None, macros=None, include_dirs=None, debug=False,
                        extra_preargs=None, extra_postargs=None, depends=None):
            # distutils' CCompiler.compile, one thread per object (as pybind11's ParallelCompile)
            macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
            variant = _variant(macros, extra_postargs)

            def one(obj):
                if obj not in build:
                    return
                src, ext = build[obj]
                with gate:
                    held.gate = True
                    t0 = time.perf_counter()
                    print(f"perft: compiling {variant}: {src}", flush=True)
                    try:
                        compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)
                    finally:
                        held.gate = False
                    print(f"perft: compiled {variant}: {src} in {time.perf_counter() - t0:.1f} s", flush=True)

            with ThreadPoolExecutor(max_workers=max(1, len(objects))) as pool:
                list(pool.map(one, objects))
            return objects

        self.compiler.spawn = gated_spawn
        self.compiler.compile = types.MethodType(compile_all, self.compiler)
        print(f"perft: building {len(self.extensions)} extension(s), {jobs} compiler(s) at once", flush=True)
        t0 = time.perf_counter()
        try:
            with ThreadPoolExecutor(max_workers=len(self.extensions) or 1) as pool:
                for future in [pool.submit(self._build_one, ext) for ext in self.extensions]:
                    future.result()
        finally:
            self.compiler.spawn = spawn
            del self.compiler.compile
        print(f"perft: built {len(self.extensions)} extension(s) in {time.perf_counter() - t0:.1f} s", flush=True)

    def _build_one(self, ext):
        """Build ``ext`` in its own temporary folder, through a copy of this command: _core_base,
        _core_v3 and _core_v3magic compile the same sources with other flags into the same object
        paths otherwise (two builds at once in one tree overwrote each other's objects: a _core_v3
        with _core_base's module init was seen), and the builds now run at once."""
        import copy

        command = copy.copy(self)
        command.build_temp = os.path.join(self.build_temp, ext.name.rsplit(".", 1)[-1])
        build_ext.build_extension(command, ext)

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


if __name__ == "__main__":  # pip's build backend and ``python setup.py`` (suites/test_build.py imports it)
    record_build_commit()
    setup(ext_modules=core_extensions(), cmdclass={"build_ext": BuildWithKernels})
