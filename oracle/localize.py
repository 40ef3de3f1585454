"""Localize a perft disagreement between an engine and a reference down to one position and move.

Algorithm (:func:`localize`): at the current node, with ``d`` plies left,

1. ask the engine for its divide at depth ``d`` and the reference for the legal moves (depth 1,
   cheap); moves missing from the engine or extra in it are the answer, once the engine's divide
   at 1 ply (its move list) agrees: deeper, a legal move it lists at 1 ply but left out is a line
   of 0 nodes (engines leave such moves out) and is compared as a count; a line of 0 nodes for a
   move it does not list at 1 ply adds nothing and is dropped (:func:`_lines_left_out`);
2. otherwise ask the reference for the count below each move, cheapest subtree first (ordered by
   the engine's count), and descend into the first move whose counts differ, with ``d - 1`` plies;
3. at one ply left, a move the engine counts other than once is the answer (it generates it
   twice, say); at any depth, so is a move its divide gives on two lines (its nodes added, a move
   generated twice three plies up looked like a subtree counted double). A reference whose
   divide at one ply counts a move other than once cannot judge (:func:`check_reference_divide`).
   If every child agrees although the parent's count for this move did not, the
   engine is *inconsistent*: its count for the move at the parent is not the sum of its divide
   after the move (a state carried wrongly across make-move, a hash bug, a depth-dependent bug).

Both engines are queried from the root FEN plus the moves played (``position fen F moves ...``),
so make-move is exercised as in a real perft. Moves are compared in one canonical UCI notation per
position (standard castling ``e1g1`` unless the root needs Chess960 rules, then king-takes-rook),
whatever the notation each engine prints; each engine is sent back its own spelling of a move.

The reported FEN reproduces the disagreement on its own where that is possible: it keeps the en
passant square after every double push (see :func:`oracle.engines.fen_of`) and is in the root's notation for
Chess960. ``reproduces_from_fen`` says whether the engine, given that FEN alone, disagrees the same
way (False points at state the engine carries wrongly through make-move).

Cost: the engine's divide once per level, and once more at one ply where the walk ends in a verdict
on its moves (an engine whose answer changes when asked again is an EngineError, not a verdict),
and the reference's counts of the children it visits.
A rule bug (a move kind never generated, say) shows in many subtrees, so the cheapest few reveal
it: en passant dropped, first seen 5 plies from the start, is localized against python-chess in
about 5 s. A bug at a single node under the most expensive move of every ply makes the reference
count the whole tree once: 14 s for CPW position 4 at depth 5 (15.8 M nodes), about 2 minutes for
Kiwipete at depth 5 (194 M nodes); python-chess counts ~1-2 M nodes/s with bulk counting and its
transposition table, which also makes each descent after the first level nearly free.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import chess

from oracle.engines import Engine, EngineError, board_from, check_depth, fen_notation, fen_of
from oracle.engines.base import describe_query
from oracle.engines.divide import Divide

__all__ = ["Level", "Localization", "canonical_divide", "check_reference_divide", "localize", "odd_moves"]

#: Every verdict, for every protocol (text, ``--json`` and the HTML report).
KINDS = ("agree", "moves", "candidates", "count", "state", "inconsistent", "tree_walk", "gave_up")

#: The ``--json`` schema: ``schema`` names it, ``schema_version`` changes when a field's meaning does
#: (docs/localization-schema.md).
SCHEMA, SCHEMA_VERSION = "perft-oracle/localization", 2

#: What :meth:`Localization.describe` says when no move-list or state hypothesis explains a node.
TREE_WALK = ("the engine walks its tree wrongly or carries state from a move into its children: it generates "
             "the right number of moves here (the count at 1 ply agrees) and no tested move-list or state "
             "hypothesis explains the counts")


@dataclass
class Level:
    """One node visited by :func:`localize`.

    ``path``: canonical UCI moves from the root to this node; ``fen``: standalone FEN of the node;
    ``depth``: plies counted below it; ``engine``: the engine's divide (canonical moves -> nodes);
    ``reference``: reference counts for the moves it was asked about (cheapest first, so possibly
    not all of them); ``engine_total``: sum of ``engine``; ``reference_total``: the reference's
    total when it counted every move, else None; ``mismatch``: the move descended into, if any.
    """

    path: list[str]
    fen: str
    depth: int
    engine: dict[str, int]
    reference: dict[str, int]
    engine_total: int
    reference_total: int | None
    mismatch: str | None = None
    engine_sum: int | None = None
    seconds: float = 0.0
    engine_calls: int = 0


@dataclass
class Localization:
    """Where an engine and a reference disagree (the result of :func:`localize`).

    ``kind`` (one of :data:`KINDS`): ``"agree"`` (no disagreement), ``"moves"`` (the engine's move
    list at ``fen`` has ``missing`` / ``extra`` moves), ``"candidates"`` (the move list at ``fen``
    is wrong or a hypothesis fits, but the counts cannot decide which: ``candidates``, ranked),
    ``"count"`` (same moves, but the engine counts a move other than once, at one ply, or its
    divide gives a move on more than one line, at any depth: see ``wrong``),
    ``"state"`` (the make of a move carries wrong state into its child: ``state``),
    ``"inconsistent"`` (the engine's count for the last move of ``path`` at its parent differs from
    its own divide at ``fen``, which agrees with the reference), ``"tree_walk"`` (total-only
    engines: every child agrees, the move count at 1 ply agrees and no hypothesis fits:
    :data:`TREE_WALK`), ``"gave_up"`` (``max_seconds`` ran out, or the engine failed after its counts had differed:
    ``evidence["stopped"]`` says which; ``levels`` hold what was seen, :attr:`differs`).
    For total-only engines the verdict at the final node comes from :func:`oracle.explain.explain`:
    ``evidence`` holds its probes (``depths``: per k the engine's count of the node, the sum of its
    counts of the children from their FENs and the local surplus), ``proven`` and ``hypothesis``
    its sentences; ``candidates`` are dicts ``{"text", "kind", "moves", "unchecked_depths"}``;
    ``state`` is ``{"moves", "as_if", "fen_has", "blame", "fens"}``.
    ``method``: ``"divide"`` (:func:`localize`) or ``"children"`` (:func:`oracle.drill.drill`);
    ``engine_calls``: runs of the engine; ``judged``: who judged what, one sentence each;
    ``confirmed``: whether the independent judge (python-chess) agrees with the reference at ``fen``
    (None when it was not asked); ``legal``: the legal moves at ``fen`` (total-only engines).
    ``path``: canonical UCI moves from the root to ``fen``; ``depth_left``: plies counted at ``fen``;
    ``wrong``: ``{move: [engine nodes, reference nodes]}`` at ``fen``; ``seconds``: wall time.
    """

    engine: str
    reference: str
    root_fen: str
    depth: int
    kind: str
    path: list[str] = field(default_factory=list)
    fen: str = ""
    depth_left: int = 0
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    wrong: dict[str, list[int]] = field(default_factory=dict)
    levels: list[Level] = field(default_factory=list)
    reproduces_from_fen: bool | None = None
    seconds: float = 0.0
    method: str = "divide"
    engine_calls: int = 0
    judged: list[str] = field(default_factory=list)
    confirmed: bool | None = None
    legal: list[str] = field(default_factory=list)
    candidates: list[dict] = field(default_factory=list)
    state: dict = field(default_factory=dict)
    evidence: dict = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        """True when the engine and the reference agree at the root."""
        return self.kind == "agree"

    @property
    def differs(self) -> bool:
        """True when the levels already hold a count of the engine's that differs from the
        reference's: a move's count at a level's ``mismatch``, or a node's total against the
        reference's. A walk stopped early (``gave_up``) proves a difference only then."""
        return any(level.mismatch is not None or (level.reference_total is not None and level.depth > 0
                                                  and level.engine_total != level.reference_total)
                   for level in self.levels)

    def stopped(self, why: str, start: float) -> "Localization":
        """End a walk that a failed or stopped query cut short (``kind == "gave_up"``): the node it
        had reached (the root and ``path``), the plies left there, and ``evidence["stopped"]`` = ``why``."""
        board = board_from(self.root_fen)
        for move in self.path:
            board.push(board.parse_uci(move))
        self.evidence["stopped"] = why
        self.engine_calls = max(self.engine_calls, sum(level.engine_calls for level in self.levels))
        with fen_notation(self.root_fen):
            return self.ended("gave_up", self.path, fen_of(board), self.depth - len(self.path), start)

    def ended(self, kind: str, path: list[str], fen: str, depth_left: int, start: float) -> "Localization":
        """Record where a walk ended: its verdict ``kind``, the path and standalone FEN of the last
        node, the plies left there, and the wall seconds since ``start`` (time.monotonic)."""
        self.kind, self.path, self.fen, self.depth_left = kind, list(path), fen, depth_left
        self.seconds = time.monotonic() - start
        return self

    def to_dict(self) -> dict:
        """A JSON-ready dict: ``schema`` and ``schema_version`` (:data:`SCHEMA_VERSION`), then every
        field, levels included (docs/localization-schema.md)."""
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION} | asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Localization":
        """Inverse of :meth:`to_dict`."""
        data = {k: v for k, v in data.items() if k not in ("schema", "schema_version")}
        data["levels"] = [Level(**level) for level in data.get("levels", [])]
        return cls(**data)

    def summary(self) -> str:
        """A few words for the verdict (a report's failure list)."""
        if self.kind == "moves":
            return "missing " + (" ".join(self.missing) or "-") + ", extra " + (" ".join(self.extra) or "-")
        if self.kind == "count":
            return "counted other than once: " + " ".join(sorted(self.wrong))
        if self.kind == "state":
            return f"make of {' '.join(self.state.get('moves', []))} carries wrong state ({self.state.get('as_if')})"
        if self.kind == "candidates":
            return f"{len(self.candidates)} candidate explanations" if self.candidates else "move list wrong, not named"
        return {"tree_walk": "tree walk wrong (move list right, no hypothesis fits)", "inconsistent": "inconsistent counts",
                "gave_up": "not localized in time", "agree": "agree"}.get(self.kind, self.kind)

    def describe(self) -> str:
        """A few lines for a person: where, which moves, and the counts on the way down."""
        if self.kind == "agree":
            total = self.levels[0].engine_total if self.levels else 1
            return "\n".join([f"{self.engine} and {self.reference} agree: {total} nodes at depth {self.depth} from "
                              f"{self.root_fen}"] + [f"  proven:  {s}" for s in self.evidence.get("proven", [])])
        if self.kind == "gave_up" and not self.differs:  # stopped before any count was seen to differ
            lines = [f"{self.engine} against {self.reference} at depth {self.depth} from {self.root_fen}: no verdict"]
        else:
            lines = [f"{self.engine} disagrees with {self.reference} at depth {self.depth} from {self.root_fen}"]
        lines.append("  path:    " + (" ".join(self.path) if self.path else "(the root position)"))
        lines.append(f"  fen:     {self.fen}")
        if self.kind == "moves" and self.confirmed is False:  # python-chess contradicts the reference here
            lines.append(f"  the reference is wrong here: python-chess's legal moves differ from {self.reference}'s")
            lines.append("  missing: " + (" ".join(self.missing) or "-") + "   (listed by the reference, not by the engine)")
            lines.append("  extra:   " + (" ".join(self.extra) or "-") + "   (listed by the engine, not by the reference)")
        elif self.kind == "moves" and self.method == "children":  # a total-only engine: no move list was seen
            lines.append("  missing: " + (" ".join(self.missing) or "-") + "   (legal; inferred from the counts, see below)")
            lines.append("  extra:   " + (" ".join(self.extra) or "-") + "   (not legal; inferred from the counts, see below)")
        elif self.kind == "moves":
            lines.append("  missing: " + (" ".join(self.missing) or "-") + "   (legal, not in the engine's divide)")
            lines.append("  extra:   " + (" ".join(self.extra) or "-") + "   (in the engine's divide, not legal)")
        elif self.kind == "count":
            for move, (got, want) in sorted(self.wrong.items()):
                where = "at the last ply" if self.depth_left <= 1 else f"here ({self.depth_left} plies left)"
                lines.append(f"  move {move} counted {got} times {where} (should be {want})")
        elif self.kind == "inconsistent":
            parent = self.levels[-2] if len(self.levels) >= 2 else None
            last = self.path[-1] if self.path else "?"
            if parent is not None:
                lines.append(
                    f"  inconsistent engine: at the parent it counts {parent.engine.get(last)} nodes below {last} "
                    f"(reference {parent.reference.get(last)}), but its divide after {last} "
                    f"adds up to {self.levels[-1].engine_total}, as the reference does")
        elif self.kind == "state":
            lines.append(f"  state:   {self.state.get('text', '')}")
            for fen in self.state.get("fens", [])[:1]:
                lines.append(f"  as if:   {fen}   (the position the engine counts after {self.state['moves'][0]})")
        elif self.kind == "candidates":
            if self.candidates:
                lines.append("  the counts cannot decide between these hypotheses (most likely first):")
                for i, cand in enumerate(self.candidates, 1):
                    unchecked = cand.get("unchecked_depths") or []
                    note = f"   [not checked at depth {', '.join(map(str, unchecked))}]" if unchecked else ""
                    lines.append(f"    {i}. {cand['text']}{note}")
            lines.append("  legal:   " + (" ".join(self.legal) or "(none)"))
        elif self.kind == "tree_walk":
            lines.append(f"  {TREE_WALK}")
        elif self.kind == "gave_up" and self.evidence.get("stopped"):
            lines.append(f"  stopped after {self.seconds:.1f} s: {self.evidence['stopped']}")
        elif self.kind == "gave_up":
            lines.append(f"  gave up after {self.seconds:.1f} s (max_seconds)")
        if self.reproduces_from_fen is False:
            lines.append("  note: the engine gets this position right from the FEN alone; the bug needs the "
                         "moves from the root (state carried wrongly by make-move)")
        for sentence in self.evidence.get("proven", []):
            lines.append(f"  proven:  {sentence}")
        for sentence in self.evidence.get("hypothesis", []):
            lines.append(f"  hypothesis: {sentence}")
        if self.evidence.get("depths"):
            lines.append("  probes at this node (engine's counts; surplus = node - sum of children from their FENs):")
            for row in self.evidence["depths"]:
                lines.append(f"    depth {row['depth']}: node {row['node']}, children {row['children']}, "
                             f"surplus {row['surplus']:+d}")
        lines.append("  counts on the way down (engine / reference):")
        for level in self.levels:
            move = level.mismatch
            if self.method == "children":
                detail = f"node {level.engine_total} / {level.reference_total if level.reference_total is not None else 'not counted'}"
                if level.engine_sum is not None:
                    detail += f", children sum {level.engine_sum}"
                if move:
                    detail += f"; {move}: {level.engine.get(move)} / {level.reference.get(move)}"
                detail += f"  ({level.engine_calls} engine calls, {level.seconds:.2f} s)  {level.fen}"
            elif move:
                detail = f"{move}: {level.engine.get(move)} / {level.reference.get(move)}"
            elif level.reference_total is not None:
                detail = f"total {level.engine_total} / {level.reference_total}"
            else:  # the walk ended on the move lists: the reference listed its moves and counted no total
                why = "a move given twice" if self.kind == "count" else "the move lists differ"
                detail = f"total {level.engine_total} (the reference's total not counted: {why})"
            lines.append(f"    ply {len(level.path)}, depth {level.depth}: {detail}")
        for sentence in self.judged:
            lines.append(f"  judged: {sentence}")
        return "\n".join(lines)


