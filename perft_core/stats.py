"""Perft statistics: :class:`Stats`, the counts of the leaf moves by kind.

Every counter counts **leaf moves**: the moves of the last ply of a perft, that is the moves that
lead to the ``nodes`` leaf positions (as the published tables do: Chess Programming Wiki, "Perft
Results"). At depth 0 there is no move: ``nodes`` is 1 and every other counter 0.

The counters (ints; each a number of leaf moves):

- ``nodes``: every leaf move (the perft count).
- ``captures``: moves that take a piece, en passant included.
- ``en_passant``: en passant captures.
- ``castles``: castling moves, standard and Chess960.
- ``promotions``: promotions, each piece chosen counting once (e7e8q and e7e8n are two).
- Checks by kind, after Grand Chess Tree (Tim Jones, 2024-2025: the ``Summary`` counters of its
  engine, ``DirectCheck`` ... ``DoubleDiscoverdCheckmate``). A move gives check when, after it,
  the pieces of the side that moved attack the other king (the checkers: one or two). The moved
  piece is the piece on the move's destination square after the move: the promoted piece for a
  promotion, the rook for castling (its square of arrival), the capturing pawn for en passant.
  A check is *direct* from the moved piece and *discovered* from another piece:

  - ``direct_checks``: one checker, the moved piece;
  - ``single_discovered_checks``: one checker, another piece;
  - ``direct_discovered_checks``: two checkers, one of them the moved piece;
  - ``double_discovered_checks``: two checkers, neither the moved piece (en passant opening two
    lines);

  each counting only the checks that do **not** mate. A castling check is always direct (the
  rook's): the squares castling empties are on our back rank, where only the rank itself runs
  through them with squares on both sides; every square from the leftmost to the rightmost of the
  king's and rook's squares and destinations is empty but for those two pieces, so a line along the
  rank through an emptied square meets our king on its destination.

- Mates by the same kinds: ``direct_mates``, ``single_discovered_mates``,
  ``direct_discovered_mates``, ``double_discovered_mates``: checking moves after which the side
  in check has no legal move. The eight check and mate counters are disjoint.

The Chess Programming Wiki's columns (:attr:`Stats.checks`, :attr:`Stats.discovery_checks`,
:attr:`Stats.double_checks`, :attr:`Stats.checkmates`) are sums of these. The mapping was
established from the published rows (oracle/data/cpw_perft_results_detail.csv; every row with
statistics, startpos to depth 7, Kiwipete to 6, position 3 to 8, position 4 to 6, checked in
suites/test_stats.py, the deeper ones ``slow``):

- CPW ``Checks`` = every checking move, mates included (all eight counters);
- CPW ``Discovery Checks`` = ``single_discovered_checks``;
- CPW ``Double Checks`` = ``direct_discovered_checks + double_discovered_checks``;
- CPW ``Checkmates`` = the four mate counters.

CPW's double checks leave the mates out: Kiwipete depth 5 has 2,645 double checks of which 8 mate,
and the table gives 2,637 (depth 6: 55,014 and 66 mates, the table 54,948); that is also why other
engines, counting 2,645, reported the table wrong. The CPW rows alone cannot say where a
single-discovered mate or a double-discovered check goes (neither occurs in a row small enough to
read off); Grand Chess Tree's rows (oracle/data/gct_perft_stats.csv), which give the kinds, settle
both: at startpos depth 8 they have 4 single-discovered mates, and CPW's Checkmates (9,852,036)
count them while its Discovery Checks (847,039) do not; at depth 9 they have 10 double-discovered
checks, and CPW's Double Checks (5,547,231 = 5,547,221 direct-discovered + 10) count them. Every
row the two tables share (startpos 0-9, Kiwipete 1-6) agrees through the mapping above
(suites/test_stats.py).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

__all__ = ["Stats", "STATS_FIELDS", "CHECK_KINDS", "CPW_COLUMNS"]

CHECK_KINDS: tuple[str, ...] = ("direct", "single_discovered", "direct_discovered", "double_discovered")
"""The kinds of check and of mate, in counter order."""

STATS_FIELDS: tuple[str, ...] = (
    "nodes", "captures", "en_passant", "castles", "promotions",
    *(f"{kind}_checks" for kind in CHECK_KINDS), *(f"{kind}_mates" for kind in CHECK_KINDS),
)
"""The counters of :class:`Stats`, in the order of its fields, of its JSON form and of the CPU
extension's 13-tuples (kernels/pc_stats.h ``StatCounts``)."""

CPW_COLUMNS: tuple[str, ...] = ("nodes", "captures", "en_passant", "castles", "promotions", "checks",
                                "discovery_checks", "double_checks", "checkmates")
"""The Chess Programming Wiki's columns, in its table's order, as :class:`Stats` attribute names."""


