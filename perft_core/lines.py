"""Bounded reading of text lines: every line a command reads (positions files and standard input,
``perft uci``'s commands, suite files in EPD or CSV, an engine's output) is at most
:data:`MAX_LINE_CHARS` characters, so an input without line ends (``/dev/zero``) or with one huge
line is one error line naming the file and line (``FILE:LINE: line longer than 65,536
characters``), never a MemoryError; an input that is not UTF-8 text (``/dev/urandom``) is one line
naming the file and line too, not a bare ``UnicodeDecodeError``.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

MAX_LINE_CHARS = 65_536
"""The longest line read anywhere, in characters (its line end not counted): a FEN is under 100,
an EPD record with every perft operation a few hundred, an engine's divide line a few dozen."""


class InputError(ValueError):
    """A line that cannot be read: too long, or not UTF-8 text. The message names source and line."""


_UNDECODABLE = re.compile("[\udc80-\udcff]")


def _undecodable(line: str) -> str | None:
    """Why ``line`` is not UTF-8 text, ``"not UTF-8 text (byte 0xff at character 3)"``, or None
    when it is: read with ``errors="surrogateescape"``, each byte that is not UTF-8 is a lone
    surrogate."""
    found = _UNDECODABLE.search(line)
    if found is None:
        return None
    return f"not UTF-8 text (byte 0x{ord(found.group()) - 0xDC00:02x} at character {found.start() + 1})"


def bounded_lines(stream, source: str, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of the text ``stream`` (each with its line end, as ``readline`` gives it), each at
    most ``limit`` characters before its line end; ``source``: the name errors give (a path, "stdin").

    Reads at most ``limit + 1`` characters a call, so memory stays bounded whatever the input.
    Input that is not UTF-8 text ends at the first line that holds such a byte, that line named,
    every line before it yielded: the stream's ``errors`` is set to ``surrogateescape`` and each
    line checked, as a strict decoder reads a block ahead: its error named a line up to a block
    before the bad one and lost the lines between (session 43's hunt). (A binary input, such as
    ``/dev/urandom``, is one error line, not one a line without end.)
    Raises InputError ``SOURCE:LINE: line longer than N characters`` or ``SOURCE:LINE: not UTF-8
    text (...)``.
    """
    if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="surrogateescape")
    number = 0
    while True:
        number += 1
        try:
            line = stream.readline(limit + 1)
        except UnicodeDecodeError as exc:  # a stream that could not be told to escape
            raise InputError(f"{source}:{number}: not UTF-8 text ({exc.reason})") from None
        if not line:
            return
        if len(line) > limit and line[limit:] not in ("\n", "\r"):
            raise InputError(f"{source}:{number}: line longer than {limit:,} characters")
        problem = _undecodable(line)
        if problem is not None:
            raise InputError(f"{source}:{number}: {problem}")
        yield line


def read_text(path, limit: int = MAX_LINE_CHARS, encoding: str = "utf-8") -> str:
    """The whole text of the file at ``path``, read by :func:`bounded_lines` (so no line is longer
    than ``limit``). Raises InputError (naming the file and line) or OSError."""
    with open(path, encoding=encoding, newline="") as f:
        return "".join(bounded_lines(f, str(path), limit))