class UnsteadyEngine(EngineError):
    """An engine answered one question twice differently (uninitialised memory, a race): none of
    its counts can be judged, so a walk it ends is no verdict, whatever it had seen before."""


def canonical_divide(board: chess.Board, divide: dict[str, int]) -> tuple[Divide, dict[str, str]]:
    """Rewrite a divide's moves in ``board``'s canonical UCI notation.

    Returns ``(counts, spelled)``: ``counts`` (a :class:`~oracle.engines.divide.Divide`) maps
    canonical moves to nodes; ``spelled`` maps each canonical move back to the engine's own
    spelling (the first one seen). Moves that are not legal on ``board`` keep the engine's spelling
    (lower case). Two spellings of one move (``e1h1`` and ``e1g1`` in standard chess), like one
    move on two lines of ``divide`` (its ``listed``), are one move generated twice: their counts
    add up, and ``counts.listed`` says on how many lines it came.
    """
    counts = Divide()
    spelled: dict[str, str] = {}
    lines = divide.lines if isinstance(divide, Divide) else (lambda move: 1)
    for raw, nodes in divide.items():
        key = raw.strip().lower()
        try:
            canonical = board.uci(board.parse_uci(key))
        except ValueError:
            canonical = key
        counts.add(canonical, int(nodes), lines(raw))
        spelled.setdefault(canonical, raw)
    return counts, spelled


