"""``perft uci``: our backends as a UCI engine that counts (Stockfish's ``go perft`` extension).

Commands (one per line on standard input; answers on standard output):

- ``uci``: ``id name``, ``id author``, the options, ``uciok``. Options: ``UCI_Chess960`` (check,
  default false); ``Threads`` (spin, the CPU backend's threads); with ``--tt`` also ``Hash`` (spin,
  MiB of transposition tables).
- ``isready``: ``readyok``. ``ucinewgame``: back to the start position.
- ``setoption name NAME [value VALUE]``: the options above (names case-insensitive).
- ``position startpos|fen FEN [moves UCI ...]``: castling is e1g1 in standard chess, king-takes-rook
  (e1h1) with UCI_Chess960 true; with it false, Chess960 is still inferred from Shredder letters or
  rights whose rook is off the a/h files.
- ``go perft N``: Stockfish's divide format: ``e2e4: 20`` lines (sorted), a blank line,
  ``Nodes searched: N``; N in 0..64 (``perft_core.limits.MAX_DEPTH``; a deeper count overflows
  64 bits), never refused by its estimate (``stop`` ends it). Any other ``go`` answers ``info
  string`` saying so and ``bestmove 0000``, so a driver that searches does not hang.
- ``stop``: ends the count that runs, within milliseconds (the CPU extension polls a stop flag),
  and any ``go`` read before it that has not started (UCI: stop calculating): nothing of them is printed (no divide, no
  ``Nodes searched``), only ``info string stopped: perft N not finished`` each; the session goes
  on. With no count running or waiting it does nothing.
- ``quit``: stops as ``stop`` does, then ends the session, within about a second. (A script piped
  in that wants every count ends its input instead: at the end of input every command read is
  answered, then the session ends.)

Commands are read on a thread of their own: while a count runs or waits to run, ``isready`` is
answered ``readyok`` at once (between the lines of a divide, never inside it), ``stop`` and
``quit`` act at once (a ``go`` not yet started when they come is not started), the other commands
wait their turn.

An unknown command or token is ignored, as UCI requires, and said on stderr
(``perft uci: ignored ...``). A command that cannot be done never ends the session: it is one line
``perft uci: error: ...`` on stderr and ``info string error: ...`` on stdout: a bad position or move
(which leaves no position: ``go perft`` then says so, and counts nothing, until the next
``position``), ``setoption`` out of its range (Threads 1..1024, Hash 1..1048576 MiB, ASCII digits;
``--threads`` and ``--tt-mb`` start them and are refused outside those ranges, exit 2)
or ``go perft`` out of 0..64. A line longer than ``perft_core.lines.MAX_LINE_CHARS`` characters, or
input that is not UTF-8 text, is not UCI: one line ``perft: error: stdin:LINE: ...`` and exit
status 2. Else exit status 0 at ``quit`` or the end of input.
"""
from __future__ import annotations

import argparse
import queue
import signal
import sys
import threading

from . import cliargs, limits, positions
from .errors import FenError, IllegalMoveError

__all__ = ["DESCRIPTION", "EXAMPLES", "HELP", "NAME", "UciSession", "arguments", "command", "print_divide"]


def print_divide(parts: dict[str, int], nodes: int, file=None) -> None:
    """Stockfish's divide format on ``file`` (stdout): ``move: count`` lines sorted by move, a
    blank line, ``Nodes searched: N``."""
    for move, count in sorted(parts.items()):
        print(f"{move}: {count}", file=file)
    print(file=file)
    print(f"Nodes searched: {nodes}", file=file, flush=True)


