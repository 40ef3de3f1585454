"""Tables that outlive a command: a deep run's transposition tables saved beside its store when a
command stops at its time limit, and loaded when the run resumes (the table image).

Why: a deep run's units share positions mostly between units, not inside one (NOTES.md, session 23,
``ci/unit_locality.py``: at ply 6 of startpos perft 13 each distinct position lies in 4.48 units,
but 8 consecutive units share only 1.08x). A resumed run whose tables start empty loses those hits
at every resume; the image keeps them.

What is saved: the lossless host cache and the device tables, highest remaining depth first,
while the image stays within its byte budget (an entry of remaining depth r saves a perft r, so
the upper entries are worth the most a byte; the last table saved may be in part). Each table
is written in chunks of CHUNK_SLOTS slots, a chunk as its occupied slots (indices and entries) or
whole, whichever is smaller; empty chunks are left out.

Why a loaded entry is as safe as one stored in this process: an entry is the fact "perft(position,
r) = n" under one Zobrist key set, castling geometry and part split, checked by its key when probed
(kernels/pc_tt.h), whatever run stored it. So an image is loaded only when that identity is this
driver's (:func:`identity`: the key seed and a digest of the key set, the castling geometry, the
part, parts and split depth, the entry format, and a digest of the kernel sources that computed
the counts), into tables of exactly the slots it was saved from (the slot of an entry comes from
its key, which the entry does not hold). Its bytes are checked too: each chunk's SHA-256 is in the
image's index, and the index and header are covered by one more SHA-256; a chunk is uploaded only
after its digest matched, and an image that fails any check loads nothing more (what it loaded
before the failure passed its own digest). The image is written to a temporary file and renamed,
so an interrupted save leaves the previous image or none.

File layout (little-endian): MAGIC, header length (u64), header (JSON: identity, the tables'
slots, the host cache's entries, audit records or not, when written), then the records, then the
index (JSON: per record its kind, remaining depth, first slot, slots, entries, offset, bytes and
SHA-256), its length (u64), the SHA-256 of header + index, and END_MAGIC.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import itertools
import json
import os
import shutil
import stat
import struct
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

FORMAT = 1
MAGIC = b"PERFTTI1"
END_MAGIC = b"PERFTEND"
CHUNK_SLOTS = 1 << 22
"""Slots a record covers at most (64 MiB of 16-byte entries)."""
DISK_SHARE = 0.5
"""The most of the store folder's free disk an image may take (:func:`byte_budget`)."""
SAVE_SHARE = 0.05
"""The share of a command's time limit kept for saving its tables (``perft deep --max-seconds``)."""
WRITE_BYTES_PER_SECOND = 0.5e9
"""The write speed assumed when a time limit bounds an image's bytes (SAVE_SHARE of the limit at
this speed). Measured on two H200 hosts (NOTES.md, session 24): 2.5-4.6 GB in 2.6-7.8 s
(0.55-1.6 GB/s: the tables' chunks read back, written and hashed; the slowest taken); loads
4.2-4.7 GB in 1.0-1.3 s."""


def image_path(store: str | os.PathLike, seed: int, part: int, parts: int, part_depth: int) -> Path:
    """The image file of one part of a deep run's tables beside its store (``store``: the store's
    path): ``STORE.tables-SEED-pPARTofPARTS-rDEPTH.img`` (seed in hex). Every worker counting one
    part loads it; one saves it."""
    store = Path(store)
    return store.with_name(f"{store.name}.tables-{seed:x}-p{part}of{parts}-r{part_depth}.img")


def images_of(store: str | os.PathLike, seed: int | None = None) -> list[Path]:
    """The table images beside ``store``: of key seed ``seed``, or of any seed (None); any part;
    with the temporary files of saves that never finished (``IMAGE.tmpPID``: a worker killed while
    it wrote), which nothing else would remove."""
    store = Path(store)
    which = "*" if seed is None else f"{seed:x}"
    stem = f"{glob.escape(store.name)}.tables-{which}-p*.img"
    return sorted([*store.parent.glob(stem), *store.parent.glob(stem + ".tmp*")])


