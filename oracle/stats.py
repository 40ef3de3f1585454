"""The python-chess reference of perft statistics (:class:`perft_core.Stats`), for small depths.

Independent of the engine's classification (kernels/pc_stats.h): every leaf move is judged by
python-chess's own ``Board`` methods, one move at a time: ``is_capture``, ``is_en_passant``,
``is_castling``, ``Move.promotion``, ``gives_check``; a checking move is pushed, and the squares of
``Board.checkers()`` say its kind (a checker on the moved piece's square of arrival is the moved
piece: for castling the rook's, on the f- or d-file of the back rank) and ``is_checkmate()``
whether it mates. The definitions are :mod:`perft_core.stats`'s.

Speed: about 50,000 leaf moves a second (interior nodes cached by the exact key of
:func:`oracle.engines.pychess.position_key`); for the tests' random positions and the small rows
of the published tables, never for large counts.
"""
from __future__ import annotations

import chess

from perft_core.stats import CHECK_KINDS, Stats
from oracle.engines.pychess import position_key

__all__ = ["reference_stats", "reference_divide_stats", "classify"]

_INDEX = {name: i for i, name in enumerate(
    ("nodes", "captures", "en_passant", "castles", "promotions",
     *(f"{k}_checks" for k in CHECK_KINDS), *(f"{k}_mates" for k in CHECK_KINDS)))}


def _arrival(board: chess.Board, move: chess.Move) -> chess.Square:
    """The square of the moved piece after ``move`` (for castling: the rook's)."""
    if board.is_castling(move):
        rank = chess.square_rank(move.from_square)
        return chess.square(5 if board.is_kingside_castling(move) else 3, rank)
    return move.to_square


def classify(board: chess.Board, move: chess.Move) -> list[str]:
    """The counters (names of :data:`perft_core.stats.STATS_FIELDS`) that the legal ``move`` of
    ``board`` adds one to; ``board`` is left as it was."""
    names = ["nodes"]
    if board.is_capture(move):
        names.append("captures")
    if board.is_en_passant(move):
        names.append("en_passant")
    if board.is_castling(move):
        names.append("castles")
    if move.promotion is not None:
        names.append("promotions")
    if board.gives_check(move):
        arrival = _arrival(board, move)
        board.push(move)
        try:
            checkers = board.checkers()
            direct = arrival in checkers
            if len(checkers) == 1:
                kind = "direct" if direct else "single_discovered"
            else:
                kind = "direct_discovered" if direct else "double_discovered"
            names.append(f"{kind}_mates" if board.is_checkmate() else f"{kind}_checks")
        finally:
            board.pop()
    return names


def _leaf_counts(board: chess.Board) -> list[int]:
    counts = [0] * len(_INDEX)
    for move in board.legal_moves:
        for name in classify(board, move):
            counts[_INDEX[name]] += 1
    return counts


def _counts(board: chess.Board, depth: int, cache: dict) -> list[int]:
    if depth == 0:
        return [1] + [0] * (len(_INDEX) - 1)
    if depth == 1:
        return _leaf_counts(board)
    key = (position_key(board), board.chess960, depth)
    hit = cache.get(key)
    if hit is not None:
        return hit
    total = [0] * len(_INDEX)
    for move in list(board.legal_moves):
        board.push(move)
        for i, n in enumerate(_counts(board, depth - 1, cache)):
            total[i] += n
        board.pop()
    cache[key] = total
    return total


def reference_stats(board: chess.Board, depth: int) -> Stats:
    """The statistics of the leaf moves ``depth`` plies below ``board`` (a python-chess Board,
    Chess960 or not; left as it was), by python-chess alone.

    Raises ValueError: depth not an int >= 0.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    return Stats(*_counts(board.copy(stack=False), depth, {}))


def reference_divide_stats(board: chess.Board, depth: int) -> dict[str, Stats]:
    """``{uci: Stats}`` below each legal move of ``board`` (UCI as ``board.uci`` writes it:
    Chess960 castling king-takes-rook); ``{}`` at depth 0.

    Raises ValueError: depth not an int >= 0.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    if depth == 0:
        return {}
    board = board.copy(stack=False)
    cache: dict = {}
    out = {}
    for move in list(board.legal_moves):
        uci = board.uci(move)
        if depth == 1:  # the root moves are the leaf moves
            counts = [0] * len(_INDEX)
            for name in classify(board, move):
                counts[_INDEX[name]] += 1
        else:
            board.push(move)
            counts = _counts(board, depth - 1, cache)
            board.pop()
        out[uci] = Stats(*counts)
    return out


# ----- the published rows, checked (the conformance report's statistics section) --------------------

_CPW_CSV_COLUMN = {"en_passant": "ep"}
"""The CPW detail table's column for a :data:`perft_core.stats.CPW_COLUMNS` name, where they differ."""

REFERENCE_NODES = 200_000
"""Rows up to this many nodes are also counted by :func:`reference_stats` (about 2 s in all)."""

