"""Kernel sets for the BFS driver: the real GPU (CuPy + NVRTC) and the emulated device (NumPy + C++).

Both expose the same methods over arrays of their own module ``xp``:
``count`` (legal-move counts), ``scan`` (exclusive prefix sum into n + 1 offsets, returns the total),
``gen`` (moves + parent indices), ``make`` (child boards), ``leaf`` (sum of perft(levels - 1) below
each move: levels 2 = make + bulk count, 3 = the fused two-level leaf) and ``count_sum``; with
statistics (kernels/pc_stats.h), ``stats_leaf`` (the moves of the leaf parent each move makes,
classified) and ``stats_sum`` (each board's moves classified), each returning a
:class:`perft_core.Stats`.
Boards are five uint64 words each (pbq, nbk, rqk, black, state), ``_core.BOARD_BYTES`` bytes.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.resources
import time
from pathlib import Path

import numpy as np

from .. import _core
from ..stats import Stats
from . import prebuilt

BOARD_WORDS = _core.BOARD_BYTES // 8
SIDES = prebuilt.SIDES
SCAN_TILE = 256 * 8  # elements per block of the scan kernels (PC_SCAN_TILE)
STATS_THREADS = 128  # threads per block of the statistics kernels (PC_STATS_THREADS)
STATS_WORDS = 13  # uint64 counters of a statistics total (perft_core.stats.STATS_FIELDS)


PART_DEPTH = 3
"""The remaining depth at which a count split into parts (``TTBfsDriver.set_part``) is split: the
level whose positions the fused leaf expands, by far the most expensive one, so a part costs the
whole count's upper levels (the same on every part) plus 1/parts of the leaf work."""


def _part_of_high(hi, parts: int):
    """``((hi >> 32) * parts) >> 32`` of a uint64 array of keys' high words, NumPy's or CuPy's
    (kernels/pc_tt.h ``key_part``)."""
    return ((hi >> np.uint64(32)) * np.uint64(parts)) >> np.uint64(32)


def key_part(keys: np.ndarray, parts: int) -> np.ndarray:
    """The part (0 .. parts-1) of each 128-bit key among ``parts`` (keys: uint64 (n, 2) as lo, hi;
    returns uint64 (n,)): ``((hi >> 32) * parts) >> 32``, kernels/pc_tt.h ``key_part``."""
    return _part_of_high(np.asarray(keys, dtype=np.uint64).reshape(-1, 2)[:, 1], parts)


_GAMMA, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _part_mix(h, x):
    """kernels/pc_tt.h ``part_mix`` on uint64 arrays (wrapping arithmetic)."""
    z = (h ^ x) + _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def board_part(boards: np.ndarray, us: int, salt: int, parts: int) -> np.ndarray:
    """The part (0 .. parts-1) of each board by the board cut (kernels/pc_tt.h ``board_part``): a
    hash, salted by ``salt`` (an int taken mod 2^64), of the pieces of the side not to move (``us``
    is the side to move, 0 white, 1 black). ``boards``: uint64, BOARD_WORDS words a board (any
    shape that reshapes to (n, BOARD_WORDS)); returns uint64 (n,)."""
    b = np.asarray(boards, dtype=np.uint64).reshape(-1, BOARD_WORDS)
    them = ~b[:, 3] if us else b[:, 3]
    h = np.full(len(b), salt % (1 << 64), dtype=np.uint64)
    for w in range(3):
        h = _part_mix(h, b[:, w] & them)
    return _part_of_high(h, parts)


CUT_KEY, CUT_BOARD = "key", "board"
CUTS = (CUT_BOARD, CUT_KEY)
"""How a count in parts divides its split level (``TTBfsDriver.set_part``): ``board`` (the default
since store schema 9) by :func:`board_part`, ``key`` (every run before it) by :func:`key_part`."""


class Split:
    """The split level's division of a count into parts: this driver counts part ``part`` of
    ``parts``, cut by ``cut`` (CUT_BOARD or CUT_KEY), the board cut's hash salted by ``salt`` (the
    driver's Zobrist seed, so a verify seed cuts the parts differently, as the key cut did)."""

    def __init__(self, parts: int = 1, part: int = 0, cut: str = CUT_BOARD, salt: int = 0):
        if cut not in CUTS:
            raise ValueError(f"a part cut is one of {', '.join(CUTS)}, got {cut!r}")
        self.parts, self.part, self.cut, self.salt = int(parts), int(part), cut, int(salt) % (1 << 64)

    @property
    def by_board(self) -> int:
        """The kernels' ``cut`` argument (kernels/pc_tt.h ``level_part``): 1 board, 0 key."""
        return int(self.cut == CUT_BOARD)

    def of(self, keys, boards, us: int) -> np.ndarray:
        """The part of each position (host arrays: keys uint64 (n, 2), boards uint64 (n, BOARD_WORDS),
        side ``us`` to move): uint64 (n,)."""
        if self.cut == CUT_BOARD:
            return board_part(boards, us, self.salt, self.parts)
        return key_part(keys, self.parts)

    def mine(self, keys, boards, us: int) -> np.ndarray:
        """Which positions (as :meth:`of`) are this driver's part: bool (n,)."""
        return self.of(keys, boards, us) == np.uint64(self.part)

    def __repr__(self) -> str:
        return f"Split(parts={self.parts}, part={self.part}, cut={self.cut!r}, salt={self.salt:#x})"