def odd_moves(counts: Divide, plies: int = 1) -> list[str]:
    """The moves of a divide at ``plies`` (``counts``, canonical) that a right generator cannot
    give: a move on more than one line, or at one ply a move counted other than once; each as
    ``"move (N nodes on L lines)"``, sorted. Empty for a right divide."""
    return sorted(f"{m} ({n} nodes on {counts.lines(m)} lines)" for m, n in counts.items()
                  if counts.lines(m) != 1 or (plies == 1 and n != 1))


def check_reference_divide(reference: Engine, counts: Divide, fen: str, moves: Sequence[str], plies: int = 1) -> None:
    """A reference's divide at ``plies`` (``counts``, canonical) must give each move on one line,
    and at one ply count it once: anything else means it generates that move twice, and a walk
    that took its list as the legal moves blamed the engine for the reference's fault (session 36's
    hunt: a right engine was called inconsistent "as the reference does"). Raises
    :class:`EngineError` naming the reference and the moves."""
    odd = odd_moves(counts, plies)
    if odd:
        raise EngineError(reference.name, f"as the reference, its divide at {plies} ply must give each legal move "
                          f"once{', counted once' if plies == 1 else ''}; it gives {', '.join(odd[:8])}: "
                          "no engine can be judged against it", command=describe_query(fen, plies, moves),
                          output="\n".join(f"{m} {n}" + (f"  (on {counts.lines(m)} lines)" if counts.lines(m) > 1 else "")
                                            for m, n in sorted(counts.items())))


