#!/usr/bin/env python3
"""A fake perftree script for the oracle's tests: ``python fake_perftree.py MODE DEPTH FEN [MOVES]``.

Prints ``move count`` lines, a blank line and the total, as perftree expects. MODE is a bug from
``broken.BUGS``, ``miscount``, or ``garbage`` / ``crash`` (exit 3 mid-output) / ``hang``.
``MOVES`` is one argument: moves played from FEN, separated by spaces.
"""
import sys
import time

import chess

import broken

mode, depth, fen = sys.argv[1], int(sys.argv[2]), sys.argv[3]
moves = sys.argv[4].split() if len(sys.argv) > 4 else []
board = chess.Board(fen, chess960=chess.Board(fen, chess960=True).has_chess960_castling_rights())
for uci in moves:
    board.push_uci(uci)
if mode == "hang":
    time.sleep(3600)
if mode == "garbage":
    print("perft says: forty-two")
    sys.exit(0)
rows = broken.divide(board, depth, broken.BUGS.get(mode, broken.legal), miscount=mode == "miscount")
for i, (uci, nodes) in enumerate(rows):
    if mode == "crash" and i == 2:
        sys.stdout.flush()
        sys.exit(3)
    print(f"{uci} {nodes}")
print()
print(sum(n for _, n in rows))
