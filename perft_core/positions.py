"""Where a position comes from on the command line: ``startpos`` or a FEN, UCI moves after it, and
lines of FEN / EPD (standard input or a file, EPD perft operations ``D1 20; D2 400`` included) or
a CSV table ``fen,depth,nodes`` (``perft suite``'s FILE.csv and the bundled tables).

Shared by ``perft run``, ``perft perftree``, ``perft uci`` and the oracle's table files
(:func:`oracle.tables.load_file`), so that every one of them reads positions, moves and EPD the same
way and words an error the same way (:class:`perft_core.errors.FenError`: ``<field>: <problem>``).
EPD operations are read by python-chess (``chess.Board.from_epd``).
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .errors import FenError, IllegalMoveError
from .position import STARTPOS, Position

__all__ = ["STARTPOS", "EpdLine", "position_from", "read_csv", "read_epd", "read_lines"]

_DEPTH_OP = re.compile(r"D(\d+)")
_OPCODE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # EPD: a letter, then letters, digits and underscores


def position_from(spec: str, moves: Sequence[str] = (), chess960: bool | None = None) -> Position:
    """The position ``spec`` (``startpos`` or a FEN / X-FEN / Shredder-FEN / 4-field EPD) after the
    UCI ``moves`` played in order.

    Args:
        spec: ``"startpos"`` or a FEN string.
        moves: UCI moves (``e2e4``, ``e7e8q``; a promotion letter may be upper case, ``a7b8Q``, as
            perftree writes it). Castling is the king's move (``e1g1``) in standard chess and
            king-takes-rook (``e1h1``) in Chess960.
        chess960: as for :meth:`Position.from_fen` (None: inferred from the castling field).

    Returns:
        A :class:`Position`.

    Raises:
        FenError: a bad FEN (the message starts with the field at fault).
        IllegalMoveError: a malformed or illegal move; the message says which one, after which moves.
    """
    pos = Position.from_fen(spec, chess960=chess960)
    for i, move in enumerate(moves):
        uci = move[:4] + move[4:].lower()
        try:
            pos = pos.push(uci)
        except IllegalMoveError as exc:
            after = f" after {' '.join(moves[:i])}" if i else ""
            raise IllegalMoveError(f"move {i + 1} of the moves{after}: {exc}") from None
    return pos


@dataclass(frozen=True)
class EpdLine:
    """One line of positions input: ``fen`` (as written: 6 FEN fields, or EPD's 4 plus its
    ``hmvc``/``fmvn`` counters), ``counts`` (the EPD perft operations, ``{depth: nodes}``, empty
    when there are none), ``id`` (the EPD ``id`` operation or None), ``line`` (1-based) and
    ``lines`` (``{depth: line}`` where a depth's count came from another line: a CSV table's rows
    of one position; :meth:`line_of`)."""

    fen: str
    counts: dict[int, int] = field(default_factory=dict)
    id: str | None = None
    line: int = 0
    lines: dict[int, int] = field(default_factory=dict)

    def line_of(self, depth: int) -> int:
        """The line that gave ``depth``'s count (``line`` when it is this line's own)."""
        return self.lines.get(depth, self.line)


def read_epd(text: str, line: int = 0) -> EpdLine:
    """Read one line: ``startpos``, a FEN, or an EPD record whose operations may hold perft counts
    (``D1 20; D2 400``, as perftsuite.epd writes them; ``;D1 20 ;D2 400`` too).

    The position is read by :meth:`Position.from_fen` (errors worded as for ``perft run``), the
    operations by python-chess's ``chess.Board.from_epd``. Returns an :class:`EpdLine`.

    Raises:
        FenError: a bad FEN (``<field>: <problem>``).
        ValueError: malformed EPD operations, or a ``D<n>`` operation that is not a node count.
    """
    text = text.strip()
    head, sep, tail = text.partition(";")
    words = head.split()
    if words == ["startpos"]:
        words = STARTPOS.split()
    # A FEN's counters come before any operation, and an EPD opcode starts with a letter: a fifth
    # word that does not is the halfmove clock (and the sixth the fullmove number), whatever its
    # form, so that a bad counter is named as one by Position.from_fen.
    counters = len(words) >= 5 and not words[4][:1].isalpha()
    fen, extra = " ".join(words[:6 if counters else 4]), words[6 if counters else 4:]
    Position.from_fen(fen)  # the position's errors in the engine's words, before python-chess's
    ops_text = " ".join(extra) + sep + tail if extra else tail
    if not ops_text.strip():
        return EpdLine(fen, line=line)
    _check_depth_operands(ops_text)  # first: python-chess reads a D<n> operand as a move, a float, ...
    import chess

    try:
        _, ops = chess.Board.from_epd(" ".join(words[:4]) + " " + ops_text, chess960=True)
    except ValueError as exc:
        raise ValueError(f"EPD operations {ops_text.strip()!r}: {exc}") from None
    counts = {}
    for op, value in ops.items():
        if m := _DEPTH_OP.fullmatch(op):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"EPD operation {op}: expected a node count, got {value!r}")
            counts[int(m.group(1))] = value
    if not counters and ("hmvc" in ops or "fmvn" in ops):
        fen += f" {ops.get('hmvc', 0)} {ops.get('fmvn', 1)}"
        Position.from_fen(fen)
    name = ops.get("id")
    return EpdLine(fen, counts, name if isinstance(name, str) else None, line)


def _operations(ops_text: str) -> list[str]:
    """The operations of an EPD record's operation text, split at the semicolons outside quoted
    strings (EPD's string operands may hold one)."""
    out, start, quoted, escaped = [], 0, False, False
    for i, ch in enumerate(ops_text):
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            out.append(ops_text[start:i])
            start = i + 1
    out.append(ops_text[start:])
    return [op.strip() for op in out if op.strip()]


def _check_depth_operands(ops_text: str) -> None:
    """Raise ValueError for what python-chess's EPD reader lets through: an opcode that is not one
    (the extra number of a FEN written with 5 or 7 fields, which it takes as an opcode), a node
    count written other than as plain digits (it reads ``4_00`` and ``+400`` as 400), and a depth
    given two different counts (it keeps the last: a table that contradicts itself)."""
    seen: dict[int, tuple[str, str]] = {}  # depth: (opcode, operand) as first given
    for op in _operations(ops_text):
        opcode, operand = (op.split(None, 1) + [""])[:2]  # operands follow after any whitespace
        if not _OPCODE.fullmatch(opcode):  # python-chess takes "0" as an opcode: a FEN of 5 or 7 fields
            raise ValueError(f"EPD operation {opcode!r}: an opcode starts with a letter (a FEN ends with two "
                             "move counters, an EPD record's four fields with operations)")
        if not _DEPTH_OP.fullmatch(opcode):
            continue
        operand = operand.strip()
        if not (operand.isascii() and operand.isdigit()):
            raise ValueError(f"EPD operation {opcode}: expected a node count (digits only), got {operand!r}")
        depth = int(opcode[1:])  # D1 and D01 are one depth (python-chess reads both)
        if depth in seen and int(seen[depth][1]) != int(operand):
            first, count = seen[depth]
            spelled = f" (as {first} and {opcode})" if first != opcode else ""
            raise ValueError(f"EPD operation {opcode} given twice, {count} and {operand}{spelled}: which count is meant?")
        seen[depth] = (opcode, operand)


def csv_names(fieldnames) -> list[str]:
    """A CSV header's column names as the tables read them: case and surrounding spaces ignored
    (``FEN, Depth, Nodes`` names fen, depth and nodes)."""
    return [name.strip().lower() for name in fieldnames or []]


def csv_records(reader) -> Iterator[tuple[int, dict | None, str | None]]:
    """The records of a ``csv.DictReader`` as ``(line, record, None)``, and each line its reader
    refuses (a lone carriage return in a field, a NUL) as ``(line, None, problem)``, said without
    Python's advice on opening files; the reader goes on with the next line."""
    import csv

    records = iter(reader)
    while True:
        before = reader.line_num
        try:
            raw = next(records)
        except StopIteration:
            return
        except csv.Error as exc:
            yield before + 1, None, "cannot read this CSV row: " + str(exc).split(" - ")[0]
            continue
        yield reader.line_num, raw, None


def _is_csv_header(text: str) -> bool:
    """A table's header line: comma-separated names among which ``fen``, ``depth`` and ``nodes``."""
    return {"fen", "depth", "nodes"} <= set(csv_names(text.split(",")))


def read_lines(lines: Iterable[str], source: str, on_error=None) -> Iterator[EpdLine]:
    """Every position in ``lines``: FEN or EPD lines (blank lines and ``#`` comments skipped), read
    by :func:`read_epd`, or a table whose first line is a CSV header naming ``fen``, ``depth`` and
    ``nodes`` (``perft suite FILE.csv``'s format and the bundled tables': :func:`read_csv`).

    A byte-order mark at the start (as some editors save UTF-8) is not part of the first line.
    A line that cannot be read is ``<source>:<line>: <problem>``: raised as ValueError, or, when
    ``on_error`` is given, passed to ``on_error(message)`` and skipped.
    """
    it = iter(lines)
    first = next(it, None)
    if first is None:
        return
    first = first.removeprefix("\ufeff")
    if _is_csv_header(first):
        yield from read_csv(itertools.chain([first], it), source, on_error)
        return
    for number, text in enumerate(itertools.chain([first], it), 1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        try:
            entry = read_epd(text, number)
        except (FenError, ValueError) as exc:
            if on_error is None:
                raise ValueError(f"{source}:{number}: {exc}") from None
            on_error(f"{source}:{number}: {exc}")
            continue
        yield entry


def read_csv(lines: Iterable[str], source: str, on_error=None) -> Iterator[EpdLine]:
    """The positions of a CSV table (header with ``fen``, ``depth`` and ``nodes``; ``id`` optional,
    other columns ignored; names read by :func:`csv_names`): one :class:`EpdLine` per position, the
    depths of its consecutive rows (same ``fen`` and ``id``) as its counts, ``line`` its first row's
    line and ``lines`` the others'.

    Errors as in :func:`read_lines`: ``<source>:<line>: <problem>`` (a bad FEN in the engine's
    words, a depth or node count that is not a non-negative integer, a row with too few fields).
    """
    import csv

    reader = csv.DictReader(iter(lines))
    reader.fieldnames = csv_names(reader.fieldnames)
    pending: list = []  # [fen, id, counts, line, lines] of the position being gathered

    def flush():
        if pending:
            entry = EpdLine(pending[0], dict(pending[2]), pending[1], pending[3], dict(pending[4]))
            pending.clear()
            return entry
        return None

    def fail(message: str) -> None:
        if on_error is None:
            raise ValueError(message)
        on_error(message)

    for number, raw, problem in csv_records(reader):
        if problem is not None:  # (the reader goes on with the next line)
            fail(f"{source}:{number}: {problem}")
            continue
        fen, depth, nodes = (raw.get(c) for c in ("fen", "depth", "nodes"))
        if fen is None or depth is None or nodes is None:
            fail(f"{source}:{number}: too few fields")
            continue
        fen, depth, nodes = fen.strip(), depth.strip(), nodes.strip()
        name = (raw.get("id") or "").strip() or None
        bad = next((f"{what} must be a non-negative integer, got {text!r}" for what, text in
                    (("the depth", depth), ("the node count", nodes)) if not (text.isascii() and text.isdigit())), None)
        if bad:
            fail(f"{source}:{number}: {bad}")
            continue
        if pending and (pending[0], pending[1]) == (fen, name):
            if pending[2].get(int(depth), int(nodes)) != int(nodes):
                fail(f"{source}:{number}: depth {int(depth)} of this position given twice, "
                     f"{pending[2][int(depth)]} and {int(nodes)}: which count is meant?")
                continue
            pending[2][int(depth)] = int(nodes)
            pending[4][int(depth)] = number
            continue
        entry = flush()
        if entry is not None:
            yield entry
        try:
            Position.from_fen(fen)
        except FenError as exc:
            fail(f"{source}:{number}: {exc}")
            continue
        pending.extend([fen, name, {int(depth): int(nodes)}, number, {}])
    entry = flush()
    if entry is not None:
        yield entry
