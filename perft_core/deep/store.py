"""The durable store of a deep perft run: one SQLite file (WAL journal), locked by one client.

Tables:
  ``run``      one row: the options that define the run (FEN, depth, split ply, backend, TT, key
               seed, verify seed / sample), package version and commit (perft_core.provenance),
               start time (UTC, ISO 8601), number of units, schema version.
  ``units``    one row per unit: idx (submission order, largest first), key (128-bit Zobrist key,
               32 hex digits), fen, multiplicity, estimate (nodes), status, count, seconds, worker,
               device, attempts (submissions by any client), finishes (times a count was written:
               1 at most, by construction), probes / hits (device TT probes and hits of the count,
               GPU backends with TTs), verify_count / verify_seconds (second key seed),
               recount (without tables, after a verify mismatch).
  ``sessions`` one row per client that worked on the run: start, end, host, pid, units counted.

Counts are decimal TEXT (Python ints of any size). Every finished unit is committed at once; a
count is written only where none is (``WHERE count IS NULL``), so a unit is never counted twice
even when Dask delivers a retried task's result again. Durable against a killed process
(``synchronous=NORMAL`` in WAL mode: a commit is in the WAL file when it returns; an OS crash
may lose the last commits, which are then simply counted again).

The file is locked with ``fcntl.flock`` (exclusive, non-blocking) for as long as a client holds
it: a second client gets StoreError. Unit statuses: ``pending`` (no count), ``counted``,
``verified`` (second seed agrees), ``mismatch`` (second seed disagrees, recount pending),
``recounted`` (counted again without tables; that count is the unit's).
"""
from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

SCHEMA = 1
# The options that define a run: a resumed run must agree on every one of them.
RUN_OPTIONS = ("fen", "depth", "split_ply", "backend", "tt", "seed", "verify_seed", "verify_sample")
STATUSES = ("pending", "counted", "verified", "mismatch", "recounted")

_DDL = """
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1), schema INTEGER NOT NULL, fen TEXT NOT NULL, depth INTEGER NOT NULL,
    split_ply INTEGER NOT NULL, backend TEXT NOT NULL, tt INTEGER NOT NULL, seed TEXT NOT NULL,
    verify_seed TEXT, verify_sample REAL, version TEXT NOT NULL, git_commit TEXT NOT NULL, started TEXT NOT NULL,
    units INTEGER NOT NULL);
CREATE TABLE units (
    idx INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, fen TEXT NOT NULL, depth INTEGER NOT NULL,
    multiplicity TEXT NOT NULL, estimate REAL NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
    count TEXT, seconds REAL, worker TEXT, device TEXT, attempts INTEGER NOT NULL DEFAULT 0,
    finishes INTEGER NOT NULL DEFAULT 0, verify_count TEXT, verify_seconds REAL, recount TEXT,
    recount_seconds REAL, finished TEXT, probes INTEGER, hits INTEGER);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY, started TEXT NOT NULL, ended TEXT, host TEXT NOT NULL, pid INTEGER NOT NULL,
    cluster TEXT NOT NULL, counted INTEGER NOT NULL DEFAULT 0);
"""


