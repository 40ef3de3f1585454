"""The ``Position`` value type: FEN, X-FEN and Shredder-FEN in, validated, and back out.

Squares are numbered a1=0, b1=1, ..., h8=63.  The board is kept as the four "quad bitboards"
of the C++ core (see ``/work/shared`` contracts): bit 0 of the piece code (P=1 N=2 B=3 R=4
Q=5 K=6) in ``pbq``, bit 1 in ``nbk``, bit 2 in ``rqk``, and ``black`` marks black pieces.

Validation rejects exactly what makes a perft count undefined (kings, pawns on the back
ranks, the side not to move in check, impossible en passant or castling fields) and accepts
positions that are legal to count even though no game reaches them (too many pieces,
impossible checks by the side to move).  Parsing is pure Python; only ``legal_moves`` and
``push`` need the compiled extension ``perft_core._core``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perft_core.errors import FenError, IllegalMoveError

if TYPE_CHECKING:
    import chess

_CODE_OF = {"p": 1, "n": 2, "b": 3, "r": 4, "q": 5, "k": 6}
_LETTER_OF = " pnbrqk"
_FILES = "abcdefgh"

# Indices into ``castle_rooks``: (white h-side, white a-side, black h-side, black a-side).
_WHITE_H, _WHITE_A, _BLACK_H, _BLACK_A = range(4)
_SLOT_NAMES = ("white h-side", "white a-side", "black h-side", "black a-side")

_CASTLING_RE = re.compile(r"-|[KQkqA-Ha-h]{1,4}")
_SQUARE_RE = re.compile(r"[a-h][1-8]")
_COUNTER_RE = re.compile(r"[0-9]{1,100}")  # 100 digits: far past any real game, short of int() limits
_UCI_RE = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")

_KNIGHT_STEPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
_KING_STEPS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
_ROOK_RAYS = ((1, 0), (-1, 0), (0, 1), (0, -1))
_BISHOP_RAYS = ((1, 1), (1, -1), (-1, 1), (-1, -1))

_Board = list[str | None]  # 64 entries indexed by square: a piece letter ('P', 'n', ...) or None


def _name(square: int) -> str:
    return _FILES[square % 8] + str(square // 8 + 1)


STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
"""The start position; ``"startpos"`` stands for it wherever a FEN is read (:meth:`Position.from_fen`)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Position:
    """An immutable chess position that perft can count from.

    Build one with :meth:`from_fen` (or :meth:`push`); the constructor does not validate.
    ``castle_rooks`` holds the rook square of each castling right, -1 where there is none:
    (white h-side, white a-side, black h-side, black a-side).  ``shredder`` records the
    castling notation of the input (file letters) so that :meth:`fen` writes it back the
    same way; otherwise X-FEN is written (``KQkq``, a file letter only for an inner rook).
    Two positions are equal when their FEN and their ``chess960`` flag are equal.
    """

    pbq: int
    nbk: int
    rqk: int
    black: int
    white_to_move: bool
    castle_rooks: tuple[int, int, int, int]
    ep_square: int | None
    halfmove: int
    fullmove: int
    chess960: bool
    shredder: bool = False

    # ------------------------------------------------------------------ reading FEN

    @classmethod
    def from_fen(cls, text: str, chess960: bool | None = None) -> Position:
        """Parse and validate a FEN, X-FEN or Shredder-FEN string (6 fields, or 4 as in EPD).

        ``"startpos"`` is the start position (:data:`STARTPOS`), as in UCI's ``position startpos``.
        Missing move counters (EPD) default to ``0 1``.  ``chess960=None`` infers Chess960
        from the castling field: Shredder file letters, or rights whose king or rook is off
        the standard e/a/h squares.  ``chess960=False`` rejects such rights.

        Raises:
            FenError: for any string that is malformed or describes a position whose perft
                is undefined; ``.field`` names the FEN field at fault.
            TypeError: if ``text`` is not a ``str``, or ``chess960`` is not None, True or False.
        """
        if not isinstance(text, str):
            raise TypeError(f"FEN must be a str, not {type(text).__name__}")
        if chess960 is not None and not isinstance(chess960, bool):
            raise TypeError(f"chess960 must be None, True or False, got {chess960!r}")
        if text.strip() == "startpos":  # as UCI's ``position startpos``
            text = STARTPOS
        parts = text.split()
        if len(parts) not in (4, 6):
            raise FenError("fields", f"expected 6 fields (or 4 as in EPD), got {len(parts)}", text)
        board_text, side_text, castling_text, ep_text = parts[:4]

        board = _parse_board(board_text, text)
        if side_text not in ("w", "b"):
            raise FenError("side", f"expected 'w' or 'b', got {side_text!r}", text)
        white_to_move = side_text == "w"
        castle_rooks, chess960, shredder = _parse_castling(castling_text, board, chess960, text)
        ep_square = _parse_en_passant(ep_text, board, white_to_move, text)
        halfmove, fullmove = 0, 1
        if len(parts) == 6:
            halfmove = _parse_counter(parts[4], "halfmove", text)
            fullmove = _parse_counter(parts[5], "fullmove", text)
            if fullmove < 1:
                raise FenError("fullmove", f"must be at least 1, got {fullmove}", text)

        mover, other = ("K", "k") if white_to_move else ("k", "K")
        if _attacked(board, board.index(other), by_white=white_to_move):
            raise FenError("side", f"{_colour(other)} is in check but it is {_colour(mover)} to move", text)

        pbq = nbk = rqk = black = 0
        for square, piece in enumerate(board):
            if piece is None:
                continue
            code = _CODE_OF[piece.lower()]
            bit = 1 << square
            pbq |= bit if code & 1 else 0
            nbk |= bit if code & 2 else 0
            rqk |= bit if code & 4 else 0
            black |= bit if piece.islower() else 0
        return cls(pbq, nbk, rqk, black, white_to_move, castle_rooks, ep_square,
                   halfmove, fullmove, chess960, shredder)

    # ------------------------------------------------------------------ writing FEN

    def _castling_hint(self, uci: str) -> str:
        """For an illegal move of our king along its rank that looks like castling in the other
        notation, the legal castling move towards that side, as written here: without Chess960 the
        king's two-file move (``e1h1``, onto our own rook: ``e1g1``); in Chess960 king-takes-rook
        (a king move to an empty square two files on, or to its castling square on the g- or c-file:
        ``f1c1`` with the b1 rook's right: ``f1b1``). Else "" (no such move is legal now: the hint
        never names a move that is not legal)."""
        frm = (ord(uci[0]) - 97) + 8 * (int(uci[1]) - 1)
        to = (ord(uci[2]) - 97) + 8 * (int(uci[3]) - 1)
        ours = str.isupper if self.white_to_move else str.islower
        king, target = self.piece_at(frm), self.piece_at(to)
        if king not in ("K", "k") or not ours(king) or frm // 8 != to // 8 or len(uci) != 4 or frm == to:
            return ""  # not our king along its rank: nothing to say about castling
        h_side = to > frm
        rook = (self.castle_rooks[0:2] if self.white_to_move else self.castle_rooks[2:4])[0 if h_side else 1]
        if rook < 0:
            return ""  # no castling right on that side
        if not self.chess960 and target in ("R", "r") and ours(target):
            castling, how = uci[:2] + _name(frm + (2 if h_side else -2)), "without Chess960"
        elif self.chess960 and target is None and (abs(frm - to) == 2 or to % 8 == (6 if h_side else 2)):
            castling, how = uci[:2] + _name(rook), "king-takes-rook in Chess960"
        else:
            return ""
        return f" (castling is written {how}: here {castling})" if castling in self.legal_moves() else ""

    def piece_at(self, square: int) -> str | None:
        """The piece letter on ``square`` (an int 0..63, a1 = 0, h8 = 63): 'P', 'n', ... or None if empty.

        Raises:
            ValueError: if ``square`` is not an int in 0..63 (a bool, a float or a square name is not).
        """
        if isinstance(square, bool) or not isinstance(square, int) or not 0 <= square < 64:
            raise ValueError(f"square must be an int in 0..63 (a1 = 0, h8 = 63), got {square!r}")
        code = (self.pbq >> square & 1) | (self.nbk >> square & 1) << 1 | (self.rqk >> square & 1) << 2
        if code == 0:
            return None
        letter = _LETTER_OF[code]
        return letter if self.black >> square & 1 else letter.upper()

    def fen(self) -> str:
        """The 6-field FEN, castling in the notation the input used (X-FEN or Shredder-FEN)."""
        return f"{self._board_fen()} {self.fen_fields()}"

    def fen_fields(self) -> str:
        """The FEN's five fields after the board (side to move, castling, en passant, halfmove
        clock, fullmove number), as :meth:`fen` writes them."""
        ep = "-" if self.ep_square is None else _name(self.ep_square)
        side = "w" if self.white_to_move else "b"
        return f"{side} {self._castling_fen()} {ep} {self.halfmove} {self.fullmove}"

    def _board_fen(self) -> str:
        ranks = []
        for rank in range(7, -1, -1):
            text, empty = "", 0
            for file in range(8):
                piece = self.piece_at(rank * 8 + file)
                if piece is None:
                    empty += 1
                    continue
                text += (str(empty) if empty else "") + piece
                empty = 0
            ranks.append(text + (str(empty) if empty else ""))
        return "/".join(ranks)

    def _castling_fen(self) -> str:
        letters = ""
        for slot, rook in enumerate(self.castle_rooks):
            if rook < 0:
                continue
            white = slot in (_WHITE_H, _WHITE_A)
            h_side = slot in (_WHITE_H, _BLACK_H)
            letter = _FILES[rook % 8]
            if not self.shredder:
                # X-FEN names the outermost rook on a side K/Q, any other by its file.
                rank_start = rook - rook % 8
                outer_files = range(rook % 8 + 1, 8) if h_side else range(rook % 8)
                if not any(self.piece_at(rank_start + f) == ("R" if white else "r") for f in outer_files):
                    letter = "k" if h_side else "q"
            letters += letter.upper() if white else letter
        return letters or "-"

    def __repr__(self) -> str:
        return f"Position({self.fen()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Position):
            return NotImplemented
        return (self.fen(), self.chess960) == (other.fen(), other.chess960)

    def __hash__(self) -> int:
        return hash((self.fen(), self.chess960))

    # ------------------------------------------------------------------ moves (C++ core)

    def zobrist(self, seed: int | None = None) -> int:
        """The 128-bit Zobrist key from scratch, as ``hi << 64 | lo`` (see perft_core.zobrist).

        ``seed``: the key seed, 0..2**64-1 (default: the engine's, ``perft_core.zobrist.DEFAULT_SEED``).
        Raises ValueError for a bad seed.
        """
        from perft_core import _core

        return _core.zobrist_key(self.core_args(), zobrist_seed(seed))

    def zobrist_path(self, moves, seed: int | None = None) -> list[int]:
        """Keys along UCI ``moves``: the from-scratch key, then the incremental key after each move.

        Each key after the first comes from the previous one by ``update_hash`` alone, never from
        scratch. ``moves``: a list (or other iterable) of UCI strings; one string is refused, not
        walked letter by letter. Raises IllegalMoveError for a move that is not legal where it is
        played or a ``moves`` that is a string, ValueError for a bad seed.
        """
        from perft_core import _core

        if isinstance(moves, str):
            raise IllegalMoveError(f"moves must be a list of UCI strings, got the string {moves!r}")
        moves = list(moves)
        for m in moves:
            if not isinstance(m, str):
                raise IllegalMoveError(f"moves must be UCI strings, got {m!r}")
        try:
            return _core.zobrist_path(self.core_args(), moves, zobrist_seed(seed))
        except ValueError as exc:
            if "illegal" in str(exc):
                raise IllegalMoveError(str(exc)) from None
            raise

    def core_args(self) -> tuple:
        """The argument tuple ``B`` of every ``perft_core._core`` function."""
        ep = -1 if self.ep_square is None else self.ep_square
        return (self.pbq, self.nbk, self.rqk, self.black, self.white_to_move,
                self.castle_rooks, ep, self.chess960)

    def legal_moves(self) -> list[str]:
        """All legal moves in UCI, sorted; castling is king-takes-rook (e1h1) in Chess960.

        Raises:
            ImportError: if the compiled extension ``perft_core._core`` is not built.
        """
        from perft_core import _core

        return sorted(_core.legal_moves(self.core_args()))

    def push(self, uci: str) -> Position:
        """The position after the UCI move ``uci`` (this one is unchanged).

        Castling is written e1g1 in standard chess and king-takes-rook (e1h1) in Chess960.
        The halfmove clock resets on pawn moves and captures; the fullmove number grows after
        a black move.  An en passant square is set after every double pawn push.

        Raises:
            IllegalMoveError: if ``uci`` is malformed or not a legal move here.
            ImportError: if the compiled extension ``perft_core._core`` is not built.
        """
        if not isinstance(uci, str) or _UCI_RE.fullmatch(uci) is None:
            raise IllegalMoveError(f"malformed UCI move {uci!r}: expected e.g. 'e2e4' or 'e7e8q'")
        from perft_core import _core

        try:
            pbq, nbk, rqk, black, castle_rooks, ep, resets = _core.make_move(self.core_args(), uci)
        except ValueError:
            if len(uci) == 4 and uci + "q" in self.legal_moves():
                raise IllegalMoveError(f"{uci!r} is a promotion here: it needs its piece, e.g. {uci + 'q'!r} "
                                       f"(q, r, b or n), in {self.fen()!r}") from None
            raise IllegalMoveError(f"{uci!r} is not a legal move in {self.fen()!r}{self._castling_hint(uci)}") from None
        return Position(pbq, nbk, rqk, black, not self.white_to_move, tuple(castle_rooks),
                        None if ep < 0 else ep,
                        0 if resets else self.halfmove + 1,
                        self.fullmove + (0 if self.white_to_move else 1),
                        self.chess960, self.shredder)


