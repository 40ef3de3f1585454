"""The perft oracle: compare perft engines, localize their disagreements, run the known tables.

- :mod:`oracle.engines`: the :class:`Engine` protocol and its implementations (our backends, the
  python-chess reference, UCI and perftree subprocess engines) and :class:`EngineError`.
- :mod:`oracle.localize`: :func:`localize` walks down to the position and move where two engines
  disagree.
- :mod:`oracle.runner`: :func:`run_suite` runs an engine on the bundled tables (:mod:`oracle.tables`)
  within a node/time budget and localizes every failure.
- :mod:`oracle.report`: the conformance report (JSON, Markdown, single-file HTML).
- :mod:`oracle.cli`: the ``perft diff``, ``perft suite`` and ``perft report`` subcommands.
"""
from oracle.engines import (
    DEFAULT_TIMEOUT,
    CoreEngine,
    Engine,
    EngineError,
    PerftreeEngine,
    PythonChessEngine,
    UciEngine,
    board_from,
    fen_of,
    make_engine,
    needs_chess960,
)
from oracle.localize import Level, Localization, canonical_divide, localize
from oracle.runner import RowResult, RunResult, SuiteSummary, run_suite, select_rows

__all__ = [
    "DEFAULT_TIMEOUT",
    "CoreEngine",
    "Engine",
    "EngineError",
    "Level",
    "Localization",
    "PerftreeEngine",
    "PythonChessEngine",
    "RowResult",
    "RunResult",
    "SuiteSummary",
    "UciEngine",
    "board_from",
    "canonical_divide",
    "fen_of",
    "localize",
    "make_engine",
    "needs_chess960",
    "run_suite",
    "select_rows",
]