STATISTICS_TABLES = {
    "cpw": "cpw_perft_results_detail.csv",
    "gct": "gct_perft_stats.csv",
}
"""The published statistics tables (oracle/data/README.md): ``cpw``, the Chess Programming Wiki's
"Perft Results" detail rows (its eight columns, :data:`perft_core.stats.CPW_COLUMNS`; blank where
the page gives none); ``gct``, Grand Chess Tree's results (startpos to depth 12, Kiwipete and SJE's
symmetric position to 9: every counter of :data:`perft_core.stats.STATS_FIELDS`)."""


def published_rows(table: str) -> list[dict]:
    """The rows of a published statistics table that give statistics, in file order.

    Args:
        table: a key of :data:`STATISTICS_TABLES`.

    Returns:
        One dict a row: ``table``, ``id``, ``fen``, ``depth`` (int), ``nodes`` (int) and ``columns``
        (``{name: int}``: each published column, named as the :class:`perft_core.Stats` attribute
        that counts it: the CPW columns for ``cpw``, the thirteen counters for ``gct``).

    Raises:
        KeyError: an unknown table.
    """
    import csv
    from importlib import resources

    from perft_core.stats import CPW_COLUMNS, STATS_FIELDS

    names, column = (CPW_COLUMNS, _CPW_CSV_COLUMN) if table == "cpw" else (STATS_FIELDS, {})
    with resources.files("oracle.data").joinpath(STATISTICS_TABLES[table]).open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["captures"] != ""]
    return [{"table": table, "id": r["id"], "fen": r["fen"], "depth": int(r["depth"]), "nodes": int(r["nodes"]),
             "columns": {name: int(r[column.get(name, name)]) for name in names if r[column.get(name, name)] != ""}}
            for r in rows]


def statistics_rows(max_nodes: int | None = None) -> list[dict]:
    """Every published (position, depth) with statistics once: Grand Chess Tree's row where it has
    one (all thirteen counters), else the CPW detail row (:func:`published_rows`' dicts; GCT's
    first, then the CPW rows of other positions or depths). Where both publish, their columns agree
    (suites/test_stats.py), so this loses no check.

    Args:
        max_nodes: leave out rows with more nodes; None: none.

    Returns:
        list of dicts as :func:`published_rows` gives them.
    """
    def where(r: dict) -> tuple[str, int]:
        return chess.Board(r["fen"]).epd(), r["depth"]

    gct = published_rows("gct")
    seen = {where(r) for r in gct}
    rows = gct + [r for r in published_rows("cpw") if where(r) not in seen]
    return [r for r in rows if max_nodes is None or r["nodes"] <= max_nodes]


def check_published_rows(max_nodes: int | None = None, count=None,
                         tables: tuple[str, ...] = tuple(STATISTICS_TABLES)) -> tuple[list[dict], int]:
    """Every row of the published statistics tables (:data:`STATISTICS_TABLES`) counted with
    statistics and compared column by column.

    Args:
        max_nodes: rows with more nodes are left out (counted in the second value); None: none.
        count: ``count(fen, depth) -> Stats``; default our CPU backend, :func:`perft_core.perft_stats`
            on every core, no estimate.
        tables: which tables, in this order.

    Returns:
        ``(results, over_budget)``: one JSON-ready dict per row, table by table in file order, with
        ``table``, ``id``, ``fen``, ``depth``, ``nodes`` (published), ``status`` (``"pass"``: every
        published column equal, else ``"fail"``), ``columns`` (``{column: [published, counted]}``,
        the published ones only), ``mismatch`` (the columns that differ), ``reference``
        (``"agree"``/``"differs"``: the python-chess reference's Stats against ours, rows up to
        REFERENCE_NODES; else None) and ``seconds``; and the number of rows over ``max_nodes``.
    """
    import time

    if count is None:
        import perft_core

        def count(fen, depth):
            return perft_core.perft_stats(fen, depth, max_estimate_seconds=None)
    results, over = [], 0
    for r in (row for table in tables for row in published_rows(table)):
        if max_nodes is not None and r["nodes"] > max_nodes:
            over += 1
            continue
        t0 = time.perf_counter()
        got = count(r["fen"], r["depth"])
        seconds = time.perf_counter() - t0
        columns = {name: [value, getattr(got, name)] for name, value in r["columns"].items()}
        mismatch = [name for name, (want, have) in columns.items() if want != have]
        reference = None
        if r["nodes"] <= REFERENCE_NODES:
            reference = "agree" if reference_stats(chess.Board(r["fen"]), r["depth"]) == got else "differs"
        results.append({**{k: r[k] for k in ("table", "id", "fen", "depth", "nodes")},
                        "status": "fail" if mismatch or reference == "differs" else "pass", "columns": columns,
                        "mismatch": mismatch, "reference": reference, "seconds": float(f"{seconds:.4g}")})
    return results, over