def localize(engine: Engine, reference: Engine, fen: str, depth: int, *,
             max_seconds: float | None = None, on_step: Callable[[Level], None] | None = None) -> Localization:
    """Find the first position and move where ``engine`` and ``reference`` disagree.

    ``fen``: FEN, X-FEN, Shredder-FEN or EPD (Chess960 rules when it needs them); ``depth``: plies.
    Returns a :class:`Localization` (``kind == "agree"`` when they agree at the root); see the
    module docstring for the algorithm and its cost. ``max_seconds`` (wall time, checked between
    engine queries) stops the search with ``kind == "gave_up"``; ``on_step(level)`` is called with
    the current level after each query (progress lines).
    Raises ``ValueError`` for a bad FEN or depth and :class:`oracle.engines.EngineError` when
    either engine fails. Positions are written in ``fen``'s castling notation
    (:func:`oracle.engines.fen_notation`).
    """
    with fen_notation(fen):
        return _localize(engine, reference, fen, depth, max_seconds=max_seconds, on_step=on_step)


def _localize(engine: Engine, reference: Engine, fen: str, depth: int, *,
              max_seconds: float | None, on_step: Callable[[Level], None] | None) -> Localization:
    check_depth(depth)
    start = time.monotonic()
    board = board_from(fen)
    result = Localization(engine=engine.name, reference=reference.name, root_fen=fen, depth=depth,
                          kind="agree", fen=fen_of(board), depth_left=depth)
    path = result.path          # shared: a failed query leaves the walk so far on the error (EngineError.partial)
    eng_moves: list[str] = []   # the path in the engine's spelling
    ref_moves: list[str] = []   # the path in the reference's spelling
    d = depth

    def out_of_time() -> bool:
        return max_seconds is not None and time.monotonic() - start > max_seconds

    def finish(kind: str) -> Localization:
        return result.ended(kind, path, fen_of(board), d, start)

    try:
        while d > 0:
            if out_of_time():
                return finish("gave_up")
            eng, eng_spelled = canonical_divide(board, engine.divide(fen, d, eng_moves))
            ref_legal, ref_spelled = canonical_divide(board, reference.divide(fen, 1, ref_moves))
            check_reference_divide(reference, ref_legal, fen, ref_moves)
            level = Level(path=list(path), fen=fen_of(board), depth=d, engine=eng,
                          reference=dict(ref_legal) if d == 1 else {},
                          engine_total=sum(eng.values()), reference_total=len(ref_legal) if d == 1 else None)
            result.levels.append(level)

            missing = [m for m in ref_legal if m not in eng]
            if d > 1:  # an engine may leave out moves whose subtree is empty (mate or stalemate below)
                for move in list(missing):
                    nodes = reference.perft(fen, d - 1, ref_moves + [ref_spelled[move]])
                    level.reference[move] = nodes
                    if nodes == 0:
                        missing.remove(move)
            extra = [m for m in eng if m not in ref_legal]
            if (missing or extra) and d > 1:
                missing, extra = _lines_left_out(engine, board, fen, d, eng_moves, eng, eng_spelled, missing, extra,
                                                 result)
            if missing or extra:
                if d == 1:
                    _same_again(engine, board, fen, d, eng_moves, eng)
                else:
                    _misnamed(result, eng, level.reference, missing, extra)
                result.missing, result.extra = sorted(missing), sorted(extra)
                _check_reproduction(result, engine, board, d, set(ref_legal))
                return finish("moves")
            repeated = eng.repeated()
            if repeated:  # a move on two lines of its divide here: generated twice here, at any depth
                result.wrong = {m: [n, 1] for m, n in repeated.items()}
                result.evidence.setdefault("proven", []).append(
                    f"its divide at depth {d} here gives " + ", ".join(
                        f"{m} on {n} lines" for m, n in sorted(repeated.items())) + ": each legal move is generated once")
                return finish("count")

            mismatch = None
            for move in sorted(eng, key=lambda m: (eng[m], m)):  # cheapest subtree first
                if out_of_time():
                    return finish("gave_up")
                nodes = 1 if d == 1 else reference.perft(fen, d - 1, ref_moves + [ref_spelled[move]])
                level.reference[move] = nodes
                if on_step is not None:
                    on_step(level)
                if nodes != eng[move]:
                    mismatch = move
                    break
            if mismatch is None:
                level.reference_total = sum(level.reference.values())
                if not path:
                    return finish("agree")
                return finish("inconsistent")
            level.mismatch = mismatch
            recount = getattr(reference, "recount", None) if d > 1 else None
            if recount is not None:  # a reference with a second key seed re-counts before it is believed
                again = recount(fen, d - 1, ref_moves + [ref_spelled[mismatch]])
                if again is not None and again != level.reference[mismatch]:
                    raise EngineError(reference.name, f"it counted {level.reference[mismatch]} below {mismatch} at "
                                      f"{fen_of(board)}, its re-count under key seed {reference.verify_seed:#x} {again}")
                if again is not None:
                    result.judged.append(f"{reference.name} re-counted {' '.join(path + [mismatch])} under key seed "
                                         f"{reference.verify_seed:#x}: {again}")
            if d == 1:
                _same_again(engine, board, fen, d, eng_moves, eng)
                result.wrong = {mismatch: [eng[mismatch], 1]}
                _check_reproduction(result, engine, board, d, set(ref_legal))
                return finish("count")
            path.append(mismatch)
            eng_moves.append(eng_spelled[mismatch])
            ref_moves.append(ref_spelled[mismatch])
            board.push(board.parse_uci(mismatch))
            d -= 1
        # depth 0 at the root: both count the single root node
        result.levels.append(Level(path=[], fen=fen_of(board), depth=0, engine={}, reference={},
                                   engine_total=1, reference_total=1))
        return finish("agree")
    except EngineError as exc:
        exc.partial = result
        raise


