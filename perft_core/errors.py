"""Typed errors of the perft engine, and :func:`clip` for the lines that report them."""

LINE_CHARS = 300
"""An error line longer than this is cut (a 100,000-character FEN must not make a 100 KB line)."""


def clip(message: str, keep: int = LINE_CHARS) -> str:
    """``message`` with each line cut to ``keep`` characters plus a note of how many were left out."""
    return "\n".join(line if len(line) <= keep else f"{line[:keep]}... ({len(line) - keep} more characters)"
                     for line in str(message).split("\n"))


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


class StatsUnsupported(ValueError):
    """Statistics asked of a backend or an option that does not count them (tables on the ``cpu``
    backend, a verify seed with a time limit, tables in a deep run); the message names what to use
    instead."""


class HashVerificationError(RuntimeError):
    """Two transposition-table counts with different key seeds disagree (``verify_seed``)."""


class CountRefused(ValueError):
    """A count whose estimated time exceeds the limit (``max_estimate_seconds``); not started.

    ``estimate``: the :class:`perft_core.estimate.Estimate`; ``limit_seconds``: the limit it exceeds;
    ``reason``: the message without the advice to force it (the CLI adds its own flag).
    Pass ``force=True`` (CLI: ``--force``) to count anyway.
    """

    def __init__(self, estimate, limit_seconds: float, reason: str):
        self.estimate = estimate
        self.limit_seconds = limit_seconds
        self.reason = reason
        super().__init__(f"{self.reason}; pass force=True to count anyway")


class CountOverflow(ValueError):
    """A count that passes 2^64 - 1 on a backend that counts in 64 bits (the GPU backends: a
    count through their tables reaches it at depths a count without tables never does), or 2^128 - 1
    on the cpu backend, which counts in 128 bits (a king against a king at depth 48 through its
    tables); refused instead of returned wrapped."""


class CountInterrupted(RuntimeError):
    """A count stopped at its time limit (``max_seconds``) before it finished: no total exists.

    ``partial``: ``{uci_move: nodes}`` of the root moves counted in full before the stop (each an
    exact count; the moves missing from it were not counted; a statistics count,
    :func:`perft_core.perft_stats`, gives ``{uci_move: Stats}``); ``moves_total``: the number of legal
    root moves; ``depth``; ``seconds``: wall time spent; ``estimate``: the Estimate or None.
    """

    def __init__(self, partial: dict[str, int], moves_total: int, depth: int, seconds: float, estimate=None):
        self.partial = dict(partial)
        self.moves_total = moves_total
        self.depth = depth
        self.seconds = seconds
        self.estimate = estimate
        super().__init__(f"perft {depth} stopped after {seconds:.1f} s with {len(self.partial)} of {moves_total} "
                         f"root moves counted: a partial divide, not a total")


class GeneratorMismatch(RuntimeError):
    """The GPU generate kernel found a board whose move generator gave another number of moves
    than its count reserved (``generate_moves`` and ``count_moves`` disagree: a kernel bug). No
    count is returned; nothing was written outside the board's own slots.

    ``board``: the board's index in its BFS level; ``generated``, ``reserved``: the two numbers
    (``generated`` is capped at 1023).
    """

    def __init__(self, board: int, generated: int, reserved: int):
        self.board, self.generated, self.reserved = board, generated, reserved
        super().__init__(f"gen_kernel: board {board} of a BFS level generates {generated} moves where its count "
                         f"promised {reserved} (generate_moves and count_moves disagree): the GPU kernels are "
                         f"broken, no count is returned")