# ---------------------------------------------------------------------- field parsers


def _colour(piece: str) -> str:
    return "white" if piece.isupper() else "black"


def _parse_board(text: str, fen: str) -> _Board:
    """The 64-square board of a FEN's first field; checks syntax, kings and back-rank pawns."""
    ranks = text.split("/")
    if len(ranks) != 8:
        raise FenError("board", f"expected 8 ranks separated by '/', got {len(ranks)}", fen)
    board: _Board = [None] * 64
    for i, rank_text in enumerate(ranks):
        rank = 7 - i
        file, previous_digit = 0, False
        for ch in rank_text:
            if ch in "12345678":
                if previous_digit:
                    raise FenError("board", f"two digits in a row in rank {rank + 1} {rank_text!r}", fen)
                file += int(ch)
                previous_digit = True
                continue
            if ch not in "pnbrqkPNBRQK":
                raise FenError("board", f"bad piece letter {ch!r} in rank {rank + 1}", fen)
            if file < 8:
                board[rank * 8 + file] = ch
            file += 1
            previous_digit = False
        if file != 8:
            raise FenError("board", f"rank {rank + 1} {rank_text!r} has {file} squares, expected 8", fen)
    for king in ("K", "k"):
        count = board.count(king)
        if count != 1:
            raise FenError("board", f"expected exactly one {_colour(king)} king, found {count}", fen)
    for square in [*range(8), *range(56, 64)]:
        if board[square] in ("P", "p"):
            raise FenError("board", f"{_colour(board[square])} pawn on {_name(square)}, a back rank", fen)
    return board


