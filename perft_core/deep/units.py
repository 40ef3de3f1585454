"""Work units of a deep perft: the tree expanded on the host to a split ply, equal positions merged.

``split(pos, depth, ply)`` expands every path from ``pos`` to ``ply`` with the C++ extension's host
batch kernels (the emulated device's ``batch_count`` / ``batch_gen`` / ``batch_make``, the same
move generator as every backend), keys each board with the 128-bit Zobrist key (``batch_keys``),
and merges boards of equal key after every ply, adding up their multiplicities (the number of
paths that reach them). Each merge is confirmed: every merged board must equal its group's
representative in everything the count depends on (the four piece bitboards, the castling
rights, the side to move, and the en passant file where the key hashes it); a key shared by two
different boards raises ``KeyCollisionError``, it is never merged.

perft(pos, depth) = sum over units of ``multiplicity * perft(unit.fen, unit.depth)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core, limits
from ..hostbatch import expand_host, host_keys
from ..position import Position
from .errors import check_deadline

WORDS = _core.BOARD_BYTES // 8  # a board is five uint64 words: pbq, nbk, rqk, black, state
_FILE_A = np.uint64(0x0101010101010101)
_FILE_H = np.uint64(0x8080808080808080)
_MIN_UNITS_PER_WORKER = 20
_MAX_UNIT_SECONDS = 600.0  # one unit must fit well inside a 10-minute command
_SAMPLE_MAX_PLIES = 4  # a unit's estimate counts at most its first 4 plies...
_SAMPLE_NODES = 3e8  # ...and all units' samples at most ~3e8 nodes (well under a second on one core)
_OWN_GROWTH_SHARE = 0.5  # the share of a unit's own branching, relative to the run's, kept per further ply
_POLL_ROWS = 4096  # the rows a Python loop of the split makes between two looks at the time limit
_FEN_CHUNK = 65536  # boards whose FENs are made at once (about 40 MB of NumPy arrays)


class KeyCollisionError(RuntimeError):
    """Two different boards have the same 128-bit Zobrist key (they are never merged)."""


@dataclass(frozen=True)
class Unit:
    """One unique position at the split ply.

    key: the 128-bit Zobrist key under the run's key seed (``hi << 64 | lo``); fen: the position
    (halfmove clock 0: perft does not depend on it); depth: remaining plies; multiplicity: paths
    from the root that reach it (Python int); estimate: estimated nodes of perft(fen, depth)
    (float, from the unit's own first plies and the root's growth per ply, :func:`unit_estimates`;
    orders units largest first, sizes batches and drives the progress bar's ETA).
    """

    key: int
    fen: str
    depth: int
    multiplicity: int
    estimate: float


def expand(boards: np.ndarray, us: int, ci: bytes) -> tuple[np.ndarray, np.ndarray]:
    """All children of ``boards`` (uint64 (n, 5)) with ``us`` to move: (children (m, 5), the index
    of each child's parent, int64 (m,)). The extension's host batch kernels (gpu.driver.expand_host)."""
    return expand_host(boards, us, ci)


def _normal_form(boards: np.ndarray, us: int) -> np.ndarray:
    """What a count depends on, per board (uint64 (n, 6)): pbq, nbk, rqk, black, castling rights,
    and the en passant file + 1 only where the key hashes it (a pawn of the side to move stands
    beside the pawn that made the double push, kernels/pc_zobrist.h ``ep_hashed``), else 0."""
    b = boards.astype(np.uint64, copy=False)
    state = b[:, 4] & np.uint64(0xFF)
    ep = state >> np.uint64(4)
    has = ep > 0
    victim = np.where(has, ep - np.uint64(1), np.uint64(0)) + np.uint64(32 if us == 0 else 24)
    vbit = np.left_shift(np.uint64(1), victim)
    beside = (np.left_shift(vbit, np.uint64(1)) & ~_FILE_A) | (np.right_shift(vbit, np.uint64(1)) & ~_FILE_H)
    pawns = b[:, 0] & ~b[:, 1] & ~b[:, 2]
    ours = b[:, 3] if us == 1 else ~b[:, 3]
    hashed = has & ((beside & pawns & ours) != 0)
    out = np.empty((len(b), 6), dtype=np.uint64)
    out[:, :4] = b[:, :4]
    out[:, 4] = state & np.uint64(15)
    out[:, 5] = np.where(hashed, ep, np.uint64(0))
    return out


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_index=True, return_inverse=True)`` of 128-bit keys (uint64
    (n, 2), rows ordered by column 0, then 1): (unique rows, the first index of each, the group of
    each row, int64 (n,)). By a stable sort of column 0 (equal keys keep their order: the first
    first), then of both columns where two different keys share column 0 (one pair in about 2^64):
    ``np.unique`` with an axis sorts rows as structured values, 5.1 s for Kiwipete's 2.39 M
    positions at ply 4 on this project's VM, this about 1 s."""
    n = len(keys)
    order = np.argsort(keys[:, 0], kind="stable")
    ordered = keys[order]
    if ((ordered[1:, 0] == ordered[:-1, 0]) & (ordered[1:, 1] < ordered[:-1, 1])).any():
        order = np.lexsort((keys[:, 1], keys[:, 0]))
        ordered = keys[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], order[starts], inverse


def merge(boards: np.ndarray, keys: np.ndarray, mult: np.ndarray, us: int, root: Position, ply: int):
    """Merge equal keys: (unique boards, their keys, their multiplicities), ``mult`` uint64 (n,)
    paths to each board (perft(ply) < 2**64 for every ply a split can reach).

    Every board is compared with its group's representative (``_normal_form``); a difference
    raises KeyCollisionError naming both positions and the key.
    """
    uniq, first, inverse = _unique_rows(keys)
    norm = _normal_form(boards, us)
    bad = np.nonzero((norm != norm[first][inverse]).any(axis=1))[0]
    if len(bad):
        i = int(bad[0])
        j = int(first[inverse[i]])
        key = (int(keys[i, 1]) << 64) | int(keys[i, 0])
        raise KeyCollisionError(
            f"Zobrist key {key:#034x} is shared by two different positions at ply {ply}: "
            f"{board_position(root, boards[j], ply).fen()!r} and {board_position(root, boards[i], ply).fen()!r}")
    merged = np.zeros(len(uniq), dtype=np.uint64)
    np.add.at(merged, inverse, mult)
    return boards[first], uniq, merged


def board_position(root: Position, words: np.ndarray, ply: int) -> Position:
    """The Position of board ``words`` (5 uint64) reached ``ply`` plies below ``root``: castling
    rooks from the root's where the right survives, en passant only where the key hashes it,
    halfmove clock 0, fullmove number advanced by the plies played."""
    white = root.white_to_move == (ply % 2 == 0)
    norm = _normal_form(np.asarray(words, dtype=np.uint64).reshape(1, WORDS), 0 if white else 1)[0]
    return _position(root, norm, ply)


def _position(root: Position, norm: np.ndarray, ply: int) -> Position:
    white = root.white_to_move == (ply % 2 == 0)
    rights = int(norm[4])
    rooks = tuple(r if rights >> i & 1 else -1 for i, r in enumerate(root.castle_rooks))
    ep = int(norm[5])
    ep_square = None if ep == 0 else (ep - 1) + (40 if white else 16)
    fullmove = root.fullmove + (ply + (0 if root.white_to_move else 1)) // 2
    return Position(int(norm[0]), int(norm[1]), int(norm[2]), int(norm[3]), white, rooks, ep_square, 0, fullmove,
                    root.chess960, root.shredder)


_LETTERS = np.frombuffer(b"1PNBRQK??pnbrqk?", dtype=np.uint8)
_FEN_ORDER = np.array([r * 8 + f for r in range(7, -1, -1) for f in range(8)])


def fens(root: Position, boards: np.ndarray, ply: int, deadline: float | None = None) -> list[str]:
    """The FEN of every board (uint64 (n, 5)) ``ply`` plies below ``root``, as
    ``board_position(root, board, ply).fen()`` writes it, built for _FEN_CHUNK boards at a time with
    NumPy and whole-text string operations (one by one they took 25 us a board; this about 6 us on
    this project's VM). Raises Overdue ("split") once ``deadline`` (``time.perf_counter()`` seconds) has
    passed, looked at before each chunk."""
    us = 0 if root.white_to_move == (ply % 2 == 0) else 1
    out: list[str] = []
    for start in range(0, len(boards), _FEN_CHUNK):
        check_deadline(deadline, "split")
        out += _fen_chunk(root, _normal_form(boards[start:start + _FEN_CHUNK], us), ply)
    return out


def _fen_chunk(root: Position, norm: np.ndarray, ply: int) -> list[str]:
    """The FENs of the boards in normal form ``norm`` (uint64 (m, 6), :func:`_normal_form`)."""
    m = len(norm)
    sq = np.arange(64, dtype=np.uint64)
    bit = [((norm[:, w, None] >> sq) & np.uint64(1)).astype(np.uint8) for w in range(4)]
    text = np.full((m, 8, 9), ord("/"), dtype=np.uint8)
    text[:, :, :8] = _LETTERS[bit[0] | bit[1] << 1 | bit[2] << 2 | bit[3] << 3][:, _FEN_ORDER].reshape(m, 8, 8)
    text[:, 7, 8] = ord("\n")  # one board field a line
    joined = text.tobytes().decode("ascii")
    for k in range(8, 1, -1):  # runs of empty squares ("1"), within a rank: the ranks end in "/" or a newline
        joined = joined.replace("1" * k, str(k))
    board_fields = joined.split("\n")
    # The rest of a FEN depends on the back ranks (castling letters), the rights and en passant
    # only: each distinct tag's is made once. A tag is exact: the first and last rank of each of
    # the four words (16 bits each) where a right is left, and the rights and en passant file.
    back = np.zeros(m, dtype=np.uint64)
    for w in range(4):
        word = norm[:, w]
        back |= ((word & np.uint64(0xFF)) | ((word >> np.uint64(48)) & np.uint64(0xFF00))) << np.uint64(16 * w)
    rights = norm[:, 4]
    back[rights == 0] = 0  # no castling letter to write: the back ranks do not matter
    tags = np.stack([back, rights | (norm[:, 5] << np.uint64(8))], axis=1)
    _, first, group = _unique_rows(tags)
    tails = [_position(root, norm[i], ply).fen_fields() for i in first.tolist()]
    return [f"{board} {tails[g]}" for board, g in zip(board_fields, group.tolist())]


def _levels(pos: Position, seed: int, deadline: float | None = None):
    """Yield (ply, boards, keys, multiplicities, side to move) for ply 0, 1, 2, ..., merged; raises
    Overdue ("split") before a ply is expanded once ``deadline`` (``time.perf_counter()`` seconds)
    has passed."""
    root, us, ci = _core.gpu_root(pos.core_args())
    z = np.frombuffer(_core.zobrist_keys_blob(seed), dtype=np.uint64).copy()
    boards = np.array([root], dtype=np.uint64)
    keys, mult, ply = host_keys(boards, us, ci, z), np.ones(1, dtype=np.uint64), 0
    while True:
        yield ply, boards, keys, mult, us, ci
        check_deadline(deadline, "split")
        moves = np.zeros(len(boards), dtype=np.uint32)
        _core.batch_count(np.ascontiguousarray(boards).reshape(-1), len(boards), us, ci, moves)
        children = int(moves.sum(dtype=np.uint64))
        limits.check_split_children(children, ply + 1)  # memory, before it is taken
        limits.check_split_memory(children * limits.SPLIT_BYTES_PER_CHILD,
                                  f"splitting at ply {ply + 1} ({children:,} positions)")
        children, parents = expand(boards, us, ci)
        us, ply = us ^ 1, ply + 1
        boards, keys, mult = merge(children, host_keys(children, us, ci, z), mult[parents], us, pos, ply)


def root_growth(pos: Position, depth: int) -> list[int]:
    """perft(pos, d) for d = 0, 1, ... while a count stays under a million nodes (host C++, well
    under a second), up to ``depth``: the measured growth of the first plies."""
    counts = [1]
    for d in range(1, depth + 1):
        if counts[-1] >= 50_000:
            break
        counts.append(int(_core.perft(pos.core_args(), d, 1)))
    return counts


def estimate_perft(counts: list[int], depth: int) -> float:
    """perft(depth) from the first plies' ``counts`` (root_growth): exact where measured, else
    the last measured branching factor grown 6 % a ply (a deeper tree branches more; the GPU
    driver's estimate, perft_core/gpu/driver.py ``_growth``). Nodes, float."""
    if depth < len(counts):
        return float(counts[depth])
    last = len(counts) - 1
    b = counts[last] / counts[last - 1] if last >= 1 and counts[last - 1] else 1.0
    est = float(counts[last])
    for i in range(1, depth - last + 1):
        est *= max(b, 1.0) * 1.06 ** i
    return est


def unit_estimates(boards: np.ndarray, us: int, ci: bytes, rem: int, counts: list[int], ply: int) -> np.ndarray:
    """Estimated perft(board, rem) of each unit (boards uint64 (n, 5) at ``ply`` of the run, ``us``
    to move, castling geometry ``ci``; ``counts``: the run root's perft 0, 1, ... (root_growth)).
    Nodes, float64 (n,).

    Each unit's own perft s is counted, s as deep as ``_SAMPLE_MAX_PLIES`` and a budget of
    ``_SAMPLE_NODES`` for all units allow (at least min(rem, 2), exact when s = rem), and grown to
    ``rem`` plies by the root's growth from ply + s to ply + rem (:func:`estimate_perft`). With
    s >= 3, a unit that branches more than the others also grows faster: its own branching
    b = sqrt(perft s / perft (s - 2)) (two plies, so both sides move), over the units' geometric
    mean, weighs the estimate by (b / mean)^(0.5 (rem - s)): half of a unit's excess branching
    persists a further ply. Measured against exact counts (units at split ply 2, sample 3, log
    error's standard deviation, the root's growth alone -> with the unit's branching): startpos
    perft 12 0.359 -> 0.097, perft 7 0.133 -> 0.048; CPW 3 perft 8 0.149 -> 0.091; Kiwipete 6,
    CPW 4-6 perft 6 and a Chess960 perft 6 0.062-0.080 -> 0.048-0.068 (NOTES.md, "Session 5"; a
    share of 1 overshoots: startpos perft 12 0.275, CPW 3 0.141).
    """
    n = len(boards)
    if n == 0:
        return np.zeros(0)
    flat = np.ascontiguousarray(boards).reshape(-1)
    sample = min(rem, 2)
    while (sample < min(rem, _SAMPLE_MAX_PLIES)
           and n * estimate_perft(counts, ply + sample + 1) / max(estimate_perft(counts, ply), 1.0) <= _SAMPLE_NODES):
        sample += 1
    own = np.asarray(_core.batch_perft(flat, n, us, ci, sample), dtype=np.float64)
    growth = estimate_perft(counts, ply + rem) / max(estimate_perft(counts, ply + sample), 1.0)
    est = own * growth
    if 3 <= sample < rem:
        two_back = np.asarray(_core.batch_perft(flat, n, us, ci, sample - 2), dtype=np.float64)
        branching = np.sqrt(own / np.maximum(two_back, 1.0))
        live = branching > 0  # a unit without moves estimates 0 whatever the weight
        if live.any():
            mean = np.exp(np.mean(np.log(branching[live])))
            est[live] *= (branching[live] / mean) ** (_OWN_GROWTH_SHARE * (rem - sample))
    return est


def choose_split_ply(pos: Position, depth: int, workers: int, nodes_per_second: float | None,
                     unique_at=None, deadline: float | None = None) -> int:
    """The split ply of a run: the first ply with at least 20 units (unique positions) per worker,
    then deeper while a unit would take over 600 s at ``nodes_per_second`` (a measured speed; None
    skips that rule), never below 1 nor deeper than ``depth - 1`` (a unit counts at least one ply)
    nor than ``limits.MAX_SPLIT_PLY``.

    ``unique_at(ply) -> int`` gives the number of units at a ply (default: expand and count, raising
    Overdue ("split") once ``deadline``, ``time.perf_counter()`` seconds, has passed).
    Depth 0 or 1: ply 0 (one unit, the root).
    """
    if depth <= 1:
        return 0
    if unique_at is None:
        sizes: dict[int, int] = {}
        gen = _levels(pos, _core.ZOBRIST_DEFAULT_SEED, deadline)

        def unique_at(ply: int) -> int:
            while ply not in sizes:
                p, b, *_ = next(gen)
                sizes[p] = len(b)
            return sizes[ply]
    counts = root_growth(pos, depth)
    deepest = min(depth - 1, limits.MAX_SPLIT_PLY)
    ply = 1
    while ply < deepest and unique_at(ply) < _MIN_UNITS_PER_WORKER * workers:
        ply += 1
    if nodes_per_second:
        while ply < deepest:
            paths = estimate_perft(counts, ply)
            if estimate_perft(counts, depth) / max(paths, 1.0) / nodes_per_second <= _MAX_UNIT_SECONDS:
                break
            ply += 1
    return ply


def split(pos: Position, depth: int, ply: int, seed: int | None = None,
          deadline: float | None = None) -> list[Unit]:
    """The units of perft(pos, depth) split at ``ply`` (0 <= ply <= depth), keyed under ``seed``
    (default: the engine's key seed), largest estimate first.

    Raises KeyCollisionError if two different boards share a key; ValueError for a bad ply;
    Overdue ("split") once ``deadline`` (``time.perf_counter()`` seconds; None: none) has passed,
    looked at before each ply's expansion and every 4,096 units made (a big split takes long:
    Kiwipete perft 6 at ply 4, 1.37 M units, about 22 s on this project's VM).
    """
    limits.check_split_ply(ply, depth)
    seed = _core.ZOBRIST_DEFAULT_SEED if seed is None else seed
    for p, boards, keys, mult, us, ci in _levels(pos, seed, deadline):
        if p == ply:
            break
    rem = depth - ply
    limits.check_split_memory(len(boards) * limits.SPLIT_BYTES_PER_UNIT, f"the {len(boards):,} units of ply {ply}")
    check_deadline(deadline, "split")
    estimates = unit_estimates(boards, us, ci, rem, root_growth(pos, depth), ply)
    # largest estimate first, then by key (high word, then low word); the rows in that order
    order = np.lexsort((keys[:, 0], keys[:, 1], -estimates))
    texts = fens(pos, boards[order], ply, deadline)
    his, los = keys[order, 1].tolist(), keys[order, 0].tolist()
    mults, ests = mult[order].tolist(), estimates[order].tolist()
    units = []
    for start in range(0, len(order), _POLL_ROWS):
        check_deadline(deadline, "split")
        units += [Unit(his[i] << 64 | los[i], texts[i], rem, mults[i], ests[i])
                  for i in range(start, min(start + _POLL_ROWS, len(order)))]
    return units

