"""The durable store of a deep perft run: one SQLite file (WAL journal), locked by one client.

Tables:
  ``run``      one row: the options that define the run (FEN, depth, split ply, backend, TT, key
               seed, verify seed / sample, statistics), the parts each unit is counted in (1, or one per GPU
               worker with tables: ``TTBfsDriver.set_part``), the remaining depth they are split
               at (``part_depth``) and how (``part_cut``), package version and commit
               (perft_core.provenance), start time (UTC, ISO 8601), number of units, schema version.
  ``units``    one row per unit and part: idx (row; submission order, largest unit first), unit
               (the unit's number), part (0 .. parts-1), key (128-bit Zobrist key, 32 hex digits),
               fen, multiplicity, estimate (nodes), status, count (the part's count), seconds,
               worker, device, task (the Dask task that counted it: units are counted in batches,
               and a batch's seconds, probes and hits are shared out over its rows by estimate),
               attempts (submissions by any client), finishes (times a count was written: 1 at
               most, by construction), probes / hits (device TT probes and hits of the count, GPU
               backends with TTs), verify_count / verify_seconds (second key seed), recount
               (without tables, after a verify mismatch), stats (a statistics run: the 13 counters of
               the count, ``perft_core.Stats.as_tuple`` as comma-separated decimals, nodes first).
  ``sessions`` one row per client that worked on the run: start, end, host, pid, units counted.
  ``tables``   the transposition tables' statistics (GPU backends with tables): one row per task
               (batch) and remaining depth r: session, worker (address), process (host:pid of the
               worker process, whose tables they are), task, phase (``count`` or
               ``verify``), finished, and over the batch: probes / hits (device TT), host_probes /
               host_hits (the driver's host cache), stores (device entries written); and the
               worker's table of r as it stood after the batch: slots, occupied, evictions (NULL
               where it has none, or occupancy was not read then: ``worker.OCCUPANCY_SHARE``).
               Written with the task's counts, in the same transaction, only when they are, and
               once per worker at the end of a phase (task ``tables read``: counters 0, the
               tables as they stand); never in a total or a checksum (:meth:`Store.table_statistics`
               sums them up; ``perft deep --stats`` prints them).

Counts are decimal TEXT (Python ints of any size; ASCII digits only, checked on open). Each unit row
carries ``checksum``: SHA-256 (first 16 bytes, hex) over the run's identity and every field the total
depends on: idx, unit, part, key, FEN, depth, multiplicity and its three counts (:func:`row_checksum`),
and in a statistics run its counters too, written with every count. The run row carries its own (:func:`run_checksum`, every column but
``schema`` and the checksum). :meth:`Store.open` re-reads them all: a run row that fails is
:class:`StoreTampered` (the run itself is in doubt: nothing is counted); a unit row that fails (edited
by hand, a damaged disk) is reported in ``Store.tampered`` and made pending again with its plan
(unit, part, key, FEN, depth, multiplicity) re-derived from the run row (``units.split`` is
deterministic), so it is counted again from the right position, never summed;
:meth:`Store.checked_rows` refuses to hand one out. What a checksum proves: a row was not changed by
accident (or by an edit that left the checksum alone). It cannot prove a row edited with its checksum
recomputed (the function is public): only a recount catches that (``perft deep --check FILE``, which
re-reads a store and counts a sample of its units again, :mod:`perft_core.deep.check`).

A write that fails (a full disk, a file size limit) raises :class:`StoreWriteError` naming the
store; the transaction is rolled back, so the store stays resumable once space is freed. A store is
created exclusively (``O_EXCL``; an existing empty regular file is used and left empty again on
failure); a path that is not a regular file (a device, a FIFO, a socket) is refused before any work.
A failed creation removes only the files this process created. Every finished unit is committed at once; a
count is written only where none is (``WHERE count IS NULL``), so a unit is never counted twice
even when Dask delivers a retried task's result again. Durable against a killed process
(``synchronous=NORMAL`` in WAL mode: a commit is in the WAL file when it returns; an OS crash
may lose the last commits, which are then simply counted again).

The file is locked with ``fcntl.flock`` (exclusive, non-blocking) for as long as a client holds
it: a second client gets StoreError. Unit statuses: ``pending`` (no count), ``counted``,
``verified`` (second seed agrees), ``mismatch`` (second seed disagrees, recount pending),
``recounted`` (counted again without tables; that count is the unit's). Verification judges a unit
by its total over its parts.
"""
from __future__ import annotations

import fcntl
import os
import socket
import sqlite3
import stat
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from .errors import Overdue, check_deadline, past

SCHEMA = 9  # 3: units.checksum; 4: the tables table; 5: checksums over every field, run.checksum;
# 6: statistics runs (run.stats, units.stats); 7: run.part_depth (the split depth of parts; 3 before);
# 8: units.verify_stats, units.recount_stats (a statistics run's verify pass and recount);
# 9: run.part_cut (how parts divide the split level; "key" before)
# (an older store gains what it lacks when it is opened, its rows checked by its own schema's rule first)
# The options that define a run: a resumed run must agree on every one of them.
RUN_OPTIONS = ("fen", "depth", "split_ply", "backend", "tt", "seed", "verify_seed", "verify_sample", "stats",
               "part_depth", "part_cut")
PART_DEPTH = 3
"""The split depth of parts of every run before schema 7 (``perft_core.gpu.kernels.PART_DEPTH``,
not imported: the store must not need the GPU package). A run's identity and checksums name its
split depth only when it is another one, so an older store's checksums stay what they were."""
PART_CUT_KEY, PART_CUT_BOARD = "key", "board"
PART_CUTS = (PART_CUT_BOARD, PART_CUT_KEY)
"""How a run's parts divide the split level (``perft_core.gpu.kernels.Split``, whose CUT_* are these
words): ``board`` for runs in parts since schema 9, ``key`` before it and for runs of whole units
(which have no split). Like the split depth, a run's identity and checksums name it only where it
is not ``key``."""
STATUSES = ("pending", "counted", "verified", "mismatch", "recounted")
TAMPERED_WHY = {
    "checksum": "fails its checksum",
    "status": "has a verify status its unit's counts do not give (a unit's rows are judged together)",
    "plan": "has plan fields (unit, key, FEN, depth, multiplicity) that are not the run's split",
}
"""Why a row is in ``Store.tampered`` (its ``"why"``), in words: its checksum fails, or a checksum
made again over a change that the status or the plan shows."""