def _parse_castling(
    text: str, board: _Board, chess960: bool | None, fen: str
) -> tuple[tuple[int, int, int, int], bool, bool]:
    """Resolve the castling field to rook squares; return (castle_rooks, chess960, shredder).

    ``K``/``Q`` name the outermost rook on that side of the king (X-FEN), a file letter names
    the rook on that file (Shredder-FEN, or X-FEN for an inner rook).
    """
    if _CASTLING_RE.fullmatch(text) is None:
        raise FenError("castling", f"expected '-' or up to 4 letters from KQkq and A-H/a-h, "
                                   f"got {text!r}", fen)
    if text == "-":
        return (-1, -1, -1, -1), bool(chess960), False
    if re.search(r"[a-z].*[A-Z]", text):  # FEN (PGN standard 16.1.3.3), X-FEN and Shredder-FEN; python-chess refuses it too
        raise FenError("castling", f"white's rights come before black's (as in 'KQkq' or 'HAha'), got {text!r}", fen)
    rooks = [-1, -1, -1, -1]

    off_standard = None  # (letter, message) of the first right that only Chess960 allows
    for letter in text:
        white = letter.isupper()
        colour = "white" if white else "black"
        rank_start = 0 if white else 56
        rook_piece, king = ("R", "K") if white else ("r", "k")
        king_square = board.index(king)
        if not rank_start <= king_square < rank_start + 8:
            raise FenError("castling", f"right {letter!r} needs the {colour} king on rank "
                                       f"{rank_start // 8 + 1}, it is on {_name(king_square)}", fen)
        king_file = king_square % 8
        own_rook_files = [f for f in range(8) if board[rank_start + f] == rook_piece]
        if letter in "KkQq":
            h_side = letter in "Kk"
            candidates = [f for f in own_rook_files if (f > king_file) == h_side]
            if not candidates:
                where = (_name(rank_start + (7 if h_side else 0)) if king_file == 4
                         else f"rank {rank_start // 8 + 1} on the {'h' if h_side else 'a'}-side of the king")
                raise FenError("castling", f"no {colour} rook on {where} for right {letter!r}", fen)
            rook_file = max(candidates) if h_side else min(candidates)
        else:
            rook_file = _FILES.index(letter.lower())
            if rook_file not in own_rook_files:
                raise FenError("castling", f"no {colour} rook on {_name(rank_start + rook_file)} "
                                           f"for right {letter!r}", fen)
            h_side = rook_file > king_file
        slot = (_WHITE_H if h_side else _WHITE_A) + (0 if white else 2)
        if rooks[slot] >= 0:
            raise FenError("castling", f"two {_SLOT_NAMES[slot]} rights in {text!r}", fen)
        rooks[slot] = rank_start + rook_file

        standard_file = 7 if h_side else 0
        if off_standard is None and (king_file != 4 or rook_file != standard_file):
            if king_file != 4:
                problem = f"the {colour} king is on {_name(king_square)}, not {_name(rank_start + 4)}"
            elif letter in "KkQq":
                problem = f"no {colour} rook on {_name(rank_start + standard_file)} for right {letter!r}"
            else:
                problem = (f"right {letter!r} names the {colour} rook on {_name(rank_start + rook_file)}, "
                           f"not {_name(rank_start + standard_file)}")
            off_standard = f"{problem} (standard chess; pass chess960=True for Chess960)"

    shredder = not any(letter in "KQkq" for letter in text)
    if chess960 is None:
        chess960 = shredder or off_standard is not None
    elif not chess960 and off_standard is not None:
        raise FenError("castling", off_standard, fen)
    return (rooks[0], rooks[1], rooks[2], rooks[3]), chess960, shredder


