"""Argument types shared by the ``perft`` subcommands (argparse ``type=`` callables), and the
parser class whose errors are one line with exit status 2.

Each type raises ``argparse.ArgumentTypeError`` with a message naming what was expected and what came.
"""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path


class UsageError(Exception):
    """Bad command-line input; reported on one line with exit status 2."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose own errors raise UsageError (one line, exit 2) instead of exiting."""

    def error(self, message: str):
        raise UsageError(message)


def seed(text: str) -> int:
    """A Zobrist key seed: an integer in 0..2**64-1, decimal or 0x hex."""
    try:
        value = int(text, 0) if text.isascii() else _ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed (decimal or 0x hex), got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**64-1, got {text!r}")
    return value


def _ascii_int(text: str) -> int:
    """int(text) for ASCII text only: Python's int() also reads other scripts' digits ("٢٠" is 20)."""
    if not text.isascii():
        raise ValueError(text)
    return int(text)


def depth(text: str) -> int:
    """A depth in plies: an integer >= 0."""
    try:
        value = _ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"depth must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"depth must be a non-negative integer, got {value}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1; ``_`` and ``,`` may group digits (``500_000_000``, ``500,000,000``)."""
    try:
        value = _ascii_int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_number(unit: str):
    """A type for a finite number > 0 of ``unit`` (seconds, MiB, ...)."""

    def parse(text: str) -> float:
        try:
            if not text.isascii():  # float() too reads other scripts' digits
                raise ValueError(text)
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number of {unit}, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected a positive number of {unit}, got {text!r}")
        return value

    parse.__name__ = f"positive_{unit.lower()}"
    return parse


seconds = positive_number("seconds")
mib = positive_number("MiB")


# -- file and directory arguments ---------------------------------------------------------------
# Each checks the path before any work starts and names the problem in one line (argparse turns the
# ArgumentTypeError into ``perft: error: argument --out: ...``, exit 2), instead of an OSError's
# ``[Errno 17] File exists`` after a long count.


def _nearest_existing(path: Path) -> Path:
    """``path`` or its closest ancestor that exists (``.`` for a relative path with none)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(".")


def output_dir(text: str) -> Path:
    """A folder to write into: an existing writable folder, or one that can be made (its missing
    parents too) under an existing writable folder. Returns it as a Path (not created here)."""
    path = Path(text)
    if not text:
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a folder")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"folder {text!r} is not writable")
        return path
    base = _nearest_existing(path.parent)
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"cannot make folder {text!r}: {str(base)!r} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot make folder {text!r}: folder {str(base)!r} is not writable")
    return path


def input_file(text: str) -> Path:
    """A file to read: it exists, is a regular file (not a folder) and is readable. Returns a Path."""
    path = Path(text)
    if not text:
        raise argparse.ArgumentTypeError("expected a file, got an empty path")
    if not path.exists():
        parent = _nearest_existing(path.parent)
        where = "" if parent == path.parent or not path.parent.parts else f" (no folder {str(path.parent)!r})"
        raise argparse.ArgumentTypeError(f"file {text!r} does not exist{where}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"file {text!r} is not readable")
    return path


def file_stem(text: str) -> str:
    """A file name without folder (``--name``): it cannot lead out of the output folder. Returns it."""
    if text in ("", ".", "..") or "/" in text or "\\" in text or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise argparse.ArgumentTypeError(f"expected a file name without a folder, got {text!r}")
    return text


def output_file(text: str) -> Path:
    """A file to write (created or overwritten): not a folder, writable if it exists, and in an
    existing writable folder. Returns a Path (nothing is created here)."""
    path = Path(text)
    if not text:
        raise argparse.ArgumentTypeError("expected a file, got an empty path")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"file {text!r} is not writable")
    parent = path.parent
    if not parent.exists():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: folder {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: {str(parent)!r} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: folder {str(parent)!r} is not writable")
    return path
