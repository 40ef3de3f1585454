"""Explain why a total-only engine's count of one node is wrong although every legal child agrees.

:func:`oracle.drill.drill` walks a total-only engine down to a node ``N`` where the engine's count
differs from the reference's but every legal child, handed to the engine as its own FEN, agrees
(or where one ply is left). The node's move list, a move's make, or the engine's tree walk is then
wrong, and the children's FENs cannot tell which: the illegal extra move is never handed to the
engine, a missing move's child is counted right, and a state bug of make-move vanishes when the
child is written as a FEN. This module turns that node into a hypothesis test.

**The local surplus.** For ``k`` = 1, 2, ... the engine counts the node itself, ``E(N, k)``, and
every legal child from its own FEN, ``E(c, k - 1)``. The local surplus

    L(k) = E(N, k) - sum over legal children c of E(c, k - 1)

is what the node adds on its own: whatever the engine gets wrong *inside* a child's subtree is in
both terms and cancels, so long as the engine counts a child reached by a move as it counts the
child's FEN. ``L(1)`` is the engine's number of moves at ``N`` minus the number of legal moves:
when it is not zero the move list is proven wrong. Every term is the engine's own count.

**Hypotheses.** Each one predicts ``L(k)`` from counts the engine itself gives:

- *missing* legal move ``m``: ``-E(c_m, k - 1)``;
- *extra* move ``x`` (a move engines generate by mistake: python-chess's pseudo-legal moves that
  leave the king in check, castling out of, through or into check or with a piece in the way,
  a pawn reaching the last rank without promoting, a double push over a piece, a knight, king or
  pawn-capture step that wraps around the board's edge): ``+E(after x, k - 1)``, the engine's
  count of the FEN after ``x`` (python-chess plays it); where the engine cannot read that FEN the
  prediction is unknown at ``k >= 2`` and the hypothesis cannot be named;
- a legal move generated *twice*: ``+E(c_m, k - 1)``;
- *state* carried wrongly by the make of ``m``: the child's FEN with one field changed (castling
  rights kept or lost, an en passant square not set, kept one ply too long or set after a single
  push, the halfmove clock near the fifty-move limit): ``E(variant, k - 1) - E(c_m, k - 1)``.

Move-list hypotheses are single moves, natural classes of moves (every en passant capture, every
under-promotion, every castling move, every king step into check, ...) and pairs of those; state
hypotheses are one move, or one change applied to every child it applies to (make-move keeps the
en passant square after *every* move), or, for a right lost, any subset of the children (an
unmake that forgets the right after some sibling: an order the counts cannot see).

**Verdicts.** A hypothesis *fits* when it predicts ``L(k)`` exactly at every probed ``k``. One
fitting hypothesis, whose predictions were all checked, is named (``moves``, ``count`` for a move
generated twice, ``state``); several are ``candidates``, ranked (fewest moves, then en passant,
castling, promotions, king moves first), and the text says the counts cannot decide; none, with
``L(1) != 0``, is ``candidates`` with the move-count error proven and nothing named; none, with
``L(1) == 0``, is ``tree_walk``: the engine walks its tree wrongly or carries state from a move
into its children. What is proven is arithmetic in the engine's own counts; that the fitting
hypothesis is the bug is a hypothesis, and the text says so.

Cost: the node at depths ``1 .. K`` and every child at ``0 .. K - 1`` (``K = max(d, 3)``, so a
node with one ply left is probed two plies deeper), plus the FENs of the hypotheses that survive
the shallower depths: together well under the node's own count at ``d`` plies for ``d >= 3``.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import chess

from oracle.engines import Engine, EngineError, fen_of
from oracle.localize import UnsteadyEngine

__all__ = ["Explanation", "Hypothesis", "OutOfTime", "explain"]

#: A node with fewer plies left is probed this deep (cheap: a few thousand nodes).
MIN_PROBE_DEPTH = 3
#: Seconds a program may take on a hypothesis's FEN: this factor times its slowest legal count, at least the minimum.
HYPOTHESIS_TIMEOUT_FACTOR, HYPOTHESIS_TIMEOUT_MIN = 20.0, 10.0
#: While several hypotheses fit, probe at most this many plies beyond the node's own depth.
MAX_EXTRA_PLIES = 3
#: Subsets of children tried for a right lost by an unmake (2 ** this many at most).
MAX_SUBSET_MEMBERS = 12


class OutOfTime(Exception):
    """The drill's ``max_seconds`` ran out during the probes."""


