"""Programs that print only a total: run once per query from a command template.

The template is a shell-style command line holding ``{fen}`` and ``{depth}``, e.g.
``"perft_gpu {fen} {depth} -nott"``. It is split with :func:`shlex.split` first and the
placeholders are substituted inside each argument afterwards, so the FEN (with its spaces) is always
one argument; inside an argument that is itself a command line (it holds a space, as the script of
``sh -c 'prog {fen} {depth}'``) the FEN is substituted quoted for the place it stands in that line,
so the shell that splits it again still sees one word: in shell quotes where it stands bare, escaped
for double quotes inside ``"{fen}"``, as it is inside ``'{fen}'`` (:func:`shell_substitute`). The total is read from the program's output: the last line that matches one of

- ``Nodes searched: N`` (Stockfish's ``go perft``),
- ``Perft(NN): N`` with or without ``, time: ...`` (perft_gpu_2026 prints one per depth 1..N),
- ``perft(N) = N`` or ``perft N: N``,

or, when ``total_regex`` is given, the first group of the last line it matches (``re.search``).
Where the line states its depth (``Perft(NN)``, ``perft N``), NN must be the depth asked for: a
total for another depth is never taken silently.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from oracle.engines.base import DEFAULT_TIMEOUT, EngineError, TotalOnlyEngine
from oracle.engines.process import argv_of, command_name, engine_fen, run_once

__all__ = ["CliEngine", "parse_total"]

# (pattern, group of the depth or None, group of the total)
_TOTAL_LINES = (
    (re.compile(r"Nodes searched\s*:\s*(\d+)", re.IGNORECASE), None, 1),
    (re.compile(r"\bperft\s*\(\s*(\d+)\s*\)\s*[:=]\s*(\d+)", re.IGNORECASE), 1, 2),
    (re.compile(r"\bperft\s+(\d+)\s*:\s*(\d+)", re.IGNORECASE), 1, 2),
)


def parse_total(output: str, depth: int, total_regex: re.Pattern | None = None) -> int:
    """The total (nodes) in a program's ``output`` for ``depth`` plies (see the module docstring).

    Raises ``ValueError`` when no line holds a total, or when the last one states another depth.
    """
    found: tuple[int, int | None, str] | None = None
    for line in output.splitlines():
        if total_regex is not None:
            m = total_regex.search(line)
            if m:
                found = (int(m.group(1)), None, line)
            continue
        for pattern, depth_group, total_group in _TOTAL_LINES:
            m = pattern.search(line)
            if m:
                found = (int(m.group(total_group)), int(m.group(depth_group)) if depth_group else None, line)
                break
    if found is None:
        wanted = f"a line matching {total_regex.pattern!r}" if total_regex is not None else \
            "a line 'Nodes searched: N', 'Perft(NN): N', 'perft(N) = N' or 'perft N: N'"
        raise ValueError(f"no total in the output (expected {wanted})")
    total, stated, line = found
    if stated is not None and stated != depth:
        raise ValueError(f"the last total is for depth {stated}, not {depth}: {line.strip()!r}")
    return total


def shell_substitute(line: str, fen: str) -> str:
    """``line`` (a shell command line) with each ``{fen}`` replaced by ``fen`` quoted for where it
    stands: bare, in single quotes (``shlex.quote``); inside ``"..."``, its ``\\ " $ ` `` escaped;
    inside ``'...'``, as it is (a FEN of printable ASCII holds no ``'``; one that did would end the
    quotes: written ``'\\''``). Quotes are tracked as POSIX sh reads them (backslash escapes outside
    single quotes). Returns the new line."""
    out: list[str] = []
    quote = None  # None, "'" or '"': the quotes the scan is inside
    i = 0
    while i < len(line):
        if line.startswith("{fen}", i):
            if quote == "'":
                out.append(fen.replace("'", "'\\''"))
            elif quote == '"':
                out.append(re.sub(r'([\\"$`])', r"\\\1", fen))
            else:
                out.append(shlex.quote(fen))
            i += len("{fen}")
            continue
        c = line[i]
        if c == "\\" and quote != "'":
            out.append(line[i:i + 2])
            i += 2
            continue
        if quote is None and c in "'\"":
            quote = c
        elif c == quote:
            quote = None
        out.append(c)
        i += 1
    return "".join(out)


class CliEngine(TotalOnlyEngine):
    """A program that prints only a total, run once per query from a command template.

    ``template``: shell-style command line with ``{fen}`` and ``{depth}`` (see the module
    docstring); ``total_regex``: a regular expression whose first group is the total (None: the
    built-in formats); ``timeout``: seconds per run (None: no limit). The FEN handed over is a
    standalone FEN with six fields. A run that times out, crashes (non-zero exit status) or prints
    no readable total raises :class:`EngineError` with the command, its exit status and the tail of
    its output. ``calls`` counts the runs so far (the drill reports it).

    Raises ``ValueError`` for an empty template, one without ``{fen}`` or ``{depth}``, or a
    ``total_regex`` that does not compile or has no group.
    """

    def __init__(self, template: str | Sequence[str], *, total_regex: str | None = None,
                 timeout: float | None = DEFAULT_TIMEOUT, name: str | None = None):
        self.argv = argv_of(template)
        for field in ("{fen}", "{depth}"):
            if not any(field in arg for arg in self.argv):
                raise ValueError(f"the cli engine command {shlex.join(self.argv)!r} has no {field} placeholder "
                                 "(example: \"perft_gpu {fen} {depth} -nott\")")
        self.total_regex = None
        if total_regex is not None:
            try:
                self.total_regex = re.compile(total_regex)
            except re.error as exc:
                raise ValueError(f"bad --total-regex {total_regex!r}: {exc}") from None
            if self.total_regex.groups < 1:
                raise ValueError(f"--total-regex {total_regex!r} has no group: put the total in (...)")
        self.timeout = timeout
        self.name = name or command_name(template)
        self.calls = 0

    def command(self, fen: str, depth: int) -> list[str]:
        """The argument vector run for ``fen`` at ``depth`` plies.

        ``{fen}`` stays one argument: in an argument that also holds a space (a command line that
        a shell will split again, as in ``sh -c 'prog {fen} {depth}'``) it is put in shell quotes.
        Raises ValueError for a FEN with a control character (:func:`engine_fen`).
        """
        fen = engine_fen(fen)
        return [(shell_substitute(arg, fen) if " " in arg.replace("{fen}", "") else arg.replace("{fen}", fen))
                .replace("{depth}", str(depth)) for arg in self.argv]

    def _perft(self, fen: str, depth: int) -> int:
        argv = self.command(fen, depth)
        self.calls += 1
        out, output = run_once(argv, self.timeout, self.name)
        try:
            return parse_total(out, depth, self.total_regex)
        except ValueError as exc:
            raise EngineError(self.name, f"unreadable output (exit status 0): {exc}",
                              command=shlex.join(argv), output=output) from None
