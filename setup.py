"""Build the CPU backend: the chess core in kernels/ compiled by the host C++ compiler.

The extension is tuned for the machine that builds it (``-march=native``) because perft is
always built where it runs (``pip install .``).  Set ``PERFT_MARCH=x86-64-v2`` (or any
``-march`` value, or ``none``) to build a portable binary instead.
"""
import os

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

march = os.environ.get("PERFT_MARCH", "native")
flags = ["-O3", "-fno-plt", "-Wall", "-Wextra", "-Wno-unused-parameter"]
if march != "none":
    flags.append(f"-march={march}")

ext = Pybind11Extension(
    "perft_core._core",
    ["perft_core/_core.cpp", "perft_core/src/zobrist.cpp", "perft_core/src/batch.cpp"],
    include_dirs=["kernels", "perft_core"],
    cxx_std=17,
    extra_compile_args=flags,
    extra_link_args=["-pthread"],
    depends=[os.path.join(d, f) for d in ("kernels", "perft_core/src") for f in os.listdir(d) if f.endswith(".h")],
)

setup(ext_modules=[ext])
