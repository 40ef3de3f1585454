"""README.md says what the commands do: its words are checked against what the commands print."""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from oracle import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FAKES = ROOT / "suites" / "fake_engines"


def test_readme_names_the_reference_perft_diff_compares_with(capsys):
    """README's comment on ``perft diff --engine ...`` names the reference that ``perft diff``
    itself prints for an engine that is not ours (issue 35: it said python-chess)."""
    engine = shlex.join([sys.executable, str(FAKES / "fake_uci.py"), "good"])
    assert cli.main(["diff", "--engine", engine, "startpos", "1"]) == 0
    reference = re.search(r" and (\S+) agree:", capsys.readouterr().out).group(1)
    line = next(line for line in README.splitlines() if line.startswith("perft diff --engine /usr/games/stockfish"))
    comment = line.split("#", 1)[1]
    assert reference in comment and "python-chess" not in comment, comment
