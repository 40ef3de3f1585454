"""Perft engines behind one protocol: ``divide(fen, depth, moves) -> {uci_move: nodes}``.

Implementations:

- :class:`CoreEngine` — our own backends through ``perft_core.divide`` (``cpu``; ``gpu`` when built).
- :class:`PythonChessEngine` — the reference: python-chess legal move generation, bulk counting at
  the last ply (``len(legal moves)``) and an exact transposition table keyed by python-chess's own
  position key. Chess960 rules are used when the position needs them (:func:`needs_chess960`).
- :class:`UciEngine` — any UCI engine as a long-lived subprocess that understands ``go perft N``
  and prints Stockfish's format (``e2e4: 13160`` lines, a blank line, ``Nodes searched: N``).
- :class:`PerftreeEngine` — a perftree-style script run once per query as
  ``CMD depth "fen" "moves"``, printing ``e2e4 13160`` lines, a blank line and the total.

Every failure of an engine (it crashed, timed out, or printed something unreadable) raises
:class:`EngineError`, which names the engine, the command it was sent and what came back.
Subprocesses run in their own session and are always killed and reaped on error or ``close()``.

Moves are UCI strings. ``moves`` is a sequence of UCI moves played from ``fen`` before counting,
in the notation the engine itself prints (its divide's keys), so an engine is queried exactly as
``position fen FEN moves ...`` would query it, make-move included.
"""
from __future__ import annotations

import collections
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import chess

__all__ = [
    "DEFAULT_TIMEOUT",
    "CoreEngine",
    "Engine",
    "EngineError",
    "PerftreeEngine",
    "PythonChessEngine",
    "UciEngine",
    "board_from",
    "check_depth",
    "fen_of",
    "make_engine",
    "needs_chess960",
]

#: Seconds one engine command (one ``go perft``, one perftree run) may take by default.
DEFAULT_TIMEOUT = 600.0

_MOVE = r"([a-h][1-8][a-h][1-8][nbrqNBRQ]?)"
_UCI_LINE = re.compile(_MOVE + r"\s*:\s*(\d+)")
_PERFTREE_LINE = re.compile(_MOVE + r"\s+(\d+)")
_NODES_LINE = re.compile(r"Nodes searched\s*:\s*(\d+)")
_OUTPUT_KEPT = 60  # lines of output quoted in an EngineError


class EngineError(RuntimeError):
    """An engine crashed, timed out, or printed something that is not a perft answer.

    Attributes: ``engine`` (the engine's name), ``command`` (what it was sent: the protocol lines
    or the argument vector), ``output`` (what came back, stdout then stderr, possibly shortened).
    """

    def __init__(self, engine: str, problem: str, *, command: str = "", output: str = ""):
        self.engine = engine
        self.problem = problem
        self.command = command
        self.output = output
        text = f"engine {engine!r}: {problem}"
        if command:
            text += f"\n  sent: {_indent(command)}"
        text += f"\n  got:  {_indent(output) if output.strip() else '(no output)'}"
        super().__init__(text)


def _indent(text: str) -> str:
    return text.rstrip("\n").replace("\n", "\n        ")


def _tail(lines: Sequence[str], keep: int = _OUTPUT_KEPT) -> str:
    lines = list(lines)
    if len(lines) > keep:
        lines = [f"... ({len(lines) - keep} earlier lines)"] + lines[-keep:]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# FEN handling shared by every engine and the localizer (python-chess is the reference)


def needs_chess960(fen: str) -> bool:
    """True if ``fen``'s castling rights are only possible under Chess960 rules.

    That is Shredder-FEN letters or X-FEN rights whose king or rook is off the standard e/a/h
    squares. Positions without such rights count the same under both rule sets.
    Raises ``ValueError`` for text python-chess cannot parse.
    """
    return chess.Board(fen, chess960=True).has_chess960_castling_rights()


