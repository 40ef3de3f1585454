"""The oracle catches bugs: deliberately broken engines, and localize names the position and move.

The broken move generators live in ``suites/fake_engines/broken.py``; here they run in-process
(a :class:`PythonChessEngine` whose ``moves`` is the broken generator) and, for a few, as UCI and
perftree subprocesses.
"""
from __future__ import annotations

import sys
import time

import chess
import pytest

from oracle.engines import BaseEngine, PerftreeEngine, PythonChessEngine, UciEngine, board_from, fen_of
from oracle.engines.divide import Divide
from oracle.localize import Localization, canonical_divide, localize

from oracle_fakes import FAKES, Broken, broken

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
POS3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
POS4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"
POS5 = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8"


class Miscount(PythonChessEngine):
    """Counts one node too many below ``broken.MISCOUNT_AT`` at 3 plies, and nowhere else."""

    name = "broken:miscount"

    def _count(self, board, depth):
        nodes = super()._count(board, depth)
        fen, at = broken.MISCOUNT_AT
        return nodes + (depth == at and board.epd().startswith(fen + " "))


def assert_names_the_bug(loc: Localization, bug: str) -> chess.Board:
    """The reported FEN alone shows the disagreement: the broken generator's moves there differ
    from the legal moves by exactly ``missing`` / ``extra``; and the path replays to that FEN."""
    assert loc.kind == "moves", loc.describe()
    replay = board_from(loc.root_fen)
    for move in loc.path:
        replay.push_uci(move)
    assert fen_of(replay) == loc.fen
    board = board_from(loc.fen)
    legal = {board.uci(m) for m in board.legal_moves}
    generated = {board.uci(m) for m in broken.BUGS[bug](board)}
    assert sorted(legal - generated) == loc.missing
    assert sorted(generated - legal) == loc.extra
    assert loc.missing or loc.extra
    assert loc.reproduces_from_fen in (True, None)
    return board


# -- each bug is caught and named ---------------------------------------------------------------


def test_dropped_en_passant():
    loc = localize(Broken("no-ep"), PythonChessEngine(), POS3, 4)
    board = assert_names_the_bug(loc, "no-ep")
    assert len(loc.path) == 3 and loc.extra == []
    assert all(board.is_en_passant(board.parse_uci(m)) for m in loc.missing)
    assert loc.fen.split()[3] != "-"  # the en passant square is in the reported FEN
    assert loc.reproduces_from_fen is True


def test_dropped_underpromotions():
    loc = localize(Broken("no-underpromotion"), PythonChessEngine(), POS4, 3)
    board = assert_names_the_bug(loc, "no-underpromotion")
    assert loc.path == ["b4c5"]
    assert {board.parse_uci(m).promotion for m in loc.missing} == {chess.KNIGHT, chess.BISHOP, chess.ROOK}


def test_dropped_underpromotions_at_the_root():
    loc = localize(Broken("no-underpromotion"), PythonChessEngine(), POS5, 3)
    assert_names_the_bug(loc, "no-underpromotion")
    assert loc.path == [] and loc.missing == ["d7c8b", "d7c8n", "d7c8r"]
    assert loc.reproduces_from_fen is None  # nothing to reproduce: it is the root


def test_castling_through_check():
    loc = localize(Broken("castle-through-check"), PythonChessEngine(), KIWIPETE, 3)
    board = assert_names_the_bug(loc, "castle-through-check")
    assert loc.extra == ["e1g1"] and loc.missing == []
    assert board.is_attacked_by(chess.BLACK, chess.F1) and not board.is_check()


def test_illegal_king_step():
    loc = localize(Broken("illegal-king-step"), PythonChessEngine(), chess.STARTING_FEN, 4)
    board = assert_names_the_bug(loc, "illegal-king-step")
    assert loc.path == ["g1h3", "f7f6", "h3g5"] and loc.extra == ["e8f7"]
    assert board.is_attacked_by(chess.WHITE, chess.F7)


