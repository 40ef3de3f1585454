#!/usr/bin/env python3
"""A fake total-only perft program for the oracle's tests: ``python total_only.py FEN DEPTH [BUG] [--format F]``.

Prints only totals, like most standalone perft programs: ``Perft(NN): N, time: X seconds`` for each
depth 1..DEPTH (as perft_gpu_2026 does; ``--format stockfish`` prints one ``Nodes searched: N``).
BUG (default ``good``) plants one mistake:

- a bug of ``broken.BUGS`` (a move-generation bug, e.g. ``no-ep``, ``no-underpromotion``);
- a bug of ``broken.STATE_BUGS`` (make or unmake leaves wrong state, e.g. ``ep-not-set``);
- ``walk``: a tree-walk bug: when its own walk starts with 4 or more plies to go, it forgets the
  subtree of its last root move (a loop bound off by one), so at a node with 4 plies left every
  child counted from its own FEN (3 plies) is right but the node's count is not;
``--strict`` refuses a FEN whose side not to move is in check (exit 2), as many engines do;
``--loop-illegal`` never answers on one. ``--format grouped`` prints ``Nodes searched: 8,902``;
``--xfen-only`` reads only the ``KQkq`` letters of a Chess960 FEN's castling field (X-FEN), as an
engine that knows no Shredder-FEN does (``HBhb`` becomes no right); ``--latin1`` first prints a
line in Latin-1 (not UTF-8). ``--flaky PATH``: every second run (counted in the file PATH) prints
each total one too high (the first run among them), as an engine reading uninitialised memory may.
BUG may also be ``garbage`` (no total), ``crash`` (exit 3 after printing depth 1), ``hang``, ``wrong-depth``
  (stops printing one depth short).
"""
import sys
import time

import broken

strict = "--strict" in sys.argv  # refuse positions whose side not to move is in check, as many engines do
loops = "--loop-illegal" in sys.argv  # or never answer on them, as a program may
flaky = sys.argv[sys.argv.index("--flaky") + 1] if "--flaky" in sys.argv else None
if flaky is not None:
    sys.argv.remove(flaky)
    with open(flaky, "a+") as runs:
        runs.seek(0)
        off = (len(runs.read()) + 1) % 2  # 1, 0, 1, ... over the runs
        runs.write("x")
xfen_only = "--xfen-only" in sys.argv
latin1 = "--latin1" in sys.argv
args = [a for a in sys.argv[1:]
        if not a.startswith("--format") and a not in ("--strict", "--loop-illegal", "--xfen-only", "--latin1", "--flaky")]
fmt = sys.argv[sys.argv.index("--format") + 1] if "--format" in sys.argv else "perft_gpu"
if fmt in args:
    args.remove(fmt)
fen, depth = args[0], int(args[1])
mode = args[2] if len(args) > 2 else "good"
if xfen_only:
    import chess

    fields = fen.split()
    fields[2] = "".join(c for c in fields[2] if c in "KQkq") or "-"
    board = chess.Board(" ".join(fields), chess960=True)
else:
    board = broken.board_literal(fen)
if latin1:
    sys.stdout.buffer.write("Gr\u00fc\u00dfe aus J\u00fclich\n".encode("latin-1"))
    sys.stdout.flush()
if strict and board.was_into_check():
    print("error: illegal position (the side not to move is in check)")
    sys.exit(2)
if loops and board.was_into_check():
    time.sleep(3600)
gen = broken.BUGS.get(mode) or broken.STATE_GEN.get(mode, broken.legal)
cache: dict = {}


def perft(d: int) -> int:
    if mode in broken.STATE_BUGS:  # no cache: the bug lives in the state a transposition key ignores
        return broken.perft(board, d, gen, state=mode)
    if d == 0:
        return 1
    moves = gen(board)
    if d == 1:
        return len(moves)
    key = (board.epd(), d)  # pieces, side, castling rights, en passant only when legal (python-chess)
    if key in cache:
        return cache[key]
    nodes = 0
    for move in moves:
        board.push(move)
        nodes += perft(d - 1)
        board.pop()
    cache[key] = nodes
    return nodes


def root(d: int) -> int:
    if mode == "walk" and d >= 4:
        moves = gen(board)[:-1]  # the bug: the last root move's subtree is left out
        nodes = 0
        for move in moves:
            board.push(move)
            nodes += perft(d - 1)
            board.pop()
        return nodes
    return perft(d)


if mode == "hang":
    time.sleep(3600)
if mode == "garbage":
    print("perft says: forty-two")
    sys.exit(0)
last = depth - 1 if mode == "wrong-depth" else depth
for d in range(1, last + 1) if fmt == "perft_gpu" else [last]:
    start = time.perf_counter()
    nodes = root(d)
    if flaky is not None:
        nodes += off
    if fmt == "stockfish":
        print(f"\nNodes searched: {nodes}")
    elif fmt == "grouped":
        print(f"\nNodes searched: {nodes:,}")
    else:
        print(f"Perft({d:02d}): {nodes}, time: {time.perf_counter() - start:.4f} seconds", flush=True)
    if mode == "crash":
        sys.exit(3)
