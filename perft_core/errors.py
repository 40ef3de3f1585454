"""Typed errors of the perft engine."""


class FenError(ValueError):
    """A FEN / X-FEN / Shredder-FEN string that cannot be counted.

    ``field`` names the FEN field at fault: one of ``"fields"`` (wrong number of fields),
    ``"board"``, ``"side"``, ``"castling"``, ``"en_passant"``, ``"halfmove"``, ``"fullmove"``.
    The message always starts with that field name.
    """

    def __init__(self, field: str, problem: str, fen: str | None = None):
        self.field = field
        self.problem = problem
        self.fen = fen
        super().__init__(f"{field}: {problem}" + (f" (in FEN {fen!r})" if fen is not None else ""))


class IllegalMoveError(ValueError):
    """A UCI move that is malformed or not legal in the position it is applied to."""


class HashVerificationError(RuntimeError):
    """Two transposition-table counts with different key seeds disagree (``verify_seed``)."""
