"""The progress bar and the time limit of one long count (used by :mod:`perft_core.api`), and the
progress lines written instead of a bar when stderr is not a terminal (:class:`ProgressLines`:
``perft run``, ``suite``, ``report`` and ``perft deep`` share them).

A watched count runs root move by root move (one call of the CPU extension per root move; on the
GPU backends the driver also reports each finished BFS chunk through its ``progress`` hook). After
every root move, and on every GPU chunk, :meth:`Watch.advance` moves the bar and checks the time
limit; past it, :class:`Deadline` stops the count and the caller raises
:class:`perft_core.errors.CountInterrupted` with the root moves finished so far.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import NoReturn

from .errors import CountInterrupted
from .estimate import Estimate, format_seconds, format_speed

#: A count estimated to take longer than this (seconds) shows a progress bar on a terminal.
BAR_SECONDS = 2.0

PROGRESS_LINE_SECONDS = 60.0
"""Without a terminal (a log file, a batch job), a progress line at most this often."""

FIRST_LINE_SECONDS = 5.0
"""Without a terminal, the first progress line of a command a person waits on (``perft run``,
``suite``, ``report``) comes this soon; the next ones every :data:`PROGRESS_LINE_SECONDS`."""

ETA_MIN_SHARE = 0.01
"""No ETA before this fraction of the work is done: the rate is not measured yet (the first rows
of a suite are tiny and all overhead; an ETA from them read ``332:33:09``)."""

TICK_SECONDS = 0.5
"""How often a watch with progress lines looks whether a line is due (its clock thread)."""

LINES_SECONDS = 10.0
"""Without a terminal, work estimated (or found) to take longer than this many seconds writes
progress lines and a final summary line; shorter work stays quiet."""


def duration(seconds: float) -> str:
    """``1 h 05 min``, ``12 min 30 s``, ``45 s``: a time for a progress line."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def eta(elapsed: float, share: float) -> float | None:
    """Seconds left when ``share`` (0..1) of the work took ``elapsed`` seconds, at that rate; None
    until :data:`ETA_MIN_SHARE` of it is done (no ETA before the rate is measured)."""
    if share < ETA_MIN_SHARE or share >= 1.0 or elapsed <= 0:
        return None
    return elapsed * (1 - share) / share


class ProgressLines:
    """Progress as lines on stderr, for when it is not a terminal: at most one line every
    ``every`` seconds, and a final summary line. Each line says what is done (``what``, e.g.
    ``12/20 root moves``), the share of the work done, the nodes counted, the time, nodes/s and
    the ETA: ``<label> <what> (<share> %<of>), <nodes> nodes in <time>, <rate> M nodes/s, ETA <time>``.

    Args:
        label: the line's prefix (``perft run:``, ``perft deep: count``).
        of: words after the share (`` of the estimated nodes``).
        every: seconds between two lines at least (default :data:`PROGRESS_LINE_SECONDS`).
        file: where to write (default stderr, looked up at each line).
        first: seconds before the first line (default ``every``; the commands a person waits on
            pass :data:`FIRST_LINE_SECONDS`).
    """

    def __init__(self, label: str, of: str = "", every: float | None = None, file=None, first: float | None = None):
        self.label, self.of, self.file = label, of, file
        self.every = PROGRESS_LINE_SECONDS if every is None else every
        self.first = self.every if first is None else min(first, self.every)
        self.last = 0.0
        self.lines = 0

    def report(self, what: str, share: float, nodes: int, elapsed: float, final: bool = False) -> bool:
        """Write a line when ``every`` seconds passed since the last one (since the start for the
        first), or always when ``final`` (then with no ETA). ``share``: the fraction done (0..1),
        ``elapsed``: seconds since the start. Returns whether a line was written."""
        if not final and elapsed - self.last < (self.every if self.lines else self.first):
            return False
        self.last = elapsed
        self.lines += 1
        share = min(max(share, 0.0), 1.0)
        rate = nodes / max(elapsed, 1e-9)
        left = None if final else eta(elapsed, share)
        print(f"{self.label} {what} ({100 * share:.1f} %{self.of}), {nodes:,} nodes in {duration(elapsed)}, "
              f"{format_speed(rate)}" + (f", ETA {duration(left)}" if left is not None else ""),
              file=self.file or sys.stderr, flush=True)
        return True


class Deadline(Exception):
    """The time limit of a watched count passed (internal: the API turns it into CountInterrupted)."""


