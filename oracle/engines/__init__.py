"""Perft engines behind one protocol: ``divide(fen, depth, moves) -> {uci_move: nodes}``,
one module per protocol over :mod:`oracle.engines.base`.

Implementations:

- :class:`CoreEngine` — our own backends through ``perft_core.divide`` (``cpu``; ``gpu`` when built).
- :class:`PythonChessEngine` — the reference: python-chess legal move generation, bulk counting at
  the last ply (``len(legal moves)``) and an exact transposition table keyed by python-chess's own
  position key. Chess960 rules are used when the position needs them (:func:`needs_chess960`).
- :class:`UciEngine` — any UCI engine as a long-lived subprocess that understands ``go perft N``
  and prints Stockfish's format (``e2e4: 13160`` lines, a blank line, ``Nodes searched: N``).
- :class:`PerftreeEngine` — a perftree-style script run once per query as
  ``CMD depth "fen" "moves"``, printing ``e2e4 13160`` lines, a blank line and the total.
- :class:`CliEngine` — a program that prints only a total (``Perft(08): N``, ``Nodes searched: N``),
  run once per query from a template ``"CMD {fen} {depth}"``: a :class:`TotalOnlyEngine`
  (``supports_divide`` False), localized by :func:`oracle.drill.drill`.

Every failure of an engine (it crashed, timed out, or printed something unreadable) raises
:class:`EngineError`, which names the engine, the command it was sent and what came back.
Subprocesses run in their own session and are always killed and reaped on error or ``close()``.

Moves are UCI strings. ``moves`` is a sequence of UCI moves played from ``fen`` before counting,
in the notation the engine itself prints (its divide's keys), so an engine is queried exactly as
``position fen FEN moves ...`` would query it, make-move included.
"""
from __future__ import annotations

from oracle.engines.base import (
    DEFAULT_TIMEOUT,
    BaseEngine,
    Engine,
    EngineError,
    TotalOnlyEngine,
    board_from,
    check_depth,
    fen_notation,
    fen_of,
    fen_problems,
    needs_chess960,
    time_limit,
)
from oracle.engines.cli import CliEngine
from oracle.engines.core import CoreEngine
from oracle.engines.perftree import PerftreeEngine
from oracle.engines.pychess import PythonChessEngine
from oracle.engines.uci import UciEngine

__all__ = [
    "DEFAULT_TIMEOUT",
    "BaseEngine",
    "CliEngine",
    "CoreEngine",
    "Engine",
    "EngineError",
    "PerftreeEngine",
    "PythonChessEngine",
    "TotalOnlyEngine",
    "UciEngine",
    "board_from",
    "check_depth",
    "fen_notation",
    "fen_of",
    "fen_problems",
    "make_engine",
    "needs_chess960",
    "time_limit",
]

PROTOCOLS = ("uci", "perftree", "cli")


def make_engine(spec: str, *, protocol: str = "uci", timeout: float | None = DEFAULT_TIMEOUT,
                threads: int | None = None, total_regex: str | None = None, tt: bool = False,
                verify_seed: int | None = None) -> BaseEngine:
    """Build an engine from a command-line spec.

    ``"python-chess"`` -> :class:`PythonChessEngine`; ``"cpu"``, ``"gpu"``, ``"gpu-emulated"`` ->
    :class:`CoreEngine` with that backend (``threads``, ``tt``, ``verify_seed`` apply to these);
    anything else is a shell-style command line run with ``protocol`` ``"uci"``
    (:class:`UciEngine`), ``"perftree"`` (:class:`PerftreeEngine`) or ``"cli"`` (:class:`CliEngine`,
    a template with ``{fen}`` and ``{depth}``; ``total_regex`` reads its total).
    Raises ``ValueError`` for an empty command, an unknown protocol, or options that do not fit.
    """
    if spec == "python-chess":
        return PythonChessEngine()
    if spec in ("cpu", "gpu", "gpu-emulated"):
        return CoreEngine(spec, threads=threads, tt=tt, verify_seed=verify_seed)
    if protocol == "uci":
        return UciEngine(spec, timeout=timeout)
    if protocol == "perftree":
        return PerftreeEngine(spec, timeout=timeout)
    if protocol == "cli":
        return CliEngine(spec, total_regex=total_regex, timeout=timeout)
    raise ValueError(f"unknown protocol {protocol!r} (expected one of {', '.join(PROTOCOLS)})")