class UciSession:
    """The state of one UCI conversation: options and the current position.

    Args:
        backend, threads, tt, tt_mb: as for :func:`perft_core.divide` (``tt_mb`` in MiB; None: the
            backend's own budget, 256 on the CPU, 60 % of the driver's memory on a GPU).
        out, err: text streams for answers and for diagnostics.
    """

    def __init__(self, backend: str = "cpu", threads: int | None = None, tt: bool = False, tt_mb: float | None = None,
                 out=None, err=None):
        from .threads import resolve_threads

        self.backend, self.threads, self.tt, self.tt_mb = backend, resolve_threads(threads), tt, tt_mb
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.chess960 = False
        self.position = positions.position_from("startpos")
        self._lock = threading.RLock()
        self.counted = lambda: None  # called once a go's count is done, before it is printed

    def _say(self, *lines: str) -> None:
        with self._lock:  # the reader thread answers isready while a count may be printing
            self.out.write("".join(line + "\n" for line in lines))
            self.out.flush()

    def _note(self, text: str) -> None:
        print(f"perft uci: {text}", file=self.err, flush=True)

    def _error(self, text: str) -> None:
        """A command that cannot be done: said on stderr and to the driver (``info string error: ...``)."""
        self._note(f"error: {text}")
        self._say(f"info string error: {text}")

    def handle(self, line: str) -> bool:
        """Answer one command line; returns False at ``quit``."""
        tokens = line.split()
        # UCI: an unknown token before a known command is skipped ("joho debug on" is "debug on").
        while tokens and not hasattr(self, f"_cmd_{tokens[0]}"):
            self._note(f"ignored unknown token {tokens[0]!r}")
            tokens = tokens[1:]
        if not tokens:
            return True
        return getattr(self, f"_cmd_{tokens[0]}")(tokens[1:]) is not False

    def _cmd_uci(self, _):
        from . import __version__

        lines = [f"id name perft-oracle {__version__} ({self.backend})", "id author the perft oracle authors",
                 "option name UCI_Chess960 type check default false",
                 f"option name Threads type spin default {self.threads} min 1 max 1024"]
        if self.tt:
            default = int(self.tt_mb) if self.tt_mb is not None else 256  # None: the backend's own budget
            lines.append(f"option name Hash type spin default {default} min 1 max {MAX_HASH_MB}")
        self._say(*lines, "uciok")

    def _cmd_isready(self, _):
        self._say("readyok")

    def _cmd_ucinewgame(self, _):
        self.position = positions.position_from("startpos")

    def _cmd_debug(self, _):
        pass

    def _cmd_stop(self, _):
        pass

    def _cmd_quit(self, _):
        return False

    def _cmd_setoption(self, tokens):
        text = " ".join(tokens)
        name, _, value = text.partition(" value ")
        name = name.removeprefix("name ").strip().lower()
        value = value.strip()
        number = int(value) if value.isascii() and value.isdigit() else None  # not "²", "٢٠" or "-3"
        if name == "uci_chess960" and value.lower() in ("true", "false"):
            self.chess960 = value.lower() == "true"
        elif name == "threads":
            if number is None or not 1 <= number <= limits.MAX_THREADS:
                self._error(f"setoption Threads must be an integer in 1..{limits.MAX_THREADS}, got {value!r}; "
                            f"Threads stays {self.threads}")
                return
            self.threads = number
        elif name == "hash" and self.tt:
            if number is None or not 1 <= number <= MAX_HASH_MB:
                self._error(f"setoption Hash must be an integer in 1..{MAX_HASH_MB} (MiB), got {value!r}; "
                            f"Hash stays as it was")
                return
            self.tt_mb = number
        else:
            self._note(f"ignored setoption {text!r} (options: UCI_Chess960 true|false, Threads N"
                       + (", Hash MIB)" if self.tt else ")"))

    def _cmd_position(self, tokens):
        moves: list[str] = []
        if "moves" in tokens:
            at = tokens.index("moves")
            tokens, moves = tokens[:at], tokens[at + 1:]
        if tokens[:1] == ["startpos"] and len(tokens) == 1:
            spec = "startpos"
        elif tokens[:1] == ["fen"] and len(tokens) > 1:
            spec = " ".join(tokens[1:])
        else:
            self.position = None
            self._error(f"expected 'position startpos|fen FEN [moves ...]', got {' '.join(tokens)!r}")
            return
        try:
            self.position = positions.position_from(spec, moves, chess960=True if self.chess960 else None)
        except (FenError, IllegalMoveError) as exc:
            self.position = None
            self._error(str(exc))

    def _cmd_go(self, tokens):
        if tokens[:1] != ["perft"]:
            self._say("info string perft uci only counts: use 'go perft N'", "bestmove 0000")
            return
        try:
            depth = cliargs.depth(tokens[1] if len(tokens) > 1 else "")
            limits.check_depth(depth)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            self._error(f"go perft: {exc}")
            return
        if len(tokens) > 2:  # Stockfish reads the depth and goes on; said, as every token ignored
            self._note(f"ignored {' '.join(tokens[2:])!r} after 'go perft {tokens[1]}'")
        if self.position is None:
            self._error("go perft: no position (the last 'position' command failed)")
            return
        from .api import divide

        try:
            parts = divide(self.position, depth, backend=self.backend, threads=self.threads, tt=self.tt,
                           tt_mb=self.tt_mb if self.tt else None,  # UCI's Hash: set either way, used with tables
                           progress=False, max_estimate_seconds=None)
        except ValueError as exc:  # a limit of this machine (tables over the memory, ...): said, the session goes on
            self._error(f"go perft {depth}: {exc}")
            return
        self.counted()  # a stop from now on has nothing to stop: the divide is printed whole
        with self._lock:
            print_divide(parts, sum(parts.values()) if depth > 0 else 1, file=self.out)