def byte_budget(store: str | os.PathLike, max_seconds: float | None = None) -> int:
    """Bytes an image of ``store``'s run may take: DISK_SHARE of the free disk of its folder, and
    with a time limit (seconds) at most SAVE_SHARE of it at WRITE_BYTES_PER_SECOND.
    ``PERFT_TABLE_IMAGE_BYTES`` (an integer; 0 saves nothing) overrides both."""
    forced = os.environ.get("PERFT_TABLE_IMAGE_BYTES", "").strip()
    if forced.isascii() and forced.isdigit():
        return int(forced)
    free = shutil.disk_usage(Path(store).resolve().parent).free
    budget = int(free * DISK_SHARE)
    if max_seconds is not None:
        budget = min(budget, int(max_seconds * SAVE_SHARE * WRITE_BYTES_PER_SECOND))
    return budget


def identity(driver) -> dict:
    """What entries of ``driver``'s tables are facts under (a TTBfsDriver): format, entry words,
    key seed, SHA-256 of its Zobrist keys, castling geometry (CastleInfo bytes, hex), part, parts,
    split depth and cut, and SHA-256 of the kernel sources. Two drivers' entries are interchangeable
    exactly when these are equal."""
    from .kernels import kernel_source_dir

    return {"format": FORMAT, "entry_words": int(driver.device_tables.entry_words), "seed": int(driver.seed),
            "zobrist": hashlib.sha256(np.ascontiguousarray(driver.z_host).tobytes()).hexdigest(),
            "castle_info": bytes(driver._ci_bytes).hex(), "part": int(driver.part), "parts": int(driver.parts),
            "part_depth": int(driver.part_depth), "part_cut": driver.part_cut,
            "kernels": _kernels_digest(kernel_source_dir())}


@functools.cache
def _kernels_digest(src: str) -> str:
    """SHA-256 of the kernel sources in ``src`` (``prebuilt.source_digest``), once a process."""
    from .prebuilt import source_digest

    return source_digest(src)


def _host(kernels, array) -> np.ndarray:
    """A host copy of a contiguous device (or NumPy) array."""
    return kernels.read(array)[0]


def _host_rows(kernels, src, rows, m: int, words: int) -> np.ndarray:
    """A host copy of rows ``rows`` (m indices, uint32 on the device) of ``src``, rows of ``words``
    uint64 (the precompiled gather: no array operation for CuPy to compile)."""
    dst = kernels.xp.empty(m * words, dtype=np.uint64)
    kernels.gather_rows(src, rows, m, words, dst)
    return _host(kernels, dst)


def _cache_of(driver) -> tuple:
    """(the driver's host cache of its tables' kind, words of a value): the statistics cache and 13
    counters beside statistics entries, else the node-count cache and 1."""
    if driver.device_tables.entry_words != 2:
        return driver.stats_cache, 13
    return driver.host_cache, 1


def _cache_arrays(cache, words: int, audit: bool) -> list[np.ndarray]:
    """The host cache as [keys uint64 (n, 3): lo, hi, remaining depth; values uint64 (n, words)],
    and with ``audit`` each entry's record: board words and side, uint64 (n, 6)."""
    n = len(cache.counts)
    keys = np.array(list(cache.counts.keys()), dtype=np.uint64).reshape(n, 3)
    if words == 1:
        values = np.fromiter(cache.counts.values(), dtype=np.uint64, count=n).reshape(n, 1)
    else:
        values = np.array(list(cache.counts.values()), dtype=np.uint64).reshape(n, words)
    if not audit:
        return [keys, values]
    records = np.zeros((n, 6), dtype=np.uint64)
    for i, key in enumerate(cache.counts):
        words_, side, _ci = cache.records[key]
        records[i, :5], records[i, 5] = words_, side
    return [keys, values, records]


