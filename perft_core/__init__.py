"""perft_core: exact chess perft counts on CPU (C++ extension) and GPU (CuPy kernels).

Deep counts across processes, GPUs and hosts: ``perft_core.deep.deep_perft(fen, depth, ...)``
(work units on Dask with a durable, resumable store; ``pip install 'perft-oracle[dist]'``). It is
not imported here, so ``import perft_core`` never needs Dask.
"""
from .errors import CountInterrupted, CountRefused, FenError, HashVerificationError, IllegalMoveError
from .position import Position
from .api import perft, divide

__version__ = "0.1.0"
__all__ = ["CountInterrupted", "CountRefused", "FenError", "IllegalMoveError", "HashVerificationError", "Position", "perft", "divide", "__version__"]