def _parse_en_passant(text: str, board: _Board, white_to_move: bool, fen: str) -> int | None:
    """The en passant target square, or None; it must follow a possible double pawn push."""
    if text == "-":
        return None
    if _SQUARE_RE.fullmatch(text) is None:
        raise FenError("en_passant", f"expected '-' or a square like 'e3', got {text!r}", fen)
    square = _FILES.index(text[0]) + 8 * (int(text[1]) - 1)
    # The opponent's pawn passed over `square`: from `origin` to `pawn` (one rank beyond).
    rank, step, pawn_piece = (6, -8, "p") if white_to_move else (3, 8, "P")
    if int(text[1]) != rank:
        raise FenError("en_passant", f"{text} is not on rank {rank}, where the en passant square "
                                     f"must be with {'white' if white_to_move else 'black'} to move", fen)
    pawn, origin = square + step, square - step
    if board[pawn] != pawn_piece:
        raise FenError("en_passant", f"no {_colour(pawn_piece)} pawn on {_name(pawn)} "
                                     f"that could have passed over {text}", fen)
    if board[square] is not None:
        raise FenError("en_passant", f"{text} is occupied", fen)
    if board[origin] is not None:
        raise FenError("en_passant", f"{_name(origin)} is occupied, so no pawn can have "
                                     f"double-pushed from there", fen)
    return square


