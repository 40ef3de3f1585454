"""The CPU extension for this processor (perft_core.isa.choose): ``_core_v3`` where the CPU has the
x86-64-v3 features and that build exists (``_core_v3magic`` where its PEXT is microcoded), else
``_core_base``. This module replaces itself in ``sys.modules`` with the chosen extension, so
``from perft_core import _core`` is that extension. ``PERFT_CORE=base`` (or ``v3``, ``v3magic``)
forces one.

Raises ImportError when no extension is built (``python setup.py build_ext --inplace``), or
ValueError for a bad PERFT_CORE.
"""
from __future__ import annotations

import importlib
import os
import sys

from .isa import choose, cpu_info


def _load():
    error = None
    for name in choose(cpu_info(), os.environ.get("PERFT_CORE") or None):
        try:
            return importlib.import_module(f"{__package__}.{name}")
        except ImportError as exc:  # that build is absent: try the next
            error = exc
    raise ImportError(f"perft_core: no CPU extension built ({error})")


sys.modules[__name__] = _load()