def board_from(fen: str, moves: Sequence[str] = (), *, chess960: bool | None = None) -> chess.Board:
    """A python-chess board for ``fen`` (FEN, X-FEN, Shredder-FEN, or 4-field EPD) after ``moves``.

    ``chess960=None`` picks Chess960 rules when the position needs them (:func:`needs_chess960`).
    ``moves`` may use standard or king-takes-rook castling notation.
    Raises ``ValueError`` for an unparsable FEN or an illegal move.
    """
    if chess960 is None:
        chess960 = needs_chess960(fen)
    board = chess.Board(fen, chess960=chess960)
    for uci in moves:
        board.push(board.parse_uci(uci))
    return board


def fen_of(board: chess.Board) -> str:
    """A FEN that reproduces ``board`` on its own, for any engine.

    The en passant square is kept after every double pawn push, even when no capture is legal
    (an engine's bug may be exactly an illegal en passant), and Chess960 boards are written as
    Shredder-FEN so that castling rights survive whatever the rooks' files.
    """
    return board.fen(en_passant="fen", shredder=board.chess960)


def check_depth(depth: object) -> int:
    """Return ``depth`` if it is an int >= 0 (not a bool); raise ``ValueError`` otherwise."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative int, got {depth!r}")
    return depth


# ---------------------------------------------------------------------------------------------
# The protocol


@runtime_checkable
class Engine(Protocol):
    """Anything that counts perft: our backends, the python-chess reference, UCI and perftree engines."""

    name: str

    def divide(self, fen: str, depth: int, moves: Sequence[str] = ()) -> dict[str, int]:
        """Leaf nodes (at ``depth`` plies) below each legal move of the position; {} at depth 0."""
        ...

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies; 1 at depth 0."""
        ...

    def close(self) -> None:
        """Release the engine's resources (reap its process); it may be used again afterwards."""
        ...


class BaseEngine:
    """Shared plumbing: depth checks, ``perft`` as the sum of ``divide``, a context manager."""

    name = "engine"

    def divide(self, fen: str, depth: int, moves: Sequence[str] = ()) -> dict[str, int]:
        """Nodes below each legal move: ``{uci: nodes}``; ``{}`` at depth 0 or with no legal move.

        Raises ``ValueError`` for a bad depth and :class:`EngineError` when the engine fails.
        """
        if check_depth(depth) == 0:
            return {}
        return self._divide(fen, depth, tuple(moves))

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies below ``fen`` after ``moves``; 1 at depth 0.

        Raises ``ValueError`` for a bad depth and :class:`EngineError` when the engine fails.
        """
        if check_depth(depth) == 0:
            return 1
        return sum(self._divide(fen, depth, tuple(moves)).values())

    def _divide(self, fen: str, depth: int, moves: tuple[str, ...]) -> dict[str, int]:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release for an in-process engine."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# ---------------------------------------------------------------------------------------------
# Our backends


class CoreEngine(BaseEngine):
    """Our engine, ``perft_core.divide`` / ``perft_core.perft`` with a chosen backend.

    ``backend`` is passed through (``"cpu"``, ``"gpu"``, ``"gpu-emulated"``); ``threads`` too.
    Any error from perft_core while counting is re-raised as :class:`EngineError`.
    """

    def __init__(self, backend: str = "cpu", *, threads: int = 1):
        self.backend = backend
        self.threads = threads
        self.name = f"perft_core[{backend}]"

    def _position(self, fen: str, moves: tuple[str, ...]):
        import perft_core

        position = perft_core.Position.from_fen(fen)
        for uci in moves:
            position = position.push(uci)
        return position

    def _call(self, what: str, fen: str, depth: int, moves: tuple[str, ...]):
        import perft_core

        command = f"perft_core.{what}({fen!r}, {depth}, backend={self.backend!r}, threads={self.threads})"
        if moves:
            command += f" after moves {' '.join(moves)}"
        try:
            position = self._position(fen, moves)
            func = perft_core.divide if what == "divide" else perft_core.perft
            return func(position, depth, backend=self.backend, threads=self.threads)
        except Exception as exc:  # an engine failure, whatever its type, is reported as one
            raise EngineError(self.name, f"{type(exc).__name__} while counting",
                              command=command, output=str(exc)) from exc

    def _divide(self, fen, depth, moves):
        return dict(self._call("divide", fen, depth, moves))

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies (``perft_core.perft``, no divide); 1 at depth 0."""
        if check_depth(depth) == 0:
            return 1
        return int(self._call("perft", fen, depth, tuple(moves)))


