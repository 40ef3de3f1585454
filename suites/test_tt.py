"""CPU transposition tables (perft_core.zobrist, perft_core/src/tt.h): same counts, provably.

* With tables, every bundled table row within the node budget gives its published count, with one
  table shared by all the rows of a suite (entries are keyed by position only, so reuse across
  roots must be sound) and with a fresh, deliberately tiny table per position (heavy collisions:
  lossy slots overwritten, the lossless pool full).
* The audit: a recording table keeps the position of each entry; each entry's key is recomputed
  from scratch and its count by the plain recursion. A non-recording table is audited by walking
  the tree and looking every position up: every entry must be the key of a walked position.
* Planted key bugs: a seed-dependent one (weak keys after captures) is caught by ``verify_seed``;
  a structural one (the captured piece left in the key) by the comparison with ``tt=False`` and
  by the audit.
* Counts past 2**64: a walled position whose two sides cannot interact, so perft(n) is the
  product of each side's walk counts (computed here with python-chess), n = 22.
"""
from __future__ import annotations

import os

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kings import kings_perft

import perft_core
from oracle import tables
from oracle.strategies import random_walk_fens
from perft_core import Position, _core
from perft_cli import main
from perft_core.zobrist import (
    HashVerificationError, TranspositionTable, divide_tt, perft_tt, zobrist,
)

START = chess.STARTING_FEN
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CPW3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
CPW4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"
KINGS = "7k/8/8/8/8/8/8/K7 w - - 0 1"
SHREDDER = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
MAX_NODES = int(os.environ.get("PERFT_TT_MAX_NODES", 10_000_000))
SLOW_MAX_NODES = int(os.environ.get("PERFT_TT_SLOW_MAX_NODES", 300_000_000))
TINY_MB = 0.002  # ~2 KiB: a hundred lossy slots and a couple of lossless nodes
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pos(row: tables.TableRow) -> Position:
    return Position.from_fen(row.fen, chess960=row.chess960)


# ---------------------------------------------------------------- the bundled tables


@pytest.mark.parametrize("suite", [s for s in tables.SUITES if s != "deep"])  # deep rows: beyond these budgets
def test_tables_with_shared_tt(suite):
    rows = tables.budget(tables.load(suite), MAX_NODES)
    table = TranspositionTable(max(r.depth for r in rows), 8, seed=0xC0FFEE)
    for row in rows:
        assert perft_tt(_pos(row), row.depth, table=table) == row.nodes, f"{row.suite}/{row.id} depth {row.depth}"
    assert table.allocated_bytes <= table.budget_bytes


