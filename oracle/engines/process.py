"""Subprocess plumbing shared by the engines that run a program: argument vectors, FEN fields,
starting a program and killing everything it started, reader threads.

An engine runs in its own session, and its environment carries a token (``PERFT_ENGINE_TOKEN``)
that every process it starts inherits: :func:`kill` ends its session and, on Linux, every process
whose environment holds the token, so a grandchild that left the session (``setsid``) or outlived
its parent ends with it.
"""
from __future__ import annotations

import collections
import os
import queue
import shlex
import signal
import subprocess
import uuid
from collections.abc import Sequence

TOKEN_VAR = "PERFT_ENGINE_TOKEN"

def engine_fen(fen: str) -> str:
    """``fen`` as handed to an engine: one line of text, with the move counters ``0 1`` added when
    it has only the four EPD fields.

    Raises ``ValueError`` (before anything reaches an engine) for a FEN holding a control character
    (a newline from a quoted CSV field would reach a UCI engine as two commands).
    """
    bad = next((c for c in fen if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise ValueError(f"FEN holds the control character {bad!r}, which no engine may be sent: {fen!r}")
    fields = fen.split()
    return " ".join(fields + ["0", "1"]) if len(fields) == 4 else fen


def argv_of(command: str | Sequence[str]) -> list[str]:
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("empty engine command")
    return argv


def command_name(command: str | Sequence[str]) -> str:
    """An engine's name: its command as typed (a string, stripped), or an argument vector
    shell-quoted. A template keeps ``{fen} {depth}`` as written, not quoted (``'{fen}'``)."""
    return command.strip() if isinstance(command, str) else shlex.join(command)


def spawn(argv: list[str], **popen_args) -> subprocess.Popen:
    """``subprocess.Popen(argv, **popen_args)`` in a new session with a fresh token in its
    environment (``proc.perft_token``), for :func:`kill`. Raises OSError when it cannot start."""
    token = uuid.uuid4().hex
    proc = subprocess.Popen(argv, start_new_session=True, env={**os.environ, TOKEN_VAR: token}, **popen_args)
    proc.perft_token = token
    return proc


def _marked(token: str) -> list[int]:
    """Pids of the processes whose environment holds ``TOKEN_VAR=token`` (Linux /proc; else none)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pids
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:  # gone, or not ours to read
                pass
    return pids


def kill(proc: subprocess.Popen) -> None:
    """Kill ``proc``, everything in its session and every process that carries its token (see the
    module docstring), then reap it (idempotent).

    Only stdin is closed here: reader threads close stdout/stderr when they reach end of file,
    which they do once the process group is dead.
    """
    token = getattr(proc, "perft_token", None)
    for pid in _marked(token) if token else ():
        if pid != proc.pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
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
        proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