class StoreError(ValueError):
    """A store that cannot serve this run: corrupt, of another run's options, in use, or missing."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _seed_text(seed: int | None) -> str | None:
    return None if seed is None else f"{seed:#x}"


class Store:
    """An open, locked store. Make one with :meth:`create` or :meth:`open`; ``close()`` it (or use
    it as a context manager) to release the lock.

    ``run``: the run row as a dict (RUN_OPTIONS plus version, git_commit, started, units), seeds
    as ints.
    """

    def __init__(self, path: Path, lock_fd: int, conn: sqlite3.Connection):
        self.path = path
        self._lock_fd = lock_fd
        self.conn = conn
        self.run = self._read_run()
        self.session: int | None = None

    # ----- opening --------------------------------------------------------------------------------
    @staticmethod
    def _lock(path: Path) -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(f"store {path} is in use by another client (its lock is held)") from None
        return fd

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @classmethod
    def create(cls, path: str | os.PathLike, run: dict, units) -> Store:
        """A new store at ``path`` for ``run`` (RUN_OPTIONS keys, seeds as ints) and ``units``
        (perft_core.deep.units.Unit, in submission order), written in one transaction.

        Raises StoreError if ``path`` already holds data (resume it instead) or is in use.
        """
        from .. import provenance

        path = Path(path)
        if path.exists() and path.stat().st_size > 0:
            raise StoreError(f"store {path} already exists; continue it with --resume {path} or choose a new file")
        fd = cls._lock(path)
        try:
            if path.stat().st_size > 0:  # another client created it between our check and our lock
                raise StoreError(f"store {path} already exists; continue it with --resume {path}")
            conn = cls._connect(path)
            conn.execute("BEGIN")
            for statement in _DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO run VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (SCHEMA, run["fen"], run["depth"], run["split_ply"], run["backend"], int(run["tt"]),
                 _seed_text(run["seed"]), _seed_text(run["verify_seed"]), run["verify_sample"],
                 provenance.package_version(), provenance.package_commit(), _now(), len(units)))
            conn.executemany(
                "INSERT INTO units (idx, key, fen, depth, multiplicity, estimate) VALUES (?, ?, ?, ?, ?, ?)",
                ((i, f"{u.key:032x}", u.fen, u.depth, str(u.multiplicity), u.estimate) for i, u in enumerate(units)))
            conn.execute("COMMIT")
            return cls(path, fd, conn)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def open(cls, path: str | os.PathLike) -> Store:
        """Open an existing store to resume it; checks it is whole and a deep-perft store.

        Raises StoreError: missing, in use, corrupt (SQLite integrity check, schema, unit rows).
        """
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"store {path} does not exist")
        fd = cls._lock(path)
        try:
            conn = cls._connect(path)
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise StoreError(f"store {path} is corrupt: {check}")
            store = cls(path, fd, conn)
            store._check_units()
            return store
        except sqlite3.DatabaseError as exc:
            os.close(fd)
            raise StoreError(f"store {path} is not a readable deep-perft store: {exc}") from None
        except BaseException:
            os.close(fd)
            raise

    def _read_run(self) -> dict:
        try:
            cur = self.conn.execute("SELECT * FROM run WHERE id = 1")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.path} is not a deep-perft store: {exc}") from None
        row = cur.fetchone()
        if row is None:
            raise StoreError(f"store {self.path} has no run (it was never completely created)")
        run = dict(zip([c[0] for c in cur.description], row))
        if run["schema"] != SCHEMA:
            raise StoreError(f"store {self.path} has schema {run['schema']}, this version reads {SCHEMA}")
        run["tt"] = bool(run["tt"])
        for k in ("seed", "verify_seed"):
            run[k] = None if run[k] is None else int(run[k], 16)
        return run

    def _check_units(self) -> None:
        n, bad, twice = self.conn.execute(
            "SELECT COUNT(*), SUM(status NOT IN ('pending','counted','verified','mismatch','recounted') "
            "OR (status = 'pending') != (count IS NULL) OR (status = 'recounted') != (recount IS NOT NULL)), "
            "SUM(finishes > 1) FROM units").fetchone()
        if n != self.run["units"] or bad or twice:
            raise StoreError(f"store {self.path} is corrupt: {n} unit rows for {self.run['units']} units, "
                             f"{bad or 0} inconsistent, {twice or 0} counted twice")

    def check_options(self, asked: dict) -> None:
        """Raise StoreError if any option in ``asked`` (RUN_OPTIONS keys; None = not asked) differs
        from the run's."""
        for k, v in asked.items():
            if v is not None and v != self.run[k]:
                raise StoreError(f"store {self.path} is a run with {k}={self.run[k]!r}, not {v!r}; "
                                 f"resume it without that option or use a new store")

    # ----- the work -------------------------------------------------------------------------------
    def units(self) -> list[dict]:
        """All unit rows as dicts, in idx order."""
        cur = self.conn.execute("SELECT * FROM units ORDER BY idx")
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def begin_session(self, cluster: str) -> None:
        """Record this client in ``sessions``."""
        cur = self.conn.execute("INSERT INTO sessions (started, host, pid, cluster) VALUES (?, ?, ?, ?)",
                                (_now(), socket.gethostname(), os.getpid(), cluster))
        self.session = cur.lastrowid

    def end_session(self) -> None:
        if self.session is not None:
            self.conn.execute("UPDATE sessions SET ended = ? WHERE id = ?", (_now(), self.session))

    def submitted(self, idx: int) -> None:
        """Count a submission of unit ``idx`` (committed)."""
        self.conn.execute("UPDATE units SET attempts = attempts + 1 WHERE idx = ?", (idx,))

    def finish(self, idx: int, count: int, seconds: float, worker: str, device: str, probes: int | None = None,
               hits: int | None = None) -> bool:
        """Write unit ``idx``'s count (committed at once); False if it already had one (a duplicate
        result, ignored)."""
        cur = self.conn.execute(
            "UPDATE units SET count = ?, seconds = ?, worker = ?, device = ?, status = 'counted', "
            "finishes = finishes + 1, finished = ?, probes = ?, hits = ? WHERE idx = ? AND count IS NULL",
            (str(count), seconds, worker, device, _now(), probes, hits, idx))
        if cur.rowcount and self.session is not None:
            self.conn.execute("UPDATE sessions SET counted = counted + 1 WHERE id = ?", (self.session,))
        return bool(cur.rowcount)

    def verified(self, idx: int, count: int, seconds: float) -> str:
        """Write the second-seed count of unit ``idx``; returns the new status (``verified`` or
        ``mismatch``), or ``""`` if it was already verified."""
        cur = self.conn.execute(
            "UPDATE units SET verify_count = ?, verify_seconds = ?, "
            "status = CASE WHEN count = ? THEN 'verified' ELSE 'mismatch' END "
            "WHERE idx = ? AND status = 'counted' AND verify_count IS NULL", (str(count), seconds, str(count), idx))
        if not cur.rowcount:
            return ""
        return self.conn.execute("SELECT status FROM units WHERE idx = ?", (idx,)).fetchone()[0]

    def recounted(self, idx: int, count: int, seconds: float) -> bool:
        """Write the count without tables of a mismatched unit ``idx`` (its count from now on)."""
        cur = self.conn.execute(
            "UPDATE units SET recount = ?, recount_seconds = ?, status = 'recounted' "
            "WHERE idx = ? AND status = 'mismatch'", (str(count), seconds, idx))
        return bool(cur.rowcount)

    def close(self) -> None:
        """Close the database and release the lock."""
        try:
            self.conn.close()
        finally:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
