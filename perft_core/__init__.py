"""perft_core: exact chess perft counts on CPU (C++ extension) and GPU (CuPy kernels)."""
from .errors import CountInterrupted, CountRefused, FenError, HashVerificationError, IllegalMoveError
from .position import Position
from .api import perft, divide

__version__ = "0.1.0"
__all__ = ["CountInterrupted", "CountRefused", "FenError", "IllegalMoveError", "HashVerificationError", "Position", "perft", "divide", "__version__"]