_DDL = """
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1), schema INTEGER NOT NULL, fen TEXT NOT NULL, depth INTEGER NOT NULL,
    split_ply INTEGER NOT NULL, backend TEXT NOT NULL, tt INTEGER NOT NULL, seed TEXT NOT NULL,
    verify_seed TEXT, verify_sample REAL, version TEXT NOT NULL, git_commit TEXT NOT NULL, started TEXT NOT NULL,
    units INTEGER NOT NULL, parts INTEGER NOT NULL, checksum TEXT, stats INTEGER NOT NULL DEFAULT 0,
    part_depth INTEGER NOT NULL DEFAULT 3, part_cut TEXT NOT NULL DEFAULT 'key');
CREATE TABLE units (
    idx INTEGER PRIMARY KEY, unit INTEGER NOT NULL, part INTEGER NOT NULL, key TEXT NOT NULL, fen TEXT NOT NULL,
    depth INTEGER NOT NULL, multiplicity TEXT NOT NULL, estimate REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending', count TEXT, seconds REAL, worker TEXT, device TEXT, task TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, finishes INTEGER NOT NULL DEFAULT 0, verify_count TEXT,
    verify_seconds REAL, recount TEXT, recount_seconds REAL, finished TEXT, probes INTEGER, hits INTEGER,
    checksum TEXT, stats TEXT, verify_stats TEXT, recount_stats TEXT, UNIQUE (key, part), UNIQUE (unit, part));
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY, started TEXT NOT NULL, ended TEXT, host TEXT NOT NULL, pid INTEGER NOT NULL,
    cluster TEXT NOT NULL, counted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE tables (
    id INTEGER PRIMARY KEY, session INTEGER, worker TEXT NOT NULL, process TEXT NOT NULL, task TEXT NOT NULL,
    phase TEXT NOT NULL, finished TEXT NOT NULL, r INTEGER NOT NULL, probes INTEGER NOT NULL, hits INTEGER NOT NULL,
    host_probes INTEGER NOT NULL, host_hits INTEGER NOT NULL, stores INTEGER NOT NULL, slots INTEGER,
    occupied INTEGER, evictions INTEGER);
"""
_TABLES_DDL = _DDL[_DDL.index("CREATE TABLE tables"):]
TABLE_COUNTERS = ("probes", "hits", "host_probes", "host_hits", "stores")
"""The columns of ``tables`` that are a batch's own figures (summed over a run); slots, occupied and
evictions are a worker's tables as they stood (the latest reading of each worker process is summed)."""
_TABLE_SNAPSHOT = ("slots", "occupied", "evictions")


class StoreError(ValueError):
    """A store that cannot serve this run: corrupt, of another run's options, in use, or missing."""


class StoreWriteError(StoreError):
    """A write to the store failed (disk full, file too large, I/O error); nothing of it was kept."""


class StoreTampered(StoreError):
    """The store's run row fails its checksum: the run it describes was changed after it was made."""


_SEALED = ("idx", "unit", "part", "key", "fen", "depth", "multiplicity", "count", "verify_count", "recount")
_SEALED_V3 = ("key", "part", "depth", "multiplicity", "count", "verify_count", "recount")  # schemas 3 and 4
_PLAN = ("unit", "part", "key", "fen", "depth", "multiplicity")  # what units.split decides
_RUN_SEALED = ("fen", "depth", "split_ply", "backend", "tt", "seed", "verify_seed", "verify_sample", "version",
               "git_commit", "started", "units", "parts")
_COUNTS = ("multiplicity", "count", "verify_count", "recount")
_POLL_ROWS = 4096  # unit rows written between two looks at a new store's time limit
_PROGRESS_STEPS = 20_000  # SQLite VM steps between two looks at an opening store's time limit
_STATS = ("stats", "verify_stats", "recount_stats")  # a statistics run's counters of its three counts


_HELD_LOCKS: set[int] = set()
"""The descriptors of the stores this process has locked. A flock belongs to the open file, which a
forked child shares: a local cluster forks its workers while a resumed run holds its store
(``cluster.worker_start_method``), and a worker that outlived a killed client kept the store locked.
A forked child closes its copies (:func:`_drop_locks_in_child`); the parent's lock stays."""


def _unlock(fd: int) -> None:
    """Close a store's locked descriptor (its lock goes with it)."""
    _HELD_LOCKS.discard(fd)
    os.close(fd)


def _drop_locks_in_child() -> None:
    for fd in _HELD_LOCKS:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_locks_in_child)


def _sha(values) -> str:
    import hashlib

    return hashlib.sha256("|".join(str(v) for v in values).encode()).hexdigest()[:32]


def _stop_statements_at(conn: sqlite3.Connection, deadline: float | None) -> None:
    """Make ``conn``'s SQL statements stop once ``deadline`` (``time.perf_counter()`` seconds) has
    passed: a progress handler whose nonzero answer ends the statement with "interrupted" (its
    transaction then rolled back by the caller). None: no handler."""
    if deadline is None:
        conn.set_progress_handler(None, 0)
    else:
        conn.set_progress_handler(lambda: past(deadline), _PROGRESS_STEPS)


def _unless_stopped(exc: Exception) -> BaseException:
    """``exc`` (the StoreError an SQLite error becomes), or KeyboardInterrupt when the command was
    asked to stop meanwhile (``cliargs.stop_requested``): a Ctrl-C or SIGTERM raised inside one of
    the store's SQL functions (the row checksums, read over every row when a store is opened or
    sealed) reaches the caller as SQLite's "user-defined function raised exception", and the store
    was then reported unreadable, exit 2 (found by session 32's edge hunt)."""
    from .. import cliargs

    return KeyboardInterrupt() if cliargs.stop_requested() else exc


def row_checksum(options: str, idx: int, unit: int, part: int, key: str, fen: str, depth: int, multiplicity: str,
                 count: str | None, verify_count: str | None, recount: str | None, *stats: str | None) -> str:
    """The checksum of one unit row: SHA-256 of the run's ``options`` text (its identity) and the
    row's fields (``_SEALED``: every field the total depends on; in a statistics run also its
    ``stats``, ``verify_stats`` and ``recount_stats`` texts, given as more arguments), first 16
    bytes as 32 hex digits. Trailing statistics that are None are left out, so a row without a
    verify pass has the checksum schema 6 gave it."""
    while len(stats) > 1 and stats[-1] is None:
        stats = stats[:-1]
    return _sha((options, idx, unit, part, key, fen, depth, multiplicity, count, verify_count, recount, *stats))


def _row_checksum_v3(options: str, key: str, part: int, depth: int, multiplicity: str, count: str | None,
                     verify_count: str | None, recount: str | None) -> str:
    """A schema-3/4 row's checksum (``_SEALED_V3``), to check an older store's rows before they are resealed."""
    return _sha((options, key, part, depth, multiplicity, count, verify_count, recount))


def stats_values(text) -> list[str] | None:
    """A statistics text's 13 counters as their decimal texts, or None when it is not 13
    comma-separated ASCII decimals (a row resealed with counters that were changed or lost)."""
    values = text.split(",") if isinstance(text, str) else []
    return values if len(values) == 13 and all(v.isascii() and v.isdigit() for v in values) else None


