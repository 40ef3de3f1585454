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
  ``Nodes searched: N``. Any other ``go`` answers ``info string`` saying so and ``bestmove 0000``,
  so a driver that searches does not hang.
- ``stop`` (nothing runs in the background), ``quit``.

An unknown command or token is ignored, as UCI requires, and said on stderr
(``perft uci: ignored ...``); a bad position or move is one line ``perft uci: error: ...`` on stderr
and ``info string error: ...`` on stdout, and leaves no position (``go perft`` then says so, and
counts nothing) until the next ``position``. Exit status 0 at ``quit`` or the end of input.
"""
from __future__ import annotations

import argparse
import sys

from . import cliargs, positions
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

    def _say(self, *lines: str) -> None:
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
            lines.append(f"option name Hash type spin default {default} min 1 max 1048576")
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
        if name == "uci_chess960" and value.lower() in ("true", "false"):
            self.chess960 = value.lower() == "true"
        elif name == "threads" and value.isdigit() and int(value) >= 1:
            self.threads = int(value)
        elif name == "hash" and self.tt and value.isdigit() and int(value) >= 1:
            self.tt_mb = int(value)
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
        except argparse.ArgumentTypeError as exc:
            self._error(f"go perft: {exc}")
            return
        if self.position is None:
            self._error("go perft: no position (the last 'position' command failed)")
            return
        from .api import divide

        parts = divide(self.position, depth, backend=self.backend, threads=self.threads, tt=self.tt,
                       tt_mb=self.tt_mb, progress=False, max_estimate_seconds=None)
        print_divide(parts, sum(parts.values()) if depth > 0 else 1, file=self.out)


def command(args: argparse.Namespace) -> int:
    """Answer UCI commands from standard input until ``quit`` or its end; returns 0."""
    session = UciSession(args.backend, args.threads, args.tt, args.tt_mb)
    for line in sys.stdin:
        if not session.handle(line):
            break
    return cliargs.AGREE


NAME = "uci"
HELP = "a UCI engine that answers 'go perft N' (for any UCI driver)"
DESCRIPTION = ("Speak UCI on standard input/output: uci, isready, ucinewgame, setoption name UCI_Chess960 / "
               "Threads / Hash, position startpos|fen FEN [moves ...], go perft N (Stockfish's divide format), "
               "quit. Unknown commands are ignored and said on stderr.")
EXAMPLES = ["printf 'uci\\nposition startpos moves e2e4\\ngo perft 3\\nquit\\n' | perft uci",
            'perft diff --engine "perft uci --backend cpu" "FEN" 4']


def arguments(p: argparse.ArgumentParser) -> None:
    """No arguments of its own (:func:`perft_core.cli.register` adds the counting options)."""
