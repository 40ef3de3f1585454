"""The progress bar and the time limit of one long count (used by :mod:`perft_core.api`).

A watched count runs root move by root move (one call of the CPU extension per root move; on the
GPU backends the driver also reports each finished BFS chunk through its ``progress`` hook). After
every root move, and on every GPU chunk, :meth:`Watch.advance` moves the bar and checks the time
limit; past it, :class:`Deadline` stops the count and the caller raises
:class:`perft_core.errors.CountInterrupted` with the root moves finished so far.
"""
from __future__ import annotations

import sys
import time

from .estimate import Estimate, format_seconds

#: A count estimated to take longer than this (seconds) shows a progress bar on a terminal.
BAR_SECONDS = 2.0


class Deadline(Exception):
    """The time limit of a watched count passed (internal: the API turns it into CountInterrupted)."""


def wants_bar(progress: bool | None) -> bool:
    """``progress`` True/False as given; None (auto): True when stderr is a terminal."""
    if progress is None:
        return sys.stderr.isatty()
    return bool(progress)


class Watch:
    """Progress and deadline of one count; a context manager that draws a rich bar on stderr.

    Args:
        estimate: the count's :class:`Estimate` (its nodes are the bar's total), or None.
        max_seconds: wall seconds after which :meth:`advance` raises :class:`Deadline`; None: no limit.
        bar: draw the bar (rich, on stderr, removed at the end).
        passes: how many times the tree is counted (2 with a verify seed): scales the bar's total.
    """

    def __init__(self, estimate: Estimate | None, max_seconds: float | None, bar: bool, passes: int = 1):
        self.estimate = estimate
        self.max_seconds = max_seconds
        self.t0 = time.monotonic()
        self.done = 0            # nodes counted so far (finished root moves and GPU chunks)
        self.move_nodes = 0      # nodes of the current root move reported by GPU chunks
        self._bar = None
        self._task = None
        total = max(float(estimate.nodes) * passes, 1.0) if estimate is not None else None
        self._total = total
        if bar and estimate is not None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("perft {task.fields[depth]}"), BarColumn(),
                                 TextColumn("{task.fields[moves]}"), TextColumn("{task.fields[nps]}"),
                                 TimeElapsedColumn(), _eta_column(), console=Console(stderr=True), transient=True)
            self._task = self._bar.add_task("perft", total=total, depth=estimate.depth, moves="",
                                            nps="", rate=estimate.nodes_per_second, at=0.0)

    def __enter__(self) -> "Watch":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()

    def elapsed(self) -> float:
        """Wall seconds since the watch was made."""
        return time.monotonic() - self.t0

    def check(self) -> None:
        """Raise :class:`Deadline` when ``max_seconds`` has passed."""
        if self.max_seconds is not None and self.elapsed() > self.max_seconds:
            raise Deadline(f"stopped after {self.elapsed():.1f} s (max_seconds={self.max_seconds:g})")

    def chunk(self, nodes: int) -> None:
        """A GPU chunk inside the current root move counted ``nodes``; move the bar, check the time."""
        self.move_nodes += int(nodes)
        self._show(self.done + self.move_nodes)
        self.check()

    def advance(self, nodes: int, moves_done: int, moves_total: int) -> None:
        """A root move finished with ``nodes``; move the bar, then check the time."""
        self.done += int(nodes)
        self.move_nodes = 0
        self._show(self.done, f"{moves_done}/{moves_total} moves")
        self.check()

    def _show(self, done: int, moves: str | None = None) -> None:
        if self._bar is None:
            return
        elapsed = self.elapsed()
        fields = {"at": elapsed}
        if done > 0 and elapsed > 0:
            fields["rate"] = done / elapsed
            fields["nps"] = f"{done / elapsed / 1e6:,.0f} M nodes/s"
        if moves is not None:
            fields["moves"] = moves
        total = max(self._total, done * 1.01) if done > self._total else self._total
        self._bar.update(self._task, completed=min(done, total), total=total, **fields)


def _eta_column():
    from rich.progress import ProgressColumn
    from rich.text import Text

    class EtaColumn(ProgressColumn):
        """Seconds left: (estimated total - counted) / measured rate, counted down between updates."""

        def render(self, task) -> Text:
            rate = task.fields.get("rate") or 0.0
            if rate <= 0 or task.total is None:
                return Text("ETA ?")
            since = (task.elapsed or 0.0) - task.fields.get("at", 0.0)
            left = max((task.total - task.completed) / rate - since, 0.0)
            return Text(f"ETA {format_seconds(left)}")

    return EtaColumn()

