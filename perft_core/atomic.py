"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

Each file is written to a temporary file in its own folder, flushed to disk, then renamed over the
old one (``os.replace``, atomic on POSIX within one file system). :func:`write_texts` writes every
temporary file before it renames any, so a write that fails (a full disk, a file size limit, a
read-only folder) leaves every old file as it was, and the error names the file it was writing.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path


def write_texts(files: Mapping[str | os.PathLike, str], encoding: str = "utf-8") -> list[Path]:
    """Write ``{path: text}``: all or (as far as the renames go) nothing. Returns the paths, in order.

    Raises OSError whose message names the file that could not be written (``cannot write PATH:
    <reason>``); every temporary file is then removed and no old file has been touched.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for target, text in files.items():
            path = Path(target)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
            staged.append((tmp, path))
            try:
                with os.fdopen(fd, "w", encoding=encoding) as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as exc:
                raise OSError(exc.errno, f"cannot write {path}: {exc.strerror or exc}") from None
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        raise
    return [path for _, path in staged]


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write one file atomically (:func:`write_texts`); returns its path. Raises OSError naming it."""
    return write_texts({path: text}, encoding)[0]
