#!/usr/bin/env python3
"""A fake UCI engine for the oracle's tests: ``python fake_uci.py MODE``.

Speaks enough UCI for ``go perft N`` (Stockfish's output format) on top of python-chess.
MODE is a bug from ``broken.BUGS`` (``good``, ``no-ep``, ...), ``miscount`` (perft off by one at
``broken.MISCOUNT_AT``), or a misbehaviour of the protocol itself:
``garbage`` (answers go perft with nonsense), ``crash`` (prints two move lines, then exits 3),
``crash-960`` (exits 3 on go perft in Chess960 mode only),
``hang`` (never answers go perft), ``hang-start`` (never answers uci), ``king-takes-rook``
(prints standard castling as e1h1, like an engine that only knows Chess960 notation).
``--latin1`` after MODE: its ``id author`` line is Latin-1, not UTF-8. ``--crash-after N`` /
``--hang-after N``: the first N ``go perft`` are answered, the next one exits 3 / never ends.
Divide quirks, each steady (the same question gets the same answer): ``--omit-zero`` leaves out a
move with 0 nodes below it, as many engines do; ``--mute-square SQ`` generates no move for the
side to move while a knight of the other side stands on SQ (whole subtrees of 0 nodes);
``--zero-line UCI`` adds a line ``UCI: 0`` to every divide deeper than 1 ply (a move that is not
generated); ``--rename A B`` prints move A as B.
"""
import sys
import time

import chess

import broken

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
after = {flag: int(sys.argv[sys.argv.index(flag) + 1]) for flag in ("--crash-after", "--hang-after") if flag in sys.argv}
queries = 0
gen = broken.BUGS.get(mode, broken.legal)
option = {flag: sys.argv[sys.argv.index(flag) + 1] for flag in ("--mute-square", "--zero-line") if flag in sys.argv}
rename = dict([sys.argv[sys.argv.index("--rename") + 1:sys.argv.index("--rename") + 3]]) if "--rename" in sys.argv else {}
if "--mute-square" in option:
    muted, moves_of = chess.parse_square(option["--mute-square"]), gen

    def gen(board):
        piece = board.piece_at(muted)
        return [] if piece and piece.piece_type == chess.KNIGHT and piece.color != board.turn else moves_of(board)
board = chess.Board()
chess960 = False


def say(text: str) -> None:
    print(text, flush=True)


for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci":
        if mode == "hang-start":
            time.sleep(3600)
        say("id name fake-" + mode)
        if "--latin1" in sys.argv:
            sys.stdout.buffer.write("id author J\u00fcrgen M\u00fcller\n".encode("latin-1"))
            sys.stdout.flush()
        say("option name UCI_Chess960 type check default false")
        say("uciok")
    elif words[0] == "isready":
        say("readyok")
    elif words[:4] == ["setoption", "name", "UCI_Chess960", "value"]:
        chess960 = words[4] == "true"
    elif words[:2] == ["position", "fen"]:
        moves = words.index("moves") if "moves" in words else len(words)
        board = chess.Board(" ".join(words[2:moves]), chess960=chess960)
        for uci in words[moves + 1:]:
            board.push_uci(uci)
    elif words[:2] == ["go", "perft"]:
        depth = int(words[2])
        queries += 1
        if queries > after.get("--crash-after", queries):
            sys.exit(3)
        if queries > after.get("--hang-after", queries):
            time.sleep(3600)
        if mode == "garbage":
            say("hello, I am not an engine")
            say("Nodes searched: 42")
            continue
        if mode == "hang":
            time.sleep(3600)
        if mode == "crash-960" and chess960:
            sys.exit(3)
        rows = broken.divide(board, depth, gen, miscount=mode == "miscount")
        if "--omit-zero" in sys.argv:
            rows = [(uci, nodes) for uci, nodes in rows if nodes]
        if depth > 1 and "--zero-line" in option:
            rows.append((option["--zero-line"], 0))
        rows = [(rename.get(uci, uci), nodes) for uci, nodes in rows]
        for i, (uci, nodes) in enumerate(rows):
            if mode == "crash" and i == 2:
                sys.exit(3)
            if mode == "king-takes-rook" and board.is_castling(board.parse_uci(uci)):
                uci = chess.Move.uci(board._to_chess960(board.parse_uci(uci)))
            say(f"{uci}: {nodes}")
        say("")
        say(f"Nodes searched: {sum(n for _, n in rows)}")
    elif words[0] == "quit":
        break
