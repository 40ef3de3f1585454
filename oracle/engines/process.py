"""Subprocess plumbing shared by the engines that run a program: argument vectors, FEN fields,
killing a process's whole session and reaping it, reader threads."""
from __future__ import annotations

import collections
import os
import queue
import shlex
import signal
import subprocess
from collections.abc import Sequence

def six_fields(fen: str) -> str:
    """``fen`` with the move counters ``0 1`` added when it has only the four EPD fields."""
    fields = fen.split()
    return " ".join(fields + ["0", "1"]) if len(fields) == 4 else fen


def argv_of(command: str | Sequence[str]) -> list[str]:
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("empty engine command")
    return argv


def kill(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and everything in its session, then reap it (idempotent).

    Only stdin is closed here: reader threads close stdout/stderr when they reach end of file,
    which they do once the process group is dead.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                proc.kill()
            except ProcessLookupError:
                pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
        pass
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass


def pump(stream, sink: queue.Queue | collections.deque) -> None:
    """Reader thread: copy lines of ``stream`` into ``sink`` (a queue gets ``None`` at EOF), then close it."""
    try:
        for line in iter(stream.readline, ""):
            line = line.rstrip("\r\n")
            if isinstance(sink, queue.Queue):
                sink.put(line)
            else:
                sink.append(line)
    except (OSError, ValueError):
        pass
    finally:
        if isinstance(sink, queue.Queue):
            sink.put(None)
        try:
            stream.close()
        except OSError:
            pass