def test_move_generated_twice_is_a_count_error():
    """The first knight move of every position generated twice: the root's divide gives it on two
    lines, so the verdict is at the root (before session 36 the two lines were added and the walk
    went two plies down to where one ply's count showed 2)."""
    loc = localize(Broken("knight-twice"), PythonChessEngine(), KIWIPETE, 3)
    assert loc.kind == "count", loc.describe()
    assert loc.depth_left == 3 and loc.path == []
    (move, (got, want)), = loc.wrong.items()
    board = board_from(loc.fen)
    assert board.piece_type_at(board.parse_uci(move).from_square) == chess.KNIGHT and (got, want) == (2, 1)
    assert "counted 2 times here (3 plies left)" in loc.describe()
    at_one = localize(Broken("knight-twice"), PythonChessEngine(), loc.fen, 1)  # one ply: its count says 2
    assert at_one.kind == "count" and at_one.wrong == loc.wrong and "at the last ply" in at_one.describe()


def test_miscount_at_depth_3_in_one_subtree_is_inconsistent():
    loc = localize(Miscount(), PythonChessEngine(), chess.STARTING_FEN, 5)
    assert loc.kind == "inconsistent", loc.describe()
    assert loc.path == ["e2e4", "e7e5"] and loc.depth_left == 3
    assert loc.fen.startswith(broken.MISCOUNT_AT[0] + " ")
    parent = loc.levels[-2]
    assert parent.engine["e7e5"] == parent.reference["e7e5"] + 1
    assert loc.levels[-1].engine_total == loc.levels[-1].reference_total == parent.reference["e7e5"]
    assert "inconsistent engine" in loc.describe()


def test_chess960_castling_bug_reports_shredder_fen():
    root = "1r4kr/8/8/8/8/8/8/1R4KR b HB - 0 1"
    loc = localize(Broken("no-castling-in-place"), PythonChessEngine(), root, 3)
    assert_names_the_bug(loc, "no-castling-in-place")
    assert loc.missing == ["g1h1"] and len(loc.path) == 1
    assert loc.fen.split()[2] == "HB"  # Shredder-FEN: the rights survive whatever the files


def test_chess960_from_xfen_root():
    root = "r1k1r2q/p1ppp1pp/8/8/8/8/P1PPP1PP/R1K1R2Q w KQkq - 0 1"  # tricky xfen-00
    loc = localize(Broken("castle-through-check"), PythonChessEngine(), root, 3)
    assert loc.agree  # that bug is for standard chess only: the engines agree here
    assert loc.fen.split()[2] == "KQkq"  # in the root's notation (X-FEN), session 28
    assert board_from(loc.fen).fen(shredder=True).split()[2] == "EAea"  # which reads as the same rights


class CountingReference(PythonChessEngine):
    """python-chess, counting the divides it is asked for: how much work a localization costs,
    whatever the machine's speed or load (a wall-clock limit failed at load 6: issue 34 N8)."""

    def __init__(self):
        super().__init__()
        self.asked: list[tuple[int, int]] = []  # (depth, plies of moves from the root) of each divide

    def _divide(self, fen, depth, moves):
        self.asked.append((depth, len(moves)))
        return super()._divide(fen, depth, moves)


def test_planted_depth_5_bug_is_localized_quickly():
    """En passant first appears 5 plies from the start; localized against python-chess with one
    divide a level, each one ply deeper into the tree (no walk of siblings)."""
    reference = CountingReference()
    loc = localize(Broken("no-ep"), reference, chess.STARTING_FEN, 5)
    board = assert_names_the_bug(loc, "no-ep")
    assert len(loc.path) == 4 and loc.depth_left == 1
    assert [board.is_en_passant(board.parse_uci(m)) for m in loc.missing] == [True]
    assert [level.depth for level in loc.levels] == [5, 4, 3, 2, 1]
    assert [plies for _, plies in reference.asked] == list(range(5)), reference.asked  # one divide a level