# ---------------------------------------------------------------------------------------------
# The python-chess reference


class PythonChessEngine(BaseEngine):
    """The reference: python-chess move generation, ~1 M leaf nodes/s with bulk counting.

    Leaves are counted in bulk (the number of legal moves one ply above them). Interior nodes with
    at least ``2`` plies left are cached by python-chess's exact transposition key (pieces, side,
    castling rights, legal en passant square) and the remaining depth; the cache is shared across
    calls and cleared when it holds more than ``cache_size`` entries (0 disables it).

    Subclasses may override :meth:`moves` to plant a bug (the tests do exactly that).
    Never use it for large counts: it is for localizing and for small tables only.
    """

    name = "python-chess"

    def __init__(self, *, cache_size: int = 1_000_000):
        self.cache_size = cache_size
        self._cache: dict = {}

    def moves(self, board: chess.Board) -> list[chess.Move]:
        """The legal moves of ``board`` (override to make a deliberately broken engine)."""
        return list(board.legal_moves)

    def _count(self, board: chess.Board, depth: int) -> int:
        if depth == 1:
            return len(self.moves(board))
        key = None
        if self.cache_size:
            key = (board._transposition_key(), board.chess960, depth)
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        nodes = 0
        for move in self.moves(board):
            board.push(move)
            nodes += self._count(board, depth - 1)
            board.pop()
        if key is not None:
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            self._cache[key] = nodes
        return nodes

    def _board(self, fen: str, depth: int, moves: tuple[str, ...]) -> chess.Board:
        try:
            return board_from(fen, moves)
        except ValueError as exc:
            raise EngineError(self.name, "cannot set up the position",
                              command=_describe_query(fen, depth, moves), output=str(exc)) from exc

    def _divide(self, fen, depth, moves):
        board = self._board(fen, depth, moves)
        result = {}
        for move in self.moves(board):
            if depth == 1:
                count = 1
            else:
                board.push(move)
                count = self._count(board, depth - 1)
                board.pop()
            uci = board.uci(move)
            result[uci] = result.get(uci, 0) + count
        return result

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies (bulk counted, cached); 1 at depth 0."""
        if check_depth(depth) == 0:
            return 1
        return self._count(self._board(fen, depth, tuple(moves)), depth)


def _describe_query(fen: str, depth: int, moves: Sequence[str]) -> str:
    text = f"divide({fen!r}, {depth})"
    return text + (f" after moves {' '.join(moves)}" if moves else "")


# ---------------------------------------------------------------------------------------------
# Subprocess engines


def _six_fields(fen: str) -> str:
    """``fen`` with the move counters ``0 1`` added when it has only the four EPD fields."""
    fields = fen.split()
    return " ".join(fields + ["0", "1"]) if len(fields) == 4 else fen


def _argv(command: str | Sequence[str]) -> list[str]:
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("empty engine command")
    return argv


def _kill(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and everything in its session, then reap it (idempotent).

    Only stdin is closed here: reader threads close stdout/stderr when they reach end of file,
    which they do once the process group is dead.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                proc.kill()
            except ProcessLookupError:
                pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
        pass
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass


def _pump(stream, sink: queue.Queue | collections.deque) -> None:
    """Reader thread: copy lines of ``stream`` into ``sink`` (a queue gets ``None`` at EOF), then close it."""
    try:
        for line in iter(stream.readline, ""):
            line = line.rstrip("\r\n")
            if isinstance(sink, queue.Queue):
                sink.put(line)
            else:
                sink.append(line)
    except (OSError, ValueError):
        pass
    finally:
        if isinstance(sink, queue.Queue):
            sink.put(None)
        try:
            stream.close()
        except OSError:
            pass


class UciEngine(BaseEngine):
    """A UCI engine that supports ``go perft N`` (Stockfish's extension), kept running between queries.

    ``command``: a shell-style command line (split with :func:`shlex.split`) or an argument list.
    ``timeout``: seconds allowed for each exchange (the handshake, one ``go perft``); None = no limit.
    The engine is started on first use with ``uci``; every query sends ``setoption name UCI_Chess960
    value true|false`` when the rules needed change, ``isready``, ``position fen FEN [moves ...]``
    (a 4-field EPD gets the counters ``0 1``) and
    ``go perft N``, and reads ``move: count`` lines up to ``Nodes searched: N``. Blank lines and lines
    starting with ``info`` are ignored; any other line is unreadable and raises :class:`EngineError`,
    as does a crash (end of output) or a timeout; the process is then killed and reaped, and the next
    query starts a fresh one.
    """

    def __init__(self, command: str | Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 name: str | None = None):
        self.argv = _argv(command)
        self.timeout = timeout
        self.name = name or shlex.join(self.argv)
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._stderr: collections.deque = collections.deque(maxlen=_OUTPUT_KEPT)
        self._chess960 = False
        self._readers: list[threading.Thread] = []
        self._finalizer = None

    @property
    def pid(self) -> int | None:
        """Process id of the running engine, or None when none is running."""
        return self._proc.pid if self._proc is not None else None

    # -- process lifecycle -------------------------------------------------------------------

    def _start(self) -> None:
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, bufsize=1,
                                    start_new_session=True)
        except OSError as exc:
            raise EngineError(self.name, f"cannot start: {exc}", command=shlex.join(self.argv)) from exc
        self._proc = proc
        self._lines = queue.Queue()
        self._stderr = collections.deque(maxlen=_OUTPUT_KEPT)
        self._chess960 = False
        self._finalizer = weakref.finalize(self, _kill, proc)
        self._readers = [threading.Thread(target=_pump, args=(stream, sink), daemon=True)
                         for stream, sink in ((proc.stdout, self._lines), (proc.stderr, self._stderr))]
        for reader in self._readers:
            reader.start()
        self._exchange(["uci"], lambda line: line.strip() == "uciok", what="the UCI handshake")

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
        _kill(proc)
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
        output = _tail(got)
        if self._stderr:
            output += "\n[stderr]\n" + _tail(self._stderr)
        return EngineError(self.name, problem, command="\n".join(sent), output=output)

    def _exchange(self, sent: Sequence[str], done, *, what: str, parse=None) -> list[str]:
        """Send ``sent`` lines, collect output lines until ``done(line)``; returns the lines read.

        ``parse(line)`` (optional) is called on each line before ``done``; it raises ValueError
        for an unreadable line.
        """
        proc = self._proc
        try:
            proc.stdin.write("".join(line + "\n" for line in sent))
            proc.stdin.flush()
        except (OSError, ValueError):
            raise self._fail(f"crashed: cannot write to it during {what}", sent, [], ended=True) from None
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        got: list[str] = []
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = self._lines.get(timeout=wait)
            except queue.Empty:
                raise self._fail(f"timed out after {self.timeout:g} s during {what}", sent, got) from None
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
        self._exchange(sent, lambda line: line.strip() == "readyok", what="isready")
        position = f"position fen {_six_fields(fen)}" + (f" moves {' '.join(moves)}" if moves else "")
        sent = [position, f"go perft {depth}"]
        counts: dict[str, int] = {}
        total: list[int] = []

        def parse(line: str) -> None:
            text = line.strip()
            if not text or text.startswith("info"):
                return
            if m := _NODES_LINE.fullmatch(text):
                total.append(int(m.group(1)))
            elif m := _UCI_LINE.fullmatch(text):
                move = m.group(1).lower()
                counts[move] = counts.get(move, 0) + int(m.group(2))
            else:
                raise ValueError(f"expected 'move: count' or 'Nodes searched: N', got {line!r}")

        got = self._exchange(sent, lambda line: bool(total), what=f"go perft {depth}", parse=parse)
        if sum(counts.values()) != total[0]:
            raise self._fail(f"inconsistent output: the move lines add up to {sum(counts.values())} "
                             f"but it says 'Nodes searched: {total[0]}'", sent, got)
        return counts


class PerftreeEngine(BaseEngine):
    """A perftree-style script, run once per query as ``CMD depth "fen" "moves"``.

    ``moves`` is one argument, the moves played from ``fen`` separated by spaces (empty when none).
    The script prints ``move count`` lines, a blank line, then the total; anything else, a
    non-zero exit status, or a run longer than ``timeout`` seconds raises :class:`EngineError`
    (the process and its session are killed and reaped).
    """

    def __init__(self, command: str | Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT,
                 name: str | None = None):
        self.argv = _argv(command)
        self.timeout = timeout
        self.name = name or shlex.join(self.argv)

    def _divide(self, fen, depth, moves):
        argv = [*self.argv, str(depth), _six_fields(fen), " ".join(moves)]
        sent = shlex.join(argv)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as exc:
            raise EngineError(self.name, f"cannot start: {exc}", command=sent) from exc
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a grandchild left its own session and holds the pipe
                out, err = "", ""
            output = _tail(out.splitlines()) + (f"\n[stderr]\n{_tail(err.splitlines())}" if err.strip() else "")
            raise EngineError(self.name, f"timed out after {self.timeout:g} s", command=sent, output=output) from None
        finally:
            _kill(proc)
        output = _tail(out.splitlines()) + (f"\n[stderr]\n{_tail(err.splitlines())}" if err.strip() else "")
        if proc.returncode != 0:
            raise EngineError(self.name, f"crashed (exit status {proc.returncode})", command=sent, output=output)
        try:
            return _parse_perftree(out)
        except ValueError as exc:
            raise EngineError(self.name, f"unreadable output: {exc}", command=sent, output=output) from None


def _parse_perftree(out: str) -> dict[str, int]:
    """Parse ``move count`` lines, a blank line and the total; raise ValueError if malformed."""
    lines = out.rstrip().splitlines()
    if "" in (line.strip() for line in lines):
        blank = [line.strip() for line in lines].index("")
        body, tail = lines[:blank], [line for line in lines[blank + 1:] if line.strip()]
    elif len(lines) == 1:  # no legal move: just the total
        body, tail = [], lines
    else:
        raise ValueError("no blank line before the total")
    counts: dict[str, int] = {}
    for line in body:
        m = _PERFTREE_LINE.fullmatch(line.strip())
        if not m:
            raise ValueError(f"expected 'move count', got {line!r}")
        move = m.group(1).lower()
        counts[move] = counts.get(move, 0) + int(m.group(2))
    if len(tail) != 1 or not tail[0].strip().isdigit():
        raise ValueError(f"expected one total after the blank line, got {tail!r}")
    if int(tail[0]) != sum(counts.values()):
        raise ValueError(f"the move lines add up to {sum(counts.values())} but the total is {tail[0].strip()}")
    return counts


# ---------------------------------------------------------------------------------------------


def make_engine(spec: str, *, protocol: str = "uci", timeout: float | None = DEFAULT_TIMEOUT,
                threads: int = 1) -> BaseEngine:
    """Build an engine from a command-line spec.

    ``"python-chess"`` -> :class:`PythonChessEngine`; ``"cpu"``, ``"gpu"``, ``"gpu-emulated"`` ->
    :class:`CoreEngine` with that backend; anything else is a shell-style command line run with
    ``protocol`` ``"uci"`` (:class:`UciEngine`) or ``"perftree"`` (:class:`PerftreeEngine`).
    Raises ``ValueError`` for an empty command or an unknown protocol.
    """
    if spec == "python-chess":
        return PythonChessEngine()
    if spec in ("cpu", "gpu", "gpu-emulated"):
        return CoreEngine(spec, threads=threads)
    if protocol == "uci":
        return UciEngine(spec, timeout=timeout)
    if protocol == "perftree":
        return PerftreeEngine(spec, timeout=timeout)
    raise ValueError(f"unknown protocol {protocol!r} (expected 'uci' or 'perftree')")
