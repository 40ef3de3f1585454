"""UCI engines that support ``go perft N`` (Stockfish's extension), kept running between queries."""
from __future__ import annotations

import collections
import queue
import re
import shlex
import subprocess
import threading
import time
import unicodedata
import weakref
from collections.abc import Sequence

from oracle.engines.base import MOVE_PATTERN, OUTPUT_KEPT, DEFAULT_TIMEOUT, BaseEngine, EngineError, tail_lines, needs_chess960
from oracle.engines.divide import Divide
from oracle.engines.process import argv_of, command_name, engine_fen, kill, pump, spawn

_UCI_LINE = re.compile(MOVE_PATTERN + r"\s*:\s*(\d+)", re.ASCII)  # ASCII digits only: "٤٠٠" is no count
_NODES_LINE = re.compile(r"Nodes searched\s*:\s*(\d+)", re.ASCII)
_UCI_WORDS = ("id", "uciok", "readyok", "bestmove", "copyprotection", "registration", "info", "option")
HANDSHAKE_SECONDS = 60.0
"""The most seconds the handshake waits for ``uciok`` (less when ``timeout`` is less). The UCI
protocol has an engine answer ``uci`` with its ids, options and ``uciok`` "immediately"; it defers
long work (networks, hash, tablebases) to ``isready``. A program that echoes its input or prints
nothing then says so in a minute, not after the 600-s default meant for one ``go perft``."""
_ENGINE_TIMEOUT = object()  # UciEngine._exchange's default: the engine's own timeout
FOREIGN_LINES = 20
"""Lines outside UCI's vocabulary allowed before ``uciok`` / ``readyok`` (a banner is usual): a
program that prints more is not a UCI engine, and says so at once instead of after the timeout."""


def _uci_only(limit: int = FOREIGN_LINES):
    """A ``parse`` hook for :meth:`UciEngine._exchange` that raises ValueError at the ``limit``-th
    line whose first word is not UCI's."""
    foreign = []

    def parse(line: str) -> None:
        words = line.split()
        if words and words[0] not in _UCI_WORDS:
            foreign.append(line)
            if len(foreign) >= limit:
                raise ValueError(f"{len(foreign)} lines that are not UCI (the first: {foreign[0][:80]!r}); "
                                 f"is it a UCI engine?")

    return parse