class Planted(BaseEngine):
    """Our fast cpu engine with one move dropped at the node reached by ``path`` from ``root`` (only
    when reached that way: from any other FEN it counts right, like a bug in carried state)."""

    name = "planted"

    def __init__(self, root: str, path: list[str], dropped: str):
        from oracle.engines import CoreEngine

        self.core, self.root, self.path, self.dropped = CoreEngine("cpu"), root, path, dropped

    def _divide(self, fen, depth, moves):
        counts = self.core.divide(fen, depth, moves)
        k = len(moves)
        if fen != self.root or list(moves) != self.path[:k] or depth < len(self.path) - k + 1:
            return counts
        if k == len(self.path):
            del counts[self.dropped]
        else:  # the subtree through the planted node lacks the dropped move's leaves
            counts[self.path[k]] -= self.core.perft(fen, depth - (len(self.path) - k) - 1, self.path + [self.dropped])
        return counts


@pytest.mark.core
def test_planted_depth_5_bug_in_a_middlegame_worst_case():
    """A bug at one node 4 plies deep, under the most expensive move at every ply (so cheapest-first
    visits every sibling first): found against python-chess with one divide a level."""
    from oracle.engines import CoreEngine

    core, path = CoreEngine("cpu"), []
    for _ in range(4):
        counts = core.divide(POS4, 5 - len(path), path)
        path.append(max(counts, key=counts.get))
    dropped = sorted(core.divide(POS4, 1, path))[0]
    reference = CountingReference()
    loc = localize(Planted(POS4, path, dropped), reference, POS4, 5)
    assert loc.kind == "moves" and loc.path == path and loc.missing == [dropped] and loc.extra == []
    assert loc.reproduces_from_fen is False  # the FEN alone does not show it: the path does
    assert "needs the moves from the root" in loc.describe()
    assert [plies for _, plies in reference.asked] == list(range(5)), reference.asked  # one divide a level


# -- agreement, notation, zero counts, budget ---------------------------------------------------


def test_agreement():
    loc = localize(PythonChessEngine(), PythonChessEngine(cache_size=0), KIWIPETE, 2)
    assert loc.agree and loc.path == [] and loc.missing == loc.extra == []
    assert loc.levels[0].engine_total == loc.levels[0].reference_total == 2039
    assert "agree: 2039 nodes" in loc.describe()
    assert localize(Broken("no-ep"), PythonChessEngine(), KIWIPETE, 0).agree


def test_canonical_divide():
    board = board_from(KIWIPETE)
    counts, spelled = canonical_divide(board, {"e1h1": 5, "E1C1": 3, "a1a8": 1})
    assert counts == {"e1g1": 5, "e1c1": 3, "a1a8": 1}  # a1a8 is not legal: kept as printed
    assert spelled == {"e1g1": "e1h1", "e1c1": "E1C1", "a1a8": "a1a8"}
    # two spellings of one move: castling generated twice, its counts add up
    assert canonical_divide(board, {"e1h1": 5, "e1g1": 5})[0] == {"e1g1": 10}
    board960 = board_from("1r4kr/8/8/8/8/8/8/1R4KR w HBhb - 0 1")
    assert canonical_divide(board960, {"g1h1": 1, "g1b1": 1})[0] == {"g1h1": 1, "g1b1": 1}  # king takes rook


def test_canonical_divide_keeps_the_lines_each_move_came_on():
    """A move an engine's divide gives on two lines (or in two spellings) is one move generated
    twice: ``listed`` keeps how many lines gave it, through the spellings' merge."""
    board = board_from(KIWIPETE)
    read = Divide()
    for move, nodes in (("e1h1", 48), ("e1g1", 48), ("a2a3", 40), ("a2a3", 40), ("a2a4", 41)):
        read.add(move, nodes)
    counts, _ = canonical_divide(board, read)
    assert counts == {"e1g1": 96, "a2a3": 80, "a2a4": 41}
    assert counts.repeated() == {"e1g1": 2, "a2a3": 2} and counts.lines("a2a4") == 1 and counts.lines("h1h2") == 0
    assert canonical_divide(board, {"e1h1": 5, "e1g1": 5})[0].repeated() == {"e1g1": 2}  # a plain dict too