def _same_again(engine: Engine, board: chess.Board, fen: str, depth: int, moves: list[str],
                divide: dict[str, int]) -> None:
    """Ask ``engine`` the final node's divide at 1 ply (``depth``) again: a verdict rests on it,
    and an engine whose answers change (uninitialised memory, a race) would otherwise be 'proven'
    wrong by chance. The whole divide must come back the same.
    Raises :class:`UnsteadyEngine` when it does not."""
    again, _ = canonical_divide(board, engine.divide(fen, 1, moves))
    changed = sorted(m for m in set(again) | set(divide) if again.get(m) != divide.get(m))
    if changed:
        raise UnsteadyEngine(engine.name, f"asked twice, it answered differently at {', '.join(changed[:8])} "
                          f"({describe_query(fen, depth, moves)}, asked again): a count that changes cannot be judged")


def _misnamed(result: Localization, divide: dict[str, int], reference: dict[str, int], missing: Sequence[str],
              extra: Sequence[str]) -> None:
    """Add a hypothesis to ``result.evidence`` for each move the engine lists, not legal
    (``extra``), whose nodes equal the reference's below a legal move it leaves out (``missing``):
    it may be that move under a wrong name (a notation bug, not a generator's), which the counts
    cannot tell apart. Counts below depth 1 only (at 1 ply every move counts 1)."""
    for x in sorted(extra):
        same = sorted(m for m in missing if divide[x] > 0 and reference.get(m) == divide[x])
        if same:
            result.evidence.setdefault("hypothesis", []).append(
                f"{x} has {divide[x]} nodes below it, as the reference has below {' and '.join(same)}: it may be "
                f"{'that move' if len(same) == 1 else 'one of them'} under a wrong name (a notation bug, not a missing "
                "and an extra move); the counts cannot tell the two apart")


