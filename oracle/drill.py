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
4. stop when one ply is left, or when no child differs although the node does; ask the engine for
   the node's count again (an engine whose answer changes is an :class:`EngineError`, not a
   verdict), and turn the node into a hypothesis test (:func:`oracle.explain.explain`): the engine
   counts the node and its children at more depths, and move-list hypotheses (missing, extra, twice-generated moves) and
   state hypotheses (a child's FEN with castling rights, en passant square or halfmove clock
   changed) are kept only where they predict the node's local surplus exactly at every depth.
   The verdict is ``"moves"``, ``"count"`` or ``"state"`` when one hypothesis fits, ``"candidates"``
   when several do or the move count at 1 ply is wrong and none does, and ``"tree_walk"`` only when
   the move count is right and none fits.

At the bottom the independent judge (python-chess, code that shares nothing with our backends)
counts the final position when that is cheap (at most ``judge_max_nodes`` nodes, and within what
is left of ``max_seconds``) and lists its legal moves; ``Localization.judged`` says which engine
judged what and ``confirmed`` whether the judge agrees with the reference there.

Cost: the engine is called once for the root, at most once per child per level and once more at
the last node (``engine_calls``); its work per level is at most the node's own count, so the walk
costs the engine at most about twice the root's count plus a start-up per call; the probes at the last node
cost about its count again, deeper probes only within ``budget_nodes`` (half the root's count, at
least 1,000,000 nodes: a few milliseconds for a compiled engine). The reference counts one divide per level (the GPU
backend keeps one driver for the whole walk).
"""
from __future__ import annotations

import time
from collections.abc import Callable

from oracle.engines import (Engine, EngineError, PythonChessEngine, board_from, check_depth, fen_notation, fen_of,
                            time_limit)
from oracle.explain import Explanation, OutOfTime, explain
from oracle.localize import (Level, Localization, UnsteadyEngine, canonical_divide, check_reference_divide, localize,
                             odd_moves)

__all__ = ["DEFAULT_JUDGE_MAX_NODES", "drill", "locate"]

#: The last node is probed deeper while hypotheses tie, up to half the root's count or this many nodes.
PROBE_BUDGET_MIN = 1_000_000

#: python-chess (~1 M nodes/s) confirms the final position when its count is at most this many nodes.
DEFAULT_JUDGE_MAX_NODES = 5_000_000


def locate(engine: Engine, reference: Engine, fen: str, depth: int, *,
           max_seconds: float | None = None, on_step: Callable[[Level], None] | None = None) -> Localization:
    """Localize with :func:`oracle.localize.localize` when ``engine`` has a divide, else :func:`drill`.

    With a divide and a reference other than python-chess, python-chess then confirms the move
    list at the final position (``confirmed``, ``judged``). ``on_step(level)``: called with the
    current level after each engine or reference query of the walk (progress lines). Arguments and
    errors as for those two functions, except where a walk is cut short: a query stopped by
    ``max_seconds``, or a failure (crash, timeout, bad output) of ``engine`` after its counts had
    already differed from the reference's, returns the walk so far (``kind == "gave_up"``,
    ``evidence["stopped"]`` saying why, :attr:`Localization.differs`). A failing reference, or an
    engine whose answers change (:class:`oracle.localize.UnsteadyEngine`), still raises.
    ``max_seconds`` bounds each query of the reference too: its divide of a deep root would
    otherwise run on past the budget, for hours (session 36).
    """
    with time_limit(reference, max_seconds):
        return _locate(engine, reference, fen, depth, max_seconds, on_step)


def _locate(engine: Engine, reference: Engine, fen: str, depth: int, max_seconds: float | None,
            on_step: Callable[[Level], None] | None) -> Localization:
    start = time.monotonic()
    try:
        with time_limit(engine, max_seconds):  # no one query of the engine outlasts the walk's budget
            if not getattr(engine, "supports_divide", True):
                return drill(engine, reference, fen, depth, max_seconds=max_seconds, on_step=on_step)
            result = localize(engine, reference, fen, depth, max_seconds=max_seconds, on_step=on_step)
    except EngineError as exc:
        budget = max_seconds is not None and time.monotonic() - start >= max_seconds
        partial = getattr(exc, "partial", None)
        if partial is not None and not isinstance(exc, UnsteadyEngine) and (
                budget or (partial.differs and exc.engine == engine.name != reference.name)):
            # the walk so far is kept: where the counts already differ, that is proven whatever stopped it
            why = (f"a query of {exc.engine} was stopped at the time budget ({max_seconds:g} s): {exc.problem}"
                   if budget else f"{exc.engine} failed: {exc.problem}")
            return partial.stopped(why, start)
        if not budget:
            raise
        gave_up = Localization(engine=engine.name, reference=reference.name, root_fen=fen, depth=depth,
                               kind="agree", fen=fen_of(board_from(fen)), depth_left=depth,
                               method="divide" if getattr(engine, "supports_divide", True) else "children")
        gave_up.judged.append(f"a query of {exc.engine} was stopped at the time budget ({max_seconds:g} s): "
                              f"{exc.problem}")
        return gave_up.ended("gave_up", [], gave_up.fen, depth, start)
    if result.kind in ("moves", "count", "inconsistent") and not isinstance(reference, PythonChessEngine):
        # the reference judged the move list at the final position: python-chess confirms it
        board = board_from(result.fen)
        legal = sorted(board.uci(m) for m in board.legal_moves)
        theirs, _ = canonical_divide(board, reference.divide(result.fen, 1))
        result.confirmed = legal == sorted(theirs) and not odd_moves(theirs)
        result.judged.append(f"{reference.name} judged the move list at the final position; python-chess lists "
                             f"{len(legal)} legal moves there: " + ("the same" if result.confirmed else
                                                                    f"NOT the same ({len(theirs)}): the reference is suspect"))
    return result


def drill(engine: Engine, reference: Engine, fen: str, depth: int, *, max_seconds: float | None = None,
          judge: Engine | None = None, judge_max_nodes: int = DEFAULT_JUDGE_MAX_NODES,
          on_step: Callable[[Level], None] | None = None) -> Localization:
    """Find where a total-only ``engine`` goes wrong, by counting children from their own FENs.

    ``engine``: anything with ``perft(fen, depth)`` (its divide is not used); ``reference``: an
    engine with a divide; ``fen``: FEN, X-FEN, Shredder-FEN or EPD; ``depth``: plies;
    ``max_seconds``: wall time, checked between levels and engine calls (``kind == "gave_up"``);
    ``judge``: the independent engine that checks the final position (default python-chess);
    ``on_step(level)``: called with the current level after each engine call of the walk.
    Returns a :class:`oracle.localize.Localization` with ``method == "children"`` (see the module
    docstring for the algorithm, the kinds and the cost).
    Raises ``ValueError`` for a bad FEN or depth or a reference without a divide, and
    :class:`oracle.engines.EngineError` when an engine fails, when the reference's moves differ
    from perft_core's, or when its count changes under another key seed.
    Every FEN the engine is asked about is written in ``fen``'s castling notation
    (:func:`oracle.engines.fen_notation`).
    """
    with fen_notation(fen):
        return _drill(engine, reference, fen, depth, max_seconds=max_seconds, judge=judge,
                      judge_max_nodes=judge_max_nodes, on_step=on_step)


def _drill(engine: Engine, reference: Engine, fen: str, depth: int, *, max_seconds: float | None,
           judge: Engine | None, judge_max_nodes: int, on_step: Callable[[Level], None] | None) -> Localization:
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
    path = result.path  # shared: a failed query leaves the walk so far on the error (EngineError.partial)
    d = depth
    level_start = time.monotonic()

    def out_of_time() -> bool:
        return max_seconds is not None and time.monotonic() - start > max_seconds

    def finish(kind: str) -> Localization:
        result.engine_calls = sum(level.engine_calls for level in result.levels)
        return result.ended(kind, path, fen_of(board), d, start)

    def ref_divide(node_fen: str, plies: int) -> dict[str, int]:
        counts, _ = canonical_divide(board, reference.divide(node_fen, plies))
        check_reference_divide(reference, counts, node_fen, (), plies)
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

    try:
        while True:
            if out_of_time():
                level.seconds = time.monotonic() - level_start
                return finish("gave_up")
            if d == 1:
                return _explain_node(result, engine, judge, board, position, {}, level, level_start, start,
                                     max_seconds, judge_max_nodes, finish, on_step)
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
                if on_step is not None:
                    on_step(level)
                owed -= level.engine[move] - ref[move]
                if owed == 0 and level.engine[move] != ref[move]:
                    break
            differ = [m for m in level.engine if level.engine[m] != ref[m]]
            if len(level.engine) == len(children):
                level.engine_sum = sum(level.engine.values())
            if not differ:
                return _explain_node(result, engine, judge, board, position, children, level, level_start, start,
                                     max_seconds, judge_max_nodes, finish, on_step)
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

    except EngineError as exc:
        exc.partial = result
        raise

def _explain_node(result: Localization, engine: Engine, judge: Engine, board, position, children: dict[str, str],
                  level: Level, level_start: float, start: float, max_seconds: float | None, judge_max_nodes: int,
                  finish, on_step: Callable[[Level], None] | None) -> Localization:
    """The walk ends at ``level``'s node: every legal child agrees, or one ply is left. Test the
    move-list and state hypotheses there (:func:`oracle.explain.explain`) and record the verdict,
    its evidence and the judge's check."""
    d = level.depth
    again = engine.perft(level.fen, d)  # a verdict rests on this count: it must not change when asked again
    level.engine_calls += 1
    if again != level.engine_total:
        raise UnsteadyEngine(engine.name, f"asked twice for perft({level.fen!r}, {d}), it answered "
                          f"{level.engine_total} and then {again}: a count that changes cannot be judged")
    if not children:
        children = {m: position.push(m).fen() for m in sorted(level.reference)}
    deadline = None if max_seconds is None else start + max_seconds
    try:
        found = explain(engine, board, children, d, level.engine_total, dict(level.engine), deadline=deadline,
                        budget_nodes=max(result.levels[0].engine_total // 2, PROBE_BUDGET_MIN),
                        on_call=None if on_step is None else lambda: on_step(level))
    except OutOfTime:
        return finish("gave_up")
    finally:
        level.seconds = time.monotonic() - level_start
    level.engine_calls += found.engine_calls
    result.legal = sorted(level.reference)
    _record(result, found, board)
    _judge(result, judge, board, d, level.reference_total, judge_max_nodes, deadline)
    return finish(found.kind)


def _record(result: Localization, found: Explanation, board) -> None:
    """Copy an explanation's verdict and evidence into ``result``, with what is proven and what is
    a hypothesis said apart, and python-chess's word on the moves named."""
    ks = sorted(found.node)
    d = result.levels[-1].depth
    proven = [f"at depth{'s' if len(ks) > 1 else ''} {ks[0]}..{ks[-1]} the engine's count of this node minus its "
              f"counts of the {len(result.legal)} legal children (each from its own FEN) is "
              + ", ".join(f"{found.surplus[k]:+d}" for k in ks) + " (the node's local surplus)"]
    if found.surplus[1]:
        proven.append(f"its move list here is wrong: it counts {found.node[1]} moves at 1 ply; there are "
                      f"{len(result.legal)} legal moves")
    else:
        proven.append(f"it counts the {found.node[1]} legal moves at 1 ply: the move count here is right")
    hypothesis = []
    fits = found.fits
    if found.kind in ("moves", "count", "state"):
        (combo,) = fits
        what = "; ".join(h.text() for h in combo)
        proven.append(f"the hypothesis '{what}' predicts the surplus exactly at every depth probed, from the "
                      f"engine's own counts")
        hypothesis.append(f"{what}: the only one of the {found.tested} hypotheses tested that fits; that it is "
                          f"the engine's bug is inferred from the counts, not observed")
        for h in combo:
            if h.kind == "missing":
                result.missing += list(h.moves)
            elif h.kind == "extra":
                result.extra += list(h.moves)
            elif h.kind == "twice":
                result.wrong.update({m: [2, 1] for m in h.moves})
            else:
                result.state = {"moves": list(h.moves), "fens": list(h.fens), "text": h.text(), **h.state}
        result.missing.sort()
        result.extra.sort()
        _confirm_moves(result, board, ks)
    elif found.kind == "candidates":
        result.candidates = [{"text": "; ".join(h.text() for h in combo), "kind": "+".join(h.kind for h in combo),
                              "moves": [m for h in combo for m in h.moves], "unchecked_depths": unknown}
                             for combo, unknown in zip(fits, found.unknown)]
        if fits:
            hypothesis.append(f"{len(fits)} of the {found.tested} hypotheses tested fit the counts; they cannot "
                              f"decide between them")
        else:
            hypothesis.append(f"none of the {found.tested} hypotheses tested (missing, extra, twice-generated "
                              f"moves, one by one, by class, and in pairs that make one plausible bug) fits the deeper counts; "
                              "two unrelated mistakes at one node are not tested")
    else:
        hypothesis.append(f"none of the {found.tested} move-list and state hypotheses tested fits the counts")
    result.evidence = {"depths": [{"depth": k, "node": found.node[k], "children": found.children[k],
                                   "surplus": found.surplus[k]} for k in ks],
                       "tested": found.tested, "engine_calls": found.engine_calls,
                       "seconds": round(found.seconds, 6), "plies_left": d,
                       "proven": proven, "hypothesis": hypothesis}
    result.judged.append(f"{result.engine} counted this node at depths {ks[0]}..{ks[-1]} and every legal child "
                         f"from its FEN one ply less ({found.engine_calls} calls, {found.seconds:.2f} s); the "
                         f"hypotheses were judged on those counts alone")


def _confirm_moves(result: Localization, board, depths: list[int]) -> None:
    """python-chess, independently of our generator, on what the verdict names: missing and
    twice-counted moves are legal, extra moves are not; a state verdict's moves are legal, each
    variant is python-chess's own position after the move with the one change named (the same
    castling rights lost or kept, or the same en passant square or clock, after every move named),
    and, for a change of castling rights that python-chess can hold (it drops a right whose rook
    is gone; it ignores an en passant square off its rank, so en passant changes are not counted
    here), that change alters its own count of the child at some depth
    of ``depths`` (the depths probed, up to STATE_CONFIRM_DEPTH + 1): so a change that no count
    could see is never called confirmed."""
    legal = {board.uci(m) for m in board.legal_moves}
    checks = []
    if result.missing or result.wrong:
        checks.append(all(m in legal for m in result.missing + list(result.wrong)))
    if result.extra:
        checks.append(not any(m in legal for m in result.extra))
    changes = set()
    for move, fen in zip(result.state.get("moves", []), result.state.get("fens", [])):
        if move not in legal:
            checks.append(False)
            continue
        child = board.copy(stack=False)
        child.push_uci(move)
        true, named = fen_of(child).split(), fen.split()
        checks.append(true[:2] == named[:2] and true[2:] != named[2:])
        had, has = set(true[2].replace("-", "")), set(named[2].replace("-", ""))
        changes.add((frozenset(had - has), frozenset(has - had), named[3] if named[3] != true[3] else None,
                     named[4] if named[4] != true[4] else None))
        variant = board_from(fen)
        if true[3:] == named[3:] and fen_of(variant).split()[2] == named[2]:  # python-chess holds these rights
            checks.append(any(_pychess_perft(variant, k - 1) != _pychess_perft(child, k - 1)
                              for k in depths if 2 <= k <= STATE_CONFIRM_DEPTH + 1))
    if len(changes) > 1:
        checks.append(False)  # a state verdict names one change, the same after every move
    named = (["missing"] if result.missing else []) + (["twice-counted"] if result.wrong else []) \
        + (["extra"] if result.extra else []) + (["state"] if result.state else [])
    verdict = "confirms" if all(checks) else "does NOT confirm"
    result.judged.append(f"python-chess {verdict} what is named ({', '.join(named)}): missing and twice-counted "
                         "moves legal, extra moves not legal, a state verdict's position the true position after "
                         "each move named with the one change named, a change that alters python-chess's own "
                         "count of that child")


STATE_CONFIRM_DEPTH = 3
"""The deepest count python-chess makes of a state verdict's child and variant (a few thousand nodes)."""


def _pychess_perft(board, depth: int) -> int:
    if depth == 0:
        return 1
    if depth == 1:
        return board.legal_moves.count()
    nodes = 0
    for move in list(board.legal_moves):
        board.push(move)
        nodes += _pychess_perft(board, depth - 1)
        board.pop()
    return nodes


def _judge(result: Localization, judge: Engine, board, depth: int, ref_total: int, max_nodes: int,
           deadline: float | None = None) -> None:
    """Let the independent ``judge`` check the final position: its legal moves against the
    reference's, and its count when the reference's is at most ``max_nodes`` nodes and there is
    time left before ``deadline`` (``time.monotonic()`` seconds; None: no limit). A count the time
    budget stops is "not re-counted", as one over ``max_nodes`` is: it judges nothing."""
    fen = board.fen(en_passant="fen", shredder=board.chess960)
    legal = sorted(board.uci(m) for m in board.legal_moves)
    ref_moves = sorted(result.levels[-1].reference)
    moves_ok = legal == ref_moves
    text = (f"{judge.name} listed the {len(legal)} legal moves at the final position: "
            + ("the same as the reference's" if moves_ok else f"NOT the reference's {len(ref_moves)}"))
    left = None if deadline is None else deadline - time.monotonic()
    if ref_total <= max_nodes and left is not None and left <= 0:
        counts_ok = True
        text += f"; the count ({ref_total} nodes) was not re-counted: the time budget was spent"
    elif ref_total <= max_nodes:
        try:
            with time_limit(judge, left):
                counted = judge.perft(fen, depth)
        except EngineError as exc:
            if left is None or time.monotonic() < deadline:  # a failure of the judge, not the budget
                raise
            counts_ok = True
            text += f"; its count ({ref_total} nodes) was stopped at the time budget, not re-counted ({exc.problem})"
        else:
            counts_ok = counted == ref_total
            text += f"; it counted {counted} nodes at depth {depth} there (reference {ref_total})"
    else:
        counts_ok = True
        text += f"; the count ({ref_total} nodes) is over its budget of {max_nodes}, not re-counted"
    result.confirmed = moves_ok and counts_ok
    result.judged.append(text + ("" if result.confirmed else ": the reference itself is suspect"))
