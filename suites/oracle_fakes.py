"""Shared by the oracle's tests: the broken move generators (fake_engines/broken.py, which the fake
UCI and perftree engines also run as scripts) and the in-process engine that plants one of them."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from oracle.engines import PythonChessEngine

FAKES = Path(__file__).parent / "fake_engines"
_spec = importlib.util.spec_from_file_location("oracle_test_broken", FAKES / "broken.py")
broken = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(broken)


class Broken(PythonChessEngine):
    """The python-chess reference with a planted move-generation bug (``broken.BUGS[bug]``)."""

    def __init__(self, bug: str):
        super().__init__()
        self.name = f"broken:{bug}"
        self.generate = broken.BUGS[bug]

    def moves(self, board):
        return self.generate(board)
