"""perft_core: exact chess perft counts on CPU (C++ extension) and GPU (CuPy kernels).

Deep counts across processes, GPUs and hosts: ``perft_core.deep.deep_perft(fen, depth, ...)``
(work units on Dask with a durable, resumable store; ``pip install 'perft-oracle[dist]'``). It is
not imported here, so ``import perft_core`` never needs Dask.
"""
from .errors import CountInterrupted, CountRefused, FenError, HashVerificationError, IllegalMoveError, StatsUnsupported
from .position import Position
from .stats import Stats
from .api import perft, divide, perft_stats, divide_stats

__version__ = "0.1.0"
__all__ = ["CountInterrupted", "CountRefused", "FenError", "IllegalMoveError", "HashVerificationError", "Position",
           "Stats", "StatsUnsupported", "perft", "divide", "perft_stats", "divide_stats", "__version__"]