@dataclass
class Hypothesis:
    """One explanation of a node's local surplus.

    ``kind``: ``"missing"``, ``"extra"``, ``"twice"`` (a legal move generated twice) or ``"state"``;
    ``moves``: canonical UCI moves concerned (for ``"extra"`` possibly not legal);
    ``label``: what kind of mistake (``"en passant that exposes the king"``, ``"keeps castling
    right K"``); ``fens``: per move, the FEN whose count enters the prediction (the position after
    an extra move, the variant a state bug leaves); ``rank``: ordering key (lower first).
    """

    kind: str
    moves: tuple[str, ...]
    label: str
    fens: tuple[str, ...] = ()
    rank: int = 50
    state: dict = field(default_factory=dict)

    def text(self) -> str:
        """One sentence for a person."""
        moves = " ".join(self.moves)
        if self.kind == "missing":
            return f"the engine does not generate {moves} ({self.label})"
        if self.kind == "extra":
            return f"the engine generates {moves}, which is not legal ({self.label})"
        if self.kind == "twice":
            return f"the engine generates {moves} twice"
        after = f"after each of {', '.join(self.moves)}" if len(self.moves) > 1 else f"after {moves}"
        silent = self.state.get("silent", [])
        tail = (f"; after {len(silent)} other move{'s' * (len(silent) != 1)} ({', '.join(silent)}) the same change "
                f"would alter no count probed, so the counts cannot tell what the engine has there" if silent else "")
        has = "the FEN has" if len(self.moves) == 1 else "the FENs have"
        return (f"{after} the engine counts as if the position had {self._each('as_if')} "
                f"({has} {self._each('fen_has')}): its {self.state['blame']}{tail}")

    def _each(self, key: str) -> str:
        """``state[key]`` for this hypothesis's moves: one value when every move has the same,
        else each move's own (``e3 after e2e4, g3 after g2g4``, from ``state["per_move"]``), for
        exactly the moves it names (a hypothesis cut to fewer moves names only theirs)."""
        per_move = self.state.get("per_move", {})
        values = [per_move[m][key] for m in self.moves if m in per_move]
        if len(values) != len(self.moves) or len(set(values)) == 1:
            return values[0] if values and len(set(values)) == 1 else self.state[key]
        return ", ".join(f"{value} after {move}" for move, value in zip(self.moves, values))


@dataclass
class Explanation:
    """The result of :func:`explain`: the probes, the fitting hypotheses and the verdict.

    ``kind``: ``"moves"``, ``"count"``, ``"state"``, ``"candidates"`` or ``"tree_walk"``;
    ``node``: ``{k: E(N, k)}``; ``children``: ``{k: sum of E(c, k - 1)}``; ``surplus``: ``{k: L(k)}``
    (all in nodes); ``fits``: fitting hypotheses, best first (each a tuple of :class:`Hypothesis`);
    ``tested``: how many hypotheses were tested; ``unknown``: per fitting hypothesis, the depths
    where its prediction could not be computed; ``engine_calls`` / ``seconds``: the probes' cost.
    """

    kind: str
    node: dict[int, int]
    children: dict[int, int]
    surplus: dict[int, int]
    fits: list[tuple[Hypothesis, ...]]
    unknown: list[list[int]]
    tested: int
    engine_calls: int = 0
    seconds: float = 0.0


class _Prober:
    """The engine's counts of FENs, cached; ``None`` where the engine cannot count a FEN that only a
    hypothesis needs (an illegal position, say). A program with a ``timeout`` gets a shorter one
    for those FENs (:data:`HYPOTHESIS_TIMEOUT_FACTOR` times its slowest count of a legal position,
    at least :data:`HYPOTHESIS_TIMEOUT_MIN` seconds): a program may loop on a position without a
    king to capture, and one such FEN must not cost the whole ``--timeout``."""

    def __init__(self, engine: Engine, deadline: float | None, on_call: Callable[[], None] | None = None):
        self.engine, self.deadline, self.on_call = engine, deadline, on_call
        self.cache: dict[tuple[str, int], int | None] = {}
        self.legal: set[tuple[str, int]] = set()  # the keys of the node's and the legal children's counts
        self.calls = 0
        self.slowest = 0.0

    def seed(self, fen: str, depth: int, nodes: int) -> None:
        self.cache[(fen, depth)] = nodes
        self.legal.add((fen, depth))

    def count(self, fen: str, depth: int, *, required: bool = True) -> int | None:
        """``E(fen, depth)``; engine failures raise when ``required``, else give None."""
        if depth == 0:
            return 1
        key = (fen, depth)
        if required:
            self.legal.add(key)
        if key not in self.cache:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise OutOfTime
            self.calls += 1
            limit = getattr(self.engine, "timeout", None)
            if not required and limit is not None:
                self.engine.timeout = min(limit, max(HYPOTHESIS_TIMEOUT_MIN, HYPOTHESIS_TIMEOUT_FACTOR * self.slowest))
            began = time.monotonic()
            try:
                self.cache[key] = self.engine.perft(fen, depth)
            except EngineError:
                if required:
                    raise
                self.cache[key] = None
            finally:
                if not required and limit is not None:
                    self.engine.timeout = limit
            if required:
                self.slowest = max(self.slowest, time.monotonic() - began)
            if self.on_call is not None:
                self.on_call()
        return self.cache[key]

    def recheck(self) -> tuple[tuple[str, int], int, int] | None:
        """Ask every count of the node and its legal children that the prober holds (seeded or
        asked; not a hypothesis's position, which the engine may refuse) once more; the first that
        comes back different as ``((fen, depth), first, again)``, else None. Raises
        :class:`OutOfTime` past the deadline, EngineError when the engine fails."""
        for key in sorted(self.legal):
            first = self.cache.get(key)
            if first is None:
                continue
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise OutOfTime
            self.calls += 1
            again = self.engine.perft(*key)
            if self.on_call is not None:
                self.on_call()
            if again != first:
                return key, first, again
        return None


