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

def engine_fen(fen: str) -> str:
    """``fen`` as handed to an engine: one line of text, with the move counters ``0 1`` added when
    it has only the four EPD fields.

    Raises ``ValueError`` (before anything reaches an engine) for a FEN holding a control character
    (a newline from a quoted CSV field would reach a UCI engine as two commands); the message shows
    the FEN shortened to 120 characters.
    """
    bad = next((c for c in fen if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise ValueError(f"FEN holds the control character {bad!r}, which no engine may be sent: {shorten(fen)!r}")
    fields = fen.split()
    return " ".join(fields + ["0", "1"]) if len(fields) == 4 else fen


def shorten(text: str, keep: int = 120) -> str:
    """``text`` cut to ``keep`` characters with a note of how many were left out (for error lines)."""
    return text if len(text) <= keep else f"{text[:keep]}... ({len(text) - keep} more characters)"


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


def run_once(argv: list[str], timeout: float | None, name: str) -> tuple[str, str]:
    """Run ``argv`` to completion in its own session: ``(stdout, output)`` where ``output`` is the
    tail of stdout and stderr, ready to quote.

    Raises :class:`oracle.engines.base.EngineError` (naming the command, the exit status and the
    output tail) when the program cannot start, runs past ``timeout`` seconds (its session is then
    killed and reaped) or exits with a non-zero status.
    """
    from oracle.engines.base import EngineError, tail_lines

    sent = shlex.join(argv)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as exc:
        raise EngineError(name, f"cannot start: {exc}", command=sent) from exc

    def quoted(out: str, err: str) -> str:
        return tail_lines(out.splitlines()) + (f"\n[stderr]\n{tail_lines(err.splitlines())}" if err.strip() else "")

    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild left its own session and holds the pipe
            out, err = "", ""
        raise EngineError(name, f"timed out after {timeout:g} s", command=sent, output=quoted(out or "", err or "")) from None
    finally:
        kill(proc)
    if proc.returncode != 0:
        raise EngineError(name, f"crashed (exit status {proc.returncode})", command=sent, output=quoted(out, err))
    return out, quoted(out, err)
