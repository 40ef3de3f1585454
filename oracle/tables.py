"""Known perft tables bundled with the oracle, as tagged rows.

The tables are the CSV files in ``oracle/data/`` (package data; their sources are in
``oracle/data/README.md`` and in every row's ``source`` column). Suites, in ``SUITES`` order:

=============  =====================================================  ==========================
suite          files                                                  rows (positions)
=============  =====================================================  ==========================
startpos       startpos_A048987.csv (OEIS A048987)                    16 (1), depths 0-15
cpw            cpw_perft_results.csv (Chess Programming Wiki)         57 (7), depths 0-9
tricky         pychess_tricky.csv (python-chess tricky.perft)         67 (19), depths 1-5
perftsuite     perftsuite.csv + perftsuite_extras.csv                 764 (129), depths 1-6
chess960       chess960_fischer_ethereal.csv (CPW Chess960 perft)     5760 (960), depths 1-6
deep           deep_counts.csv (computed on a GPU three ways, below)  filled by ci/deep_counts.py
=============  =====================================================  ==========================

The ``deep`` table holds counts beyond the published depths, each counted on a GPU three ways
(no TT; TT with the default Zobrist key seed; TT with a second seed) that agreed, with provenance
columns (``status`` ``computed`` or ``published``: a published count re-counted the same way,
``version``, ``commit``, ``gpu``, ``date``, ``seconds_nott``, ``seconds_tt``, ``seconds_tt_seed2``).
It may hold no row yet (header only); its rows are far over the default node budget, so a CPU run
reports them ``over budget``.

Users' own tables: :func:`load_file` reads ``FILE.epd`` (the EPD perft format of perftsuite.epd,
``FEN ;D1 20 ;D2 400 ...``) and ``FILE.csv`` (header with ``fen``, ``depth``, ``nodes``; ``id``
and ``source`` optional).

``nodes`` are Python ints: the deepest start-position counts exceed 2**63.

Which rows need Chess960 rules (``TableRow.chess960``): every row of the ``chess960`` suite, and
every other row whose castling rights, read by python-chess with ``chess960=True``, are only
possible in Chess960 (``Board.has_chess960_castling_rights()``): in the bundled data exactly the
tricky ``xfen-*`` rows and ``asymmetrical-and-king-on-h``.

Tags (``TableRow.tags``, also ``tags(fen, chess960)``), computed once per distinct root position
with python-chess on ``chess.Board(fen, chess960=chess960)``:

``"en_passant"``
    the side to move has a legal en passant capture at the root, or a legal double pawn push
    at the root whose target square is next (same rank, adjacent file) to an enemy pawn, so an
    en passant capture is possible at ply 2.
``"castling"``
    any castling right is left (``board.clean_castling_rights() != 0``), for either side.
``"promotion"``
    a pawn stands one step from promoting: a white pawn on rank 7 or a black pawn on rank 2,
    of either side (so this includes every position where the side to move has a pawn on
    its seventh rank).
``"check"``
    the side to move is in check.
``"double_check"``
    the side to move is attacked by two or more checkers (always together with ``"check"``).
``"chess960"``
    the row needs Chess960 rules (see above).
``"unreachable"``
    python-chess reports the position invalid (``board.status() != chess.STATUS_VALID``),
    e.g. an impossible check or too many pieces. The counts are still the legal-move counts.
"""
from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from importlib import resources

import chess

__all__ = ["TAGS", "SUITES", "TableRow", "load", "load_all", "load_file", "budget", "unique_positions", "tags"]

SUITES: tuple[str, ...] = ("startpos", "cpw", "tricky", "perftsuite", "chess960", "deep")
"""The suite names, in the order ``load_all`` returns them."""

TAGS: tuple[str, ...] = (
    "en_passant", "castling", "promotion", "check", "double_check", "chess960", "unreachable",
)
"""Every tag a row can carry (see the module docstring for what each means)."""