def _lines_left_out(engine: Engine, board: chess.Board, fen: str, depth: int, moves: list[str], divide: Divide,
                    spelled: dict[str, str], missing: list[str], extra: list[str],
                    result: Localization) -> tuple[list[str], list[str]]:
    """Where the engine's divide at ``depth`` > 1 and the legal moves differ, ask its divide at
    1 ply (its move list) before anything is named, as a divide at depth may leave out or add
    lines that say nothing about the move list:

    - a legal move missing at ``depth`` but listed at 1 ply is generated; its line was left out,
      as engines leave out a move with no nodes below it: it becomes a line of 0 nodes in
      ``divide`` (and ``spelled``), whose count the walk then compares (a steady engine with no
      replies after a knight's move was called unsteady: session 43's oracle hunt);
    - a move that is not legal, listed at ``depth`` with 0 nodes but not at 1 ply, adds nothing
      to any count: its line is dropped from ``divide``;
    - what is left is named: legal moves missing at both depths, moves that are not legal listed
      at 1 ply, or listed at ``depth`` with nodes below them.

    Each case is said in ``result.evidence["proven"]``. Returns the ``(missing, extra)`` left."""
    again, again_spelled = canonical_divide(board, engine.divide(fen, 1, moves))
    proven = result.evidence.setdefault("proven", [])
    zero = [m for m in missing if m in again]
    for move in zero:
        divide[move] = 0
        spelled[move] = again_spelled[move]
    if zero:
        proven.append(f"its divide at depth {depth} at {fen_of(board)} gives no line for {', '.join(zero)}, which its "
                      "divide at 1 ply lists: taken as 0 nodes below each (an engine may leave out a move with "
                      "no nodes below it)")
    dropped = [m for m in extra if m not in again and divide[m] == 0]
    for move in dropped:
        del divide[move]
        divide.listed.pop(move, None)
    if dropped:
        proven.append(f"its divide at depth {depth} at {fen_of(board)} lists {', '.join(dropped)}, not legal, with 0 "
                      "nodes, and its divide at 1 ply does not: lines that add nothing to any count, left out")
    deep_only = [m for m in extra if m not in again and m not in dropped]
    if deep_only:
        proven.append(f"its divide at depth {depth} at {fen_of(board)} counts nodes below "
                      f"{', '.join(f'{m} ({divide[m]})' for m in deep_only)}, not legal, which its divide at 1 ply "
                      "does not list")
    if not proven:
        del result.evidence["proven"]
    return [m for m in missing if m not in zero], [m for m in extra if m not in dropped]


def _check_reproduction(result: Localization, engine: Engine, board: chess.Board, depth: int,
                        listed: set[str]) -> None:
    """Set ``result.reproduces_from_fen``: ask the engine about the standalone FEN, one ply deep,
    and compare its moves with ``listed``, the reference's moves there (what the walk compared
    with: judged against python-chess's instead, a wrong reference made a right engine look as if
    make-move carried its state wrongly).

    Only meaningful below the root; engine failures here leave it None.
    """
    if not board.move_stack:
        return
    try:
        alone, _ = canonical_divide(board, engine.divide(fen_of(board), 1))
    except Exception:  # the FEN alone may be something the engine cannot read; say nothing then
        return
    if result.missing or result.extra:
        result.reproduces_from_fen = (sorted(listed - alone.keys()) == result.missing
                                      and sorted(alone.keys() - listed) == result.extra)
    else:
        result.reproduces_from_fen = any(alone.get(m, 1) != 1 for m in alone)