def sum_stats_texts(texts) -> tuple[int, ...]:
    """The sum of statistics texts (13 comma-separated decimals each), counter by counter."""
    total = [0] * 13
    for text in texts:
        for i, v in enumerate(text.split(",")):
            total[i] += int(v)
    return tuple(total)


def run_checksum(run: dict) -> str:
    """The checksum of the run row (``_RUN_SEALED`` as stored: seeds as hex text, tt as 0/1, and
    ``stats`` where it is 1: a plain run's checksum is the one schema 5 wrote, ``part_depth``
    where it is not PART_DEPTH, ``part_cut`` where it is not PART_CUT_KEY), 32 hex digits."""
    depth = run.get("part_depth") or PART_DEPTH
    cut = run.get("part_cut") or PART_CUT_KEY
    return _sha([*(run[k] for k in _RUN_SEALED), *(["stats"] if run.get("stats") else []),
                 *(["part_depth", depth] if depth != PART_DEPTH else []),
                 *(["part_cut", cut] if cut != PART_CUT_KEY else [])])


def not_a_regular_file(path: str | os.PathLike) -> str:
    """The error text for a store path that is a device, FIFO, socket or folder."""
    return f"store {path} is not a regular file (a device, FIFO, socket or folder): give a file path"


def _exists(path: str | os.PathLike) -> str:
    return f"store {path} already exists; continue it with --resume {path} or choose a new file"


