"""README.md's commands work as written: every line of its code blocks is run (or, for a synopsis,
checked against ``perft SUB --help``), so the README cannot drift from the program again (issue 35).

How a command line is run (:func:`runnable`), the same rules for every line:

- ``perft`` is the ``perft`` command of this checkout (a shim on PATH: ``python -m perft_cli``);
  each line runs in ``bash`` in a fresh folder, so files it writes (``docs/``, ``perft-report/``,
  ``p7.sqlite``) stay there; ``oracle/data/`` is this checkout's.
- small depths: a DEPTH above :data:`MAX_DEPTH` is lowered to it; a node budget above
  :data:`MAX_NODES` is lowered to it, and ``perft suite`` / ``perft report`` get it when they
  have none (the main job otherwise counts for minutes);
- placeholders become real things: ``"FEN"`` Kiwipete, ``"python my_engine.py"`` the fake
  perftree script, ``/path/perft_gpu`` and ``my_perft`` small total-only programs (shell scripts
  over ``suites/fake_engines/total_only.py``), ``my_tests.epd`` / ``my_tests.csv`` /
  ``positions.epd`` tables made from the bundled ones, ``perft diff ...`` a whole diff command,
  ``[--json]`` ``--json`` and ``SUBCOMMAND`` every subcommand;
- ``gpu`` (a backend or a reference) is ``gpu-emulated`` where no GPU is usable (the same driver on
  NumPy); ``/usr/games/stockfish`` lines skip with a reason where Stockfish is not installed.

Each line's expected exit status is in :data:`EXPECT` (0 unless the README says otherwise);
a line of the README that is not there fails :func:`test_every_readme_command_is_covered`.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from oracle import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FAKES = ROOT / "suites" / "fake_engines"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
STOCKFISH = "/usr/games/stockfish"
MAX_DEPTH = 3
MAX_NODES = 20_000
SUBCOMMANDS = ("run", "perftree", "uci", "deep", "diff", "suite", "report")


def code_blocks(language: str) -> list[list[str]]:
    """The lines of every ```language block of the README (a line indented under the previous
    one continues it)."""
    blocks = []
    for body in re.findall(rf"^```{language}\n(.*?)^```", README, re.M | re.S):
        lines: list[str] = []
        for line in body.splitlines():
            if line.startswith((" ", "\t")) and lines:
                lines[-1] += " " + line.strip()
            elif line.strip():
                lines.append(line.rstrip())
        blocks.append(lines)
    return blocks


def command_of(line: str) -> str:
    """A README line without its trailing comment (`` # ...``)."""
    return re.sub(r"\s+#\s.*$", "", line).strip()


def is_synopsis(command: str) -> bool:
    """A usage line (``perft run POSITION [DEPTH] [--json] ...``), not a command to run; an
    optional ``[--json]`` at the end of a command does not make it one."""
    command = re.sub(r" \[--json\]$", "", command)
    return bool(re.search(r"\[--?[a-z]|\[[A-Z]|\b(POSITION|DEPTH|MOVES)\b", command))


BLOCKS = [[command_of(line) for line in block] for block in code_blocks("bash")]
COMMANDS = [command for block in BLOCKS for command in block]

# Exit statuses other than 0, and why (README's own words where it says them).
EXPECT = {
    # Stockfish 15.1 has an en passant bug the tricky suite shows (README); other versions pass
    "perft suite tricky chess960 --engine /usr/games/stockfish --max-nodes 10000000": {0, 1},
    "perft suite my_tests.epd --engine /usr/games/stockfish": {0, 1},
    "perft report --engine /usr/games/stockfish --out docs --max-nodes 20000000": {0, 1},
}
# Lines that install: CI runs the test command itself (.ci/run); here the extras they name exist
# and what follows the install is run.
INSTALLS = re.compile(r"^(python -m )?pip install (\.|\"\.\[([a-z-]+)\]\")( && )?")


def gpu_usable() -> bool:
    from conftest import gpu_unavailable_reason

    return gpu_unavailable_reason() is None


def runnable(command: str) -> str:
    """The line actually run for README ``command`` (module docstring; :func:`_setup` makes the files)."""
    line = command.replace("[--json]", "--json")
    line = line.replace("perft diff ...", f'perft diff --engine cpu "{KIWIPETE}" 3')
    line = line.replace('"FEN"', f'"{KIWIPETE}"')
    line = line.replace('"python my_engine.py"', f'"{sys.executable} {FAKES / "fake_perftree.py"} good"')
    line = line.replace("/path/perft_gpu", "perft_gpu")
    line = line.replace("oracle/data/", f"{ROOT / 'oracle' / 'data'}/")
    if not gpu_usable():
        line = re.sub(r"--(backend|reference) gpu\b(?!-)", r"--\1 gpu-emulated", line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    segments: list[list[str]] = [[]]
    for word in lexer:
        if word in ("|", "&&", ";"):
            segments += [[word], []]
        else:
            segments[-1].append(word)
    for words in segments:
        if words[:1] != ["perft"]:
            continue
        for i, word in enumerate(words):
            prev = words[i - 1] if i else ""
            if word.isdigit() and not prev.startswith("--") and words[1] in ("run", "diff", "deep"):
                words[i] = str(min(int(word), MAX_DEPTH))  # the DEPTH of run / diff / deep
            elif prev == "--max-nodes":
                words[i] = str(min(int(word), MAX_NODES))
        if words[1] in ("suite", "report") and "--max-nodes" not in words and "--index" not in words:
            words += ["--max-nodes", str(MAX_NODES)]
    return " ".join(w if w in ("|", "&&", ";") else shlex.quote(w) for words in segments for w in words)


def _setup(tmp: Path) -> dict[str, str]:
    """The folder a line runs in: the ``perft`` shim and the fake programs on PATH, the tables."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    py, total_only = shlex.quote(sys.executable), shlex.quote(str(FAKES / "total_only.py"))
    scripts = {
        "perft": f'exec {py} -m perft_cli "$@"',
        # perft_gpu_2026's command line: FEN DEPTH [-nott]; prints Perft(NN): N lines
        "perft_gpu": f'exec {py} {total_only} "$1" "$2"',
        # a program printing total=N (--total-regex "total=(\\d+)"): my_perft --fen FEN --depth D
        "my_perft": f'{py} {total_only} "$2" "$4" --format stockfish | sed -n "s/^Nodes searched: /total=/p"',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    rows = [line for line in (ROOT / "oracle" / "data" / "pychess_tricky.csv").read_text().splitlines()]
    header = rows[0].split(",")
    table = [dict(zip(header, r.split(","))) for r in rows[1:6]]
    (tmp / "my_tests.csv").write_text("fen,depth,nodes\n" + "".join(f"{r['fen']},{r['depth']},{r['nodes']}\n" for r in table))
    (tmp / "my_tests.epd").write_text("".join(f"{r['fen']} ;D{r['depth']} {r['nodes']}\n" for r in table))
    (tmp / "positions.epd").write_text(f"{KIWIPETE}\nstartpos\n{table[0]['fen']} ;D{table[0]['depth']} {table[0]['nodes']}\n")
    # the package the tests import (installed in CI, PYTHONPATH=checkout in a developer's build)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def test_every_readme_command_is_covered():
    """Every line of the README's bash blocks is a synopsis, an install line or a command this
    test runs; the expectations name only lines that are in the README."""
    assert COMMANDS, "no bash block found in README.md"
    assert set(EXPECT) <= set(COMMANDS), set(EXPECT) - set(COMMANDS)
    for command in COMMANDS:
        assert command.startswith(("perft ", "cat ", "python -m pip ", "pip ")), f"README line not understood: {command}"


@pytest.mark.parametrize("command", [c for c in COMMANDS if is_synopsis(c)])
def test_synopsis_options_exist(command, capsys):
    """A usage line's options are the subcommand's: each ``--option`` is in ``perft SUB --help``."""
    from perft_cli import main

    sub = command.split()[1]
    with pytest.raises(SystemExit):
        main([sub, "--help"])
    help_text = capsys.readouterr().out
    for option in re.findall(r"--[a-z][a-z0-9-]*", command):
        assert re.search(rf"{re.escape(option)}\b", help_text), f"{option} of {command!r} is not in perft {sub} --help"


def test_install_lines_name_real_extras_and_ci_runs_the_test_command():
    extras = set(re.findall(r"^(\w[\w-]*) = \[", (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]")[1]
                            .split("\n[")[0], re.M))
    installs = [c for c in COMMANDS if INSTALLS.match(c)]
    assert installs
    for command in installs:
        for extra in re.findall(r'"\.\[([a-z-]+)\]"', command):
            assert extra in extras, f"{command}: no extra [{extra}] in pyproject.toml"
    test_command = next(c for c in installs if c.endswith("&& pytest"))
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()  # CI runs exactly this


def _runs(command: str) -> bool:
    """Whether ``command`` is run: not a synopsis, not an install line with nothing after it, not
    the test command (this is it: CI runs it, see the install test)."""
    return not is_synopsis(command) and INSTALLS.sub("", command) not in ("", "pytest")


@pytest.mark.parametrize("block", [pytest.param(b, id=f"block{i}") for i, b in enumerate(BLOCKS) if any(map(_runs, b))])
def test_readme_commands_work_as_written(block, tmp_path):
    """A block's commands in order in one folder (a later line may use what an earlier one wrote:
    ``perft deep --resume p7.sqlite``, ``perft report --index docs``); each exits as expected,
    without a traceback."""
    env = _setup(tmp_path)
    skipped = []
    for command in filter(_runs, block):
        if STOCKFISH in command and not os.access(STOCKFISH, os.X_OK):
            skipped.append(command)
            continue
        line = runnable(INSTALLS.sub("", command))
        lines = [line.replace("SUBCOMMAND", sub) for sub in SUBCOMMANDS] if "SUBCOMMAND" in line else [line]
        for each in lines:
            proc = subprocess.run(["bash", "-c", f"set -o pipefail; {each}"], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=300, stdin=subprocess.DEVNULL)
            assert proc.returncode in EXPECT.get(command, {0}), (each, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
            assert "Traceback" not in proc.stderr, (each, proc.stderr[-2000:])
    if skipped:
        pytest.skip(f"Stockfish is not installed (Debian: apt-get install stockfish): not run: {skipped}")


def test_readme_python_block_runs():
    """The API block runs as written (``gpu`` is ``gpu-emulated`` without a GPU), and a line whose
    comment is a number returns that number."""
    import perft_core  # noqa: F401  (the block imports it; a broken build fails here, not in exec)

    (block,) = code_blocks("python")
    scope: dict = {}
    for line in block:
        code, _, comment = line.partition("#")
        if not gpu_usable():
            code = code.replace('backend="gpu"', 'backend="gpu-emulated"')
        if re.fullmatch(r"\s*\d+\s*", comment):
            assert eval(code, scope) == int(comment), line
        else:
            exec(code, scope)


def test_readme_names_the_reference_perft_diff_compares_with(capsys):
    """README's comment on ``perft diff --engine ...`` names the reference that ``perft diff``
    itself prints for an engine that is not ours (issue 35: it said python-chess)."""
    engine = shlex.join([sys.executable, str(FAKES / "fake_uci.py"), "good"])
    assert cli.main(["diff", "--engine", engine, "startpos", "1"]) == 0
    reference = re.search(r" and (\S+) agree:", capsys.readouterr().out).group(1)
    line = next(line for line in README.splitlines() if line.startswith("perft diff --engine /usr/games/stockfish"))
    comment = line.split("#", 1)[1]
    assert reference in comment and "python-chess" not in comment, comment
