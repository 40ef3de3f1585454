"""``perft perftree DEPTH FEN [MOVES]``: perftree's script protocol over our backends.

perftree (https://github.com/agausmann/perftree, the usual divide-diffing tool) runs a user's script
as ``SCRIPT "$depth" "$fen" "$moves"``: ``$moves`` is ONE argument holding the UCI moves played from
``$fen`` separated by spaces (absent or empty when none; promotions may be written ``a7b8Q``). The
script prints, for each legal move of the position reached, ``move count`` (the move in UCI, a space,
perft(depth - 1) below it), then a blank line, then the total on its own line. Castling is the
king's move (``e1g1``) in standard chess; in Chess960 (inferred from the FEN's castling field, or
``--chess960``) king-takes-rook (``e1h1``), as Stockfish writes it with UCI_Chess960 and as the
Chess960-capable perftree forks expect.

To plug it in, perftree needs an executable without arguments of its own: a two-line script
``#!/bin/sh`` / ``exec perft perftree --backend cpu "$@"``.

Exit statuses: 0 counted; 2 bad input (one line ``perft: error: ...`` on stderr, nothing on stdout).
"""
from __future__ import annotations

import argparse
import sys

from . import cliargs, positions

__all__ = ["DESCRIPTION", "EXAMPLES", "HELP", "NAME", "arguments", "command", "perftree_lines"]


def perftree_lines(divide: dict[str, int], depth: int) -> list[str]:
    """The output lines of perftree's protocol for ``divide`` (``{uci: nodes}``) at ``depth``:
    ``move count`` per move (sorted), ``""``, the total (1 at depth 0)."""
    total = sum(divide.values()) if depth > 0 else 1
    return [f"{move} {count}" for move, count in sorted(divide.items())] + ["", str(total)]


def command(args: argparse.Namespace) -> int:
    """Answer one perftree query; returns the exit status (0; bad input raises for the dispatcher)."""
    from .api import divide

    cliargs.check_tt_mb_needs_tt(args)
    moves = args.moves.split() if args.moves else []
    pos = positions.position_from(args.fen, moves, chess960=True if args.chess960 else None)
    parts = divide(pos, args.depth, backend=args.backend, threads=args.threads, tt=args.tt, tt_mb=args.tt_mb,
                   progress=False, max_estimate_seconds=None)
    sys.stdout.write("\n".join(perftree_lines(parts, args.depth)) + "\n")
    return cliargs.AGREE


NAME = "perftree"
HELP = "perftree's script protocol: perft perftree DEPTH FEN [MOVES]"
DESCRIPTION = ("Answer one query of perftree (the divide-diffing tool): the divide of the position reached from "
               "FEN by MOVES (one argument, space-separated UCI moves), as 'move count' lines, a blank line "
               'and the total. Plug it in with a script: #!/bin/sh  exec perft perftree "$@"')
EXAMPLES = ['perft perftree 3 "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1" "e2e4 e7e5"',
            'printf \'#!/bin/sh\\nexec perft perftree "$@"\\n\' > our-perft.sh && chmod +x our-perft.sh'
            " && perftree ./our-perft.sh"]


def arguments(p: argparse.ArgumentParser) -> None:
    """The subcommand's own arguments (:func:`perft_core.cli.register` adds the counting options)."""
    p.add_argument("depth", metavar="DEPTH", type=cliargs.depth, help="plies")
    p.add_argument("fen", metavar="FEN", help="FEN, X-FEN or Shredder-FEN (one argument), or startpos")
    p.add_argument("moves", metavar="MOVES", nargs="?", default="",
                   help="UCI moves from FEN, space-separated in ONE argument (may be empty)")
    p.add_argument("--chess960", action="store_true", help="read the position with Chess960 castling rules")
