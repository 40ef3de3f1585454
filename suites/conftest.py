"""Shared pytest configuration: GPU tests skip with a reason where no CUDA device is usable."""
from __future__ import annotations

import functools

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


def pytest_collection_modifyitems(config, items):
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test skipped: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
