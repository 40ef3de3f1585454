"""Localize a disagreement of an engine whose only answer is a total (no divide).

Algorithm (:func:`drill`), with a reference that has a divide (our cpu or gpu backend, python-chess):

1. count the root with both; equal totals: they agree, stop;
2. at a node with ``d`` plies left whose counts differ: the children are the legal moves of *our*
   move generator (``perft_core.Position.legal_moves`` / ``push``), checked against the reference's
   divide at the node; each child's standalone FEN is handed to the engine (one call per child,
   ``d - 1`` plies, the largest subtrees first) and compared with the reference's count of that
   child, until the children that differ explain the node's whole difference (then the rest are
   not asked: ``Level.engine`` holds the children counted, ``engine_sum`` is None);
3. descend into the child that differs, the largest absolute difference first when several do
   (the reference's count of it is first re-counted under a second Zobrist key seed when the
   reference has one: ``CoreEngine(tt=True, verify_seed=S)``), with ``d - 1`` plies;
4. stop when one ply is left (the engine's count is then its number of moves: ``"move_count"``),
   or when no child differs although the node does (``"tree_walk"``: the engine's count of the
   node is not the sum of its own counts of the children, so its tree walk is wrong, not its move
   generation here).

At the bottom the independent judge (python-chess, code that shares nothing with our backends)
counts the final position when that is cheap (at most ``judge_max_nodes`` nodes) and lists its
legal moves; ``Localization.judged`` says which engine judged what and ``confirmed`` whether the
judge agrees with the reference there.

Cost: the engine is called once for the root and at most once per child per level
(``engine_calls``); its work per level is at most the node's own count, so the whole drill costs
the engine at most about twice the root's count plus a start-up per call. The reference counts one divide per level (the GPU
backend keeps one driver for the whole walk).
"""
from __future__ import annotations

import time

from oracle.engines import Engine, EngineError, PythonChessEngine, board_from, check_depth, fen_of
from oracle.localize import Level, Localization, canonical_divide, localize

__all__ = ["DEFAULT_JUDGE_MAX_NODES", "drill", "locate"]

#: python-chess (~1 M nodes/s) confirms the final position when its count is at most this many nodes.
DEFAULT_JUDGE_MAX_NODES = 5_000_000


def locate(engine: Engine, reference: Engine, fen: str, depth: int, *,
           max_seconds: float | None = None) -> Localization:
    """Localize with :func:`oracle.localize.localize` when ``engine`` has a divide, else :func:`drill`.

    With a divide and a reference other than python-chess, python-chess then confirms the move
    list at the final position (``confirmed``, ``judged``). Arguments and errors as for those two
    functions.
    """
    if not getattr(engine, "supports_divide", True):
        return drill(engine, reference, fen, depth, max_seconds=max_seconds)
    result = localize(engine, reference, fen, depth, max_seconds=max_seconds)
    if result.kind in ("moves", "count", "inconsistent") and not isinstance(reference, PythonChessEngine):
        # the reference judged the move list at the final position: python-chess confirms it
        board = board_from(result.fen)
        legal = sorted(board.uci(m) for m in board.legal_moves)
        theirs, _ = canonical_divide(board, reference.divide(result.fen, 1))
        result.confirmed = legal == sorted(theirs)
        result.judged.append(f"{reference.name} judged the move list at the final position; python-chess lists "
                             f"{len(legal)} legal moves there: " + ("the same" if result.confirmed else
                                                                    f"NOT the same ({len(theirs)}): the reference is suspect"))
    return result


