"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

Each file is written to a temporary file in its own folder, flushed to disk, then renamed over the
old one (``os.replace``, atomic on POSIX within one file system). :func:`write_texts` writes every
temporary file before it renames any, so a write that fails (a full disk, a file size limit, a
read-only folder) leaves every old file as it was, and the error names the file it was writing.

A target that exists and is not a regular file (a device such as /dev/null, a FIFO, a socket, a
folder) is refused before anything is written: a rename would replace the device node itself. A
new file gets the mode ``open()`` would give it (0666 less the umask: a published report is
readable by a web server), a replaced one keeps its mode. Only this call's own temporary files
(created exclusively) are ever removed.
"""
from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process's umask (an int such as 0o022), read without changing it for long (Linux's
    /proc/self/status where it says, else set and put back under a lock)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        old = os.umask(0o077)
        os.umask(old)
    return old


def check_targets(paths) -> None:
    """Refuse (OSError naming it) any of ``paths`` that exists and is not a regular file (a device,
    FIFO, socket or folder), touching nothing. Call it before work whose result goes there."""
    for target in paths:
        try:
            st = os.stat(target)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write {target}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"cannot write {target}: not a regular file (a device, FIFO, socket or folder)")


def _mode_for(path: Path, mask: int) -> int:
    """The mode a new ``path`` gets from ``open()`` (0666 less ``mask``), or the mode of the file it replaces."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~mask


def write_texts(files: Mapping[str | os.PathLike, str], encoding: str = "utf-8") -> list[Path]:
    """Write ``{path: text}``: all or (as far as the renames go) nothing. Returns the paths, in order.

    Each file gets the mode ``open()`` would give it under the umask, or keeps the mode of the file
    it replaces. Raises OSError whose message names the file that could not be written (``cannot
    write PATH: <reason>``; a target that is not a regular file is refused before anything is
    written); every temporary file is then removed and no old file has been touched.
    """
    check_targets(files)
    mask = umask()
    staged: list[tuple[str, Path]] = []
    try:
        for target, text in files.items():
            path = Path(target)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
            staged.append((tmp, path))
            try:
                os.fchmod(fd, _mode_for(path, mask))
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