MAX_HASH_MB = 1_048_576
"""The largest ``setoption name Hash`` (MiB) taken; the memory available is checked when tables are made."""


class _Stopped(Exception):
    """Raised in the main thread by the reader's ``stop`` / ``quit`` (through SIGINT) to end a count."""


class _Reader:
    """Reads commands on a thread of its own (every line bounded, perft_core.lines): ``isready``,
    ``stop`` and ``quit`` are acted on at once while a count runs or waits to run, the rest queued
    for the main thread. A stop reaches a running count as SIGINT to the main thread, sent every
    STOP_RESEND_SECONDS until the count has ended (a signal that lands before the extension's stop
    handler is in place is not lost): the CPU extension's stop flag (src/stop.h) ends a long count
    within milliseconds, and :meth:`on_sigint` raises :class:`_Stopped`. A ``go`` still queued when
    a stop comes is not started. A SIGINT the reader did not send is Ctrl-C (KeyboardInterrupt)."""

    STOP_RESEND_SECONDS = 0.05

    def __init__(self, session: UciSession, stream):
        self.session, self.stream = session, stream
        self.commands: queue.Queue = queue.Queue()  # (line, stops when it was read), an InputError, or None
        self.guard = threading.Lock()  # never taken by on_sigint (it runs in the main thread, between bytecodes)
        self.busy = False  # a count runs in the main thread
        self.run_id = 0  # commands the main thread has begun
        self.waiting = 0  # go commands queued or running
        self.stops = 0  # stop and quit commands read so far
        self.sent = 0  # SIGINTs the reader sent ...
        self.seen = 0  # ... and those on_sigint took as its own
        self.main = threading.main_thread().ident

    def start(self) -> None:
        self.session.counted = self._counted
        threading.Thread(target=self._read, name="perft-uci-reader", daemon=True).start()

    def _counted(self) -> None:
        with self.guard:
            self.busy = False

    def _read(self) -> None:
        from .lines import InputError, bounded_lines

        try:
            for line in bounded_lines(self.stream, "stdin"):
                word = (line.split() or [""])[0]
                with self.guard:
                    if word == "isready" and self.waiting:  # UCI: answered at once, also while counting
                        self.session._cmd_isready([])
                        continue
                    if word in ("stop", "quit"):
                        self._stop()
                        if word == "stop":
                            continue
                    if word == "go":
                        self.waiting += 1
                    self.commands.put((line, self.stops))
                if word == "quit":
                    return
        except InputError as exc:
            with self.guard:
                self._stop()
            self.commands.put(exc)
            return
        except (OSError, ValueError):  # stdin closed under us: the end of input
            pass
        self.commands.put(None)

    def _stop(self) -> None:
        """With the guard held: the go commands read so far are not started, the running one is stopped."""
        self.stops += 1
        if self.busy:
            threading.Thread(target=self._signal, args=(self.run_id,), daemon=True).start()

    def _signal(self, run_id: int) -> None:
        """SIGINT to the main thread until the count of command ``run_id`` has ended."""
        import time

        while True:
            with self.guard:
                if not self.busy or self.run_id != run_id:
                    return
                self.sent += 1
                signal.pthread_kill(self.main, signal.SIGINT)
            time.sleep(self.STOP_RESEND_SECONDS)

    def on_sigint(self, signum, frame) -> None:
        """SIGINT in the main thread: one the reader sent ends the count (or, the count already
        ended, nothing); any other is Ctrl-C (KeyboardInterrupt). Signals coalesce: one call may
        stand for several sent."""
        if self.sent == self.seen:
            raise KeyboardInterrupt
        self.seen = self.sent
        if self.busy:
            raise _Stopped

    def run(self, line: str, stops: int) -> bool:
        """Answer one command in the main thread; False at ``quit``. ``stops``: the stops read
        before it (a go with a stop read after it is not started)."""
        go = (line.split() or [""])[0] == "go"
        with self.guard:
            skip = go and self.stops > stops
            self.run_id += 1
            self.busy = go and not skip
        try:
            if skip:
                raise _Stopped
            return self.session.handle(line)
        except _Stopped:
            self.session._say(f"info string stopped: {' '.join(line.split()[1:3])} not finished")
            return True
        finally:
            with self.guard:
                self.busy = False
                self.waiting -= go