class UciEngine(BaseEngine):
    """A UCI engine that supports ``go perft N`` (Stockfish's extension), kept running between queries.

    ``command``: a shell-style command line (split with :func:`shlex.split`) or an argument list.
    ``timeout``: seconds allowed for each exchange (one ``isready``, one ``go perft``); None = no
    limit. The handshake (``uci`` to ``uciok``) gets at most HANDSHAKE_SECONDS of it.
    The engine is started on first use with ``uci``; every query sends ``setoption name UCI_Chess960
    value true|false`` when the rules needed change, ``isready``, ``position fen FEN [moves ...]``
    (a 4-field EPD gets the counters ``0 1``) and
    ``go perft N``, and reads ``move: count`` lines up to ``Nodes searched: N``. Blank lines and lines
    starting with ``info`` are ignored; any other line is unreadable and raises :class:`EngineError`,
    as does a crash (end of output) or a timeout; the process is then killed and reaped, and the next
    query starts a fresh one. ``identity``: what the last handshake with ``id`` lines said, ``{"name":
    ..., "author": ...}`` (either may be missing; {} before the first; a control or format character,
    or a line or paragraph separator, is written U+FFFD; other spaces stay).
    """

    def __init__(self, command: str | Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 name: str | None = None):
        self.argv = argv_of(command)
        self.timeout = timeout
        self.name = name or command_name(command)
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._stderr: collections.deque = collections.deque(maxlen=OUTPUT_KEPT)
        self._chess960 = False
        self._readers: list[threading.Thread] = []
        self._finalizer = None
        self.identity: dict[str, str] = {}  # what its handshake said: "name" and "author" (UCI's id lines)

    @property
    def pid(self) -> int | None:
        """Process id of the running engine, or None when none is running."""
        return self._proc.pid if self._proc is not None else None

    # -- process lifecycle -------------------------------------------------------------------

    def _start(self) -> None:
        try:
            proc = spawn(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, encoding="utf-8", errors="replace", bufsize=1)  # see run_once
        except OSError as exc:
            raise EngineError(self.name, f"cannot start: {exc}", command=shlex.join(self.argv)) from exc
        self._proc = proc
        self._lines = queue.Queue()
        self._stderr = collections.deque(maxlen=OUTPUT_KEPT)
        self._chess960 = False
        self._finalizer = weakref.finalize(self, kill, proc)
        self._readers = [threading.Thread(target=pump, args=(stream, sink), daemon=True)
                         for stream, sink in ((proc.stdout, self._lines), (proc.stderr, self._stderr))]
        for reader in self._readers:
            reader.start()
        limit = HANDSHAKE_SECONDS if self.timeout is None else min(self.timeout, HANDSHAKE_SECONDS)
        got = self._exchange(["uci"], lambda line: line.strip() == "uciok", what="the UCI handshake",
                             parse=_uci_only(), timeout=limit)
        said = {}
        for line in got:  # "id name Stockfish 15.1", "id author ...": kept for the report
            words = line.split(maxsplit=2)
            if len(words) == 3 and words[0] == "id" and words[1] in ("name", "author"):
                said[words[1]] = "".join("\ufffd" if unicodedata.category(c)[0] == "C" or c in "\u2028\u2029" else c
                                         for c in words[2].strip())
        if said:  # a restart that says nothing (or fails) keeps what the last handshake said
            self.identity = said

    def close(self) -> None:
        """Send ``quit``, give the engine a second to exit, then kill and reap it."""
        proc = self._proc
        if proc is None:
            return
        try:
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            proc.wait(timeout=1)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self._reap()

    def _reap(self) -> int | None:
        """Kill and reap the engine, wait for its reader threads; returns its exit status."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if self._finalizer is not None:
            self._finalizer.detach()
        kill(proc)
        for reader in self._readers:
            reader.join(timeout=5)
        return proc.returncode

    def _fail(self, problem: str, sent: Sequence[str], got: Sequence[str], *, ended: bool = False) -> EngineError:
        """Kill and reap the engine, and build the error that says what happened.

        ``ended``: the engine closed its output by itself, so wait a moment for its exit status.
        """
        if ended and self._proc is not None:
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        status = self._reap()
        if ended and status is not None:
            problem += f" (exit status {status})"
        output = tail_lines(got)
        if self._stderr:
            output += "\n[stderr]\n" + tail_lines(self._stderr)
        return EngineError(self.name, problem, command="\n".join(sent), output=output)

    def _exchange(self, sent: Sequence[str], done, *, what: str, parse=None, timeout=_ENGINE_TIMEOUT) -> list[str]:
        """Send ``sent`` lines, collect output lines until ``done(line)``; returns the lines read.

        ``parse(line)`` (optional) is called on each line before ``done``; it raises ValueError
        for an unreadable line. ``timeout``: seconds (None: no limit); by default the engine's.
        """
        if timeout is _ENGINE_TIMEOUT:
            timeout = self.timeout
        proc = self._proc
        try:
            proc.stdin.write("".join(line + "\n" for line in sent))
            proc.stdin.flush()
        except (OSError, ValueError):
            raise self._fail(f"crashed: cannot write to it during {what}", sent, [], ended=True) from None
        deadline = None if timeout is None else time.monotonic() + timeout
        got: list[str] = []
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = self._lines.get(timeout=wait)
            except queue.Empty:
                raise self._fail(f"timed out after {timeout:g} s during {what}", sent, got) from None
            if line is None:
                raise self._fail(f"crashed: its output ended during {what}", sent, got, ended=True)
            got.append(line)
            if parse is not None:
                try:
                    parse(line)
                except ValueError as exc:
                    raise self._fail(f"unreadable output during {what}: {exc}", sent, got) from None
            if done(line):
                return got

    # -- queries -----------------------------------------------------------------------------

    def _divide(self, fen, depth, moves):
        fen = engine_fen(fen)  # one line, checked before the engine is started or sent anything
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                raise self._fail("crashed: it exited between queries", [], [], ended=True)
            self._start()
        want960 = needs_chess960(fen)
        sent = []
        if want960 != self._chess960:
            sent.append(f"setoption name UCI_Chess960 value {'true' if want960 else 'false'}")
            self._chess960 = want960
        sent.append("isready")
        self._exchange(sent, lambda line: line.strip() == "readyok", what="isready", parse=_uci_only())
        position = f"position fen {fen}" + (f" moves {' '.join(moves)}" if moves else "")
        sent = [position, f"go perft {depth}"]
        counts = Divide()
        total: list[int] = []

        def parse(line: str) -> None:
            text = line.strip()
            if not text or text.startswith("info"):
                return
            if m := _NODES_LINE.fullmatch(text):
                total.append(int(m.group(1)))
            elif m := _UCI_LINE.fullmatch(text):
                counts.add(m.group(1).lower(), int(m.group(2)))
            else:
                raise ValueError(f"expected 'move: count' or 'Nodes searched: N', got {line!r}")

        got = self._exchange(sent, lambda line: bool(total), what=f"go perft {depth}", parse=parse)
        if sum(counts.values()) != total[0]:
            raise self._fail(f"inconsistent output: the move lines add up to {sum(counts.values())} "
                             f"but it says 'Nodes searched: {total[0]}'", sent, got)
        return counts