def explain(engine: Engine, board: chess.Board, children: dict[str, str], depth: int, node_count: int,
            child_counts: dict[str, int], *, deadline: float | None = None,
            budget_nodes: int = 1_000_000, on_call: Callable[[], None] | None = None) -> Explanation:
    """Test move-list and state hypotheses at one node (see the module docstring).

    ``board``: the node (python-chess, Chess960 rules where needed); ``children``: canonical UCI of
    every legal move -> the child's standalone FEN; ``depth``: plies left at the node;
    ``node_count``: the engine's count of the node at ``depth``; ``child_counts``: the engine's
    count of each child at ``depth - 1`` where known; ``deadline``: ``time.monotonic()`` value
    after which :class:`OutOfTime` is raised; ``budget_nodes``: while several hypotheses fit, the
    node is probed one ply deeper (up to ``depth + 3``) if its count there is estimated at most this
    many nodes; ``on_call()``: called after each engine call (progress). Returns an :class:`Explanation`.
    Raises :class:`oracle.engines.EngineError` when the engine fails on the node or a legal child,
    and :class:`oracle.localize.UnsteadyEngine` when, before a verdict that proves no hypothesis
    (``candidates``, ``tree_walk``), a count asked again comes back different (each is asked twice).
    """
    start = time.monotonic()
    prober = _Prober(engine, deadline, on_call)
    node_fen = fen_of(board)
    prober.seed(node_fen, depth, node_count)
    for move, nodes in child_counts.items():
        prober.seed(children[move], depth - 1, nodes)
    top = max(depth, MIN_PROBE_DEPTH)
    ks: list[int] = []
    node: dict[int, int] = {}
    sums: dict[int, int] = {}
    surplus: dict[int, int] = {}

    def probe(k: int) -> None:
        node[k] = prober.count(node_fen, k)
        sums[k] = sum(prober.count(fen, k - 1) for fen in children.values())
        surplus[k] = node[k] - sums[k]
        ks.append(k)

    for k in range(1, top + 1):
        probe(k)

    def child(move: str, j: int) -> int:
        return prober.count(children[move], j)

    def effect(h: Hypothesis, k: int) -> int | None:
        j = k - 1
        if h.kind == "missing":
            return -sum(child(m, j) for m in h.moves)
        if h.kind == "twice":
            return sum(child(m, j) for m in h.moves)
        counts = [prober.count(f, j, required=False) for f in h.fens]
        if None in counts:
            return None
        return sum(counts) - (sum(child(m, j) for m in h.moves) if h.kind == "state" else 0)

    def deepen(alive: list) -> list:
        """More depths while several hypotheses fit, one at least with predictions a deeper count
        can refute, and the node's next count is affordable."""
        while len(alive) > 1 and any(not u for _, u in alive) and ks[-1] < depth + MAX_EXTRA_PLIES:
            k = ks[-1]
            guess = node[k] * max(1, node[k] // max(1, node[k - 1])) if k > 1 else node[k] ** 2
            if guess > budget_nodes:
                break
            probe(k + 1)
            alive = _fitting(alive, [k + 1], surplus, effect)
        return alive

    move_list = _move_list_hypotheses(board, children)
    combos = _unique([(h,) for h in move_list]
                     + [(a, b) for a, b in itertools.combinations(move_list, 2) if _related(a, b)])
    alive = deepen(_fitting([(c, []) for c in combos], ks, surplus, effect))
    tested = len(combos)
    if not alive and surplus[1] == 0:
        state = _state_hypotheses(board, children)
        alive = deepen(_fitting([((h,), []) for h in state], ks, surplus, effect))
        tested += len(state)
        if not alive:
            subsets, count = _subset_fits(board, children, ks, surplus, effect)
            alive, tested = [(c, []) for c in subsets], tested + count
    alive.sort(key=lambda a: (len(a[1]), _combo_rank(a[0])))
    alive = _one_rule(_unique_state([_evidenced(c, u, ks, effect) for c, u in alive]))
    if len(alive) == 1 and not alive[0][1] and alive[0][0][0].kind == "state":
        # a state named must be the only state change that fits these moves' counts
        others = _state_alternatives(board, children, alive[0][0][0])
        rivals = _fitting([((h,), []) for h in others], ks, surplus, effect)
        tested += len(others)
        alive += [(c, u) for c, u in rivals if not u and c[0].fens != alive[0][0][0].fens]
    fits, unknown = [c for c, _ in alive], [u for _, u in alive]
    if len(fits) == 1 and not unknown[0]:
        kinds = {h.kind for h in fits[0]}
        kind = "state" if kinds == {"state"} else "count" if kinds == {"twice"} else "moves"
    elif fits or surplus[1] != 0:
        kind = "candidates"
    else:
        kind = "tree_walk"
    if kind in ("candidates", "tree_walk"):  # no hypothesis proven: an engine whose answers change fits these
        changed = prober.recheck()            # too (session 43's hunt: a random one was called a tree-walk bug)
        if changed is not None:
            (fen, k), first, again = changed
            raise UnsteadyEngine(engine.name, f"asked twice for perft({fen!r}, {k}), it answered {first} and then "
                                 f"{again}: a count that changes cannot be judged")
    return Explanation(kind=kind, node=node, children=sums, surplus=surplus, fits=fits, unknown=unknown,
                       tested=tested, engine_calls=prober.calls, seconds=time.monotonic() - start)


def _evidenced(combo: tuple, unknown: list, ks: list[int], effect) -> tuple:
    """A fitting state hypothesis cut to the moves whose variant's count differs from the child's
    at some probed depth: after the others the named change alters no count, so the counts prove
    nothing of them (issue 34 N9: "every child loses Q" named 42 moves where only the 5 moves of a
    blocking bishop were seen). Those are kept in ``state["silent"]``. Other combos unchanged."""
    if len(combo) != 1 or combo[0].kind != "state" or len(combo[0].moves) < 2 or unknown:
        return combo, unknown
    h = combo[0]
    seen, silent = [], []
    for move, fen in zip(h.moves, h.fens):
        one = Hypothesis("state", (move,), h.label, fens=(fen,), state=h.state)
        (seen if any(effect(one, k) for k in ks) else silent).append((move, fen))
    if not seen or not silent:
        return combo, unknown
    state = dict(h.state, silent=sorted(m for m, _ in silent))
    return (Hypothesis("state", tuple(m for m, _ in seen), h.label, fens=tuple(f for _, f in seen), rank=h.rank,
                       state=state),), unknown


def _unique_state(alive: list) -> list:
    """One of each state hypothesis that names the same positions after the same moves (a group
    and a subset, cut to the moves seen, can name the same)."""
    seen, out = set(), []
    for combo, unknown in alive:
        key = tuple((h.kind, h.moves, h.fens) for h in combo)
        if key not in seen:
            seen.add(key)
            out.append((combo, unknown))
    return out


def _state_alternatives(board: chess.Board, children: dict[str, str], named: Hypothesis) -> list[Hypothesis]:
    """Every other state change applied to the named moves alike: castling rights (up to two of the
    child's rights lost, at most one of the node's kept, or all lost, or all kept), and each change
    :func:`_variants` knows. A named state is a verdict only when none of these fits too."""
    node_rights = set(_fields(fen_of(board))[2].replace("-", ""))
    fields = {m: _fields(children[m]) for m in named.moves}
    letters = sorted(node_rights | {r for f in fields.values() for r in f[2].replace("-", "")})
    changes = [(frozenset(a), frozenset(b)) for na in range(3) for a in itertools.combinations(letters, na)
               for nb in range(2) for b in itertools.combinations(sorted(node_rights), nb) if not set(a) & set(b)]
    changes += [(frozenset(letters), frozenset()), (frozenset(), frozenset(node_rights))]
    out: dict[tuple[str, ...], Hypothesis] = {}
    for lost, kept in changes:
        fens = []
        for m in named.moves:
            f = fields[m]
            rights = _sort_rights((set(f[2].replace("-", "")) - lost) | kept)
            fens.append(" ".join(f[:2] + [rights] + f[3:]))
        if tuple(fens) == tuple(" ".join(fields[m]) for m in named.moves):
            continue
        change = " and ".join(([f"loses {_rights_text(_sort_rights(set(lost)))}"] if lost else [])
                              + ([f"keeps {_rights_text(_sort_rights(set(kept)))}"] if kept else []))
        rights0 = fens[0].split()[2]
        out.setdefault(tuple(fens), Hypothesis(
            "state", named.moves, change, fens=tuple(fens), rank=33 + len(lost) + len(kept),
            state={"as_if": _rights_text(rights0) if rights0 != "-" else "no castling rights",
                   "fen_has": _rights_text(fields[named.moves[0]][2]) if fields[named.moves[0]][2] != "-" else "none",
                   "blame": f"make-move or unmake {change}"}))
    by_key: dict[str, list[tuple[str, str, dict]]] = {}
    for m in named.moves:
        for key, fen, state in _variants(board, board.parse_uci(m), children[m]):
            by_key.setdefault(key, []).append((m, fen, state))
    for key, members in by_key.items():
        if len(members) == len(named.moves):
            out.setdefault(tuple(f for _, f, _ in members),
                           Hypothesis("state", named.moves, key, fens=tuple(f for _, f, _ in members), rank=33,
                                      state=dict(members[0][2])))
    out.pop(named.fens, None)
    return list(out.values())


def _one_rule(alive: list) -> list:
    """Fitting state hypotheses that are one rule (the same change, after one move or after every
    move it applies to: "no en passant square after c7c5" and "after each of c7c5, a7a5") make one
    verdict, the one with fewest moves: the other moves' changes alter no count here, so the counts
    show the rule at those moves only."""
    if len(alive) < 2 or any(len(c) != 1 or c[0].kind != "state" or u for c, u in alive):
        return alive
    if len({c[0].label for c, _ in alive}) != 1:
        return alive
    return [min(alive, key=lambda a: (len(a[0][0].moves), a[0][0].moves))]


def _related(a: Hypothesis, b: Hypothesis) -> bool:
    """Whether two move-list mistakes make one plausible bug: two special moves of one kind left out
    or added (two castlings, a knight and a bishop promotion), or legal moves replaced by wrong
    versions of them (a swap: a single missing and a single extra move sharing a square, or a class
    of missing moves and a class of extra ones from and to the same squares, as every queen
    promotion written as a push). Two unrelated mistakes at one node are not tested: they end as
    unnamed ``candidates``, never as a false name."""
    if set(a.moves) & set(b.moves):
        return False
    if a.kind == b.kind and a.kind in ("missing", "extra"):
        return a.rank == b.rank and a.rank < 9
    if {a.kind, b.kind} == {"missing", "extra"}:
        if len(a.moves) == len(b.moves) == 1:
            return bool({a.moves[0][:2], a.moves[0][2:4]} & {b.moves[0][:2], b.moves[0][2:4]})
        return sorted(m[:4] for m in a.moves) == sorted(m[:4] for m in b.moves)
    return False


def _unique(combos: list[tuple[Hypothesis, ...]]) -> list[tuple[Hypothesis, ...]]:
    """One combo per set of (kind, move): a class of one move is that move, a pair is its class."""
    seen: dict[frozenset, tuple[Hypothesis, ...]] = {}
    for combo in combos:
        key = frozenset((h.kind, m) for h in combo for m in h.moves)
        if key not in seen or _combo_rank(combo)[1] < _combo_rank(seen[key])[1]:
            seen[key] = combo
    return list(seen.values())


def _fitting(alive, ks, surplus, effect):
    """The ``(combo, unknown depths)`` pairs of ``alive`` whose predicted surplus equals ``surplus``
    at every k of ``ks`` (an unknown prediction neither fits nor refutes: the k joins the unknown
    list), shallow depths first so that most combos are refuted before their deeper counts are
    asked for."""
    for k in ks:
        kept = []
        for combo, unknown in alive:
            values = [effect(h, k) for h in combo]
            if None in values:
                kept.append((combo, unknown + [k]))
            elif sum(values) == surplus[k]:
                kept.append((combo, unknown))
        alive = kept
    return alive


def _combo_rank(combo) -> tuple:
    return (sum(len(h.moves) for h in combo), sum(h.rank for h in combo), [h.moves for h in combo])


# -- move-list hypotheses ------------------------------------------------------------------------

def _special_rank(board: chess.Board, move: chess.Move) -> tuple[int, str]:
    """Rank and class of a legal move: en passant, castling, promotions, king moves first."""
    if board.is_en_passant(move):
        return 0, "an en passant capture"
    if board.is_castling(move):
        return 1, "castling"
    if move.promotion:
        name = chess.piece_name(move.promotion)
        return (2, "a promotion to a " + name) if move.promotion != chess.QUEEN else (3, "a promotion to a queen")
    if board.piece_type_at(move.from_square) == chess.KING:
        return 4, "a king move"
    if board.is_check():
        return 5, "an answer to a check"
    return 9, "a legal move"


def _move_list_hypotheses(board: chess.Board, children: dict[str, str]) -> list[Hypothesis]:
    """Missing and twice-generated legal moves (one by one and by class) and extra candidates."""
    out: list[Hypothesis] = []
    classes: dict[str, list[str]] = {}
    legal = {board.uci(m): m for m in board.legal_moves}
    for uci, move in legal.items():
        rank, label = _special_rank(board, move)
        out.append(Hypothesis("missing", (uci,), label, rank=rank))
        out.append(Hypothesis("twice", (uci,), label, rank=rank + 20))
        if rank < 9:
            classes.setdefault(label, []).append(uci)
        if move.promotion and move.promotion != chess.QUEEN:
            classes.setdefault("an under-promotion", []).append(uci)
        if move.promotion:
            classes.setdefault("a promotion", []).append(uci)
    for label, moves in classes.items():
        if len(moves) > 1:
            rank = min(h.rank for h in out if h.kind == "missing" and h.moves[0] in moves)
            out.append(Hypothesis("missing", tuple(sorted(moves)), _every(label), rank=rank))
        if label == "a king move":  # squares a wrong attack test calls attacked: any few king moves
            out += [Hypothesis("missing", subset, "some king moves", rank=4)
                    for subset in _subsets(sorted(moves))]
    extras = _extra_candidates(board, set(legal))
    by_label: dict[str, list[Hypothesis]] = {}
    for h in extras:
        by_label.setdefault(h.label, []).append(h)
    out += extras
    for label, group in by_label.items():
        if len(group) > 1:
            out.append(Hypothesis("extra", tuple(m for h in group for m in h.moves), _every(label),
                                  fens=tuple(f for h in group for f in h.fens), rank=min(h.rank for h in group)))
        if label == "a king step into check":
            fens = {h.moves[0]: h.fens[0] for h in group}
            out += [Hypothesis("extra", subset, "some king steps into check", fens=tuple(fens[m] for m in subset),
                               rank=4) for subset in _subsets(sorted(fens))]
    return out


def _subsets(moves: list[str]) -> list[tuple[str, ...]]:
    """Subsets of 3 .. n-1 of a king's at most 8 moves (1, 2 and all are tested already)."""
    return [c for size in range(3, len(moves)) for c in itertools.combinations(moves, size)]


def _every(label: str) -> str:
    """``"an en passant capture"`` -> ``"every en passant capture"``; ``"castling"`` -> ``"every castling move"``."""
    for article in ("a ", "an "):
        if label.startswith(article):
            return "every " + label[len(article):]
    return f"every {label} move"


def _after(board: chess.Board, move: chess.Move) -> str:
    """The FEN after ``move`` played by python-chess, legal or not."""
    copy = board.copy(stack=False)
    copy.push(move)
    return fen_of(copy)


def _extra_candidates(board: chess.Board, legal: set[str]) -> list[Hypothesis]:
    """Moves a move generator plausibly makes by mistake at ``board`` (none of them legal)."""
    found: dict[str, Hypothesis] = {}
    us = board.turn
    own = board.occupied_co[us]

    def add(move: chess.Move, label: str, rank: int) -> None:
        uci = board.uci(move) if not board.is_castling(move) else _castle_uci(board, move)
        if uci in legal or uci in found:
            return
        try:
            fen = _after(board, move)
        except (ValueError, AssertionError, IndexError):
            return
        found[uci] = Hypothesis("extra", (uci,), label, fens=(fen,), rank=rank)

    checked = board.is_check()
    checkers = board.checkers()
    for move in board.generate_pseudo_legal_moves():
        if board.is_legal(move) or board.is_castling(move):
            continue
        piece = board.piece_type_at(move.from_square)
        if board.is_en_passant(move):
            add(move, "an en passant capture that exposes the king", 0)
        elif piece == chess.KING:
            add(move, "a king step into check", 4)
        elif board.is_pinned(us, move.from_square):
            add(move, "a move of a pinned piece off its line", 6)
        elif len(checkers) > 1 and _answers_one(board, move, checkers):
            add(move, "a move that answers only one of two checks", 5)
        elif checked:
            add(move, "a move that does not answer the check", 5)
    for rook in chess.scan_forward(board.clean_castling_rights() & own & chess.BB_BACKRANKS):
        king = board.king(us)
        if king is None or chess.square_rank(king) != chess.square_rank(rook):
            continue
        move = chess.Move(king, rook)  # king takes own rook: python-chess's Chess960 encoding
        label = ("castling out of check" if checked else
                 "castling with a piece in the way" if _castle_blocked(board, king, rook) else
                 "castling through or into an attacked square")
        add(move, label, 1)
    for move in board.legal_moves:  # a pawn that reaches the last rank and stays a pawn
        if move.promotion == chess.QUEEN:
            add(chess.Move(move.from_square, move.to_square), "a pawn reaching the last rank without promoting", 2)
    step = 8 if us == chess.WHITE else -8
    for pawn in chess.scan_forward(board.pawns & own):
        one, two = pawn + step, pawn + 2 * step
        start = chess.square_rank(pawn) == (1 if us == chess.WHITE else 6)
        if start and board.piece_at(one) and not board.piece_at(two):
            add(chess.Move(pawn, two), "a double pawn push over a piece", 7)
    for square in chess.scan_forward(own & (board.knights | board.kings | board.pawns)):
        piece = board.piece_type_at(square)
        deltas = {chess.KNIGHT: (6, 10, 15, 17, -6, -10, -15, -17), chess.KING: (1, 7, 9, -1, -7, -9),
                  chess.PAWN: (7, 9) if us == chess.WHITE else (-7, -9)}[piece]
        for delta in deltas:
            to = square + delta
            if not 0 <= to < 64 or own & chess.BB_SQUARES[to]:
                continue
            if chess.square_distance(square, to) <= 2 and abs(chess.square_file(square) - chess.square_file(to)) <= 2:
                continue  # a real step, not a wrap-around
            if piece == chess.PAWN and not board.occupied_co[not us] & chess.BB_SQUARES[to]:
                continue
            if piece == chess.PAWN and chess.square_rank(to) in (0, 7):
                continue
            add(chess.Move(square, to), f"a {chess.piece_name(piece)} step that wraps around the board's edge", 8)
    return list(found.values())


def _answers_one(board: chess.Board, move: chess.Move, checkers: chess.SquareSet) -> bool:
    """Whether ``move`` captures one of the checkers or blocks one check (double check)."""
    king = board.king(board.turn)
    return any(move.to_square == c or chess.BB_SQUARES[move.to_square] & chess.between(king, c) for c in checkers)


def _castle_uci(board: chess.Board, move: chess.Move) -> str:
    """A castling move in the node's canonical notation (king-takes-rook under Chess960 rules)."""
    if board.chess960:
        return move.uci()
    king_to = chess.square(6 if move.to_square > move.from_square else 2, chess.square_rank(move.from_square))
    return chess.Move(move.from_square, king_to).uci()


def _castle_blocked(board: chess.Board, king: int, rook: int) -> bool:
    rank = chess.square_rank(king)
    king_to = chess.square(6 if rook > king else 2, rank)
    rook_to = chess.square(5 if rook > king else 3, rank)
    path = (chess.between(king, king_to) | chess.BB_SQUARES[king_to] | chess.between(rook, rook_to)
            | chess.BB_SQUARES[rook_to]) & ~chess.BB_SQUARES[king] & ~chess.BB_SQUARES[rook]
    return bool(path & board.occupied)


# -- state hypotheses -----------------------------------------------------------------------------

def _fields(fen: str) -> list[str]:
    parts = fen.split()
    return parts + ["0", "1"][len(parts) - 4:] if len(parts) < 6 else parts


def _rights_text(rights: str) -> str:
    return f"castling rights {rights}" if len(rights) > 1 else f"castling right {rights}"


def _sort_rights(rights: set[str]) -> str:
    text = "".join(sorted((r for r in rights if r.isupper()), key="KQABCDEFGH".index))
    return (text + "".join(sorted((r for r in rights if r.islower()), key="kqabcdefgh".index))) or "-"


def _variants(board: chess.Board, move: chess.Move, child_fen: str) -> list[tuple[str, str, dict]]:
    """``(key, variant FEN, state)`` for one child: what a wrong make-move could leave instead."""
    node = _fields(fen_of(board))
    child = _fields(child_fen)
    out = []
    had = set(node[2].replace("-", ""))
    has = set(child[2].replace("-", ""))
    moved = board.piece_type_at(move.from_square)
    if moved == chess.KING:
        cause = "after a king move"
    elif board.is_capture(move) and board.piece_type_at(move.to_square) == chess.ROOK:
        cause = "after its rook is captured"
    elif moved == chess.ROOK:
        cause = "after its rook moves"
    else:
        cause = "after this move"
    for right in sorted(had - has):
        rights = _sort_rights(has | {right})
        out.append((f"keeps {right} {cause}", " ".join(child[:2] + [rights] + child[3:]),
                    {"as_if": _rights_text(rights), "fen_has": _rights_text(child[2]) if has else "none",
                     "blame": f"make-move keeps castling right {right} {cause}"}))
    if len(had - has) > 1:
        rights = _sort_rights(had)
        out.append((f"keeps all rights {cause}", " ".join(child[:2] + [rights] + child[3:]),
                    {"as_if": _rights_text(rights), "fen_has": _rights_text(child[2]) if has else "none",
                     "blame": f"make-move keeps the castling rights {cause}"}))
    for right in sorted(has):
        rights = _sort_rights(has - {right})
        out.append((f"loses {right}", " ".join(child[:2] + [rights] + child[3:]),
                    {"as_if": _rights_text(rights) if rights != "-" else "no castling rights",
                     "fen_has": _rights_text(child[2]), "blame": f"make-move or unmake loses castling right {right}"}))
    ep_fen = lambda square: " ".join(child[:3] + [square] + child[4:])  # noqa: E731
    if child[3] != "-":
        out.append(("no ep", ep_fen("-"), {"as_if": "no en passant square", "fen_has": child[3],
                                           "blame": "make-move does not set the en passant square after a double push"}))
    elif node[3] != "-":
        out.append(("keeps ep", ep_fen(node[3]), {"as_if": f"the en passant square {node[3]}", "fen_has": "none",
                                                  "blame": "make-move keeps the en passant square one ply too long"}))
    if moved == chess.PAWN and abs(move.to_square - move.from_square) == 8:
        behind = chess.square_name(move.to_square - (8 if board.turn == chess.WHITE else -8))
        out.append(("single push ep", ep_fen(behind), {"as_if": f"the en passant square {behind}", "fen_has": child[3]
                                                       if child[3] != "-" else "none",
                                                       "blame": "make-move sets an en passant square after a single push"}))
    clock = int(child[4]) if child[4].isdigit() else 0
    if max(clock, int(node[4]) if node[4].isdigit() else 0) >= 90:
        for value, what in ((0, "resets"), (int(node[4]) + 1, "does not reset")):
            if value != clock:
                out.append((f"clock {what}", " ".join(child[:4] + [str(value)] + child[5:]),
                            {"as_if": f"the halfmove clock {value}", "fen_has": str(clock),
                             "blame": f"make-move {what} the halfmove clock"}))
    return out


def _state_hypotheses(board: chess.Board, children: dict[str, str]) -> list[Hypothesis]:
    """Each child's variants one by one, and each change applied to every child it applies to."""
    out: list[Hypothesis] = []
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for uci, child_fen in children.items():
        move = board.parse_uci(uci)
        for key, fen, state in _variants(board, move, child_fen):
            out.append(Hypothesis("state", (uci,), key, fens=(fen,), rank=30, state=state))
            groups.setdefault(key, []).append((uci, fen, state))
    for key, members in groups.items():
        if len(members) > 1:
            state = _merged_state([m for m, _, _ in members], [s for _, _, s in members])
            out.append(Hypothesis("state", tuple(m for m, _, _ in members), key, fens=tuple(f for _, f, _ in members),
                                  rank=31, state=state))
    return out


def _merged_state(moves: list[str], states: list[dict]) -> dict:
    """One state for a hypothesis over several moves: each move's own ``as_if`` and ``fen_has`` in
    ``per_move`` (:meth:`Hypothesis.text` names them per move where they differ, never the first
    move's for all), and ``as_if`` / ``fen_has`` over all of them (``e3 after e2e4, g3 after g2g4``)."""
    state = dict(states[0])
    state["per_move"] = {move: {"as_if": s["as_if"], "fen_has": s["fen_has"]} for move, s in zip(moves, states)}
    for key in ("as_if", "fen_has"):
        values = [s[key] for s in states]
        if len(set(values)) > 1:
            state[key] = ", ".join(f"{value} after {move}" for move, value in zip(moves, values))
    return state


def _subset_fits(board, children, ks, surplus, effect):
    """A right lost for some children only (an unmake that forgets it after some sibling): the
    subsets of the children whose count the loss changes, when there are few enough of them."""
    fits, tested = [], 0
    by_key: dict[str, list[Hypothesis]] = {}
    for h in _state_hypotheses(board, children):
        if len(h.moves) == 1 and h.label.startswith("loses "):
            by_key.setdefault(h.label, []).append(h)
    for key, singles in by_key.items():
        vectors = []
        for h in singles:
            values = [effect(h, k) for k in ks]
            if None not in values and any(values):
                vectors.append((h, values))
        if len(vectors) < 2:
            continue
        target = [surplus[k] for k in ks]
        # all of them is the group hypothesis, already tested; with many, all but one or two (an
        # unmake that forgets the right after the first sibling or two, in the engine's own order)
        sizes = range(2, len(vectors)) if len(vectors) <= MAX_SUBSET_MEMBERS else \
            range(max(2, len(vectors) - 2), len(vectors))
        for size in sizes:
            for subset in itertools.combinations(vectors, size):
                tested += 1
                if [sum(v[i] for _, v in subset) for i in range(len(ks))] == target:
                    state = _merged_state([h.moves[0] for h, _ in subset], [h.state for h, _ in subset])
                    state["blame"] = state["blame"].replace("make-move or unmake", "unmake (order-dependent)")
                    fits.append((Hypothesis("state", tuple(h.moves[0] for h, _ in subset), key + " (some moves)",
                                            fens=tuple(h.fens[0] for h, _ in subset), rank=32, state=state),))
    return fits, tested