def command(args: argparse.Namespace) -> int:
    """Answer UCI commands from standard input until ``quit`` or its end; returns 0 (2 for input
    that is not UCI text: a line over the bound, not UTF-8)."""
    cliargs.check_tt_mb_needs_tt(args)
    # the options' starting values, within the ranges `uci` advertises: a driver (python-chess's
    # chess.engine) refuses an engine whose default lies outside its own min..max (session 43's hunt)
    if args.threads is not None:
        try:
            limits.check_threads(args.threads)
        except limits.LimitError as exc:
            raise cliargs.UsageError(f"--{exc} (UCI's Threads option)") from None
    if args.tt_mb is not None and not (args.tt_mb == int(args.tt_mb) and 1 <= args.tt_mb <= MAX_HASH_MB):
        raise cliargs.UsageError(f"--tt-mb must be a whole number of MiB in 1..{MAX_HASH_MB} for perft uci, got "
                                 f"{int(args.tt_mb) if args.tt_mb == int(args.tt_mb) else args.tt_mb} (UCI's Hash option)")
    session = UciSession(args.backend, args.threads, args.tt, args.tt_mb)
    reader = _Reader(session, sys.stdin)
    old = signal.signal(signal.SIGINT, reader.on_sigint) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        reader.start()
        while True:
            try:
                item = reader.commands.get()
            except _Stopped:  # a stop that came as its count ended: nothing left to stop
                continue
            if item is None:
                return cliargs.AGREE
            if isinstance(item, Exception):
                raise item
            try:
                if not reader.run(*item):
                    return cliargs.AGREE
            except _Stopped:  # as above, raised between the count's end and the next command
                continue
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


NAME = "uci"
HELP = "a UCI engine that answers 'go perft N' (for any UCI driver)"
DESCRIPTION = ("Speak UCI on standard input/output: uci, isready, ucinewgame, setoption name UCI_Chess960 / "
               "Threads / Hash, position startpos|fen FEN [moves ...], go perft N (Stockfish's divide format), "
               "quit. Unknown commands are ignored and said on stderr.")
EXAMPLES = ["printf 'uci\\nposition startpos moves e2e4\\ngo perft 3\\n' | perft uci",
            'perft diff --engine "perft uci --backend cpu" "FEN" 4']


def arguments(p: argparse.ArgumentParser) -> None:
    """No arguments of its own (:func:`perft_core.cli.register` adds the counting options)."""
