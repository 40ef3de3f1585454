"""Argument types shared by the ``perft`` subcommands (argparse ``type=`` callables), and the
parser class whose errors are one line with exit status 2.

Each type raises ``argparse.ArgumentTypeError`` with a message naming what was expected and what came.
"""
from __future__ import annotations

import argparse
import math


class UsageError(Exception):
    """Bad command-line input; reported on one line with exit status 2."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose own errors raise UsageError (one line, exit 2) instead of exiting."""

    def error(self, message: str):
        raise UsageError(message)


def seed(text: str) -> int:
    """A Zobrist key seed: an integer in 0..2**64-1, decimal or 0x hex."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed (decimal or 0x hex), got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**64-1, got {text!r}")
    return value


def depth(text: str) -> int:
    """A depth in plies: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"depth must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"depth must be a non-negative integer, got {value}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1; ``_`` and ``,`` may group digits (``500_000_000``, ``500,000,000``)."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_number(unit: str):
    """A type for a finite number > 0 of ``unit`` (seconds, MiB, ...)."""

    def parse(text: str) -> float:
        try:
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