@dataclass(frozen=True)
class Stats:
    """Perft statistics of the leaf moves below a position (module docstring: each counter's
    definition and the Chess Programming Wiki's columns). Immutable; every field a Python int >= 0.

    ``a + b`` adds counter by counter (exact ints: two subtrees' statistics); ``k * s`` and
    ``s * k`` multiply every counter by an int ``k`` >= 0 (a subtree reached ``k`` times, a deep
    run's multiplicity). :meth:`to_json` / :meth:`from_json` give a dict of the thirteen counters.

    Raises (constructor): ValueError for a counter that is not an int >= 0.
    """

    nodes: int = 0
    captures: int = 0
    en_passant: int = 0
    castles: int = 0
    promotions: int = 0
    direct_checks: int = 0
    single_discovered_checks: int = 0
    direct_discovered_checks: int = 0
    double_discovered_checks: int = 0
    direct_mates: int = 0
    single_discovered_mates: int = 0
    direct_discovered_mates: int = 0
    double_discovered_mates: int = 0

    def __post_init__(self) -> None:
        for name in STATS_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"Stats.{name} must be an integer >= 0, got {value!r}")

    # ----- the Chess Programming Wiki's columns -------------------------------------------------
    @property
    def checks(self) -> int:
        """Every checking leaf move, mates included (CPW "Checks")."""
        return self.non_mating_checks + self.checkmates

    @property
    def non_mating_checks(self) -> int:
        """Checking leaf moves that do not mate (the four check counters)."""
        return (self.direct_checks + self.single_discovered_checks + self.direct_discovered_checks
                + self.double_discovered_checks)

    @property
    def discovery_checks(self) -> int:
        """CPW "Discovery Checks": one checker, not the moved piece, no mate (module docstring)."""
        return self.single_discovered_checks

    @property
    def double_checks(self) -> int:
        """CPW "Double Checks": two checkers, no mate (module docstring)."""
        return self.direct_discovered_checks + self.double_discovered_checks

    @property
    def checkmates(self) -> int:
        """Every mating leaf move (CPW "Checkmates")."""
        return (self.direct_mates + self.single_discovered_mates + self.direct_discovered_mates
                + self.double_discovered_mates)

    def cpw(self) -> dict[str, int]:
        """The Chess Programming Wiki's columns: ``{name: int}`` in :data:`CPW_COLUMNS` order."""
        return {name: getattr(self, name) for name in CPW_COLUMNS}

    # ----- arithmetic and forms -----------------------------------------------------------------
    def __add__(self, other: object) -> "Stats":
        if not isinstance(other, Stats):
            return NotImplemented
        return Stats(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple())))

    def __radd__(self, other: object) -> "Stats":
        """``0 + stats`` is ``stats``, so ``sum(divide_stats(...).values())`` needs no start value;
        any other non-Stats still raises TypeError."""
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    def __mul__(self, k: object) -> "Stats":
        if isinstance(k, bool) or not isinstance(k, int):
            return NotImplemented
        if k < 0:
            raise ValueError(f"a multiplicity must be an integer >= 0, got {k}")
        return Stats(*(k * a for a in self.as_tuple()))

    __rmul__ = __mul__

    def as_tuple(self) -> tuple[int, ...]:
        """The thirteen counters in :data:`STATS_FIELDS` order."""
        return tuple(getattr(self, name) for name in STATS_FIELDS)

    @classmethod
    def from_tuple(cls, values) -> "Stats":
        """A Stats from thirteen ints in :data:`STATS_FIELDS` order (the CPU extension's tuples).

        Raises ValueError: not thirteen values, or a value that is not an int >= 0.
        """
        values = tuple(values)
        if len(values) != len(STATS_FIELDS):
            raise ValueError(f"Stats needs {len(STATS_FIELDS)} counters, got {len(values)}")
        return cls(*(int(v) if not isinstance(v, bool) and hasattr(v, "__index__") else v for v in values))

    def to_json(self) -> dict[str, int]:
        """``{counter: int}`` of the thirteen counters (:data:`STATS_FIELDS` order); json.dumps-able."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: "dict | str") -> "Stats":
        """The Stats of :meth:`to_json`'s dict (or its JSON text). Extra keys (such as the CPW
        columns a report adds) are ignored; a missing counter is an error.

        Raises ValueError: a counter missing or not an int >= 0, or text that is not a JSON object.
        """
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict):
            raise ValueError(f"Stats JSON must be an object, got {type(data).__name__}")
        missing = [name for name in STATS_FIELDS if name not in data]
        if missing:
            raise ValueError(f"Stats JSON lacks {', '.join(missing)}")
        return cls(**{name: data[name] for name in STATS_FIELDS})