@pytest.mark.parametrize("kind", ["perftree", "uci"])
def test_a_move_given_twice_in_a_divide_above_the_last_ply_is_the_verdict(kind):
    """An engine that generates castling twice, localized at depth 3: its root divide gives e1g1 on
    two lines (48 nodes each), so the verdict is there, the move generated twice. On the old code
    the two lines were added to 96, the walk went down e1g1, found its divide adding up to the
    reference's 48, and called the engine "inconsistent" (session 36's oracle hunt)."""
    fen = "4k3/8/8/8/8/8/8/4K2R w K - 0 1"
    if kind == "perftree":
        engine = PerftreeEngine([sys.executable, str(FAKES / "fake_perftree.py"), "castle-twice"])
    else:
        engine = UciEngine([sys.executable, str(FAKES / "fake_uci.py"), "castle-twice"])
    with engine:
        loc = localize(engine, PythonChessEngine(), fen, 3)
    assert loc.kind == "count" and loc.path == [] and loc.depth_left == 3 and loc.wrong == {"e1g1": [2, 1]}
    text = loc.describe()
    assert "move e1g1 counted 2 times here (3 plies left)" in text and "gives e1g1 on 2 lines" in text
    assert "inconsistent" not in text


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_move_generated_twice_is_named_at_the_smallest_showing_depth_and_deeper(depth):
    """castle-twice from a position whose only castle is e1g1: at 1 ply its count says 2 (the last
    ply), at 2 and 3 plies its root divide gives it on two lines; the same verdict each time, at
    the root, claiming the move only."""
    loc = localize(Broken("castle-twice"), PythonChessEngine(), "4k3/8/8/8/8/8/8/4K2R w K - 0 1", depth)
    assert loc.kind == "count" and loc.path == [] and loc.wrong == {"e1g1": [2, 1]} and loc.depth_left == depth
    assert ("at the last ply" if depth == 1 else f"here ({depth} plies left)") in loc.describe()


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_reference_that_gives_a_move_twice_judges_no_engine_at_any_depth(depth):
    """The castle-twice program as the reference: nothing is judged at 1, 2 or 3 plies."""
    from oracle.engines import EngineError

    with pytest.raises(EngineError, match="no engine can be judged against it"):
        localize(PythonChessEngine(), Broken("castle-twice"), "4k3/8/8/8/8/8/P7/4K2R w K - 0 1", depth)


def test_a_reference_that_gives_a_move_twice_judges_no_engine():
    """The same castling-twice program as the reference, a right engine under test: the reference's
    divide at one ply gives e1g1 on two lines, so nothing is judged (an EngineError naming the
    reference). On the old code its one-ply list was taken as the legal moves and the right engine
    was called "inconsistent ... as the reference does"."""
    from oracle.engines import EngineError

    reference = PerftreeEngine([sys.executable, str(FAKES / "fake_perftree.py"), "castle-twice"], name="dup-ref")
    with pytest.raises(EngineError, match="dup-ref.*e1g1 .2 nodes on 2 lines.: no engine can be judged against it"):
        localize(PythonChessEngine(), reference, "4k3/8/8/8/8/8/P7/4K2R w K - 0 1", 3)


def test_totals_and_counts_in_other_digits_are_refused():
    """README: a total is ASCII digits. Arabic-Indic digits in a perftree script's output were read
    as 400 (a regular expression's digit class and ``str.isdigit`` take any script's digits)."""
    from oracle.engines.perftree import _parse_perftree
    from oracle.engines.uci import _NODES_LINE, _UCI_LINE

    assert _parse_perftree("e2e4 400\n\n400\n") == {"e2e4": 400}
    for text in ("e2e4 \u0664\u0660\u0660\n\n400\n", "e2e4 400\n\n\u0664\u0660\u0660\n"):
        with pytest.raises(ValueError):
            _parse_perftree(text)
    assert _UCI_LINE.fullmatch("e2e4: 400") and not _UCI_LINE.fullmatch("e2e4: \u0664\u0660\u0660")
    assert _NODES_LINE.fullmatch("Nodes searched: 400") and not _NODES_LINE.fullmatch("Nodes searched: \uff14\uff10")


class OmitsZeros(BaseEngine):
    """A correct engine that leaves out moves whose subtree is empty (some engines print no 0s)."""

    name = "omits-zeros"

    def _divide(self, fen, depth, moves):
        return {m: n for m, n in PythonChessEngine().divide(fen, depth, moves).items() if n}


