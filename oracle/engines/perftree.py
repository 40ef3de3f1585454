"""perftree-style scripts, run once per query as ``CMD depth "fen" "moves"``."""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from oracle.engines.base import MOVE_PATTERN, DEFAULT_TIMEOUT, BaseEngine, EngineError
from oracle.engines.divide import Divide
from oracle.engines.process import argv_of, command_name, engine_fen, run_once

_PERFTREE_LINE = re.compile(MOVE_PATTERN + r"\s+(\d+)", re.ASCII)  # ASCII digits only: "٤٠٠" is no count


class PerftreeEngine(BaseEngine):
    """A perftree-style script, run once per query as ``CMD depth "fen" "moves"``.

    ``moves`` is one argument, the moves played from ``fen`` separated by spaces (empty when none).
    The script prints ``move count`` lines, a blank line, then the total; anything else, a
    non-zero exit status, or a run longer than ``timeout`` seconds raises :class:`EngineError`
    (the process and its session are killed and reaped).
    """

    def __init__(self, command: str | Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 name: str | None = None):
        self.argv = argv_of(command)
        self.timeout = timeout
        self.name = name or command_name(command)

    def _divide(self, fen, depth, moves):
        argv = [*self.argv, str(depth), engine_fen(fen), " ".join(moves)]
        out, output = run_once(argv, self.timeout, self.name)
        try:
            return _parse_perftree(out)
        except ValueError as exc:
            raise EngineError(self.name, f"unreadable output: {exc}", command=shlex.join(argv), output=output) from None


def _parse_perftree(out: str) -> Divide:
    """Parse ``move count`` lines, a blank line and the total (ASCII digits); a :class:`Divide`
    (a move on two lines: ``listed``); raise ValueError if malformed."""
    lines = out.rstrip().splitlines()
    if "" in (line.strip() for line in lines):
        blank = [line.strip() for line in lines].index("")
        body, tail = lines[:blank], [line for line in lines[blank + 1:] if line.strip()]
    elif len(lines) == 1:  # no legal move: just the total
        body, tail = [], lines
    else:
        raise ValueError("no blank line before the total")
    counts = Divide()
    for line in body:
        m = _PERFTREE_LINE.fullmatch(line.strip())
        if not m:
            raise ValueError(f"expected 'move count', got {line!r}")
        counts.add(m.group(1).lower(), int(m.group(2)))
    if len(tail) != 1 or not (tail[0].strip().isascii() and tail[0].strip().isdigit()):
        raise ValueError(f"expected one total after the blank line, got {tail!r}")
    if int(tail[0]) != sum(counts.values()):
        raise ValueError(f"the move lines add up to {sum(counts.values())} but the total is {tail[0].strip()}")
    return counts
