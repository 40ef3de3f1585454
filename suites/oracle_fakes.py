"""Shared by the oracle's tests: the broken move generators (fake_engines/broken.py, which the fake
UCI, perftree and total-only engines also run as scripts) and the in-process engines that plant one
of them (with a divide: :class:`Broken`; total-only: :class:`TotalOnlyFake`)."""
from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

from oracle.engines import EngineError, PythonChessEngine, TotalOnlyEngine

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


class TotalOnlyFake(TotalOnlyEngine):
    """An in-process total-only engine (no divide) with a planted bug: a bug of ``broken.BUGS``
    (move generation), or ``"walk"`` (tree walk: with 4 or more plies to go at the root of its
    own walk it leaves out its last root move's subtree), or a state bug of ``broken.STATE_BUGS``
    (make or unmake leaves wrong state), as fake_engines/total_only.py does. ``strict``: refuse
    (EngineError) a FEN whose side not to move is in check, as many engines do."""

    def __init__(self, bug: str = "good", *, strict: bool = False):
        self.bug = bug
        self.strict = strict
        self.name = f"total-only:{bug}"
        self.generate = broken.BUGS.get(bug) or broken.STATE_GEN.get(bug, broken.legal)
        self.calls = 0

    def _perft(self, fen, depth):
        self.calls += 1
        board = broken.board_literal(fen)
        if self.strict and board.was_into_check():
            raise EngineError(self.name, "illegal position (the side not to move is in check)", command=fen)
        if self.bug == "walk" and depth >= 4:
            nodes = 0
            for move in self.generate(board)[:-1]:
                board.push(move)
                nodes += broken.perft(board, depth - 1, self.generate)
                board.pop()
            return nodes
        return broken.perft(board, depth, self.generate, state=self.bug)


def live_processes(ppid: int | None = None, sid: int | None = None) -> list[int]:
    """Pids of the live processes (zombies excluded, Linux /proc) whose parent is ``ppid`` and/or
    whose session is ``sid``: for tests that no process is left behind."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, parent, _, session = f.read().rsplit(")", 1)[1].split()[:4]
        except (OSError, ValueError):
            continue
        if state != "Z" and ppid in (None, int(parent)) and sid in (None, int(session)):
            pids.append(int(entry))
    return pids


def alive(pid: int) -> bool:
    """Is ``pid`` a live process (not a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids, seconds: float = 10.0) -> list[int]:
    """Wait up to ``seconds`` for ``pids`` (a list, or a function giving one) to end; those left."""
    deadline = time.monotonic() + seconds
    while True:
        left = [p for p in (pids() if callable(pids) else pids) if alive(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)