def wants_bar(progress: bool | str | None) -> bool:
    """``progress`` True/False as given; None or ``"lines"`` (auto): True when stderr is a terminal."""
    if progress is None or progress == "lines":
        return sys.stderr.isatty()
    return bool(progress)


def wants_lines(progress: bool | str | None) -> bool:
    """Progress lines instead of a bar: ``progress == "lines"`` (what the ``perft`` command asks
    for) and stderr not a terminal. A library call (None) stays quiet off a terminal: no line, and
    no estimate made to decide whether to write one."""
    return progress == "lines" and not sys.stderr.isatty()


class Watch:
    """Progress and deadline of one count; a context manager that draws a rich bar on stderr.

    Args:
        estimate: the count's :class:`Estimate` (its nodes are the bar's total), or None.
        max_seconds: wall seconds after which :meth:`advance` raises :class:`Deadline`; None: no limit.
        bar: draw the bar (rich, on stderr, removed at the end).
        passes: how many times the tree is counted (2 with a verify seed): scales the bar's total.
        lines: write :class:`ProgressLines` on stderr instead (a line a minute, a summary at the end).
    """

    def __init__(self, estimate: Estimate | None, max_seconds: float | None, bar: bool, passes: int = 1,
                 lines: bool = False):
        self.estimate = estimate
        self.max_seconds = max_seconds
        self.t0 = time.monotonic()
        self.done = 0            # nodes counted so far (finished root moves and GPU chunks)
        self.move_nodes = 0      # nodes of the current root move reported by GPU chunks
        self._bar = None
        self._task = None
        self.passes = passes
        self._lock = threading.Lock()
        total = max(float(estimate.nodes) * passes, 1.0) if estimate is not None else None
        self._total = total
        self._lines = (ProgressLines(f"perft {estimate.depth}:", first=FIRST_LINE_SECONDS)
                       if lines and estimate is not None else None)
        self._moves = ""
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
        if self._lines is not None:  # lines come on time while a long root move counts (no event then)
            self._ticking = threading.Event()
            self._ticker = threading.Thread(target=self._tick, name="perft-progress-lines", daemon=True)
            self._ticker.start()
        return self

    def _tick(self) -> None:
        """The progress lines' clock: offers a line every TICK_SECONDS (ProgressLines writes one when
        its time has come: the first after FIRST_LINE_SECONDS, then every PROGRESS_LINE_SECONDS), so
        a count whose first root move takes minutes still says it is alive."""
        while not self._ticking.wait(TICK_SECONDS):
            self._show(self.done + self.move_nodes)

    def __exit__(self, *exc) -> None:
        if self._lines is not None:
            self._ticking.set()
            self._ticker.join()
        if self._bar is not None:
            self._bar.stop()
        if self._lines is not None and (exc[0] is None or issubclass(exc[0], (Deadline, CountInterrupted))):
            # the summary: the count when it finished (a verify seed's two passes counted it twice),
            # else the share counted at the time limit (none when interrupted: the command says
            # "perft: interrupted" and nothing else; none when refused, e.g. past 2^64 on a GPU
            # backend: the error line says why, and no node figure of a count that has none)
            done = self.done + self.move_nodes
            if exc[0] is None:
                self._lines.report(self._moves or "0 root moves", 1.0, done // self.passes, self.elapsed(), final=True)
            else:
                self._lines.report(self._moves or "0 root moves", done / self._total, done, self.elapsed(), final=True)

    def elapsed(self) -> float:
        """Wall seconds since the watch was made."""
        return time.monotonic() - self.t0

    def check(self) -> None:
        """Raise :class:`Deadline` when ``max_seconds`` has passed."""
        if self.max_seconds is not None and self.elapsed() > self.max_seconds:
            self.expire()

    def expire(self) -> NoReturn:
        """Raise :class:`Deadline` now: the count stopped itself at the deadline (the CPU extension)."""
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
        self._show(self.done, f"{moves_done}/{moves_total} root moves")
        self.check()

    def _show(self, done: int, moves: str | None = None) -> None:
        if moves is not None:
            self._moves = moves
        if self._lines is not None:
            with self._lock:  # the count's thread and the lines' clock (_tick)
                self._lines.report(self._moves or "0 root moves", done / self._total, done, self.elapsed())
        if self._bar is None:
            return
        elapsed = self.elapsed()
        fields = {"at": elapsed}
        if done > 0 and elapsed > 0:
            fields["rate"] = done / elapsed
            fields["nps"] = format_speed(done / elapsed)
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