def drill(engine: Engine, reference: Engine, fen: str, depth: int, *, max_seconds: float | None = None,
          judge: Engine | None = None, judge_max_nodes: int = DEFAULT_JUDGE_MAX_NODES) -> Localization:
    """Find where a total-only ``engine`` goes wrong, by counting children from their own FENs.

    ``engine``: anything with ``perft(fen, depth)`` (its divide is not used); ``reference``: an
    engine with a divide; ``fen``: FEN, X-FEN, Shredder-FEN or EPD; ``depth``: plies;
    ``max_seconds``: wall time, checked between levels and engine calls (``kind == "gave_up"``);
    ``judge``: the independent engine that checks the final position (default python-chess).
    Returns a :class:`oracle.localize.Localization` with ``method == "children"`` (see the module
    docstring for the algorithm, the kinds and the cost).
    Raises ``ValueError`` for a bad FEN or depth or a reference without a divide, and
    :class:`oracle.engines.EngineError` when an engine fails, when the reference's moves differ
    from perft_core's, or when its count changes under another key seed.
    """
    import perft_core

    check_depth(depth)
    if not getattr(reference, "supports_divide", True):
        raise ValueError(f"the reference {reference.name!r} has no divide; use python-chess, cpu or gpu")
    start = time.monotonic()
    board = board_from(fen)
    position = perft_core.Position.from_fen(fen_of(board), chess960=board.chess960)
    judge = judge if judge is not None else PythonChessEngine()
    result = Localization(engine=engine.name, reference=reference.name, root_fen=fen, depth=depth,
                          kind="agree", fen=fen_of(board), depth_left=depth, method="children")
    path: list[str] = []
    d = depth
    level_start = time.monotonic()

    def out_of_time() -> bool:
        return max_seconds is not None and time.monotonic() - start > max_seconds

    def finish(kind: str) -> Localization:
        result.engine_calls = sum(level.engine_calls for level in result.levels)
        return result.ended(kind, path, fen_of(board), d, start)

    def ref_divide(node_fen: str, plies: int) -> dict[str, int]:
        counts, _ = canonical_divide(board, reference.divide(node_fen, plies))
        ours = position.legal_moves()
        if sorted(counts) != ours:
            raise EngineError(reference.name, f"its moves differ from perft_core's at {node_fen}: "
                              f"only the reference has {sorted(set(counts) - set(ours))}, "
                              f"only perft_core has {sorted(set(ours) - set(counts))}")
        return counts

    node_fen = fen_of(board)
    engine_total = engine.perft(node_fen, d)
    ref = ref_divide(node_fen, d) if d > 0 else {}
    ref_total = sum(ref.values()) if d > 0 else 1
    level = Level(path=[], fen=node_fen, depth=d, engine={}, reference=ref, engine_total=engine_total,
                  reference_total=ref_total, engine_calls=1)
    result.levels.append(level)
    result.judged.append(f"{reference.name} counted every node and child on the way down; "
                         f"{engine.name} counted each from its own FEN")
    if engine_total == ref_total:
        level.seconds = time.monotonic() - level_start
        return finish("agree")

    while True:
        if out_of_time():
            level.seconds = time.monotonic() - level_start
            return finish("gave_up")
        if d == 1:
            level.seconds = time.monotonic() - level_start
            result.legal = sorted(ref)
            _judge(result, judge, board, d, ref_total, judge_max_nodes)
            return finish("move_count")
        # largest subtrees first (a wrong count is likelier where there are more nodes); stop as
        # soon as the children that differ explain the node's whole difference
        children: dict[str, str] = {m: position.push(m).fen() for m in sorted(ref, key=lambda m: (-ref[m], m))}
        owed = engine_total - ref_total
        for move, child_fen in children.items():
            if out_of_time():
                level.seconds = time.monotonic() - level_start
                return finish("gave_up")
            level.engine[move] = engine.perft(child_fen, d - 1)
            level.engine_calls += 1
            owed -= level.engine[move] - ref[move]
            if owed == 0 and level.engine[move] != ref[move]:
                break
        differ = [m for m in level.engine if level.engine[m] != ref[m]]
        if len(level.engine) == len(children):
            level.engine_sum = sum(level.engine.values())
        if not differ:
            level.seconds = time.monotonic() - level_start
            _judge(result, judge, board, d, ref_total, judge_max_nodes)
            return finish("tree_walk")
        move = min(differ, key=lambda m: (-abs(level.engine[m] - ref[m]), m))  # the largest difference
        level.mismatch = move
        recount = getattr(reference, "recount", None)
        if recount is not None:
            again = recount(children[move], d - 1)
            if again is not None and again != ref[move]:
                raise EngineError(reference.name, f"its divide counted {ref[move]} below {move} at {node_fen}, "
                                  f"its re-count under key seed {reference.verify_seed:#x} {again}")
            if again is not None:
                result.judged.append(f"{reference.name} re-counted {' '.join(path + [move])} under key seed "
                                     f"{reference.verify_seed:#x}: {again}")
        level.seconds = time.monotonic() - level_start
        if out_of_time():
            return finish("gave_up")

        level_start = time.monotonic()
        path.append(move)
        board.push(board.parse_uci(move))
        position = position.push(move)
        d -= 1
        node_fen = children[move]
        engine_total = level.engine[move]
        ref = ref_divide(node_fen, d)
        ref_total = sum(ref.values())
        if ref_total != level.reference[move]:
            raise EngineError(reference.name, f"its divide at {node_fen} adds up to {ref_total}, "
                              f"but its count of that child was {level.reference[move]}")
        level = Level(path=list(path), fen=node_fen, depth=d, engine={}, reference=ref,
                      engine_total=engine_total, reference_total=ref_total)
        result.levels.append(level)


def _judge(result: Localization, judge: Engine, board, depth: int, ref_total: int, max_nodes: int) -> None:
    """Let the independent ``judge`` check the final position: its legal moves against the
    reference's, and its count when the reference's is at most ``max_nodes`` nodes."""
    fen = board.fen(en_passant="fen", shredder=board.chess960)
    legal = sorted(board.uci(m) for m in board.legal_moves)
    ref_moves = sorted(result.levels[-1].reference)
    moves_ok = legal == ref_moves
    text = (f"{judge.name} listed the {len(legal)} legal moves at the final position: "
            + ("the same as the reference's" if moves_ok else f"NOT the reference's {len(ref_moves)}"))
    if ref_total <= max_nodes:
        counted = judge.perft(fen, depth)
        counts_ok = counted == ref_total
        text += f"; it counted {counted} nodes at depth {depth} there (reference {ref_total})"
    else:
        counts_ok = True
        text += f"; the count ({ref_total} nodes) is over its budget of {max_nodes}, not re-counted"
    result.confirmed = moves_ok and counts_ok
    result.judged.append(text + ("" if result.confirmed else ": the reference itself is suspect"))