def test_engine_may_omit_moves_with_empty_subtrees():
    fen = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8 is mate: 0 nodes below it at depth 2
    assert PythonChessEngine().divide(fen, 2)["a1a8"] == 0
    assert localize(OmitsZeros(), PythonChessEngine(), fen, 2).agree


def test_max_seconds_gives_up():
    class Slow(Broken):
        def divide(self, fen, depth, moves=()):
            time.sleep(0.2)
            return super().divide(fen, depth, moves)

    loc = localize(Slow("no-ep"), PythonChessEngine(), POS3, 4, max_seconds=0.1)
    assert loc.kind == "gave_up" and loc.levels
    assert "gave up" in loc.describe()


def test_localization_round_trips_through_a_dict():
    loc = localize(Broken("no-ep"), PythonChessEngine(), POS3, 4)
    assert Localization.from_dict(loc.to_dict()) == loc


def test_bad_input():
    with pytest.raises(ValueError):
        localize(PythonChessEngine(), PythonChessEngine(), "not a fen", 2)
    with pytest.raises(ValueError):
        localize(PythonChessEngine(), PythonChessEngine(), KIWIPETE, -1)


# -- subprocess engines -------------------------------------------------------------------------


def test_uci_engine_printing_king_takes_rook_castling_agrees():
    with UciEngine([sys.executable, str(FAKES / "fake_uci.py"), "king-takes-rook"]) as engine:
        assert "e1h1" in engine.divide(KIWIPETE, 1)
        assert localize(engine, PythonChessEngine(), KIWIPETE, 3).agree


def test_uci_broken_engine_is_localized_like_the_in_process_one():
    with UciEngine([sys.executable, str(FAKES / "fake_uci.py"), "no-ep"]) as engine:
        loc = localize(engine, PythonChessEngine(), POS3, 4)
    assert_names_the_bug(loc, "no-ep")
    assert loc.path == localize(Broken("no-ep"), PythonChessEngine(), POS3, 4).path


def test_perftree_broken_engine_is_localized():
    engine = PerftreeEngine([sys.executable, str(FAKES / "fake_perftree.py"), "castle-through-check"])
    loc = localize(engine, PythonChessEngine(), KIWIPETE, 3)
    assert_names_the_bug(loc, "castle-through-check")
    assert loc.extra == ["e1g1"]


def fake_uci(*args: str) -> UciEngine:
    return UciEngine([sys.executable, str(FAKES / "fake_uci.py"), *args])


@pytest.mark.parametrize("depth", [2, 3, 4])  # the smallest depth that shows it, and one and two plies deeper
def test_a_move_left_out_of_a_deep_divide_for_its_empty_subtree_is_followed_not_called_unsteady(depth):
    """An engine that leaves out a move with 0 nodes below it (as many do), and has no reply to a
    knight on f3: its divide deeper than 1 ply has no line for g1f3, its divide at 1 ply does. A
    steady engine: the walk takes the line as 0 nodes, follows g1f3 and names the 20 replies it does
    not generate there (session 43's hunt: it was called an engine whose counts change, exit 2)."""
    with fake_uci("good", "--omit-zero", "--mute-square", "f3") as engine:
        loc = localize(engine, PythonChessEngine(), chess.STARTING_FEN, depth)
    assert loc.kind == "moves" and loc.path == ["g1f3"] and len(loc.missing) == 20 and not loc.extra, loc.describe()
    assert loc.levels[0].engine["g1f3"] == 0
    assert loc.levels[0].reference["g1f3"] == PythonChessEngine().perft(chess.STARTING_FEN, depth - 1, ["g1f3"])
    assert loc.reproduces_from_fen is True
    assert any("gives no line for g1f3" in s and "1 ply lists" in s for s in loc.evidence["proven"]), loc.evidence


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_a_line_of_no_nodes_for_a_move_not_generated_adds_nothing_and_hides_nothing(depth):
    """A divide deeper than 1 ply with an extra line ``a1a8: 0`` (a move its 1-ply divide does not
    list): no count differs, so the walk agrees and says what it left out; beside a real bug, the
    bug is still named."""
    with fake_uci("good", "--zero-line", "a1a8") as engine:
        loc = localize(engine, PythonChessEngine(), chess.STARTING_FEN, depth)
        assert loc.agree and "a1a8" in loc.describe() and "add nothing to any count" in loc.describe(), loc.describe()
        assert "a1a8" in engine.divide(chess.STARTING_FEN, 2) and "a1a8" not in engine.divide(chess.STARTING_FEN, 1)
    with fake_uci("no-ep", "--zero-line", "a1a8") as engine:
        loc = localize(engine, PythonChessEngine(), POS3, 4)
    assert_names_the_bug(loc, "no-ep")