_FILES: dict[str, tuple[str, ...]] = {
    "startpos": ("startpos_A048987.csv",),
    "cpw": ("cpw_perft_results.csv",),
    "tricky": ("pychess_tricky.csv",),
    "perftsuite": ("perftsuite.csv", "perftsuite_extras.csv"),
    "chess960": ("chess960_fischer_ethereal.csv",),
    "deep": ("deep_counts.csv",),
}
#: Columns of ``deep_counts.csv``, in order (``ci/deep_counts.py`` writes them).
DEEP_COLUMNS = ("id", "fen", "depth", "nodes", "source", "status", "version", "commit", "gpu", "date",
                "seconds_nott", "seconds_tt", "seconds_tt_seed2")
_UNIQUE_POSITIONS_FILE = "unique_positions_A083276.csv"


@dataclass(frozen=True)
class TableRow:
    """One known count: ``perft(fen, depth) == nodes``, from ``source``."""

    suite: str
    id: str
    fen: str
    depth: int
    nodes: int
    source: str
    tags: frozenset[str]
    chess960: bool

    @property
    def test_id(self) -> str:
        """``"suite/id/depth"``, unique over ``load_all()``."""
        return f"{self.suite}/{self.id}/{self.depth}"


def _read_csv(name: str) -> list[dict[str, str]]:
    text = resources.files("oracle.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@functools.cache
def _needs_chess960(fen: str) -> bool:
    return chess.Board(fen, chess960=True).has_chess960_castling_rights()


def double_push_allows_en_passant(board: chess.Board, move: chess.Move) -> bool:
    """Is ``move`` a double pawn push landing beside an enemy pawn (en passant possible next ply)?"""
    if abs(move.to_square - move.from_square) != 16:
        return False
    if board.piece_type_at(move.from_square) != chess.PAWN:
        return False
    to = move.to_square
    beside = chess.BB_EMPTY
    if chess.square_file(to) > 0:
        beside |= chess.BB_SQUARES[to - 1]
    if chess.square_file(to) < 7:
        beside |= chess.BB_SQUARES[to + 1]
    return bool(beside & board.pieces_mask(chess.PAWN, not board.turn))


@functools.cache
def tags(fen: str, chess960: bool = False) -> frozenset[str]:
    """The tags of the root position ``fen`` (see the module docstring); cached.

    Raises ValueError (from python-chess) if python-chess cannot read ``fen``.
    """
    board = chess.Board(fen, chess960=chess960)
    found: set[str] = set()
    if chess960:
        found.add("chess960")
    if board.status() != chess.STATUS_VALID:
        found.add("unreachable")
    if board.clean_castling_rights():
        found.add("castling")
    if (board.pieces_mask(chess.PAWN, chess.WHITE) & chess.BB_RANK_7
            or board.pieces_mask(chess.PAWN, chess.BLACK) & chess.BB_RANK_2):
        found.add("promotion")
    checkers = board.checkers_mask()
    if checkers:
        found.add("check")
        if chess.popcount(checkers) >= 2:
            found.add("double_check")
    pawn_pushes = board.generate_legal_moves(from_mask=board.pawns, to_mask=chess.BB_RANK_4 | chess.BB_RANK_5)
    if board.has_legal_en_passant() or any(double_push_allows_en_passant(board, m) for m in pawn_pushes):
        found.add("en_passant")
    return frozenset(found)


@functools.cache
def _load(suite: str) -> tuple[TableRow, ...]:
    if suite not in _FILES:
        raise ValueError(f"unknown suite {suite!r}; known suites: {', '.join(SUITES)}")
    rows = []
    for name in _FILES[suite]:
        for raw in _read_csv(name):
            fen = raw["fen"]
            chess960 = suite == "chess960" or _needs_chess960(fen)
            rows.append(TableRow(
                suite=suite,
                id=raw["id"],
                fen=fen,
                depth=int(raw["depth"]),
                nodes=int(raw["nodes"]),
                source=raw["source"],
                tags=tags(fen, chess960),
                chess960=chess960,
            ))
    return tuple(rows)


def load(suite: str) -> list[TableRow]:
    """All rows of one suite, in file order (cached; a fresh list each call).

    Raises ValueError for a name not in ``SUITES`` (the message lists the names).
    """
    return list(_load(suite))


class TableFileError(ValueError):
    """A user's table file that cannot be read; the message names the file and line."""


def load_file(path: str) -> list[TableRow]:
    """The rows of a user's table: ``FILE.epd`` or ``FILE.csv`` (see the module docstring).

    Every row's ``suite`` and ``source`` are ``path``; ids are ``line<N>`` unless the CSV has an
    ``id`` column. Raises :class:`TableFileError` (a ValueError) naming the file and line for a
    file that cannot be read, an unknown extension, a bad FEN, depth or count, or no row at all.
    """
    import os

    from oracle.engines import fen_problems
    from oracle.engines.process import engine_fen

    ext = os.path.splitext(path)[1].lower()
    if ext not in (".epd", ".csv"):
        raise TableFileError(f"unknown suite {path!r}; known suites: {', '.join(SUITES)}; "
                             "or a table file FILE.epd / FILE.csv")
    from perft_core.lines import InputError, read_text

    try:  # a spreadsheet's byte-order mark is not part of "fen"; no line longer than perft_core.lines allows
        text = read_text(path, encoding="utf-8-sig")
    except InputError as exc:
        raise TableFileError(str(exc)) from None
    except OSError as exc:
        raise TableFileError(f"{path}: cannot read it: {exc}") from None
    raw_rows = _epd_rows(path, text) if ext == ".epd" else _csv_rows(path, text)
    if not raw_rows:
        raise TableFileError(f"{path}: no perft row in it")
    _refuse_contradictions(path, raw_rows)
    rows = []
    for line, row_id, fen, depth, nodes in raw_rows:
        try:
            engine_fen(fen)
            chess960 = _needs_chess960(fen)
            row_tags = tags(fen, chess960)
            problems = fen_problems(chess.Board(fen, chess960=chess960))
        except ValueError as exc:
            raise TableFileError(f"{path}:{line}: bad FEN {fen!r}: {exc}") from None
        if problems:  # as `perft diff` refuses it (python-chess would count the position without them)
            raise TableFileError(f"{path}:{line}: bad FEN {fen!r}: {', '.join(problems)}")
        rows.append(TableRow(suite=path, id=row_id, fen=fen, depth=depth, nodes=nodes, source=path,
                             tags=row_tags, chess960=chess960))
    return rows


def _refuse_contradictions(path: str, raw_rows) -> None:
    """Raise TableFileError where a table contradicts itself: one position (its first four FEN
    fields: perft does not read the move counters) given two counts at one depth, or one id naming
    two positions at one depth (a row's key in the reports). Both lines are named."""
    counts: dict[tuple[str, int], tuple[int, int]] = {}
    ids: dict[tuple[str, int], tuple[int, str]] = {}
    for line, row_id, fen, depth, nodes in raw_rows:
        position = " ".join(fen.split()[:4])
        first = counts.setdefault((position, depth), (line, nodes))
        if first[1] != nodes:
            raise TableFileError(f"{path}:{line}: perft {depth} of {position!r} is {nodes} here and {first[1]} on "
                                 f"line {first[0]}: which count is meant?")
        named = ids.setdefault((row_id, depth), (line, position))
        if named[1] != position:
            raise TableFileError(f"{path}:{line}: id {row_id!r} at depth {depth} names another position than on "
                                 f"line {named[0]}: ids must tell rows apart")


def _count(path: str, line: int, what: str, text: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.isdigit()):  # str.isdigit() alone takes "٢٠" and "²"
        raise TableFileError(f"{path}:{line}: {what} must be a non-negative integer, got {text!r}")
    return int(text)


def _epd_rows(path: str, text: str) -> list[tuple[int, str, str, int, int]]:
    """The perft rows of an EPD file, read by :func:`perft_core.positions.read_lines` (the FEN in
    the engine's words, the operations by python-chess's ``chess.Board.from_epd``): one row per
    ``D<depth> <nodes>`` operation, id ``line<N>`` or the record's ``id`` operation."""
    from perft_core.positions import read_lines

    rows = []
    try:
        for entry in read_lines(text.splitlines(), path):
            if not entry.counts:
                raise TableFileError(f"{path}:{entry.line}: no 'D<depth> <nodes>' operation after the FEN")
            rows += [(entry.line, entry.id or f"line{entry.line}", entry.fen, depth, nodes)
                     for depth, nodes in sorted(entry.counts.items())]
    except TableFileError:
        raise
    except ValueError as exc:
        raise TableFileError(str(exc)) from None
    return rows


def _csv_rows(path: str, text: str) -> list[tuple[int, str, str, int, int]]:
    from perft_core.positions import csv_names, csv_records

    reader = csv.DictReader(io.StringIO(text))
    reader.fieldnames = csv_names(reader.fieldnames)
    missing = [c for c in ("fen", "depth", "nodes") if c not in reader.fieldnames]
    if missing:
        raise TableFileError(f"{path}:1: the header must name fen, depth and nodes; missing {', '.join(missing)}")
    rows = []
    for number, raw, problem in csv_records(reader):
        if problem is not None:  # a line the csv reader refuses: the table is refused
            raise TableFileError(f"{path}:{number}: {problem}")
        if any(raw.get(c) is None for c in ("fen", "depth", "nodes")):
            raise TableFileError(f"{path}:{number}: too few fields")
        rows.append((number, (raw.get("id") or "").strip() or f"line{number}", raw["fen"].strip(),
                     _count(path, number, "the depth", raw["depth"]),
                     _count(path, number, "the node count", raw["nodes"])))
    return rows


def load_all() -> list[TableRow]:
    """All rows of every suite, suites in ``SUITES`` order."""
    return [row for suite in SUITES for row in _load(suite)]


def published_nodes(fen: str, depth: int) -> int | None:
    """The node count of perft(fen, depth) in the bundled tables (:func:`load_all`; the position
    compared by its EPD: placement, side, castling, e.p.), or None when no table has it.

    Raises ValueError (python-chess) for a FEN it cannot read.
    """
    epd = chess.Board(fen).epd()
    return next((r.nodes for r in load_all() if r.depth == depth and chess.Board(r.fen).epd() == epd), None)


def budget(rows: list[TableRow], max_nodes: int) -> list[TableRow]:
    """The rows whose count is at most ``max_nodes`` nodes, order kept."""
    return [row for row in rows if row.nodes <= max_nodes]


def deepest_rows(max_nodes: int, rows: list[TableRow] | None = None) -> list[TableRow]:
    """For each (suite, position): its deepest row (depth >= 1) within ``max_nodes`` nodes.

    ``rows`` defaults to every bundled row; the result is sorted by ``test_id``.
    """
    best: dict[tuple[str, str], TableRow] = {}
    for row in load_all() if rows is None else rows:
        if row.depth >= 1 and row.nodes <= max_nodes:
            key = (row.suite, row.fen)
            if key not in best or row.depth > best[key].depth:
                best[key] = row
    return sorted(best.values(), key=lambda r: r.test_id)


@functools.cache
def _unique_positions() -> tuple[int, ...]:
    rows = _read_csv(_UNIQUE_POSITIONS_FILE)
    plies = [int(raw["ply"]) for raw in rows]
    if plies != list(range(len(plies))):
        raise ValueError(f"{_UNIQUE_POSITIONS_FILE}: plies are not 0, 1, 2, ...: {plies}")
    return tuple(int(raw["distinct_positions"]) for raw in rows)


def unique_positions() -> list[int]:
    """Distinct positions reachable from the start after exactly n plies, n = 0..11 (OEIS A083276)."""
    return list(_unique_positions())