def _parse_counter(text: str, field: str, fen: str) -> int:
    if _COUNTER_RE.fullmatch(text) is None:
        raise FenError(field, f"expected a non-negative integer (at most 100 digits), got {text!r}", fen)
    return int(text)


def _attacked(board: _Board, square: int, by_white: bool) -> bool:
    """Whether ``square`` is attacked by a piece of that colour (pins ignored)."""
    rank, file = divmod(square, 8)

    def piece(dr: int, df: int) -> str | None:
        r, f = rank + dr, file + df
        return board[r * 8 + f] if 0 <= r < 8 and 0 <= f < 8 else None

    def theirs(letters: str) -> tuple[str, ...]:
        return tuple(letters.upper() if by_white else letters)

    pawn_dr = -1 if by_white else 1  # a white pawn attacks upward, so it stands one rank below
    if any(piece(pawn_dr, df) in theirs("p") for df in (-1, 1)):
        return True
    if any(piece(dr, df) in theirs("n") for dr, df in _KNIGHT_STEPS):
        return True
    if any(piece(dr, df) in theirs("k") for dr, df in _KING_STEPS):
        return True
    for rays, sliders in ((_ROOK_RAYS, theirs("rq")), (_BISHOP_RAYS, theirs("bq"))):
        for dr, df in rays:
            r, f = rank + dr, file + df
            while 0 <= r < 8 and 0 <= f < 8:
                blocker = board[r * 8 + f]
                if blocker is not None:
                    if blocker in sliders:
                        return True
                    break
                r, f = r + dr, f + df
    return False


