"""The engine protocol and what every engine shares: errors, FEN handling, depth checks.

python-chess is the reference for FEN handling (:func:`board_from`, :func:`fen_of`).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

import chess

#: Seconds one engine command (one ``go perft``, one perftree run) may take by default.
DEFAULT_TIMEOUT = 600.0

MOVE_PATTERN = r"([a-h][1-8][a-h][1-8][nbrqNBRQ]?)"
OUTPUT_KEPT = 60  # lines of output quoted in an EngineError


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


def tail_lines(lines: Sequence[str], keep: int = OUTPUT_KEPT) -> str:
    lines = list(lines)
    if len(lines) > keep:
        lines = [f"... ({len(lines) - keep} earlier lines)"] + lines[-keep:]
    return "\n".join(lines)


def describe_query(fen: str, depth: int, moves: Sequence[str]) -> str:
    text = f"divide({fen!r}, {depth})"
    return text + (f" after moves {' '.join(moves)}" if moves else "")


# FEN handling shared by every engine and the localizer (python-chess is the reference)


def needs_chess960(fen: str) -> bool:
    """True if ``fen``'s castling rights are only possible under Chess960 rules.

    That is Shredder-FEN letters or X-FEN rights whose king or rook is off the standard e/a/h
    squares. Positions without such rights count the same under both rule sets.
    Raises ``ValueError`` for text python-chess cannot parse.
    """
    return chess.Board(fen, chess960=True).has_chess960_castling_rights()


#: python-chess status flags of a FEN that perft cannot count as written: no king or too many, the
#: side not to move in check, pawns on a back rank, no board at all, and castling rights or an en
#: passant square the position cannot hold (python-chess would drop them and count another position).
BAD_STATUS = (chess.STATUS_NO_WHITE_KING | chess.STATUS_NO_BLACK_KING | chess.STATUS_TOO_MANY_KINGS
              | chess.STATUS_OPPOSITE_CHECK | chess.STATUS_PAWNS_ON_BACKRANK | chess.STATUS_EMPTY
              | chess.STATUS_BAD_CASTLING_RIGHTS | chess.STATUS_INVALID_EP_SQUARE)


def fen_problems(board: chess.Board) -> list[str]:
    """What makes ``board`` (read from a FEN) uncountable as written: the names of its
    :data:`BAD_STATUS` flags (``"bad castling rights"``, ...); empty when there is none."""
    bad = board.status() & BAD_STATUS
    return [flag.name.lower().replace("_", " ") for flag in chess.Status if flag and bad & flag]


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


@contextmanager
def time_limit(engine: object, seconds: float | None) -> Iterator[None]:
    """Inside the block, each query of ``engine`` ends within ``seconds`` (wall), or its own
    ``timeout`` if that is shorter: engines that run a program (UCI, perftree, cli), our own
    (:class:`oracle.engines.CoreEngine`) and python-chess (checked at its interior nodes) have a
    ``timeout`` attribute, set here and restored after; an engine without one is left alone. A
    query that runs out fails as that engine fails (:class:`EngineError`). ``seconds=None``: no
    change. Why: a time budget (``--max-seconds``) checked only between queries let one hanging
    query run for the whole ``--timeout`` (600 s), a table row with a tiny wrong count past the
    node budget run unbounded, and a reference's divide of a deep root ran on for hours."""
    if seconds is None or not hasattr(engine, "timeout"):
        yield
        return
    old = engine.timeout
    engine.timeout = max(0.001, seconds if old is None else min(old, seconds))
    try:
        yield
    finally:
        engine.timeout = old


_SHREDDER: ContextVar[bool | None] = ContextVar("oracle_fen_shredder", default=None)


def shredder_notation(fen: str) -> bool:
    """True if ``fen``'s castling field is written in Shredder-FEN: rook files only (``HAha``), no
    ``K``, ``Q``, ``k`` or ``q``. False for X-FEN (``KQkq``, with a file letter where a right's rook
    is not the outermost), for no rights (``-``) and for text with no castling field."""
    fields = fen.split()
    field = fields[2] if len(fields) > 2 else "-"
    return field != "-" and not any(c in "KQkq" for c in field)


@contextmanager
def fen_notation(fen: str) -> Iterator[None]:
    """Inside the block, :func:`fen_of` writes Chess960 castling rights in the notation of ``fen``
    (the root the user gave): Shredder-FEN if ``fen`` is written so, else X-FEN. The oracle asks an
    engine about positions it writes itself (children, variants), and an engine that reads only
    X-FEN takes Shredder-FEN's ``HBhb`` for other rights: asked in another notation than its user's,
    a correct engine would be judged wrong (session 28's edge hunt). Nested blocks are allowed; the
    setting is per thread and per task (:class:`contextvars.ContextVar`)."""
    token = _SHREDDER.set(shredder_notation(fen))
    try:
        yield
    finally:
        _SHREDDER.reset(token)


def fen_of(board: chess.Board) -> str:
    """A FEN that reproduces ``board`` on its own, for any engine.

    The en passant square is kept after every double pawn push, even when no capture is legal
    (an engine's bug may be exactly an illegal en passant). Chess960 boards are written in the
    notation :func:`fen_notation` set (the root's: X-FEN or Shredder-FEN), and as Shredder-FEN
    outside such a block; either keeps every castling right whatever the rooks' files.
    """
    shredder = _SHREDDER.get()
    return board.fen(en_passant="fen", shredder=board.chess960 and (shredder is None or shredder))


def check_depth(depth: object) -> int:
    """Return ``depth`` if it is an int >= 0 (not a bool); raise ``ValueError`` otherwise."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative int, got {depth!r}")
    return depth




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
    """Shared plumbing: depth checks, ``perft`` as the sum of ``divide``, a context manager.

    ``supports_divide``: True when the engine can split a count by root move; the localizer
    (:func:`oracle.localize.localize`) needs it, total-only engines go through
    :func:`oracle.drill.drill` instead.
    """

    name = "engine"
    supports_divide = True

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


class TotalOnlyEngine(BaseEngine):
    """An engine whose only answer is a total: ``perft(fen, depth, moves) -> nodes``, no divide.

    Subclasses implement :meth:`_perft` (``fen`` is a standalone FEN, ``depth >= 1``). ``moves``
    given to :meth:`perft` are played with python-chess first and the engine gets the FEN of the
    position after them (:func:`fen_of`), since such a program takes nothing but a FEN.
    :meth:`divide` raises :class:`EngineError`: build a divide from the children's FENs instead
    (:func:`oracle.drill.drill` does).
    """

    supports_divide = False

    def perft(self, fen: str, depth: int, moves: Sequence[str] = ()) -> int:
        """Leaf nodes at ``depth`` plies below ``fen`` after ``moves``; 1 at depth 0.

        Raises ``ValueError`` for a bad depth, :class:`EngineError` when the position cannot be
        set up or the engine fails.
        """
        if check_depth(depth) == 0:
            return 1
        if moves:
            try:
                fen = fen_of(board_from(fen, moves))
            except ValueError as exc:
                raise EngineError(self.name, "cannot set up the position",
                                  command=describe_query(fen, depth, moves), output=str(exc)) from exc
        return self._perft(fen, depth)

    def _perft(self, fen: str, depth: int) -> int:
        raise NotImplementedError

    def _divide(self, fen, depth, moves):
        raise EngineError(self.name, "this engine prints only totals, it has no divide "
                          "(localize it with oracle.drill.drill)", command=describe_query(fen, depth, moves))