def test_a_move_printed_under_another_name_is_named_with_that_hypothesis():
    """g1h3's 400 nodes printed as g1g3: the lists differ (missing g1h3, extra g1g3, as observed),
    and the verdict says the counts fit a wrong name as well as a missing and an extra move."""
    with fake_uci("good", "--rename", "g1h3", "g1g3") as engine:
        loc = localize(engine, PythonChessEngine(), chess.STARTING_FEN, 3)
    assert loc.kind == "moves" and loc.missing == ["g1h3"] and loc.extra == ["g1g3"]
    assert len(loc.evidence["hypothesis"]) == 1 and "g1g3 has 400 nodes below it" in loc.evidence["hypothesis"][0]
    assert "under a wrong name" in loc.describe() and "not generated" not in loc.describe()
    with fake_uci("good", "--rename", "g1h3", "g1g3") as engine:  # 400 is below g1f3 too, but g1f3 is listed
        loc = localize(engine, PythonChessEngine(), chess.STARTING_FEN, 2)
    assert loc.evidence["hypothesis"] == [f"g1g3 has 20 nodes below it, as the reference has below g1h3: it may be "
                                          "that move under a wrong name (a notation bug, not a missing and an extra "
                                          "move); the counts cannot tell the two apart"]
    with fake_uci("no-ep") as engine:  # a move truly not generated, with no extra move: no such hypothesis
        loc = localize(engine, PythonChessEngine(), "7k/8/8/8/1Pp5/8/K7/8 b - b3 0 2", 2)
    assert loc.kind == "moves" and "hypothesis" not in loc.evidence


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_a_misnamed_move_is_named_the_same_way_at_every_depth(depth):
    """The wrong name's verdict from its smallest showing depth (2: at 1 ply every count is 1, so no
    count ties the two moves) to two plies deeper: the lists as observed, and the hypothesis with
    the reference's count below g1h3."""
    with fake_uci("good", "--rename", "g1h3", "g1g3") as engine:
        loc = localize(engine, PythonChessEngine(), chess.STARTING_FEN, depth)
    below = PythonChessEngine().perft(chess.STARTING_FEN, depth - 1, ["g1h3"])
    assert loc.kind == "moves" and loc.missing == ["g1h3"] and loc.extra == ["g1g3"] and loc.path == []
    assert loc.evidence["hypothesis"] == [f"g1g3 has {below} nodes below it, as the reference has below g1h3: it may "
                                          "be that move under a wrong name (a notation bug, not a missing and an "
                                          "extra move); the counts cannot tell the two apart"]


def test_uci_miscount_engine_is_inconsistent():
    with UciEngine([sys.executable, str(FAKES / "fake_uci.py"), "miscount"]) as engine:
        loc = localize(engine, PythonChessEngine(), "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", 4)
    assert loc.kind == "inconsistent" and loc.path == ["e7e5"]


def test_a_total_the_reference_did_not_count_is_said_in_words():
    """A move-list verdict above the last ply: the reference listed its moves and counted no total;
    the walk's lines say so instead of printing ``/ ?``."""
    loc = localize(Broken("no-ep"), PythonChessEngine(), "7k/8/8/8/1Pp5/8/K7/8 b - b3 0 2", 2)
    assert loc.kind == "moves" and loc.levels[-1].reference_total is None and loc.levels[-1].depth > 1
    text = loc.describe()
    assert "/ ?" not in text and "the reference's total not counted: the move lists differ" in text