def save(driver, path: str | os.PathLike, max_bytes: int) -> dict:
    """Write ``driver``'s tables (a TTBfsDriver with planned tables) to the image ``path``: the
    host cache, then the device tables from the highest remaining depth down, chunk by chunk,
    while the image stays within ``max_bytes`` (bytes): the first chunk that would not fit ends
    the image, so every table above the last one saved is whole and that one may be in part.
    Replaces ``path`` atomically.

    Returns ``{"path", "bytes", "seconds", "tables": {r: {"slots", "entries", "bytes", "whole"}},
    "host_entries", "skipped": [r of which nothing was saved]}`` (bytes of the file; wall
    seconds; entries saved; ``whole``: every occupied slot of the table saved).
    Raises OSError when the file cannot be written (the previous image, if any, stays)."""
    t0 = time.perf_counter()
    path = Path(path)
    k, tables = driver.k, driver.device_tables
    w = int(tables.entry_words)
    cache, cache_words = _cache_of(driver)
    audit = bool(tables.audit_mode)
    aw = 8 if audit else 0  # an audit record's words a slot
    host = _cache_arrays(cache, cache_words, audit)
    left = max_bytes - sum(x.nbytes for x in host)
    header = {"identity": identity(driver), "slots": {str(r): int(tt.slots) for r, tt in tables.tts.items()},
              "host_entries": len(cache), "audit": audit, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    head = json.dumps(header, sort_keys=True).encode()
    for stale in path.parent.glob(glob.escape(path.name) + ".tmp*"):  # a killed save's (one client a store)
        try:
            stale.unlink()
        except OSError:
            pass
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    index, summary = [], {}
    try:
        with open(tmp, "wb") as f, ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            f.write(MAGIC + struct.pack("<Q", len(head)) + head)
            pending = []

            def record(kind: str, r: int, first: int, slots: int, entries: int, arrays: list[np.ndarray]) -> None:
                offset = f.tell()
                for array in arrays:
                    f.write(memoryview(np.ascontiguousarray(array)).cast("B"))
                digest = pool.submit(_sha, arrays)
                pending.append(digest)
                while len(pending) > 16:  # bound the host copies waiting for their digest
                    pending.pop(0).result()
                index.append({"kind": kind, "r": r, "first": first, "slots": slots, "entries": entries,
                              "offset": offset, "bytes": sum(a.nbytes for a in arrays), "sha256": digest})

            if len(cache):
                record("host", 0, 0, 0, len(cache), host)
            full = left < 0
            for r in sorted(tables.tts, reverse=True):
                if full:
                    break
                tt = tables.tts[r]
                saved = size = 0
                for first in range(0, tt.slots, CHUNK_SLOTS):
                    n = min(CHUNK_SLOTS, tt.slots - first)
                    chunk = tt.entries[first * w:(first + n) * w]
                    # occupied slots: the count word (a node count, never 0 in a stored entry) is not 0
                    m, idx = k.nonzero_rows(chunk[1:], n, w)
                    if m == 0:
                        continue
                    sparse = m * (1 + w + aw) < n * (w + aw)  # the occupied slots alone are smaller
                    nbytes = 8 * (m * (1 + w + aw) if sparse else n * (w + aw))
                    if nbytes > left:
                        full = True
                        break
                    left -= nbytes
                    rows = tt.audit[first * 8:(first + n) * 8] if audit else None
                    if sparse:
                        arrays = [_host(k, idx).astype(np.uint64), _host_rows(k, chunk, idx, m, w)]
                        if audit:
                            arrays.append(_host_rows(k, rows, idx, m, 8))
                        record("sparse", r, first, n, m, arrays)
                    else:
                        record("dense", r, first, n, m, [_host(k, chunk)] + ([_host(k, rows)] if audit else []))
                    saved += m
                    size += nbytes
                if saved:
                    summary[r] = {"slots": int(tt.slots), "entries": saved, "bytes": size, "whole": not full}
            for row in index:
                row["sha256"] = row["sha256"].result()
            tail = json.dumps(index, sort_keys=True).encode()
            f.write(tail + struct.pack("<Q", len(tail)) + hashlib.sha256(head + tail).digest() + END_MAGIC)
            size = f.tell()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return {"path": str(path), "bytes": size, "seconds": time.perf_counter() - t0, "tables": summary,
            "host_entries": len(cache), "skipped": sorted(set(tables.tts) - set(summary), reverse=True)}


def _sha(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
    return h.hexdigest()


class ImageRefused(Exception):
    """An image that is not this driver's, or fails a check (the reason is the message)."""


def read_header(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """(header, index) of the image ``path``, after checking the magic numbers and the SHA-256 over
    header and index. Raises ImageRefused (a short reason) or OSError."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open (FileNotFoundError passes)
        raise ImageRefused("not a regular file (a FIFO, device, socket or folder)")
    with open(path, "rb") as f:
        start = f.read(16)
        if len(start) < 16 or start[:8] != MAGIC:
            raise ImageRefused("not a table image of this format")
        head_len = struct.unpack("<Q", start[8:])[0]
        f.seek(0, os.SEEK_END)
        end = f.tell()
        if end < 16 + head_len + 48:  # checked before it is read: a damaged length is no allocation
            raise ImageRefused("truncated (or a damaged header length)")
        f.seek(16)
        head = f.read(head_len)
        f.seek(end - 48)
        tail_len_digest = f.read(48)
        if tail_len_digest[40:] != END_MAGIC:
            raise ImageRefused("truncated (no end mark)")
        tail_len = struct.unpack("<Q", tail_len_digest[:8])[0]
        if tail_len > end - 48 - 16 - len(head):
            raise ImageRefused("truncated index")
        f.seek(end - 48 - tail_len)
        tail = f.read(tail_len)
    if hashlib.sha256(head + tail).digest() != tail_len_digest[8:40]:
        raise ImageRefused("header or index digest differs")
    return json.loads(head), json.loads(tail)


def check(driver, header: dict) -> None:
    """Raise ImageRefused unless ``header``'s identity is ``driver``'s (naming the first field that
    differs)."""
    mine = identity(driver)
    theirs = header.get("identity", {})
    for key, value in mine.items():
        if theirs.get(key) != value:
            raise ImageRefused(f"another {key.replace('_', ' ')} ({theirs.get(key)!r}, this driver: {value!r})")


def load(driver, path: str | os.PathLike, before_upload=None) -> dict:
    """Load the image ``path`` into ``driver``'s tables and host cache (a TTBfsDriver whose tables
    are planned, empty, for this run): the tables are first re-planned to the image's slots if
    they differ (``driver._replan(slots)``; an image whose tables do not fit is refused).
    ``before_upload`` (tests): called with each record's host arrays before they are checked.

    Returns ``{"path", "loaded": bool, "reason": why not (or None), "entries": {r: entries},
    "host_entries", "bytes", "seconds"}``. Never raises for a bad image (the count goes on with
    what passed its checks); OSError other than a missing file is reported as the reason too."""
    t0 = time.perf_counter()
    out = {"path": str(path), "loaded": False, "reason": None, "entries": {}, "host_entries": 0, "bytes": 0,
           "seconds": 0.0}
    try:
        header, index = read_header(path)
        check(driver, header)
        slots = {int(r): int(s) for r, s in header["slots"].items()}
        tables = driver.device_tables
        if {r: tt.slots for r, tt in tables.tts.items()} != slots and not driver._replan(slots):
            raise ImageRefused(f"its tables ({sum(slots.values())} slots) do not fit this driver's")
        _load_records(driver, path, header, index, out, before_upload)
        out["loaded"] = True
    except FileNotFoundError:
        out["reason"] = "no image"
    except (ImageRefused, OSError, ValueError, KeyError) as exc:
        out["reason"] = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ImageRefused) else str(exc)
    out["seconds"] = time.perf_counter() - t0
    return out


READERS = min(8, os.cpu_count() or 1)
"""Threads reading and hashing an image's records ahead of the uploads (file reads and SHA-256
release the GIL)."""


def _read_record(fd: int, row: dict) -> tuple[bytes, str]:
    """(the record's bytes, their SHA-256 in hex)."""
    raw = os.pread(fd, row["bytes"], row["offset"])
    return raw, hashlib.sha256(raw).hexdigest()


def _load_records(driver, path, header: dict, index: list[dict], out: dict, before_upload) -> None:
    k, tables = driver.k, driver.device_tables
    w = int(tables.entry_words)
    cache, cache_words = _cache_of(driver)
    with open(path, "rb") as f, ThreadPoolExecutor(max_workers=READERS) as pool:
        ahead: deque = deque()
        queue = iter(index)
        for row in itertools.islice(queue, 2 * READERS):
            ahead.append((row, pool.submit(_read_record, f.fileno(), row)))
        while ahead:
            row, fut = ahead.popleft()
            following = next(queue, None)
            if following is not None:
                ahead.append((following, pool.submit(_read_record, f.fileno(), following)))
            raw, digest = fut.result()
            if len(raw) != row["bytes"]:
                raise ImageRefused(f"truncated record at byte {row['offset']}")
            if digest != row["sha256"]:
                raise ImageRefused(f"record at byte {row['offset']} (remaining depth {row['r']}) digest differs")
            out["bytes"] += len(raw)
            data = np.frombuffer(raw, dtype=np.uint64)
            m = int(row["entries"])
            audit = 8 if header.get("audit") else 0
            if before_upload is not None:
                before_upload(row, data)
            if row["kind"] == "host":
                if data.size != m * (3 + cache_words + (6 if audit else 0)):
                    raise ImageRefused("a host cache record of the wrong size")
                keys = data[:3 * m].reshape(m, 3)
                values = data[3 * m:(3 + cache_words) * m].reshape(m, cache_words)
                records = data[(3 + cache_words) * m:].reshape(m, 6) if audit else None
                for i, ((lo, hi, r), v) in enumerate(zip(keys.tolist(), values.tolist())):
                    record = None
                    if records is not None and cache.audit:
                        record = (records[i, :5].copy(), int(records[i, 5]), driver._ci_bytes)
                    if not cache.put((lo, hi, r), v[0] if cache_words == 1 else tuple(v), record):
                        break
                out["host_entries"] = len(cache)
                continue
            tt = tables.tts.get(int(row["r"]))
            first, n = int(row["first"]), int(row["slots"])
            if tt is None or first + n > tt.slots:
                raise ImageRefused(f"a record of remaining depth {row['r']} lies outside its table")
            chunk = tt.entries[first * w:(first + n) * w]
            rows = tt.audit[first * 8:(first + n) * 8] if tt.audit is not None and audit else None
            if row["kind"] == "dense":
                if data.size != n * (w + audit):
                    raise ImageRefused("a dense record of the wrong size")
                k.upload(chunk, data[:n * w])
                if rows is not None:
                    k.upload(rows, data[n * w:])
            else:
                if data.size != m * (1 + w + audit):
                    raise ImageRefused("a sparse record of the wrong size")
                if m and int(data[:m].max()) >= n:
                    raise ImageRefused("a sparse record names a slot outside its chunk")
                idx = k.to_device(data[:m].astype(np.uint32))
                k.scatter_rows(k.to_device(data[m:m * (1 + w)]), idx, m, w, chunk)
                if rows is not None:
                    k.scatter_rows(k.to_device(data[m * (1 + w):]), idx, m, 8, rows)
            out["entries"][int(row["r"])] = out["entries"].get(int(row["r"]), 0) + m
    tables.loaded(out["entries"])
