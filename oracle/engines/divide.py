"""A divide as an engine printed it: the nodes below each move, and the moves it listed twice."""
from __future__ import annotations

__all__ = ["Divide"]


class Divide(dict):
    """``{move: nodes}`` read from an engine's divide (a dict: every use of a plain divide holds),
    with ``listed``: move -> the number of lines that gave it, for the moves given by more than one
    line (their nodes are added). A move printed on two lines of one divide was generated twice
    there, at any depth: with the lines added, the count of a move generated twice three plies
    from the leaves looked like a subtree counted double, and a walk down it found nothing wrong
    (session 36's oracle hunt)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.listed: dict[str, int] = {}

    def add(self, move: str, nodes: int, lines: int = 1) -> None:
        """Add ``nodes`` below ``move``, as given by ``lines`` lines of the engine's output."""
        if move in self or lines > 1:
            self.listed[move] = self.lines(move) + lines
        self[move] = self.get(move, 0) + nodes

    def lines(self, move: str) -> int:
        """How many lines of the divide gave ``move`` (0 when none did)."""
        return self.listed.get(move, 1) if move in self else 0

    def repeated(self) -> dict[str, int]:
        """The moves given by more than one line, with their number of lines."""
        return {m: n for m, n in self.listed.items() if n > 1}