def check_new_store_path(path: str | os.PathLike) -> None:
    """Refuse (StoreError) a path for a new store that holds data or is not a regular file, touching
    nothing: called before any work, and again by :meth:`Store.create`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot use store {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(not_a_regular_file(path))
    if st.st_size > 0:
        raise StoreError(_exists(path))


def default_store_path() -> Path:
    """Where a new run's store goes when none is named: ``perft-deep-<UTC time>-<pid>.sqlite`` in
    this user's data folder for perft deep (platformdirs: ``$XDG_DATA_HOME/perft-oracle/deep``, by
    default ``~/.local/share/perft-oracle/deep`` on Linux), never the current folder. The folder is
    made (mode as the umask says); the file is not. Raises StoreWriteError when the folder cannot be made."""
    import platformdirs

    folder = platformdirs.user_data_path("perft-oracle") / "deep"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreWriteError(f"cannot make the store folder {folder}: {exc.strerror or exc}; "
                              "name a store with --store FILE") from None
    return folder / f"perft-deep-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}.sqlite"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _seed_text(seed: int | None) -> str | None:
    return None if seed is None else f"{seed:#x}"


def _refuse_a_foreign_run_table(path: Path, columns) -> None:
    """Raises StoreError when the run table's ``columns`` lack a field every store since schema 2
    has: a table of that name, not ours."""
    missing = [k for k in ("schema", *_RUN_SEALED) if k not in columns]
    if missing:
        raise StoreError(f"store {path} is not a deep-perft store: its run table has no {', '.join(missing)}")


class Store:
    """An open, locked store. Make one with :meth:`create` or :meth:`open`; ``close()`` it (or use
    it as a context manager) to release the lock.

    ``run``: the run row as a dict (RUN_OPTIONS plus version, git_commit, started, units), seeds
    as ints.
    """

    def __init__(self, path: Path, lock_fd: int | None, conn: sqlite3.Connection):
        self.path = path
        self._lock_fd = lock_fd
        self.conn = conn
        self.run = self._read_run()
        self.session: int | None = None
        self.tampered: list[dict] = []  # rows found changed when the store was opened, each with "why" (TAMPERED_WHY)
        self._deadline: float | None = None  # while it is opened: its time limit (a write stopped by it is Overdue)
        # a plain run's identity and rows are sealed as schema 5 sealed them; a statistics run's
        # identity says so, and its rows' checksums cover their counters too
        self._sealed = (*_SEALED, *_STATS) if self.run["stats"] else _SEALED
        self._options = self._identity(self.run)
        self._register("row_checksum", self._options)
        conn.create_function("row_checksum_v3", len(_SEALED_V3), lambda *a: _row_checksum_v3(self._options, *a),
                             deterministic=True)

    @staticmethod
    def _identity(run: dict) -> str:
        """The run's options text, under every row's checksum."""
        identity = (*(k for k in RUN_OPTIONS if k not in ("stats", "part_depth", "part_cut")), "started", "units",
                    "parts")
        depth = run.get("part_depth") or PART_DEPTH
        cut = run.get("part_cut") or PART_CUT_KEY
        return ("|".join(str(run[k]) for k in identity) + ("|stats" if run["stats"] else "")
                + (f"|part_depth={depth}" if depth != PART_DEPTH else "")
                + (f"|part_cut={cut}" if cut != PART_CUT_KEY else ""))

    def _register(self, name: str, options: str) -> None:
        """SQL function ``name``: the checksum of a row's sealed fields under ``options``."""
        self.conn.create_function(name, len(self._sealed), lambda *a: row_checksum(options, *a), deterministic=True)

    # ----- opening --------------------------------------------------------------------------------
    @staticmethod
    def _lock_fd(fd: int, path: Path) -> int:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(f"store {path} is in use by another client (its lock is held)") from None
        _HELD_LOCKS.add(fd)
        return fd

    @classmethod
    def _lock(cls, path: Path) -> int:
        """Open an existing store file and take its lock; refuses anything but a regular file."""
        if os.path.exists(path) and not os.path.isfile(path):  # never open a device: opening one can act
            raise StoreError(not_a_regular_file(path))
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as exc:
            raise StoreError(f"cannot open store {path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(not_a_regular_file(path))
        return cls._lock_fd(fd, path)

    @classmethod
    def _create_file(cls, path: Path) -> tuple[int, bool]:
        """Open ``path`` for a new store: created exclusively, or an existing empty regular file.
        Returns (locked fd, whether this process created the file). Raises StoreError for a path
        that holds data or is not a regular file (never touching it)."""
        check_new_store_path(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOCTTY, 0o666)  # mode as the umask says
            created = True
        except FileExistsError:  # an empty regular file (check_new_store_path), made by someone else
            fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_NOFOLLOW)
            created = False
        except OSError as exc:
            raise StoreWriteError(f"cannot create store {path}: {exc.strerror or exc}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (not created and st.st_size > 0):  # changed since the check
            os.close(fd)
            raise StoreError(not_a_regular_file(path) if not stat.S_ISREG(st.st_mode) else _exists(path))
        return cls._lock_fd(fd, path), created

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @classmethod
    def create(cls, path: str | os.PathLike, run: dict, units, parts: int = 1,
               deadline: float | None = None) -> Store:
        """A new store at ``path`` for ``run`` (RUN_OPTIONS keys, seeds as ints) and ``units``
        (perft_core.deep.units.Unit, in submission order), each counted in ``parts`` parts (one
        row per unit and part), written in one transaction.

        Raises StoreError if ``path`` already holds data (resume it instead), is not a regular file
        (a device, FIFO, socket) or is in use; StoreWriteError if it cannot be written; Overdue
        ("store") once ``deadline`` (``time.perf_counter()`` seconds; None: none) has passed, looked
        at every 4,096 rows and by a progress handler of its SQL (the rows' checksums: a store of
        1.37 M rows took 48 s on this project's VM). On failure only the files this process created
        are removed (an empty file that was there is left empty).
        """
        from .. import provenance

        path = Path(path)
        sidecars = [Path(f"{path}{s}") for s in ("-wal", "-shm", "-journal")]
        existed = [p for p in sidecars if os.path.lexists(p)]
        if existed:
            raise StoreError(f"store {path}: {existed[0]} exists (left by another store of that name); "
                             "remove it or choose a new file")
        fd, created = cls._create_file(path)
        conn = None
        try:
            conn = cls._connect(path)
            _stop_statements_at(conn, deadline)
            conn.execute("BEGIN")
            for statement in _DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            row = {"fen": run["fen"], "depth": run["depth"], "split_ply": run["split_ply"], "backend": run["backend"],
                   "tt": int(run["tt"]), "seed": _seed_text(run["seed"]), "verify_seed": _seed_text(run["verify_seed"]),
                   "verify_sample": run["verify_sample"], "version": provenance.package_version(),
                   "git_commit": provenance.package_commit(), "started": _now(), "units": len(units), "parts": parts,
                   "stats": int(bool(run.get("stats"))), "part_depth": int(run.get("part_depth") or PART_DEPTH),
                   "part_cut": run.get("part_cut") or PART_CUT_KEY}
            if row["part_cut"] not in PART_CUTS:
                raise ValueError(f"a part cut is one of {', '.join(PART_CUTS)}, got {row['part_cut']!r}")
            conn.execute(f"INSERT INTO run (id, schema, {', '.join(_RUN_SEALED)}, stats, part_depth, part_cut, "
                         f"checksum) VALUES (1, ?, {', '.join('?' * len(_RUN_SEALED))}, ?, ?, ?, ?)",
                         (SCHEMA, *(row[k] for k in _RUN_SEALED), row["stats"], row["part_depth"], row["part_cut"],
                          run_checksum(row)))

            def rows():
                for i, u in enumerate(units):
                    if i % _POLL_ROWS == 0:
                        check_deadline(deadline, "store")
                    for c in range(parts):
                        yield i * parts + c, i, c, f"{u.key:032x}", u.fen, u.depth, str(u.multiplicity), u.estimate

            conn.executemany("INSERT INTO units (idx, unit, part, key, fen, depth, multiplicity, estimate) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows())
            conn.execute("COMMIT")
            store = cls(path, fd, conn)
            store._seal("1")
            _stop_statements_at(conn, None)
            return store
        except BaseException as exc:
            if conn is not None:
                conn.close()
            # a store half made holds no count: undo what this process made, and only that
            for leftover in sidecars:
                if leftover not in existed:
                    leftover.unlink(missing_ok=True)
            if created:
                path.unlink(missing_ok=True)
            else:
                os.ftruncate(fd, 0)
            _unlock(fd)
            if isinstance(exc, sqlite3.OperationalError):
                if past(deadline):  # stopped by the progress handler
                    raise Overdue("store") from None
                raise _unless_stopped(StoreWriteError(f"cannot create store {path}: {exc}")) from None
            raise

    @classmethod
    def open(cls, path: str | os.PathLike, repair: bool = True, deadline: float | None = None) -> Store:
        """Open an existing store to resume it; checks it is whole and a deep-perft store, and
        re-reads every unit row's checksum (failures in ``tampered``; with ``repair``, made pending).

        Raises StoreError: missing, in use, corrupt (SQLite integrity check, schema, unit rows);
        Overdue ("open") once ``deadline`` (``time.perf_counter()`` seconds; None: none) has
        passed: its SQL statements are stopped by a progress handler, its split polls it, and a
        repair under way is rolled back, so its rows and counts are as they were (an older store
        stays migrated). Opening a store of 57,548 units takes about 3 s on this project's VM, one
        of 1.37 M units about 100 s: its checksums and its split are made again.
        """
        path = Path(path)
        if not os.path.exists(path):
            raise StoreError(f"store {path} does not exist")
        fd = cls._lock(path)
        conn = None
        try:
            cls._refuse_unless_a_store(path)
            conn = cls._connect(path)
            _stop_statements_at(conn, deadline)
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise StoreError(f"store {path} is corrupt: {check}")
            store = cls(path, fd, conn)
            store._deadline = deadline
            store._check_units()
            store._migrate()
            store._check_run()
            store._check_checksums(repair)
            store._deadline = None
            _stop_statements_at(conn, None)
            return store
        except BaseException as exc:
            if conn is not None:  # closed: its WAL files go, and a write under way is rolled back
                conn.close()
            _unlock(fd)
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            if past(deadline):  # the progress handler's "interrupted" (or a checksum function's stop)
                raise Overdue("open") from None
            raise _unless_stopped(StoreError(f"store {path} is not a readable deep-perft store: {exc}")) from None

    @staticmethod
    def _refuse_unless_a_store(path: Path) -> None:
        """Raises StoreError when ``path`` is not an SQLite database with a run table, found through
        a read-only connection, so that a file refused is left as it was: _connect switches a
        database to WAL and an empty file would become one. Other errors (a WAL store whose -shm is
        missing cannot be opened read-only) are left to the full open."""
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        except sqlite3.Error:
            return
        try:
            columns = [c[0] for c in conn.execute("SELECT * FROM run LIMIT 0").description]
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "not a database" in text or "no such table" in text:
                raise StoreError(f"store {path} is not a deep-perft store: {text}") from None
            return
        finally:
            conn.close()
        _refuse_a_foreign_run_table(path, columns)

    @classmethod
    def read(cls, path: str | os.PathLike) -> Store:
        """Open a store read-only, without its lock, to read it while a run may be writing it
        (``perft deep --stats``): no migration, no checksum check, nothing written.

        Raises StoreError: missing, or not a readable deep-perft store.
        """
        path = Path(path)
        if not os.path.exists(path):
            raise StoreError(f"store {path} does not exist")
        if not path.is_file():
            raise StoreError(not_a_regular_file(path))
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            return cls(path, None, conn)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise StoreError(f"store {path} is not a readable deep-perft store: {exc}") from None
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
        self._run_row = dict(run)  # as stored, for its checksum
        _refuse_a_foreign_run_table(self.path, run)
        if run["schema"] not in (2, 3, 4, 5, 6, 7, 8, SCHEMA):
            raise StoreError(f"store {self.path} has schema {run['schema']}, this version reads {SCHEMA}")
        run["tt"] = bool(run["tt"])
        run["stats"] = bool(run.get("stats") or 0)
        run["part_depth"] = run.get("part_depth") or PART_DEPTH
        run["part_cut"] = run.get("part_cut") or PART_CUT_KEY
        if run["part_cut"] not in PART_CUTS:
            raise StoreError(f"store {self.path}: the run's part cut {run['part_cut']!r} is not one of "
                             f"{', '.join(PART_CUTS)}")
        for k in ("seed", "verify_seed"):
            try:
                run[k] = None if run[k] is None else int(run[k], 16)
            except (TypeError, ValueError):
                raise StoreError(f"store {self.path}: the run's {k} {run[k]!r} is not a hexadecimal key "
                                 "(the run row was changed or damaged)") from None
        return run

    def run_row_holds(self) -> bool | None:
        """Whether the run row holds its checksum (None for a store before schema 5, whose run row has
        none until it is migrated): for :meth:`read`, which checks nothing on its own."""
        if (self.run.get("schema") or 0) < 5:
            return None
        return self._run_row.get("checksum") == run_checksum(self._run_row)

    def _check_run(self) -> None:
        """Raise StoreTampered when the run row fails its checksum (schema 5 on)."""
        if self._run_row.get("checksum") != run_checksum(self._run_row):
            raise StoreTampered(f"store {self.path}: its run row (FEN, depth, options) fails its checksum: it was "
                                "changed outside perft deep, so no count in it can be trusted; start a new store")

    def _check_units(self) -> None:
        n, lo, hi, bad, twice = self.conn.execute(
            "SELECT COUNT(*), MIN(idx), MAX(idx), SUM(status NOT IN ('pending','counted','verified','mismatch','recounted') "
            "OR (status = 'pending') != (count IS NULL) OR (status = 'recounted') != (recount IS NOT NULL)), "
            "SUM(finishes > 1) FROM units").fetchone()
        want = self.run["units"] * self.run["parts"]
        if n != want or bad or twice or (n and (lo, hi) != (0, n - 1)):
            raise StoreError(f"store {self.path} is corrupt: {n} unit rows (idx {lo}..{hi}) for {self.run['units']} "
                             f"units of {self.run['parts']} parts, {bad or 0} inconsistent, {twice or 0} counted twice")
        # every number the total is made of must be decimal digits (int() would take '0x10' as an error
        # naming nothing, or ' 7' and '٧' as 7)
        for col in _COUNTS:
            row = self.conn.execute(f"SELECT idx, unit, part, {col} FROM units WHERE {col} IS NOT NULL AND "
                                    f"(typeof({col}) != 'text' OR {col} = '' OR {col} GLOB '*[^0-9]*') "
                                    "ORDER BY idx LIMIT 1").fetchone()
            if row is not None:
                raise StoreError(f"store {self.path} is corrupt: unit {row[1]} part {row[2]} (row {row[0]}) has "
                                 f"{col} {row[3]!r}, not a decimal count")

    def _migrate(self) -> None:
        """An older store gains what it lacks, in one transaction: a schema-2 store (no checksums)
        its checksums (its rows as they stand are sealed), a schema-3/4 store its rows resealed by
        this schema's rule (a row that fails its old checksum keeps a failing one, so it is found
        tampered), a store before schema 4 the ``tables`` table (empty: the statistics of its counts
        so far were not kept), a store before schema 6 the statistics columns (a plain run: its
        checksums are unchanged), every older store the run row's checksum. A schema-5 store's run
        row is proven by its own checksum first (StoreTampered), so no change to it is sealed."""
        schema = self.run["schema"]
        if schema == SCHEMA:
            return
        columns = {t: {row[1] for row in self.conn.execute(f"PRAGMA table_info({t})")} for t in ("run", "units")}
        for since, table, column in ((3, "units", "checksum"), (5, "run", "checksum")):
            if schema < since and column in columns[table]:  # a later store whose schema field was lowered
                raise StoreTampered(f"store {self.path} says schema {schema}, but its {table} table has the "
                                    f"{column} column of schema {since} and later: its schema field was changed")
        if schema >= 5:  # its run row has a checksum: proven before anything is resealed
            self._check_run()
        with self._transaction():
            for table, column in (("run", "stats INTEGER NOT NULL DEFAULT 0"), ("units", "stats TEXT"),
                                  ("run", f"part_depth INTEGER NOT NULL DEFAULT {PART_DEPTH}"),
                                  ("units", "verify_stats TEXT"), ("units", "recount_stats TEXT"),
                                  ("run", f"part_cut TEXT NOT NULL DEFAULT '{PART_CUT_KEY}'")):
                # before schema 6 every run is a plain one: no statistics; before schema 7 every run
                # with parts split them at PART_DEPTH; before schema 8 no statistics run had a verify
                # pass; before schema 9 every run in parts cut them by key: its checksums stay what they were
                if column.split()[0] not in columns[table]:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            if schema < 3:
                self.conn.execute("ALTER TABLE units ADD COLUMN checksum TEXT")
                self._seal("1")
            elif schema < 5:  # a row that holds by this schema's rule already (a store resealed before) stays
                new, v3 = f"row_checksum({', '.join(self._sealed)})", f"row_checksum_v3({', '.join(_SEALED_V3)})"
                self.conn.execute(f"UPDATE units SET checksum = CASE WHEN checksum IS {new} THEN checksum "
                                  f"WHEN checksum IS {v3} THEN {new} ELSE NULL END")
            if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tables'").fetchone():
                self.conn.execute(_TABLES_DDL)
            if "checksum" not in columns["run"]:
                self.conn.execute("ALTER TABLE run ADD COLUMN checksum TEXT")
            self.conn.execute("UPDATE run SET schema = ?, checksum = ?", (SCHEMA, run_checksum(self._run_row)))
        self.run["schema"] = self._run_row["schema"] = SCHEMA
        self._run_row["stats"] = self._run_row.get("stats") or 0
        self._run_row["part_depth"] = self._run_row.get("part_depth") or PART_DEPTH
        self._run_row["part_cut"] = self._run_row.get("part_cut") or PART_CUT_KEY
        self._run_row["checksum"] = run_checksum(self._run_row)

    def _seal(self, where: str, params: tuple = ()) -> None:
        """Write the checksum of the rows matching the SQL condition ``where``."""
        self.conn.execute(f"UPDATE units SET checksum = row_checksum({', '.join(self._sealed)}) WHERE {where}", params)

    def _bad_rows(self) -> list[dict]:
        cur = self.conn.execute(f"SELECT * FROM units WHERE checksum IS NOT row_checksum({', '.join(self._sealed)}) "
                                "ORDER BY idx")
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def _plan(self) -> dict[int, tuple]:
        """The run's unit rows as :func:`units.split` makes them from the run row: ``{idx: (unit,
        part, key, fen, depth, multiplicity)}`` (the same split, so the same units in the same order).
        Raises Overdue ("open") once the opening's time limit (``_deadline``) has passed."""
        from ..position import Position
        from .units import split

        run, parts = self.run, self.run["parts"]
        try:
            units = split(Position.from_fen(run["fen"]), run["depth"], run["split_ply"], run["seed"], self._deadline)
        except Overdue:
            raise Overdue("open") from None
        if len(units) != run["units"]:
            raise StoreError(f"store {self.path}: its run splits into {len(units)} units, the store has "
                             f"{run['units']} (made by another version?); start a new store")
        return {i * parts + c: (i, c, f"{u.key:032x}", u.fen, u.depth, str(u.multiplicity))
                for i, u in enumerate(units) for c in range(parts)}

    def _check_checksums(self, repair: bool = True) -> None:
        """Re-read every unit row; a row whose checksum fails, or whose checksum was made again over a
        change (its status not what its counts say: :meth:`_misjudged_rows`; its plan fields not the
        run's split: :meth:`replanned_rows`), goes to ``tampered`` and is made pending again (all
        its counts dropped, the unit's other parts too when it was judged as a whole), its plan fields (unit, part, key, FEN, depth, multiplicity) made again from the run
        row (any of them may be what was changed), so the run counts it again, from the right
        position, instead of summing it."""
        self.tampered = [r | {"why": "checksum"} for r in self._bad_rows()]
        rows, plan = self.units(), self._plan()  # read and split once for both tests and the repair
        for why, test in (("status", lambda: self._misjudged_rows(rows)), ("plan", lambda: self.replanned_rows(plan, rows))):
            check_deadline(self._deadline, "open")
            found = test()
            bad = {r["idx"] for r in self.tampered}  # checksums made again over a change
            self.tampered += [r | {"why": why} for r in found if r["idx"] not in bad]
        check_deadline(self._deadline, "open")
        if not self.tampered or not repair:
            return
        redo = {r["unit"] for r in self.tampered} | {plan[r["idx"]][0] for r in self.tampered}
        units = sorted(redo)
        idxs = sorted({r["idx"] for r in self.tampered} | {i for i, p in plan.items() if p[0] in redo})
        with self._transaction():
            # rows first moved out of the way (UNIQUE (key, part) and (unit, part) hold at every statement)
            self.conn.executemany("UPDATE units SET unit = -1 - idx, key = 'x' || idx WHERE idx = ?",
                                  ((i,) for i in idxs))
            self.conn.executemany(f"UPDATE units SET {', '.join(f'{k} = ?' for k in _PLAN)} WHERE idx = ?",
                                  (plan[i] + (i,) for i in idxs))
            self.conn.executemany(
                "UPDATE units SET count = NULL, verify_count = NULL, recount = NULL, stats = NULL, verify_stats = NULL, "
                "recount_stats = NULL, status = 'pending', "
                "finishes = 0 WHERE unit = ?", ((u,) for u in units))
            self.conn.executemany("UPDATE units SET checksum = NULL WHERE unit = ?", ((u,) for u in units))
            for u in units:
                self._seal("unit = ?", (u,))

    def _misjudged_rows(self, rows: list[dict]) -> list[dict]:
        """The rows of units whose status says what their sealed counts do not. A status is not under
        the row checksum: it is derived from the counts (``verified``), yet it decides what is
        counted again, so it is derived again here. A unit whose every part has its second count is
        judged: its rows are ``verified`` when its totals (all 13 counters in a statistics run) equal
        its second totals, else ``mismatch`` or ``recounted``; a unit with a part still without one
        is not judged (no such status); a run without a verify seed judges none. A status edited
        from ``mismatch`` to ``verified`` had a wrong count summed with "0 differed" (a helper's
        hunt, session 29). ``rows``: :meth:`units`."""
        judged = ("verified", "mismatch", "recounted")
        units: dict[int, list[dict]] = {}
        for r in rows:
            units.setdefault(r["unit"], []).append(r)
        out = []
        for rows in units.values():
            second = [r["verify_count"] is not None for r in rows]
            statuses = {r["status"] for r in rows}
            if self.run["verify_seed"] is None or not all(second):
                ok = not (statuses & set(judged)) and (self.run["verify_seed"] is not None or not any(second))
            elif self.run["stats"] and any(r["stats"] is None or r["verify_stats"] is None for r in rows):
                ok = False
            else:
                if self.run["stats"]:
                    same = sum_stats_texts(r["stats"] for r in rows) == sum_stats_texts(r["verify_stats"] for r in rows)
                else:
                    same = sum(int(r["count"]) for r in rows) == sum(int(r["verify_count"]) for r in rows)
                ok = statuses == {"verified"} if same else statuses <= {"mismatch", "recounted"}
            if not ok:
                out += rows
        return out

    def replanned_rows(self, plan: dict[int, tuple] | None = None, rows: list[dict] | None = None) -> list[dict]:
        """The unit rows whose plan fields (unit, part, key, FEN, depth, multiplicity) differ from the
        split the run row makes (:meth:`_plan`): a row changed and its checksum made again (the rule
        is public) passes its checksum, but not this. A recount cannot find such a row either: it
        counts the row's own FEN (a helper's hunt, session 29: a multiplicity made 2 and resealed
        passed ``--check --check-sample 1`` and changed the total). Costs one split of the run, unless
        the caller has it (``plan``: :meth:`_plan`; ``rows``: :meth:`units`)."""
        plan = self._plan() if plan is None else plan
        return [r for r in (self.units() if rows is None else rows) if tuple(r[k] for k in _PLAN) != plan.get(r["idx"])]

    def checked_rows(self) -> list[dict]:
        """All unit rows (:meth:`units`), each proven by its checksum and by the run's split.

        Raises StoreError naming the first row whose checksum fails (changed since it was written),
        or whose plan fields are not the split's (changed, its checksum made again).
        """
        bad = self._bad_rows()
        if bad:
            r = bad[0]
            raise StoreError(f"store {self.path}: unit {r['unit']} part {r['part']} ({r['fen']}) fails its checksum "
                             f"({len(bad)} rows): it was changed outside perft deep; resume the store to count it again")
        bad = self.replanned_rows()
        if bad:
            r = bad[0]
            raise StoreTampered(f"store {self.path}: unit {r['unit']} part {r['part']} ({r['fen']}, multiplicity "
                                f"{r['multiplicity']}) is not the run's split ({len(bad)} rows): it was changed outside "
                                "perft deep with its checksum made again, so no total is given")
        return self.units()

    def add_verification(self, verify_seed: int, verify_sample: float) -> None:
        """Give a run that has no verify pass one: its counted and future units (the fraction
        ``verify_sample`` of them, chosen by key) are counted again through tables keyed by
        ``verify_seed`` in the verify phase. The options are part of every row's identity, so every
        row is resealed under the new ones in the same transaction, and only a row that holds its
        checksum under the old ones: a row changed before stays found (its checksum is cleared).
        The run row's checksum is rewritten. (Perft 13's store of session 14 was made without a
        verify seed; issue 33 asks for a verify sample of it.)

        Raises StoreError: the run has a verify seed already, counts without tables (no verify
        pass for those), or ``verify_seed`` is its key seed; ValueError: a sample outside (0, 1]."""
        run = self.run
        if run["verify_seed"] is not None:
            raise StoreError(f"store {self.path} is a run with verify_seed={run['verify_seed']:#x} already; resume it "
                             "without --verify-seed or with that seed")
        if not run["tt"]:
            raise StoreError(f"store {self.path} is a run without tables: it has no verify pass")
        if verify_seed == run["seed"]:
            raise StoreError(f"verify seed must differ from the run's key seed {run['seed']:#x}")
        if isinstance(verify_sample, bool) or not isinstance(verify_sample, (int, float)) or not 0 < verify_sample <= 1:
            raise ValueError(f"verify sample must be a fraction in (0, 1], got {verify_sample!r}")
        new_run = {**run, "verify_seed": verify_seed, "verify_sample": float(verify_sample)}
        new_row = {**self._run_row, "verify_seed": _seed_text(verify_seed), "verify_sample": float(verify_sample)}
        options = self._identity(new_run)
        self._register("row_checksum_new", options)
        fields = ", ".join(self._sealed)
        with self._transaction():
            self.conn.execute(f"UPDATE units SET checksum = CASE WHEN checksum IS row_checksum({fields}) "
                              f"THEN row_checksum_new({fields}) ELSE NULL END")
            self.conn.execute("UPDATE run SET verify_seed = ?, verify_sample = ?, checksum = ?",
                              (new_row["verify_seed"], new_row["verify_sample"], run_checksum(new_row)))
        self.run, self._run_row, self._options = new_run, {**new_row, "checksum": run_checksum(new_row)}, options
        self._register("row_checksum", options)

    def check_options(self, asked: dict) -> None:
        """Raise StoreError if any option in ``asked`` (RUN_OPTIONS keys; None = not asked) differs
        from the run's."""
        for k, v in asked.items():
            if v is not None and v != self.run[k]:
                raise StoreError(f"store {self.path} is a run with {k}={self.run[k]!r}, not {v!r}; "
                                 f"resume it without that option or use a new store")

    # ----- the work -------------------------------------------------------------------------------
    def progress(self) -> tuple[int, int, float]:
        """(unit rows, rows with a first count, the counted rows' share of the run's estimated nodes,
        each row weighed at least 1 node): read by SQL, not row by row (a store of 1.37 M rows
        reads as dicts in 15 s)."""
        rows, counted, est, done = self.conn.execute(
            "SELECT COUNT(*), COUNT(count), TOTAL(MAX(estimate, 1.0)), "
            "TOTAL(CASE WHEN count IS NOT NULL THEN MAX(estimate, 1.0) ELSE 0 END) FROM units").fetchone()
        return rows, counted, done / (est or 1.0)

    def units(self) -> list[dict]:
        """All unit rows as dicts, in idx order."""
        cur = self.conn.execute("SELECT * FROM units ORDER BY idx")
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def begin_session(self, cluster: str) -> None:
        """Record this client in ``sessions``."""
        with self._transaction():
            cur = self.conn.execute("INSERT INTO sessions (started, host, pid, cluster) VALUES (?, ?, ?, ?)",
                                    (_now(), socket.gethostname(), os.getpid(), cluster))
        self.session = cur.lastrowid

    def end_session(self) -> None:
        if self.session is not None:
            with self._transaction():
                self.conn.execute("UPDATE sessions SET ended = ? WHERE id = ?", (_now(), self.session))

    def submitted(self, idxs) -> None:
        """Count a submission of the rows ``idxs`` (an iterable of idx; committed)."""
        with self._transaction():
            self.conn.executemany("UPDATE units SET attempts = attempts + 1 WHERE idx = ?", ((i,) for i in idxs))

    @contextmanager
    def _transaction(self):
        """One write transaction: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on any exception. A
        failed write (a full disk) raises StoreWriteError naming the store; nothing of it is kept."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            if past(self._deadline):  # opening it: stopped by its progress handler, rolled back
                raise Overdue("open") from None
            raise _unless_stopped(StoreWriteError(f"cannot write store {self.path}: {exc}; nothing of this write was "
                                                  f"kept: free space, then continue with --resume {self.path}")) from None

    def finish(self, rows: list[dict], counts: list[int], seconds: list[float], worker: str, device: str, task: str,
               probes: list | None = None, hits: list | None = None, tables: dict | None = None,
               stats: list | None = None) -> int:
        """Write the counts of the rows of one task (dicts with ``idx``), all in one transaction;
        returns how many were written (a row that already has a count keeps it: a duplicate
        result, ignored). ``tables``: the task's table statistics (``worker.run_task``'s
        ``"tables"`` and ``"process"``), written as ``count`` rows of ``tables`` when any count was.
        ``stats`` (a statistics run): each row's 13 counters (ints, nodes first, equal to its count).

        Raises StoreError if a row's statistics are missing or their nodes differ from its count."""
        probes = probes or [None] * len(rows)
        texts = self._stats_texts(rows, counts, stats)
        hits = hits or [None] * len(rows)
        written = 0
        now = _now()
        with self._transaction():
            for r, c, sec, p, h, st in zip(rows, counts, seconds, probes, hits, texts):
                cur = self.conn.execute(
                    "UPDATE units SET count = ?, seconds = ?, worker = ?, device = ?, task = ?, status = 'counted', "
                    "finishes = finishes + 1, finished = ?, probes = ?, hits = ?, stats = ? "
                    "WHERE idx = ? AND count IS NULL",
                    (str(c), sec, worker, device, task, now, p, h, st, r["idx"]))
                written += cur.rowcount
                self._seal("idx = ?", (r["idx"],))
            if written and self.session is not None:
                self.conn.execute("UPDATE sessions SET counted = counted + ? WHERE id = ?", (written, self.session))
            if written:
                self._record_tables("count", worker, task, now, tables)
        return written

    def _record_tables(self, phase: str, worker: str, task: str, finished: str, tables: dict | None) -> None:
        """Write one task's table statistics (``{"process": str, "by_depth": {r: {TABLE_COUNTERS,
        slots, occupied, evictions}}}``; None or no depths: nothing) as rows of ``tables``."""
        if not tables or not tables.get("by_depth"):
            return
        columns = (*TABLE_COUNTERS, *_TABLE_SNAPSHOT)
        self.conn.executemany(
            f"INSERT INTO tables (session, worker, process, task, phase, finished, r, {', '.join(columns)}) "
            f"VALUES ({', '.join('?' * (7 + len(columns)))})",
            ((self.session, worker, tables["process"], task, phase, finished, int(r), *(row.get(c) for c in columns))
             for r, row in sorted(tables["by_depth"].items())))

    def tables_read(self, phase: str, worker: str, reading: dict) -> None:
        """Record a worker's tables as they stand at the end of ``phase`` (``worker.table_reading``:
        counters 0, slots, occupied, evictions) as rows of ``tables`` (one transaction)."""
        with self._transaction():
            self._record_tables(phase, worker, "tables read", _now(), reading)

    def table_statistics(self) -> dict[str, dict]:
        """The run's table statistics (every session and worker), per phase (``"count"``,
        ``"verify"``; a phase without rows is left out): ``{"by_depth": {r: {...}}, "processes":
        worker processes whose tables they are, "last_processes": those of the phase's last
        session}``. Each remaining depth r (int) has the sums of TABLE_COUNTERS over the run (ints),
        ``hit_rate`` = hits / probes and ``host_hit_rate`` = host_hits / host_probes (floats; None
        without probes) and, where some worker of the phase's last session had a table of r, the
        sums over that session's worker processes of their latest reading of ``slots``,
        ``occupied`` and ``evictions`` (the tables as they last stood; earlier sessions' are gone).
        An empty dict for a store without statistics (written before schema 4, or the cpu backend)."""
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tables'").fetchone():
            return {}
        out: dict[str, dict] = {}
        sums = ", ".join(f"SUM({c})" for c in TABLE_COUNTERS)
        for phase, r, *got in self.conn.execute(f"SELECT phase, r, {sums} FROM tables GROUP BY phase, r ORDER BY r"):
            row = dict(zip(TABLE_COUNTERS, got))
            row["hit_rate"] = row["hits"] / row["probes"] if row["probes"] else None
            row["host_hit_rate"] = row["host_hits"] / row["host_probes"] if row["host_probes"] else None
            out.setdefault(phase, {"by_depth": {}})["by_depth"][r] = row
        # The tables as they stood: the last session's processes only (an earlier session's tables
        # are gone; summed with them, a one-GPU run resumed once showed twice its GPU's slots).
        last = "(SELECT MAX(COALESCE(l.session, 0)) FROM tables l WHERE l.phase = tables.phase)"
        latest = (f"SELECT MAX(id) FROM tables WHERE occupied IS NOT NULL AND COALESCE(session, 0) = {last} "
                  "GROUP BY phase, worker, process, r")
        snap = ", ".join(f"SUM({c})" for c in _TABLE_SNAPSHOT)
        for phase, r, *got in self.conn.execute(f"SELECT phase, r, {snap} FROM tables WHERE id IN ({latest}) "
                                                "GROUP BY phase, r"):
            out[phase]["by_depth"][r].update(zip(_TABLE_SNAPSHOT, got))
        who = "COUNT(DISTINCT worker || ' ' || process)"
        for phase, n, m in self.conn.execute(f"SELECT phase, {who}, (SELECT {who} FROM tables t WHERE t.phase = "
                                             f"tables.phase AND COALESCE(t.session, 0) = {last}) FROM tables GROUP BY phase"):
            out[phase]["processes"] = n
            out[phase]["last_processes"] = m
        return out

    def verified(self, rows: list[dict], counts: list[int], seconds: list[float], worker: str = "", task: str = "",
                 tables: dict | None = None, stats: list | None = None) -> int:
        """Write the second-seed counts of one task's rows (one transaction), and the task's table
        statistics (``tables``, as for :meth:`finish`) as ``verify`` rows when any count was written
        (``worker``: its address, ``task``: its Dask key); in a statistics run also each row's 13
        counters (``stats``, as for :meth:`finish`). A unit is judged once every part has its
        second count: the parts are cut by key, so a second seed cuts them differently and only the
        unit's totals compare (in a statistics run all 13 of them); its rows become ``verified``
        (the totals agree) or ``mismatch``. Returns the rows written (rows already verified are
        skipped).

        Raises StoreError: a statistics run's counts without statistics, or not matching them."""
        texts = self._stats_texts(rows, counts, stats)
        with self._transaction():
            written = self._update_rows("UPDATE units SET verify_count = ?, verify_seconds = ?, verify_stats = ? "
                                        "WHERE idx = ? AND status = 'counted' AND verify_count IS NULL",
                                        rows, counts, seconds, texts)
            if written:
                self._record_tables("verify", worker, task, _now(), tables)
            for unit in {r["unit"] for r in rows}:
                got = self.conn.execute("SELECT count, verify_count, stats, verify_stats FROM units "
                                        "WHERE unit = ? AND status = 'counted'", (unit,)).fetchall()
                if len(got) < self.run["parts"] or any(v is None for _, v, _, _ in got):
                    continue  # judged when its last part's second count arrives
                if self.run["stats"]:
                    same = sum_stats_texts(s for _, _, s, _ in got) == sum_stats_texts(v for _, _, _, v in got)
                else:
                    same = sum(int(c) for c, _, _, _ in got) == sum(int(v) for _, v, _, _ in got)
                self.conn.execute("UPDATE units SET status = ? WHERE unit = ? AND status = 'counted'",
                                  ("verified" if same else "mismatch", unit))
        return written

    def recounted(self, rows: list[dict], counts: list[int], seconds: list[float], stats: list | None = None) -> int:
        """Write the counts without tables of mismatched rows (their counts from now on; in a
        statistics run with their counters, ``stats``; one transaction)."""
        texts = self._stats_texts(rows, counts, stats)
        with self._transaction():
            return self._update_rows("UPDATE units SET recount = ?, recount_seconds = ?, recount_stats = ?, "
                                     "status = 'recounted' WHERE idx = ? AND status = 'mismatch'",
                                     rows, counts, seconds, texts)

    def _stats_texts(self, rows: list[dict], counts: list[int], stats: list | None) -> list[str | None]:
        """Each row's 13 counters as stored (comma-separated decimals, nodes first) in a statistics
        run, else None each. Raises StoreError: statistics missing, or their nodes not the count."""
        if not self.run["stats"]:
            return [None] * len(rows)
        if stats is None or len(stats) != len(rows):
            raise StoreError(f"store {self.path} is a statistics run: a task's counts came without statistics")
        for r, c, st in zip(rows, counts, stats):
            if len(st) != 13 or int(st[0]) != int(c):
                raise StoreError(f"unit {r['unit']}: statistics {st!r} do not match its count {c}")
        return [",".join(str(int(v)) for v in st) for st in stats]

    def _update_rows(self, sql: str, rows: list[dict], counts: list[int], seconds: list[float],
                     texts: list[str | None]) -> int:
        """Run ``sql`` (parameters: count, seconds, statistics text, idx) for each row; the rows it changed."""
        written = sum(self.conn.execute(sql, (str(c), sec, t, r["idx"])).rowcount
                      for r, c, sec, t in zip(rows, counts, seconds, texts))
        for r in rows:
            self._seal("idx = ?", (r["idx"],))
        return written

    def close(self) -> None:
        """Close the database and release the lock."""
        try:
            self.conn.close()
        finally:
            if self._lock_fd is not None:
                _unlock(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