@pytest.mark.parametrize("suite", [s for s in tables.SUITES if s != "deep"])  # deep rows: beyond these budgets
def test_tables_with_tiny_tt(suite):
    rows = tables.budget(tables.load(suite), MAX_NODES // 10)
    deepest = {}
    for row in rows:  # the deepest row of each position: fresh tiny tables for each
        if row.depth >= deepest.get(row.id, row).depth:
            deepest[row.id] = row
    for row in deepest.values():
        table = TranspositionTable(row.depth, TINY_MB)
        assert perft_tt(_pos(row), row.depth, table=table) == row.nodes, f"{row.suite}/{row.id} depth {row.depth}"


def test_tiny_table_collides_and_stays_exact():
    table = TranspositionTable(5, TINY_MB, lossless_from=3)
    assert perft_tt(KIWIPETE, 5, table=table) == 193_690_690
    stats = {s["depth"]: s for s in table.stats()}
    assert stats[2]["kind"] == "lossy" and stats[2]["replaced"] > 1000
    assert any(s["kind"] == "lossless" and s["full"] > 0 for s in stats.values())
    assert table.allocated_bytes <= table.budget_bytes < 2**12


@pytest.mark.parametrize("fen, depth, nodes", [
    (KIWIPETE, 4, 4_085_603), (CPW3, 6, 11_030_083), (CPW4, 4, 422_333), (SHREDDER, 5, 8_146_062)])
def test_threads_share_the_tables(fen, depth, nodes):
    assert perft_core.perft(fen, depth, tt=True, threads=2, tt_mb=4) == nodes
    split = perft_core.divide(fen, depth, tt=True, threads=2, tt_mb=1)
    assert split == perft_core.divide(fen, depth) and sum(split.values()) == nodes


@SETTINGS
@given(random_walk_fens(chess960=None), st.integers(1, 4))
def test_random_positions_tiny_tables(fen, depth):
    pos = Position.from_fen(fen)
    assert perft_tt(pos, depth, tt_mb=TINY_MB) == perft_core.perft(pos, depth)
    if depth <= 3:
        assert divide_tt(pos, depth, tt_mb=TINY_MB) == perft_core.divide(pos, depth)


# ---------------------------------------------------------------- the audit


def _audit(table: TranspositionTable) -> tuple[int, list, list]:
    """Recompute every recorded entry: its key from scratch, its count without tables.

    Returns (entries, entries whose key is not their position's, entries with a wrong count).
    """
    bad_keys, bad_counts, n = [], [], 0
    for e in table.entries():
        assert e.core_args is not None
        key = _core.zobrist_key(e.core_args, table.seed)
        if e.key is not None:
            key_ok = e.key == key
        else:
            key_ok = e.key_hi == key >> 64 and e.bucket == table.bucket(key, e.depth)
        if not key_ok:
            bad_keys.append(e)
        if _core.perft(e.core_args, e.depth, 1) != e.count:
            bad_counts.append(e)
        n += 1
    return n, bad_keys, bad_counts


def test_audit_recorded_entries():
    table = TranspositionTable(5, 4, lossless_from=3, record_positions=True)
    for fen, depth in [(START, 5), (KIWIPETE, 4), (CPW3, 5), (SHREDDER, 4), (CPW4, 4)]:
        assert perft_tt(fen, depth, table=table) == perft_core.perft(fen, depth)
    assert {e.kind for e in table.entries()} == {"lossy", "lossless"}
    n, bad_keys, bad_counts = _audit(table)
    assert n > 10_000 and bad_keys == [] and bad_counts == []


def test_audit_by_walking_the_tree():
    """Every entry of a non-recording table is the key of a position of the tree, with its count."""
    depth = 5
    table = TranspositionTable(depth, 16, lossless_from=4)
    perft_tt(START, depth, table=table, threads=1)  # a threaded split stores nothing above its items
    entries = table.entries()
    level = [Position.from_fen(START)]
    for ply in range(1, depth - 1):
        level = [p.push(m) for p in level for m in p.legal_moves()]
        d = depth - ply
        keys = {}
        for p in level:
            keys.setdefault(zobrist(p, seed=table.seed), p)
        lossy = {(k >> 64, table.bucket(k, d)): p for k, p in keys.items()} if d < 4 else {}
        stored = [e for e in entries if e.depth == d]
        assert stored and {e.kind for e in stored} == {"lossy" if d < 4 else "lossless"}
        for e in stored:  # KeyError: an entry that is no position of the tree
            pos = keys[e.key] if e.key is not None else lossy[e.key_hi, e.bucket]
            assert e.count == perft_core.perft(pos, d)
        for k in list(keys)[:500]:
            found = table.lookup(k, d)
            assert found is None or found == perft_core.perft(keys[k], d)


# ---------------------------------------------------------------- planted key bugs


def test_verify_seed_catches_weak_keys():
    with pytest.raises(HashVerificationError, match="seed"):
        perft_tt(KIWIPETE, 4, tt_mb=16, verify_seed=7, _planted_bug="weak_capture_key")
    with pytest.raises(HashVerificationError):
        divide_tt(KIWIPETE, 4, tt_mb=16, verify_seed=7, _planted_bug="weak_capture_key")
    assert perft_tt(KIWIPETE, 4, tt_mb=16, verify_seed=7) == 4_085_603


def test_structural_key_bug_caught_by_tt_off_and_audit():
    """Leaving the captured piece in the key collides under every seed: verify_seed cannot see it."""
    bad = perft_tt(START, 6, tt_mb=16, _planted_bug="drop_captured_piece")
    assert bad != perft_core.perft(START, 6)
    table = TranspositionTable(5, 4, record_positions=True)
    perft_tt(KIWIPETE, 5, table=table, _planted_bug="drop_captured_piece")
    n, bad_keys, bad_counts = _audit(table)
    assert bad_keys and bad_counts  # positions stored under wrong keys, and counts they corrupted


def test_verify_seed_through_api_and_cli(capsys):
    assert perft_core.perft(KIWIPETE, 3, tt=True, verify_seed=99) == 97_862
    assert perft_core.divide(KIWIPETE, 2, tt=True, verify_seed=99) == perft_core.divide(KIWIPETE, 2)
    assert main(["run", KIWIPETE, "4", "--tt", "--tt-mb", "1", "--verify-seed", "0x63"]) == 0
    assert "Nodes searched: 4085603" in capsys.readouterr().out
    assert main(["run", KIWIPETE, "3", "--tt", "--divide"]) == 0
    assert capsys.readouterr().out.strip().endswith("Nodes searched: 97862")
    assert main(["run", KIWIPETE, "3", "--verify-seed", "5"]) == 2
    assert "--verify-seed needs --tt" in capsys.readouterr().err
    assert main(["run", KIWIPETE, "3", "--tt", "--tt-mb", "-1"]) == 2
    assert main(["run", KIWIPETE, "3", "--tt", "--verify-seed", "x"]) == 2


@pytest.mark.parametrize("kwargs", [
    {"tt": 1}, {"verify_seed": 5}, {"tt": True, "tt_mb": 0}, {"tt": True, "tt_mb": float("nan")},
    {"tt": True, "tt_mb": True}, {"tt": True, "verify_seed": -1}, {"tt": True, "verify_seed": 2**64},
])
def test_bad_tt_options(kwargs):  # (tt with the GPU backends is valid: suites/test_gpu_tt.py)
    with pytest.raises(ValueError):
        perft_core.perft(START, 2, **kwargs)


def test_table_options():
    table = TranspositionTable(4, 1)
    with pytest.raises(ValueError, match="max_depth"):
        perft_tt(START, 5, table=table)
    with pytest.raises(ValueError):
        perft_tt(START, 3, table=table, seed=table.seed + 1)
    with pytest.raises(ValueError):
        perft_tt(START, 3, table=table, verify_seed=3)
    with pytest.raises(ValueError):
        perft_tt(START, 3, verify_seed=None, seed=3, tt_mb=1, _planted_bug="nope")
    recording = TranspositionTable(4, 1, record_positions=True)
    with pytest.raises(ValueError, match="threads"):
        perft_tt(START, 4, table=recording, threads=2)
    assert perft_tt(START, 0) == 1 and perft_tt(START, 1) == 20 and divide_tt(START, 0) == {}
    assert divide_tt(START, 1) == dict.fromkeys(Position.from_fen(START).legal_moves(), 1)


@pytest.mark.parametrize("mb", [0.0001, 0.01, 1, 3.5, 64])
def test_memory_within_budget(mb):
    for depth in (3, 6, 12):
        table = TranspositionTable(depth, mb)
        assert table.budget_bytes == int(mb * 2**20)
        assert table.allocated_bytes <= table.budget_bytes


# ---------------------------------------------------------------- counts past 2**64

# Both sides are walled in by blocked pawns that no piece can attack: White's king and dark-squared
# bishop live on ranks 1-2, Black's king and light-squared bishop on ranks 6-8. No move of one side
# changes the moves of the other, so perft(n) = W(ceil(n/2)) * B(floor(n/2)) with W, B the numbers
# of walks of each side's own moves.
WALLED = "2b1k3/8/8/1p1p1p1p/pPpPpPpP/P1P1P1P1/8/2B1K3 w - - 0 1"


def _walks(color: chess.Color, steps: int) -> list[int]:
    board = chess.Board(WALLED)
    board.turn = color
    counts = {board.board_fen(): 1}
    boards = {board.board_fen(): board.copy()}
    out = [1]
    for _ in range(steps):
        nxt: dict[str, int] = {}
        for fen, c in counts.items():
            b = boards[fen]
            for move in b.legal_moves:
                b.push(move)
                b.turn = color
                key = b.board_fen()
                boards.setdefault(key, b.copy())
                nxt[key] = nxt.get(key, 0) + c
                b.turn = not color
                b.pop()
        counts = nxt
        out.append(sum(counts.values()))
    return out


def test_counts_past_2_64():
    white, black = _walks(chess.WHITE, 11), _walks(chess.BLACK, 11)
    assert perft_core.perft(WALLED, 5) == white[3] * black[2]  # the independence argument, checked
    n = 22
    expected = white[11] * black[11]
    assert expected > 2**64
    assert perft_core.perft(WALLED, n, tt=True, tt_mb=64) == expected
    split = divide_tt(WALLED, n, tt_mb=64)
    assert sum(split.values()) == expected and max(split.values()) < 2**64


# ---------------------------------------------------------------- deep checks


@pytest.mark.slow
@pytest.mark.parametrize("fen, depth, nodes", [
    (START, 7, 3_195_901_860), (KIWIPETE, 6, 8_031_647_685), (CPW3, 8, 3_009_794_393),
    (CPW4, 6, 706_045_033)])
def test_deep_with_verify_seed(fen, depth, nodes):
    assert perft_core.perft(fen, depth, tt=True, threads=os.cpu_count() or 1, verify_seed=0xABCDEF) == nodes


@pytest.mark.slow
def test_deep_audit():
    table = TranspositionTable(6, 16, record_positions=True)
    assert perft_tt(KIWIPETE, 6, table=table) == 8_031_647_685
    n, bad_keys, bad_counts = _audit(table)
    assert n > 100_000 and bad_keys == [] and bad_counts == []


@pytest.mark.slow
@pytest.mark.parametrize("suite", [s for s in tables.SUITES if s != "deep"])  # deep rows: beyond these budgets
def test_tables_slow_budget(suite):
    rows = [r for r in tables.load(suite) if MAX_NODES < r.nodes <= SLOW_MAX_NODES]
    if not rows:
        pytest.skip(f"no {suite} rows between {MAX_NODES} and {SLOW_MAX_NODES} nodes")
    table = TranspositionTable(max(r.depth for r in rows), 256)
    for row in rows:
        assert perft_tt(_pos(row), row.depth, table=table, threads=os.cpu_count() or 1) == row.nodes


def test_a_count_stopped_at_its_deadline_stores_no_partial_count():
    """Issue 26: a count through the tables stops at its deadline (or at Ctrl-C, the same flag)
    without storing the partial sums of the nodes it left: every entry recorded before the stop is
    exact (recounted without tables), and a count through the same tables afterwards is too."""
    table = TranspositionTable(6, 16, lossless_from=4, record_positions=True)
    with pytest.raises(_core.CountStopped, match="deadline"):
        _core.perft_tt(Position.from_fen(KIWIPETE).core_args(), 6, 1, table._native, 0, 0.2)
    n, bad_keys, bad_counts = _audit(table)
    assert n > 1000 and bad_keys == [] and bad_counts == []
    assert perft_tt(KIWIPETE, 6, table=table, threads=1) == 8_031_647_685


def test_counts_past_2_to_the_64_stay_fast_through_lossless_levels():
    """A lossy entry holds a 64-bit count, so a subtree of 2^64 nodes or more was never stored and was
    counted again at every visit: king against king at depth 36 ran past 40 s (depth 30: 0.24 s; a
    helper's hunt, session 29). The levels where subtrees may pass 2^63 are now lossless (128-bit
    counts): depth 40, 2.2e33 nodes, is exact within a minute's limit (about 0.4 s on this VM)."""
    for depth in (36, 40):
        got = perft_core.perft(KINGS, depth, tt=True, max_seconds=60)
        assert got == kings_perft(chess.A1, chess.H8, True, depth)
    from perft_core.zobrist import big_subtree_depth

    assert big_subtree_depth(KINGS, 40) == 21 and big_subtree_depth(chess.STARTING_FEN, 12) is None


def test_a_count_past_2_to_the_128_is_refused_not_wrapped(capsys):
    """Through the tables king against king passes 2^128 - 1 at depth 48 within seconds; the 128-bit
    sums wrapped and `perft run K2 48 --tt` printed 2.4e36 with exit 0 (the count is 1.0e39; a
    helper's hunt, session 33). The sums saturate now and the count is refused (CountOverflow, exit
    2, one line), from perft, divide and the CLI; depth 47 (below 2^128) is still exact."""
    from perft_core.errors import CountOverflow

    truth = kings_perft(chess.A1, chess.H8, True, 48)
    assert (1 << 128) < truth
    assert perft_core.perft(KINGS, 47, tt=True, max_seconds=60) == kings_perft(chess.A1, chess.H8, True, 47) < 1 << 128
    with pytest.raises(CountOverflow, match=r"passes 2\^128 - 1"):
        perft_core.perft(KINGS, 48, tt=True, max_seconds=60)
    with pytest.raises(CountOverflow, match=r"passes 2\^128 - 1"):
        perft_core.divide(KINGS, 48, tt=True, max_seconds=60)
    with pytest.raises(CountOverflow):
        perft_tt(KINGS, 50, threads=2)
    assert main(["run", KINGS, "48", "--tt", "--force"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("perft: error: the count passes 2^128 - 1")


def test_a_count_far_past_2_to_the_128_is_refused_at_once():
    """A node whose sum saturates returns at once: at depth 58 the refusal took 36 s (every
    saturated subtree, never stored, was counted again at each visit), 64 ran for minutes; each is
    refused well within the limit now (within 20 s, not stopped by it)."""
    from perft_core.errors import CountOverflow

    for depth in (58, 64):
        with pytest.raises(CountOverflow):
            perft_core.perft(KINGS, depth, tt=True, max_seconds=20, force=True)

