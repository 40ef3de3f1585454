"""GPU backend: a host-driven breadth-first perft over CuPy kernels, or over the emulated device.

``driver.BfsDriver`` is written once against a kernel set: ``kernels.CupyKernels`` (the real GPU,
kernels from kernels/pc_kernels.cu compiled by NVRTC) or ``kernels.EmulatedKernels`` (NumPy arrays
and the C++ extension's host batch versions of the same kernels), so CPU CI tests the BFS logic.
"""
from .arena import Arena, DeviceOutOfMemory, FaultPlan
from .driver import BfsDriver, GpuStats
from .registry import get_driver

__all__ = ["Arena", "DeviceOutOfMemory", "FaultPlan", "BfsDriver", "GpuStats", "get_driver"]
