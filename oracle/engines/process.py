"""Subprocess plumbing shared by the engines that run a program: argument vectors, FEN fields,
starting a program and killing everything it started, reader threads.

An engine runs in its own session, and its environment carries a token (``PERFT_ENGINE_TOKEN``)
that every process it starts inherits: :func:`kill` ends its session and, on Linux, every process
whose environment holds the token, so a grandchild that left the session (``setsid``) or outlived
its parent ends with it. On Linux the engine is also a child subreaper (``prctl
PR_SET_CHILD_SUBREAPER``): a grandchild whose parent exits becomes the engine's child, not init's,
so :func:`kill` finds every descendant by parent links, also one that cleared its environment
(``setsid env -i sleep``) and so lost the token.
"""
from __future__ import annotations

import collections
import os
import queue
import shlex
import signal
import subprocess
import threading
import uuid
from collections.abc import Sequence

TOKEN_VAR = "PERFT_ENGINE_TOKEN"

def engine_fen(fen: str) -> str:
    """``fen`` as handed to an engine: one line of text, with the move counters ``0 1`` added when
    it has only the four EPD fields.

    Raises ``ValueError`` (before anything reaches an engine) for a FEN holding anything but
    printable ASCII and spaces: a control character (a newline from a quoted CSV field would reach
    a UCI engine as two commands), and Unicode's line ends and spaces too (U+0085, U+2028, U+00A0:
    ``str.split`` and ``splitlines`` cut at them, so they passed a check of C0 controls and reached
    an engine's input and argv raw). A FEN is ASCII by definition.
    """
    bad = next((c for c in fen if not " " <= c <= "~"), None)
    if bad is not None:
        kind = "control character" if ord(bad) < 32 or 127 <= ord(bad) < 160 else "character"
        raise ValueError(f"FEN holds the {kind} {bad!r} (U+{ord(bad):04X}), which no engine may be sent "
                         f"(a FEN is printable ASCII): {fen!r}")
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


_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def _subreaper():
    """A preexec function that makes the new process a child subreaper (Linux; None elsewhere)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork: the child only calls it
    except (OSError, AttributeError):
        return None
    return lambda: prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def spawn(argv: list[str], **popen_args) -> subprocess.Popen:
    """``subprocess.Popen(argv, **popen_args)`` in a new session, a child subreaper on Linux, with a
    fresh token in its environment (``proc.perft_token``), for :func:`kill`. Raises OSError when it
    cannot start."""
    token = uuid.uuid4().hex
    try:
        proc = subprocess.Popen(argv, start_new_session=True, env={**os.environ, TOKEN_VAR: token},
                                preexec_fn=_subreaper(), **popen_args)
    except BaseException:  # a signal after the fork (Ctrl-C, SIGTERM): the child may run, its Popen lost
        for pid in _marked(token):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        raise
    proc.perft_token = token
    return proc


def _descendants(pid: int) -> list[int]:
    """Pids of every process below ``pid`` by parent links (Linux /proc; else none), deepest last."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


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
    # descendants first, while the engine (their subreaper) lives to hold the orphans; twice, for
    # a child forked by one being killed
    for _ in range(2):
        others = set(_descendants(proc.pid) if proc.poll() is None else ()) | set(_marked(token) if token else ())
        for pid in others - {proc.pid}:
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


MAX_OUTPUT_LINES = 100_000
"""The last lines of a program's output kept by :func:`run_once` (a divide is at most 219 lines)."""


def cut_note() -> str:
    """What ends a line :func:`bounded` cut: its first 200 characters, then this."""
    from perft_core.lines import MAX_LINE_CHARS

    return f"... (a line longer than {MAX_LINE_CHARS:,} characters, cut)"


def bounded(stream):
    """The lines of an engine's output, each cut to ``perft_core.lines.MAX_LINE_CHARS`` characters
    (the rest of a longer line read and dropped, with a note), so a program that prints without
    line ends fills no memory; a line cut is never a count."""
    from perft_core.lines import MAX_LINE_CHARS

    while True:
        line = stream.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) > MAX_LINE_CHARS and line[MAX_LINE_CHARS:] not in ("\n", "\r"):
            while True:  # the rest of it, in pieces of bounded size
                more = stream.readline(MAX_LINE_CHARS + 1)
                if not more or more.endswith("\n"):
                    break
            line = line[:200] + cut_note()
        yield line


def pump(stream, sink: queue.Queue | collections.deque) -> None:
    """Reader thread: copy lines of ``stream`` into ``sink`` (a queue gets ``None`` at EOF), then
    close it. Each line is bounded (:func:`bounded`)."""
    try:
        for line in bounded(stream):
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
        # a byte that is not UTF-8 (a Latin-1 author name, say) becomes U+FFFD: strict decoding
        # made the reader thread drop the rest of the output and the engine look crashed
        proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     encoding="utf-8", errors="replace")
    except OSError as exc:
        raise EngineError(name, f"cannot start: {exc}", command=sent) from exc

    def quoted(out: str, err: str) -> str:
        return tail_lines(out.splitlines()) + (f"\n[stderr]\n{tail_lines(err.splitlines())}" if err.strip() else "")

    # the output read line by line, each bounded, the last MAX_OUTPUT_LINES kept: a program that
    # prints without end fills no memory before its timeout
    lines = {"out": collections.deque(maxlen=MAX_OUTPUT_LINES), "err": collections.deque(maxlen=MAX_OUTPUT_LINES)}
    readers = []

    def text(key: str) -> str:
        return "".join(line + "\n" for line in list(lines[key]))

    try:
        # the readers start inside the try: a signal that interrupts a thread's start (it waits for
        # the new thread to run, long on a loaded machine) still kills the program, never leaves it
        readers += [threading.Thread(target=pump, args=(stream, lines[key]), daemon=True)
                    for stream, key in ((proc.stdout, "out"), (proc.stderr, "err"))]
        for reader in readers:
            reader.start()
        proc.wait(timeout=timeout)
        for reader in readers:
            reader.join(timeout=5)  # a grandchild that left its own session may hold the pipe
    except subprocess.TimeoutExpired:
        kill(proc)
        for reader in readers:
            reader.join(timeout=5)
        raise EngineError(name, f"timed out after {timeout:g} s", command=sent,
                          output=quoted(text("out"), text("err"))) from None
    finally:
        kill(proc)
    out, err = text("out"), text("err")
    if proc.returncode != 0:
        raise EngineError(name, f"crashed (exit status {proc.returncode})", command=sent, output=quoted(out, err))
    return out, quoted(out, err)