def as_position(fen_or_position: "str | Position | chess.Board") -> Position:
    """A Position from a FEN / X-FEN / Shredder-FEN string (Chess960 inferred), a python-chess
    ``chess.Board`` (its current position, with its ``chess960`` flag and en passant square), or
    the Position itself.

    Raises FenError for a bad FEN or board, ValueError for a board of a chess.variant (its rules
    are not chess's: counting it as chess would give a wrong count) and TypeError for anything else.
    """
    if isinstance(fen_or_position, Position):
        return fen_or_position
    if isinstance(fen_or_position, str):
        return Position.from_fen(fen_or_position)
    chess = sys.modules.get("chess")  # a chess.Board (or a subclass) handed in: python-chess is loaded
    if chess is not None and isinstance(fen_or_position, chess.Board):
        board = fen_or_position
        variant = getattr(board, "uci_variant", "chess")
        if variant != "chess":
            raise ValueError(f"a {type(board).__name__} plays the {variant!r} variant: perft_core counts standard "
                             "chess and Chess960 only (a chess.Board, chess960 or not)")
        return Position.from_fen(board.fen(shredder=board.chess960, en_passant="fen"), chess960=board.chess960)
    raise TypeError(f"expected a FEN string, a chess.Board or a Position, got {type(fen_or_position).__name__}")


def zobrist_seed(seed: object) -> int:
    """``seed`` checked (an int in 0..2**64-1), or the engine's default key seed for None.

    Raises ValueError for anything else (a bool, a negative or 65-bit int, a string).
    """
    if seed is None:
        from perft_core import _core

        return _core.ZOBRIST_DEFAULT_SEED
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be an integer in 0..2**64-1, got {seed!r}")
    return seed
