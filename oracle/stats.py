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

_CSV_COLUMN = {"en_passant": "ep"}
"""The detail table's column for a :data:`perft_core.stats.CPW_COLUMNS` name, where they differ."""

REFERENCE_NODES = 200_000
"""Rows up to this many nodes are also counted by :func:`reference_stats` (about 2 s in all)."""


def check_cpw_rows(max_nodes: int | None = None, count=None) -> tuple[list[dict], int]:
    """Every row of the Chess Programming Wiki's detail table (oracle/data/cpw_perft_results_detail.csv)
    that publishes statistics, counted with statistics and compared column by column.

    Args:
        max_nodes: rows with more nodes are left out (counted in the second value); None: none.
        count: ``count(fen, depth) -> Stats``; default our CPU backend, :func:`perft_core.perft_stats`
            on every core, no estimate.

    Returns:
        ``(results, over_budget)``: one JSON-ready dict per row in table order, with ``id``, ``fen``,
        ``depth``, ``nodes`` (published), ``status`` (``"pass"``: every published column equal,
        else ``"fail"``), ``columns`` (``{cpw column: [published, counted]}``, the published ones
        only), ``mismatch`` (the columns that differ), ``reference`` (``"agree"``/``"differs"``: the
        python-chess reference's Stats against ours, rows up to REFERENCE_NODES; else None) and
        ``seconds``; and the number of rows over ``max_nodes``.
    """
    import csv
    import time
    from importlib import resources

    from perft_core.stats import CPW_COLUMNS

    if count is None:
        import perft_core

        def count(fen, depth):
            return perft_core.perft_stats(fen, depth, max_estimate_seconds=None)
    with resources.files("oracle.data").joinpath("cpw_perft_results_detail.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["captures"] != ""]
    results, over = [], 0
    for r in rows:
        nodes, depth = int(r["nodes"]), int(r["depth"])
        if max_nodes is not None and nodes > max_nodes:
            over += 1
            continue
        t0 = time.perf_counter()
        got = count(r["fen"], depth)
        seconds = time.perf_counter() - t0
        published = {name: int(r[_CSV_COLUMN.get(name, name)]) for name in CPW_COLUMNS
                     if r[_CSV_COLUMN.get(name, name)] != ""}
        counted = got.cpw()
        columns = {name: [value, counted[name]] for name, value in published.items()}
        mismatch = [name for name, (want, have) in columns.items() if want != have]
        reference = None
        if nodes <= REFERENCE_NODES:
            reference = "agree" if reference_stats(chess.Board(r["fen"]), depth) == got else "differs"
        results.append({"id": r["id"], "fen": r["fen"], "depth": depth, "nodes": nodes,
                        "status": "fail" if mismatch or reference == "differs" else "pass", "columns": columns,
                        "mismatch": mismatch, "reference": reference, "seconds": float(f"{seconds:.4g}")})
    return results, over