class EmulatedKernels:
    """The emulated device: NumPy arrays and the extension's host batch kernels (one thread)."""

    name = "gpu-emulated"
    xp = np

    def __init__(self):
        self.ci = None
        self.kernel_seconds = 0.0

    def set_castle(self, ci: bytes) -> None:
        self.ci = ci

    def free_bytes(self) -> int:
        return 1 << 30

    def temporaries(self, site: str):
        """NumPy's temporaries: a MemoryError of the host is no device's (see CupyKernels)."""
        return contextlib.nullcontext()

    def to_device(self, host: np.ndarray):
        return np.ascontiguousarray(host)

    def synchronize(self) -> None:
        pass

    def read(self, *arrays) -> list[np.ndarray]:
        """Host copies of ``arrays`` (see CupyKernels.read)."""
        return [np.array(a) for a in arrays]

    def _timed(self, fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        self.kernel_seconds += time.perf_counter() - t
        return out

    def count(self, boards, n, us, counts):
        self._timed(_core.batch_count, boards, n, us, self.ci, counts)

    def scan(self, counts, n, offsets) -> int:
        offsets[0] = 0
        np.cumsum(counts[:n], dtype=np.uint64, out=offsets[1:n + 1])
        return int(offsets[n])

    def gen(self, boards, n, us, offsets, moves, parents):
        self._timed(_core.batch_gen, boards, n, us, self.ci, offsets, moves, parents)

    def make(self, boards, parents, moves, n, us, children):
        self._timed(_core.batch_make, boards, parents, moves, n, us, self.ci, children)

    def leaf(self, boards, parents, moves, n, us, levels) -> int:
        return int(self._timed(_core.batch_leaf, boards, parents, moves, n, us, self.ci, levels))

    def count_sum(self, boards, n, us) -> int:
        counts = np.empty(n, dtype=np.uint32)
        self.count(boards, n, us, counts)
        return int(counts.sum(dtype=np.uint64))

    def stats_leaf(self, boards, parents, moves, n, us) -> Stats:
        return Stats.from_tuple(self._timed(_core.batch_stats_leaf, boards, parents, moves, n, us, self.ci))

    def stats_sum(self, boards, n, us) -> Stats:
        return Stats.from_tuple(self._timed(_core.batch_stats_sum, boards, n, us, self.ci))

    # ----- transposition-table mode -----
    def zobrist(self, seed: int):
        return np.frombuffer(_core.zobrist_keys_blob(seed), dtype=np.uint64).copy()

    def keys(self, boards, n, us, z, keys):
        self._timed(_core.batch_keys, boards, n, us, self.ci, z, keys)

    def count_probe(self, boards, keys, n, us, tt, slots, counts, values):
        self._timed(_core.batch_count_probe, boards, keys, n, us, self.ci, tt, slots, counts, values)

    def make_key(self, boards, keys, parents, moves, n, us, z, children, child_keys):
        self._timed(_core.batch_make_key, boards, keys, parents, moves, n, us, self.ci, z, children, child_keys)

    def leaf_values(self, boards, parents, moves, n, us, levels, values):
        self._timed(_core.batch_leaf_values, boards, parents, moves, n, us, self.ci, levels, values)

    def upsweep(self, parents, child_values, n, parent_values):
        self._timed(_core.batch_upsweep, parents, child_values, n, parent_values)

    def store(self, boards, keys, values, n, tt, slots, audit, tag):
        self._timed(_core.batch_store, boards, keys, values, n, tt, slots, audit, tag)

    # ----- statistics with tables (kernels/pc_tt_stats.h): values as 13 slices of n -----
    def stats_values(self, boards, n, us, values):
        self._timed(_core.batch_stats_values, boards, n, us, self.ci, values)

    def stats_leaf_values(self, boards, parents, moves, n, us, values, n_boards):
        self._timed(_core.batch_stats_leaf_values, boards, parents, moves, n, us, self.ci, values, n_boards)

    def stats_probe(self, keys, n, tt, slots, counts, values):
        self._timed(_core.batch_stats_probe, keys, n, tt, slots, counts, values)

    def stats_leaf_merged(self, boards, keys, parents, moves, n, us, z, values, n_boards) -> int:
        # The emulated device groups with NumPy and classifies each group's leaf parent once.
        child_keys = np.empty((n, 2), dtype=np.uint64)
        children = np.empty(n * BOARD_WORDS, dtype=np.uint64)
        self._timed(_core.batch_make_key, boards, keys, parents, moves, n, us, self.ci, z, children, child_keys)
        _, heads, group_of = np.unique(child_keys, axis=0, return_index=True, return_inverse=True)
        group_of = group_of.reshape(-1)
        groups = len(heads)
        heads = np.ascontiguousarray(children.reshape(n, BOARD_WORDS)[heads]).reshape(-1)
        counts = np.empty(STATS_WORDS * groups, dtype=np.uint64)
        self._timed(_core.batch_stats_values, heads, groups, us ^ 1, self.ci, counts)
        for c in range(STATS_WORDS):
            self.upsweep(parents, np.ascontiguousarray(counts[c * groups:(c + 1) * groups][group_of]), n,
                         values[c * n_boards:(c + 1) * n_boards])
        return groups

    def stats_store(self, boards, keys, values, n, tt, slots, audit, tag):
        self._timed(_core.batch_stats_store, boards, keys, values, n, tt, slots, audit, tag)

    # ----- data movement (CupyKernels does these in its own kernels) -----
    def zero(self, array) -> None:
        array.fill(0)

    def upload(self, dst, host: np.ndarray) -> None:
        if dst.size != np.size(host):
            raise ValueError(f"upload of {np.size(host)} elements into an array of {dst.size}")
        dst[...] = np.ascontiguousarray(host).reshape(dst.shape)

    def widen(self, counts, n, values):
        values[:n] = counts[:n]

    def count_hits(self, counts, values, n, hits):
        hits[0] += np.count_nonzero((counts[:n] == 0) & (values[:n] > 0))

    def part_filter(self, keys, boards, n, us, split, counts, values, own):
        other = ~split.mine(keys[:2 * n].reshape(n, 2), boards[:n * BOARD_WORDS], us)
        counts[:n][other] = 0
        values[:n][other] = 0
        own[0] += n - int(np.count_nonzero(other))

    def upsweep_grouped(self, parents, group_of, group_values, n, parent_values):
        self.upsweep(parents, np.ascontiguousarray(group_values[group_of[:n]]), n, parent_values)

    def merge_groups(self, keys, n):
        kv = keys[:2 * n].reshape(n, 2)
        _, first, inverse = np.unique(kv, axis=0, return_index=True, return_inverse=True)
        heads = np.sort(first)  # groups in the order of their first board, as on the device
        rank_of_unique = np.empty(len(first), dtype=np.uint32)
        rank_of_unique[np.argsort(first)] = np.arange(len(first), dtype=np.uint32)
        return len(first), (heads, rank_of_unique[inverse.reshape(-1)])

    def merge_gather(self, plan, boards, keys, n, merged_boards, merged_keys):
        heads, group_of = plan
        merged_boards.reshape(-1, BOARD_WORDS)[...] = boards[:n * BOARD_WORDS].reshape(n, BOARD_WORDS)[heads]
        merged_keys.reshape(-1, 2)[...] = keys[:2 * n].reshape(n, 2)[heads]
        return group_of

    def part_rows(self, keys, boards, n, us, split):
        mine = split.mine(keys[:2 * n].reshape(n, 2), boards[:n * BOARD_WORDS], us)
        own = np.flatnonzero(mine)
        others = np.flatnonzero(~mine)
        rows = np.append(own, others[0] if others.size else n).astype(np.uint32)
        group_of = np.full(n, own.size, dtype=np.uint32)
        group_of[own] = np.arange(own.size, dtype=np.uint32)
        return int(own.size), rows, group_of

    @staticmethod
    def _row_words(rows, m, words):
        """The flat word indices of rows ``rows[:m]`` of ``words`` words each."""
        return (rows[:m].astype(np.int64)[:, None] * words + np.arange(words)).reshape(-1)

    def gather_rows(self, src, rows, m, words, dst):
        dst[:m * words] = src[self._row_words(rows, m, words)]

    def scatter_rows(self, src, rows, m, words, dst):
        dst[self._row_words(rows, m, words)] = src[:m * words]

    def take_u32(self, table, index):
        return np.take(table, index)

    def nonzero_rows(self, a, n, stride, rows: bool = True):
        found = np.flatnonzero(a[:n * stride:stride] != 0)
        return int(found.size), found.astype(np.uint32) if rows else None

    def leaf_merged(self, boards, keys, parents, moves, n, us, z, values) -> int:
        # The emulated device groups with NumPy and counts each group's child with the CPU perft.
        child_keys = np.empty((n, 2), dtype=np.uint64)
        children = np.empty(n * BOARD_WORDS, dtype=np.uint64)
        self._timed(_core.batch_make_key, boards, keys, parents, moves, n, us, self.ci, z, children, child_keys)
        _, heads, group_of = np.unique(child_keys, axis=0, return_index=True, return_inverse=True)
        heads = np.ascontiguousarray(children.reshape(n, BOARD_WORDS)[heads]).reshape(-1)
        counts = np.asarray(self._timed(_core.batch_perft, heads, len(heads) // BOARD_WORDS, us ^ 1, self.ci, 2),
                            dtype=np.uint64)
        self.upsweep(parents, np.ascontiguousarray(counts[group_of.reshape(-1)]), n, values)
        return len(counts)


def kernel_source_dir() -> str:
    """Directory of the kernel sources: the installed ``perft_core.kernels`` package data, or the
    source checkout's ``kernels/`` when running from a tree built with ``build_ext --inplace``."""
    try:
        return str(importlib.resources.files("perft_core.kernels"))
    except ModuleNotFoundError:
        return str(Path(__file__).resolve().parents[2] / "kernels")


@functools.cache
def _module(options: tuple[str, ...] = (), build: str = "auto"):
    """The kernels of kernels/pc_kernels.cu, loaded once per process, with the attack tables uploaded.

    ``build`` "auto": the precompiled cubin of this device's architecture when ``prebuilt.find``
    accepts it (default options, same sources), else NVRTC; "nvrtc": always NVRTC (CuPy caches its
    output in CUPY_CACHE_DIR, so a machine compiles each option set once).
    Returns (module, {name expression: function name in the module}, "cubin" | "nvrtc", reason).
    """
    import cupy as cp

    if build not in ("auto", "nvrtc"):
        raise ValueError(f"build must be 'auto' or 'nvrtc', got {build!r}")
    src_dir = kernel_source_dir()
    arch = f"sm_{cp.cuda.Device().compute_capability}"
    found = prebuilt.find(src_dir, arch, options) if build == "auto" else "NVRTC asked for"
    if isinstance(found, tuple):
        path, lowered = found
        mod, kind, why = cp.RawModule(path=str(path)), "cubin", f"precompiled {path.name}"
    else:
        with open(f"{src_dir}/pc_kernels.cu") as f:
            code = f.read()
        mod = cp.RawModule(code=code, options=prebuilt.OPTIONS + (f"-I{src_dir}",) + tuple(options),
                           name_expressions=list(prebuilt.KERNEL_NAMES))
        lowered, kind, why = {n: n for n in prebuilt.KERNEL_NAMES}, "nvrtc", found
    blob = np.frombuffer(_core.tables_blob(), dtype=np.uint8)
    ptr = mod.get_global("g_tables_dev")
    ptr.copy_from_host(blob.ctypes.data, blob.nbytes)
    return mod, lowered, kind, why


class CupyKernels:
    """The real GPU: CuPy arrays and the RawModule kernels (loaded once per process, cached).

    ``options``: extra NVRTC options (an experimental build; forces NVRTC); ``build``: "auto"
    (the precompiled cubin when it fits, see ``_module``) or "nvrtc". ``self.build`` says which was
    used ("cubin" or "nvrtc") and ``self.build_reason`` why. Every operation of a count runs in
    these kernels or in CuPy's memsets and copies: nothing is compiled at first use.
    """

    name = "gpu"

    def __init__(self, options: tuple[str, ...] = (), gen_threads: int = 128, leaf_threads: int = 128,
                 leaf3: str = "list", build: str = "auto"):
        import cupy as cp

        self.xp = cp
        self.mod, lowered, self.build, self.build_reason = _module(tuple(options), build)
        self.names = prebuilt.KERNEL_NAMES
        self.fn = {n: self.mod.get_function(lowered[n]) for n in self.names}
        self.gen_threads, self.leaf_threads = gen_threads, leaf_threads
        if leaf3 not in ("list", "stream"):
            raise ValueError(f"leaf3 must be 'list' or 'stream', got {leaf3!r}")
        self.leaf3_variant = 3 if leaf3 == "list" else 4
        self.ci = None
        self.total = cp.empty(1, dtype=cp.uint64)
        self.stats_totals = cp.empty(STATS_WORDS, dtype=cp.uint64)  # the statistics kernels' counters
        self.gen_error = cp.zeros(1, dtype=cp.uint64)  # gen_kernel's report of a miscounting board, read with every read
        self.kernel_seconds = 0.0
        self.kernel_seconds_by_name: dict[str, float] = {}  # device time per kernel, seconds
        self._events = []  # (kernel name, start, end) of the launches since the last synchronize
        self._spare_events = []  # events whose times were read, recorded again by later launches
        self._pinned = None  # page-locked staging memory of read (numpy uint8), grown on demand

    def set_castle(self, ci: bytes) -> None:
        self.ci = self.xp.asarray(np.frombuffer(ci, dtype=np.uint8))

    def _temp(self, count: int, dtype, site: str):
        """A temporary device array outside the arena (CuPy's pool): out of memory here is a
        DeviceOutOfMemory like the arena's, so the driver halves the chunk instead of failing."""
        try:
            return self.xp.empty(int(count), dtype=dtype)
        except self.xp.cuda.memory.OutOfMemoryError:
            from .arena import DeviceOutOfMemory

            nbytes = int(count) * self.xp.dtype(dtype).itemsize
            raise DeviceOutOfMemory(site, nbytes, 0, self.free_bytes()) from None

    def free_bytes(self) -> int:
        free, _total = self.xp.cuda.runtime.memGetInfo()
        return int(free)

    @contextlib.contextmanager
    def temporaries(self, site: str):
        """Array operations whose temporaries CuPy's pool allocates (``merge.keep_part``): out of
        memory there is a DeviceOutOfMemory at ``site``, as in :meth:`_temp`."""
        try:
            yield
        except self.xp.cuda.memory.OutOfMemoryError:
            from .arena import DeviceOutOfMemory

            raise DeviceOutOfMemory(site, 0, 0, self.free_bytes()) from None

    def to_device(self, host: np.ndarray):
        return self.xp.asarray(host)

    def synchronize(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()
        for name, a, b in self._events:
            dt = self.xp.cuda.get_elapsed_time(a, b) / 1e3
            self.kernel_seconds += dt
            self.kernel_seconds_by_name[name] = self.kernel_seconds_by_name.get(name, 0.0) + dt
            self._spare_events += (a, b)
        self._events.clear()

    def read(self, *arrays) -> list[np.ndarray]:
        """Host copies (numpy, same dtype and shape) of contiguous device ``arrays``, after the work
        queued before them, with one synchronisation for all of them (a BFS call's last read brings
        its root values and its hit counters back together).

        Raises ValueError for an array that is not C-contiguous.
        """
        spans, at = [], 0
        for a in arrays:
            if not a.flags.c_contiguous:
                raise ValueError("read needs C-contiguous device arrays")
            spans.append((a.data.ptr, a.nbytes, at))
            at += -(-a.nbytes // 8) * 8
        host = self._copy_out(spans, at)
        return [host[at:at + a.nbytes].view(a.dtype).reshape(a.shape).copy() for a, (_, _, at) in zip(arrays, spans)]

    def _read_word(self, array, index: int = 0) -> int:
        """``int(array[index])`` of a device uint64 array (a scan total), one stream round trip."""
        return int(self._copy_out([(array.data.ptr + 8 * int(index), 8, 0)], 8)[:8].view(np.uint64)[0])

    def _copy_out(self, spans, nbytes: int) -> np.ndarray:
        """Copy each (device address, bytes, host offset) of ``spans`` into page-locked staging
        memory of at least ``nbytes`` bytes (returned, numpy uint8; valid until the next copy):
        asynchronous copies on the current stream, then one wait on that stream. Against
        ``ndarray.get`` (a device view, a pageable synchronous copy, a new array each time) this
        keeps a scan total's read to one round trip (issue 27: 14 such reads a short count)."""
        rt = self.xp.cuda.runtime
        if self._pinned is None or self._pinned.nbytes < nbytes + 8:
            import cupyx

            self._pinned = cupyx.empty_pinned(max(nbytes + 8, 1 << 12), dtype=np.uint8)
        host, stream = self._pinned.ctypes.data, self.xp.cuda.get_current_stream().ptr
        for ptr, size, at in spans:
            if size:
                rt.memcpyAsync(host + at, ptr, size, rt.memcpyDeviceToHost, stream)
        err_at = -(-nbytes // 8) * 8  # gen_kernel's error word comes back with every read
        rt.memcpyAsync(host + err_at, self.gen_error.data.ptr, 8, rt.memcpyDeviceToHost, stream)
        rt.streamSynchronize(stream)
        self._check_gen(int(self._pinned[err_at:err_at + 8].view(np.uint64)[0]))
        return self._pinned

    def _check_gen(self, word: int) -> None:
        """Raise GeneratorMismatch for a non-zero error word of gen_kernel (see kernels/pc_kernels.cu)
        and clear it, so that the kernels stay usable for the next count."""
        if word:
            from ..errors import GeneratorMismatch

            self.gen_error.data.memset_async(0, 8)
            raise GeneratorMismatch((word >> 20) & 0xFFFFFFFF, (word >> 10) & 1023, word & 1023)

    def _launch(self, name, n, threads, args):
        if n == 0:
            return
        self._launch_grid(name, (int(n) + threads - 1) // threads, threads, args)

    def _launch_grid(self, name, blocks, threads, args):
        cp = self.xp
        spare = self._spare_events
        start, end = (spare.pop(), spare.pop()) if spare else (cp.cuda.Event(), cp.cuda.Event())
        start.record()
        self.fn[name]((int(blocks),), (threads,), args)
        end.record()
        self._events.append((name, start, end))

    def zero(self, array) -> None:
        """Set a contiguous device array to zero (a memset: no kernel to compile)."""
        if array.nbytes:
            array.data.memset_async(0, array.nbytes)

    def upload(self, dst, host: np.ndarray) -> None:
        """Copy host array ``host`` into the contiguous device array ``dst`` of the same size and dtype."""
        host = np.ascontiguousarray(host, dtype=dst.dtype)
        if host.nbytes != dst.nbytes:
            raise ValueError(f"upload of {host.nbytes} bytes into a {dst.nbytes}-byte array")
        if host.nbytes:
            dst.data.copy_from_host(host.ctypes.data, host.nbytes)

    def count(self, boards, n, us, counts):
        self._launch(f"count_kernel<{us}>", n, self.gen_threads, (boards, np.uint32(n), self.ci, counts))

    def scan(self, counts, n, offsets) -> int:
        self._scan(counts, n, offsets)
        return self._read_word(offsets, n)

    def _scan(self, values, n, offsets) -> None:
        """offsets[0 .. n] = exclusive prefix sums of values[:n] (uint32 or uint64), as uint64."""
        cp = self.xp
        kind = "u32" if values.dtype == cp.uint32 else "u64"
        if n == 0:
            offsets[:1].data.memset_async(0, 8)
            return
        tiles = (int(n) + SCAN_TILE - 1) // SCAN_TILE
        tile_offsets = None
        if tiles > 1:  # the tiles' sums, then their own prefix sums (recursively), then each tile
            sums = cp.empty(tiles, dtype=cp.uint64)
            self._launch_grid(f"scan_tiles_{kind}_kernel", tiles, 256, (values, np.uint64(n), sums))
            tile_offsets = cp.empty(tiles + 1, dtype=cp.uint64)
            self._scan(sums, tiles, tile_offsets)
        self._launch_grid(f"scan_apply_{kind}_kernel", tiles, 256,
                          (values, np.uint64(n), tile_offsets if tile_offsets is not None else np.uint64(0), offsets))

    def gen(self, boards, n, us, offsets, moves, parents):
        self._launch(f"gen_kernel<{us}>", n, self.gen_threads,
                     (boards, np.uint32(n), self.ci, offsets, moves, parents, self.gen_error))

    def make(self, boards, parents, moves, n, us, children):
        self._launch(f"make_kernel<{us}>", n, self.gen_threads,
                     (boards, parents, moves, np.uint64(n), self.ci, children))

    def leaf(self, boards, parents, moves, n, us, levels) -> int:
        self.zero(self.total)
        variant = self.leaf3_variant if levels == 3 else levels
        self._launch(f"leaf_kernel<{us},{variant}>", n, self.leaf_threads,
                     (boards, parents, moves, np.uint64(n), self.ci, self.total))
        return self._read_word(self.total)

    def count_sum(self, boards, n, us) -> int:
        self.zero(self.total)
        self._launch(f"count_sum_kernel<{us}>", n, self.gen_threads, (boards, np.uint32(n), self.ci, self.total))
        return self._read_word(self.total)

    def stats_leaf(self, boards, parents, moves, n, us) -> Stats:
        """Statistics of the leaf parents that the ``n`` ``moves`` make from ``boards[parents]``
        (side ``us``): their own moves classified (stats_leaf_kernel), summed."""
        self.zero(self.stats_totals)
        self._launch(f"stats_leaf_kernel<{us}>", n, STATS_THREADS,
                     (boards, parents, moves, np.uint64(n), self.ci, self.stats_totals))
        return Stats.from_tuple(int(x) for x in self.read(self.stats_totals)[0])

    def stats_sum(self, boards, n, us) -> Stats:
        """Statistics of depth 1 below each of the ``n`` ``boards`` (side ``us``), summed (stats_sum_kernel)."""
        self.zero(self.stats_totals)
        self._launch(f"stats_sum_kernel<{us}>", n, STATS_THREADS, (boards, np.uint32(n), self.ci, self.stats_totals))
        return Stats.from_tuple(int(x) for x in self.read(self.stats_totals)[0])

    # ----- transposition-table mode -----
    def zobrist(self, seed: int):
        return self.xp.asarray(np.frombuffer(_core.zobrist_keys_blob(seed), dtype=np.uint64))

    def keys(self, boards, n, us, z, keys):
        self._launch(f"keys_kernel<{us}>", n, self.gen_threads, (boards, np.uint32(n), self.ci, z, keys))

    def count_probe(self, boards, keys, n, us, tt, slots, counts, values):
        tt_ptr = tt if tt is not None else np.uint64(0)
        self._launch(f"count_probe_kernel<{us}>", n, self.gen_threads,
                     (boards, keys, np.uint32(n), self.ci, tt_ptr, np.uint64(slots), counts, values))

    def make_key(self, boards, keys, parents, moves, n, us, z, children, child_keys):
        self._launch(f"make_key_kernel<{us}>", n, self.gen_threads,
                     (boards, keys, parents, moves, np.uint64(n), self.ci, z, children, child_keys))

    def leaf_values(self, boards, parents, moves, n, us, levels, values):
        self._launch(f"leaf_values_kernel<{us},{levels}>", n, self.leaf_threads,
                     (boards, parents, moves, np.uint64(n), self.ci, values))

    def upsweep(self, parents, child_values, n, parent_values):
        self._launch("upsweep_kernel", n, 256, (parents, child_values, np.uint64(n), parent_values))

    def store(self, boards, keys, values, n, tt, slots, audit, tag):
        audit_ptr = audit if audit is not None else np.uint64(0)
        self._launch("store_kernel", n, 256,
                     (boards, keys, values, np.uint32(n), tt, np.uint64(slots), audit_ptr, np.uint64(tag)))

    # ----- statistics with tables (kernels/pc_tt_stats.h): a level's values are 13 slices of n -----
    def stats_values(self, boards, n, us, values):
        """values[c * n + i] = counter c of depth 1 below boards[i] (stats_values_kernel)."""
        self._launch(f"stats_values_kernel<{us}>", n, STATS_THREADS, (boards, np.uint32(n), self.ci, values))

    def stats_leaf_values(self, boards, parents, moves, n, us, values, n_boards):
        """values[c * n_boards + parents[j]] += counter c of the leaf parent moves[j] makes
        (stats_leaf_values_kernel)."""
        self._launch(f"stats_leaf_values_kernel<{us}>", n, STATS_THREADS,
                     (boards, parents, moves, np.uint64(n), self.ci, values, np.uint64(n_boards)))

    def stats_probe(self, keys, n, tt, slots, counts, values):
        """A board found in the statistics table ``tt`` takes its 13 values and count 0."""
        self._launch("stats_probe_kernel", n, 256, (keys, np.uint32(n), tt, np.uint64(slots), counts, values))

    def stats_leaf_merged(self, boards, keys, parents, moves, n, us, z, values, n_boards) -> int:
        """The statistics leaf of ``n`` moves (n < 2^32) of remaining-depth-2 boards (``n_boards`` of
        them, side ``us``), each distinct leaf parent classified once: values[c * n_boards +
        parents[i]] += counter c of the leaf parent move i makes, for every i, with the leaf parents
        grouped by their Zobrist keys (as ``leaf_merged``). Returns the number of groups. Temporaries
        outside the arena: at most 116 bytes a move at once (the key, hash table and heads as
        leaf_merged's, then the heads' 13 counters, 104)."""
        cp = self.xp
        head_of, head = self._leaf_claim(boards, keys, parents, moves, n, us, z)
        tiles = (int(n) + SCAN_TILE - 1) // SCAN_TILE
        sums = self._temp(tiles, cp.uint64, "leaf_merge_tile_sums")
        self._launch_grid("scan_tiles_u32_kernel", tiles, 256, (head, np.uint64(n), sums))
        tile_offsets = self._temp(tiles + 1, cp.uint64, "leaf_merge_tile_offsets")
        groups = self.scan(sums, tiles, tile_offsets)
        heads = self._temp(groups, cp.uint32, "leaf_merge_heads")
        self._launch_grid("leaf_merge_heads_kernel", tiles, 256, (head, np.uint64(n), tile_offsets, heads))
        del head, sums, tile_offsets
        counts = self._temp(STATS_WORDS * n, cp.uint64, "leaf_merge_counts")  # written at the heads only
        self._launch(f"stats_heads_kernel<{us}>", groups, STATS_THREADS,
                     (boards, parents, moves, heads, np.uint64(groups), self.ci, counts, np.uint64(n)))
        for c in range(STATS_WORDS):
            self._launch("upsweep_heads_kernel", n, 256, (parents, head_of, counts[c * n:(c + 1) * n], np.uint64(n),
                                                          values[c * n_boards:(c + 1) * n_boards]))
        return groups

    def stats_store(self, boards, keys, values, n, tt, slots, audit, tag):
        """Store each board's 13 finished values in the statistics table ``tt`` (stats_store_kernel)."""
        audit_ptr = audit if audit is not None else np.uint64(0)
        self._launch("stats_store_kernel", n, 256,
                     (boards, keys, values, np.uint32(n), tt, np.uint64(slots), audit_ptr, np.uint64(tag)))

    def widen(self, counts, n, values):
        self._launch("widen_kernel", n, 256, (counts, np.uint64(n), values))

    def count_hits(self, counts, values, n, hits):
        self._launch("count_hits_kernel", n, 256, (counts, values, np.uint64(n), hits))

    def part_filter(self, keys, boards, n, us, split, counts, values, own):
        """Boards (``keys``, ``boards``, side ``us`` to move) outside ``split``'s part (a
        :class:`Split`) count 0 (counts and values zeroed); ``own`` (a device uint64 word) gets the
        number of this part's boards added."""
        self._launch("part_filter_kernel", n, 256,
                     (keys, boards, np.uint64(n), np.uint32(us), np.uint64(split.salt), np.uint32(split.by_board),
                      np.uint32(split.parts), np.uint32(split.part), counts, values, own))

    def upsweep_grouped(self, parents, group_of, group_values, n, parent_values):
        self._launch("upsweep_grouped_kernel", n, 256, (parents, group_of, group_values, np.uint64(n), parent_values))

    def part_rows(self, keys, boards, n, us, split):
        """The split level's selection of a part (``merge.keep_part``): of the first ``n`` positions
        (``keys`` uint64 pairs lo, hi, ``boards``, side ``us`` to move), those in ``split``'s part (a
        :class:`Split`: ``Split.mine``). Returns (m, rows,
        group_of): m own boards; rows (uint32, m + 1) their indices in order, then the least index of
        a board of another part (n when there is none); group_of (uint32, n) each own board's rank,
        m for the others. Temporaries: 4 bytes a board, and the scan's tile sums."""
        cp = self.xp
        flag = self._temp(n, cp.uint32, "part_flag")
        first = self._temp(1, cp.uint64, "part_first_other")
        first.data.memset_async(0xFF, 8)
        self._launch("part_flags_kernel", n, 256,
                     (keys, boards, np.uint64(n), np.uint32(us), np.uint64(split.salt), np.uint32(split.by_board),
                      np.uint32(split.parts), np.uint32(split.part), flag, first))
        return self._rank_rows(flag, n, first, True, "part")

    def _rank_rows(self, flag, n: int, first_other, groups: bool, site: str):
        """The compaction of a uint32 0/1 ``flag`` of ``n`` elements (``rank_rows_kernel``): (m, rows,
        group_of or None), rows (uint32) the m flagged indices in order, then ``*first_other`` when
        it is given (m + 1 rows); group_of (uint32, n, with ``groups``) the rank of each flagged
        element, m for the rest."""
        cp = self.xp
        tiles = (int(n) + SCAN_TILE - 1) // SCAN_TILE
        sums = self._temp(tiles, cp.uint64, f"{site}_tile_sums")
        self._launch_grid("scan_tiles_u32_kernel", tiles, 256, (flag, np.uint64(n), sums))
        tile_offsets = self._temp(tiles + 1, cp.uint64, f"{site}_tile_offsets")
        m = self.scan(sums, tiles, tile_offsets)
        rows = self._temp(m + (first_other is not None), cp.uint32, f"{site}_rows")
        group_of = self._temp(n, cp.uint32, f"{site}_group_of") if groups else None
        null = np.uint64(0)
        self._launch_grid("rank_rows_kernel", tiles, 256,
                          (flag, np.uint64(n), tile_offsets, np.uint32(m), null if first_other is None else first_other,
                           rows, null if group_of is None else group_of))
        return m, rows, group_of

    def gather_rows(self, src, rows, m, words, dst):
        """dst row r = src row rows[r] for r < ``m`` (rows of ``words`` uint64; rows uint32)."""
        self._launch("gather_rows_kernel", int(m) * int(words), 256, (src, rows, np.uint64(m), np.uint32(words), dst))

    def scatter_rows(self, src, rows, m, words, dst):
        """dst row rows[r] = src row r for r < ``m`` (rows of ``words`` uint64; rows uint32, distinct)."""
        self._launch("scatter_rows_kernel", int(m) * int(words), 256, (src, rows, np.uint64(m), np.uint32(words), dst))

    def take_u32(self, table, index):
        """table[index] of two uint32 arrays (``merge.then_group``), a new array."""
        out = self._temp(index.size, self.xp.uint32, "take_u32")
        self._launch("take_u32_kernel", index.size, 256, (table, index, np.uint64(index.size), out))
        return out

    def nonzero_rows(self, a, n, stride, rows: bool = True):
        """The words a[i * stride], i < ``n``, that are not 0 (a table's occupied slots): (count,
        their indices i as uint32 in order, or None without ``rows``)."""
        if n == 0:
            return 0, self._temp(0, self.xp.uint32, "nonzero_rows") if rows else None
        flag = self._temp(n, self.xp.uint32, "nonzero_flag") if rows else None
        self.zero(self.total)
        self._launch("nonzero_kernel", n, 256, (a, np.uint64(n), np.uint64(stride), flag if rows else np.uint64(0),
                                                self.total))
        if not rows:
            return self._read_word(self.total), None
        m, found, _ = self._rank_rows(flag, n, None, False, "nonzero")
        return m, found

    def _owner_table(self, n: int, slots_per_key: int, site: str):
        """The zeroed owner table of a merge's insert (kernels/pc_kernels.cu ``merge_claim``):
        ``slots_per_key`` x n slots rounded up to a power of two (at least 1,024), uint32. Returns
        (table, mask, shift): the slot mask (uint64) and the shift that takes a 64-bit hash to a
        slot (int32), as the insert kernels take them."""
        bits = max(10, (slots_per_key * int(n) - 1).bit_length())
        owner = self._temp(1 << bits, self.xp.uint32, site)
        self.zero(owner)
        return owner, np.uint64((1 << bits) - 1), np.int32(64 - bits)

    def _leaf_claim(self, boards, keys, parents, moves, n: int, us: int, z):
        """The leaf merges' insert (``leaf_keys_claim_kernel``): the key of the child each of the
        ``n`` moves makes, grouped by equality. Returns (head_of, head), uint32 of n: each move's
        group head, and 1 where the move is one. The keys (16 bytes a move) and the owner table (4
        slots a move: a load factor of at most 1/4, few probes past the first; at 2-4 slots, as the
        BFS levels' merge, startpos perft 11's took 1.8 s, NOTES.md) go back to the pool here."""
        cp = self.xp
        child_keys = self._temp(2 * n, cp.uint64, "leaf_merge_keys")
        head_of = self._temp(n, cp.uint32, "leaf_merge_head_of")
        head = self._temp(n, cp.uint32, "leaf_merge_head")
        owner, mask, shift = self._owner_table(n, 4, "leaf_merge_owner")
        self._launch(f"leaf_keys_claim_kernel<{us}>", n, 256, (boards, keys, parents, moves, np.uint32(n), self.ci, z,
                                                                child_keys, owner, mask, shift, head_of, head))
        return head_of, head

    def merge_groups(self, keys, n):
        """Group the first ``n`` keys (uint64 pairs lo, hi) by equality. Returns (number of groups,
        plan for ``merge_gather``); groups are numbered in the order of their head boards (the board
        of each group that claimed its hash slot)."""
        cp = self.xp
        slot_of = self._temp(n, cp.uint32, "merge_slot_of")
        head = self._temp(n, cp.uint32, "merge_head")
        owner, mask, shift = self._owner_table(n, 2, "merge_owner")
        self._launch("merge_insert_kernel", n, 256, (keys, np.uint32(n), owner, mask, shift, slot_of, head))
        rank = self._temp(n + 1, cp.uint64, "merge_rank")
        groups = self.scan(head, n, rank)
        return groups, (owner, slot_of, head, rank)

    def merge_gather(self, plan, boards, keys, n, merged_boards, merged_keys):
        """The first board and key of every group into ``merged_*``; returns each board's group (uint32, n)."""
        cp = self.xp
        owner, slot_of, head, rank = plan
        group_of = self._temp(n, cp.uint32, "merge_group_of")
        self._launch("merge_heads_kernel", n, 256, (boards, keys, head, rank, slot_of, np.uint32(n), owner,
                                                    merged_boards, merged_keys))
        self._launch("merge_group_kernel", n, 256, (slot_of, owner, np.uint32(n), group_of))
        return group_of

    def leaf_merged(self, boards, keys, parents, moves, n, us, z, values) -> int:
        """The fused leaf of ``n`` moves (n < 2^32) of remaining-depth-3 boards (side ``us``), each
        distinct child counted once: values[parents[i]] += perft 2 of the child move i makes, for
        every i, with the children grouped by their Zobrist keys (``z``, from the parents' ``keys``)
        and perft 2 counted for one move a group. Returns the number of groups (distinct children).
        Temporaries outside the arena: at most 56 bytes a move at once, 40 when n is a power of two
        (the key 16, the hash table 16-32, the group head and head flag 8)."""
        cp = self.xp
        head_of, head = self._leaf_claim(boards, keys, parents, moves, n, us, z)
        # The heads in index order, compacted tile by tile (no rank array): the tiles' head counts,
        # their prefix sums (the last one is the number of groups, read here), then the compaction.
        tiles = (int(n) + SCAN_TILE - 1) // SCAN_TILE
        sums = self._temp(tiles, cp.uint64, "leaf_merge_tile_sums")
        self._launch_grid("scan_tiles_u32_kernel", tiles, 256, (head, np.uint64(n), sums))
        tile_offsets = self._temp(tiles + 1, cp.uint64, "leaf_merge_tile_offsets")
        groups = self.scan(sums, tiles, tile_offsets)
        heads = self._temp(groups, cp.uint32, "leaf_merge_heads")
        self._launch_grid("leaf_merge_heads_kernel", tiles, 256, (head, np.uint64(n), tile_offsets, heads))
        del head, sums, tile_offsets
        counts = self._temp(n, cp.uint64, "leaf_merge_counts")  # written at the heads only
        self._launch(f"leaf_heads_kernel<{us}>", groups, self.leaf_threads,
                     (boards, parents, moves, heads, np.uint64(groups), self.ci, counts))
        self._launch("upsweep_heads_kernel", n, 256, (parents, head_of, counts, np.uint64(n), values))
        return groups

    def attributes(self) -> dict[str, dict[str, int]]:
        """Registers, local memory (bytes), shared memory (bytes) and max threads of every kernel."""
        out = {}
        for name, f in self.fn.items():
            a = f.attributes
            out[name] = {"registers": a["num_regs"], "local_bytes": a["local_size_bytes"],
                         "shared_bytes": a["shared_size_bytes"], "max_threads": a["max_threads_per_block"]}
        return out
