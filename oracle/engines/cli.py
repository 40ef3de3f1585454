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
A total is read whole or not at all: plain ASCII digits, or digits grouped by threes (``8,902``); a
number such as ``8.902``, ``8 902``, ``1.19e+08`` or ``-20``, digits that are not ASCII (``٤٠٠``,
fullwidth ``４００``), a ``total_regex`` group that captures anything else or nothing, and a line the
output reader cut for being longer than ``perft_core.lines.MAX_LINE_CHARS`` characters (its digits
are not all there) are refused as unreadable, and so are two lines that give the depth asked for
different totals.
Where the line states its depth (``Perft(NN)``, ``perft N``), NN must be the depth asked for: a
total for another depth is never taken silently.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from oracle.engines.base import DEFAULT_TIMEOUT, EngineError, TotalOnlyEngine
from oracle.engines.process import argv_of, command_name, cut_note, engine_fen, run_once
from perft_core.lines import MAX_LINE_CHARS

__all__ = ["CliEngine", "parse_total"]

# (pattern, group of the depth or None, group of the total)
_NUMBER = r"(\d+(?:[,_']\d+)*)"  # digits, perhaps grouped; _number() reads or refuses it
_TOTAL_LINES = (
    (re.compile(r"Nodes searched\s*:\s*" + _NUMBER, re.IGNORECASE), None, 1),
    (re.compile(r"\bperft\s*\(\s*(\d+)\s*\)\s*[:=]\s*" + _NUMBER, re.IGNORECASE), 1, 2),
    (re.compile(r"\bperft\s+(\d+)\s*:\s*" + _NUMBER, re.IGNORECASE), 1, 2),
)
# What may not follow a total: a decimal point or separator and a digit (8.902, 1.19e+08), a space
# and three digits (8 902), or a letter or digit of any script (8902k, 8902², 89٠٢).
_NUMBER_GOES_ON = re.compile(r"[.,_'](?=\d)|[ \u00a0\u202f]\d{3}\b|[^\W_]")
# What may not come just before one: a digit of any script, alone or then a point or separator (the
# group would hold a number's last digits only, as ``(\d{3})$`` does on ``8902``), or a sign (``-20``).
_NUMBER_WENT_BEFORE = re.compile(r"(?:\d[.,_']?|[-+\u2212])\Z")
# A total read whole: plain ASCII digits, or ASCII digits grouped by threes with one separator.
_WHOLE_NUMBER = re.compile(r"[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,3}(?:_[0-9]{3})+|[0-9]{1,3}(?:'[0-9]{3})+")
# The end of a line the output reader cut for its length (oracle.engines.process.bounded): the
# digits it held are not all there, so it never gives a total.
_CUT_LINE_END = cut_note()


def _cut(line: str) -> bool:
    """Whether ``line`` is one the output reader cut (or one longer than it lets through)."""
    return len(line) > MAX_LINE_CHARS or line.rstrip("\r\n").endswith(_CUT_LINE_END)


def _number(line: str, match: re.Match, group: int) -> int:
    """The total in ``match``'s ``group`` of ``line``: plain ASCII digits, or ASCII digits grouped
    by threes with one of ``,`` ``_`` ``'`` (``8,902``). Raises ``ValueError`` ("unreadable total
    in ...") for a number that is not read whole (``8.902``, ``8 902``, ``1.19e+08``, ``8902k``,
    ``8,90``): reading its first digits alone would judge a count the program never printed; for
    digits that are not ASCII (``٤٠٠``), a group that captured something else (``-20``) or nothing
    (an optional group), and a line cut for its length."""
    text = match.group(group)
    shown = line.strip()
    if _cut(line):
        raise ValueError(f"unreadable total in {shown[:300]!r}: the line is longer than {MAX_LINE_CHARS:,} "
                         "characters and was cut, so its digits are not all there")
    if text is None:
        raise ValueError(f"unreadable total in {shown!r}: the total's group matched nothing")
    if (not _WHOLE_NUMBER.fullmatch(text) or _NUMBER_GOES_ON.match(line, match.end(group))
            or _NUMBER_WENT_BEFORE.search(line[max(0, match.start(group) - 2):match.start(group)])):
        raise ValueError(f"unreadable total in {shown!r}: print it as plain ASCII digits "
                         "(or grouped by threes with ',', '_' or \"'\")")
    return int(re.sub(r"[,_']", "", text))


def _depth(line: str, match: re.Match, group: int | None) -> int | None:
    """The depth a total line states in ``match``'s ``group`` (None: it states none). Raises
    ``ValueError`` for one not written in ASCII digits (``Perft(٣): 8902``)."""
    if group is None:
        return None
    if not re.fullmatch(r"[0-9]+", match.group(group)):
        raise ValueError(f"unreadable total in {line.strip()!r}: its depth is not plain ASCII digits")
    return int(match.group(group))


def parse_total(output: str, depth: int, total_regex: re.Pattern | None = None) -> int:
    """The total (nodes) in a program's ``output`` for ``depth`` plies (see the module docstring).

    Raises ``ValueError`` when no line holds a total, when the last one states another depth, when
    a total is not read whole as ASCII digits or comes from a line cut for its length
    (:func:`_number`: "unreadable total in ..."), or when two lines give this depth different
    totals (``Nodes searched: 8902`` then ``info nodes searched: 5``): which one the program means
    cannot be told, and taking either could judge it wrongly.
    """
    found: list[tuple[int, int | None, str]] = []
    for line in output.splitlines():
        if total_regex is not None:
            m = total_regex.search(line)
            if m:
                found = [(_number(line, m, 1), None, line)]  # the regex's last line wins
            continue
        for pattern, depth_group, total_group in _TOTAL_LINES:
            m = pattern.search(line)
            if m:
                found.append((_number(line, m, total_group), _depth(line, m, depth_group), line))
                break
    if not found:
        wanted = f"a line matching {total_regex.pattern!r}" if total_regex is not None else \
            "a line 'Nodes searched: N', 'Perft(NN): N', 'perft(N) = N' or 'perft N: N'"
        raise ValueError(f"no total in the output (expected {wanted})")
    total, stated, line = found[-1]
    if stated is not None and stated != depth:
        raise ValueError(f"the last total is for depth {stated}, not {depth}: {line.strip()!r}")
    totals = {t: other for t, s, other in found if s in (None, depth)}
    if len(totals) > 1:
        lines = "; ".join(repr(other.strip()) for other in totals.values())
        raise ValueError(f"the output gives depth {depth} different totals ({lines}); print one")
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
