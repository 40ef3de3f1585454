"""Argument types shared by the ``perft`` subcommands (argparse ``type=`` callables), the parser
class whose errors are one line with exit status 2, and the exit-status rule of every subcommand.

Each type raises ``argparse.ArgumentTypeError`` with a message naming what was expected and what came.
"""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from . import limits


# -- exit statuses: one rule for every subcommand ------------------------------------------------

AGREE, DIFFER, UNJUDGED, LIMITED, INTERRUPTED, PIPE_CLOSED = 0, 1, 2, 3, 130, 141

EXIT_STATUS_HELP = """exit status (every perft command):
  0    every count agrees (with the table, the reference, the EPD operations)
  1    at least one count differs, whatever else happened
  2    nothing could be judged: bad input, a broken engine, or nothing counted
  3    stopped by a limit (--max-seconds, a time budget) before anything differed
  130  interrupted (Ctrl-C)
  141  the output's reader went away (a pipe closed early, as by | head)"""
"""The rule as printed at the end of every subcommand's ``--help`` and in README."""


def exit_status(*, differ: bool = False, broken: bool = False, judged: bool = True, limited: bool = False) -> int:
    """The exit status of a command from what happened, by the one rule of :data:`EXIT_STATUS_HELP`.

    Args:
        differ: at least one count differs from what was expected (wins over everything else).
        broken: bad input or a broken engine kept something from being judged.
        judged: at least one count was compared (False: nothing was judged).
        limited: a time limit or budget stopped the work before it finished.

    Returns:
        1 when ``differ``; else 2 when ``broken`` or not ``judged`` (and not ``limited``); else 3 when
        ``limited``; else 0. (130, interrupted, is the dispatcher's.)
    """
    if differ:
        return DIFFER
    if broken:
        return UNJUDGED
    if limited:
        return LIMITED
    return AGREE if judged else UNJUDGED


def worst(statuses) -> int:
    """Combine the exit statuses of several counts (``perft run`` over many positions) by the same
    rule: 1 if any is 1, else 2 if any is 2, else 3 if any is 3, else 0 (an empty list: 2)."""
    statuses = list(statuses)
    for status in (DIFFER, UNJUDGED, LIMITED):
        if status in statuses:
            return status
    return AGREE if statuses else UNJUDGED


class UsageError(Exception):
    """Bad command-line input; reported on one line with exit status 2."""


_stop_signal = 0  # the signal the command's handler saw (perft_cli.main), 0: none


def note_stop(signum: int) -> None:
    """Record that the command was asked to stop (``signum``: SIGINT or SIGTERM; 0 clears it).
    The handler also raises KeyboardInterrupt, but Python drops an exception raised while a garbage
    collector callback or a ``__del__`` runs ("Exception ignored in ..."): a loop that waits on long
    work asks :func:`stop_requested` too (a deep run's ``dispatch.run_phase``, after each result)."""
    global _stop_signal
    _stop_signal = signum


def stop_requested() -> bool:
    """Whether the command's signal handler saw SIGINT or SIGTERM (:func:`note_stop`)."""
    return _stop_signal != 0


def check_tt_mb_needs_tt(args: argparse.Namespace) -> None:
    """The run, perftree and uci commands' rule: ``--tt-mb`` sizes the tables, so it needs ``--tt``.

    Raises UsageError."""
    if args.tt_mb is not None and not args.tt:
        raise UsageError("--tt-mb needs --tt (it sizes the transposition tables)")


class _Formatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal; text with its own line breaks (the epilog) kept as is."""

    def _fill_text(self, text, width, indent):
        return text if "\n" in text else super()._fill_text(text, width, indent)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose own errors raise UsageError (one line, exit 2) instead of exiting,
    and whose help ends with examples (``examples=[command lines]``) and :data:`EXIT_STATUS_HELP`."""

    def __init__(self, *args, examples: list[str] | tuple[str, ...] = (), **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self.set_examples(examples)

    def set_examples(self, examples) -> None:
        """End the help with ``examples`` (command lines) and the exit statuses."""
        head = "examples:\n" + "".join(f"  {line}\n" for line in examples) + "\n" if examples else ""
        self.epilog = head + EXIT_STATUS_HELP

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


def plies(text: str, what: str = "depth") -> int:
    """A number of plies: an integer >= 0; an error names it as ``what``."""
    try:
        value = _ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{what} must be a non-negative integer, got {value}")
    return value


def depth(text: str) -> int:
    """A depth in plies: an integer >= 0."""
    return plies(text)


def positive_int(text: str) -> int:
    """An integer >= 1; ``_`` and ``,`` may group digits (``500_000_000``, ``500,000,000``)."""
    try:
        value = _ascii_int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_number(unit: str, high: float | None = None):
    """A type for a finite number > 0 of ``unit`` (seconds, MiB, ...), at most ``high`` when given."""

    def parse(text: str) -> float:
        try:
            if not text.isascii():  # float() too reads other scripts' digits
                raise ValueError(text)
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number of {unit}, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected a positive number of {unit}, got {text!r}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"expected a positive number of {unit}, at most {high:,}, got {text!r}")
        return value

    parse.__name__ = f"positive_{unit.lower()}"
    return parse


seconds = positive_number("seconds")
mib = positive_number("MiB", limits.MAX_TT_MB)


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


def _unwritable(folder: Path) -> str | None:
    """None when a file can be made in ``folder``, else why not (``is not writable``, or the OS's
    words). A real file is made and removed: ``os.access`` says yes to root everywhere, also on
    ``/proc`` or a read-only mount, where the write would fail only after the work."""
    import tempfile

    if not os.access(folder, os.W_OK | os.X_OK):
        return "is not writable"
    try:
        fd, probe = tempfile.mkstemp(prefix=".perft-probe-", dir=folder)
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    return None


def output_dir(text: str) -> Path:
    """A folder to write into: an existing writable folder, or one that can be made (its missing
    parents too) under an existing writable folder. Returns it as a Path (not created here)."""
    path = Path(text)
    if not text:
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a folder")
    if path.is_dir():
        why = _unwritable(path)
        if why:
            raise argparse.ArgumentTypeError(f"folder {text!r} {why}")
        return path
    base = _nearest_existing(path.parent)
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"cannot make folder {text!r}: {str(base)!r} is a file, not a folder")
    why = _unwritable(base)
    if why:
        raise argparse.ArgumentTypeError(f"cannot make folder {text!r}: folder {str(base)!r} {why}")
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


STEM_BYTES = 255 - len(".NAME.json.12345678.tmp") + len("NAME")
"""The longest ``--name`` (UTF-8 bytes): a file name holds 255 bytes on the usual file systems, and
the longest name made from the stem is the atomic writer's temporary ``.NAME.json.XXXXXXXX.tmp``
(perft_core.atomic)."""


def file_stem(text: str) -> str:
    """A file name without folder (``--name``): it cannot lead out of the output folder, and the
    names made from it fit a file name (STEM_BYTES), so a report is not refused only after its run.
    Returns it."""
    if text in ("", ".", "..") or "/" in text or "\\" in text or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise argparse.ArgumentTypeError(f"expected a file name without a folder, got {text!r}")
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > STEM_BYTES:
        raise argparse.ArgumentTypeError(f"expected a file name of at most {STEM_BYTES} bytes (the report's files add "
                                         f"their suffixes to it), got {size} bytes")
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
    why = _unwritable(parent)
    if why:
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: folder {str(parent)!r} {why}")
    return path
