"""Kernel sets for the BFS driver: the real GPU (CuPy + NVRTC) and the emulated device (NumPy + C++).

Both expose the same methods over arrays of their own module ``xp``:
``count`` (legal-move counts), ``scan`` (exclusive prefix sum into n + 1 offsets, returns the total),
``gen`` (moves + parent indices), ``make`` (child boards), ``leaf`` (sum of perft(levels - 1) below
each move: levels 2 = make + bulk count, 3 = the fused two-level leaf) and ``count_sum``.
Boards are five uint64 words each (pbq, nbk, rqk, black, state), ``_core.BOARD_BYTES`` bytes.
"""
from __future__ import annotations

import functools
import importlib.resources
import time
from pathlib import Path

import numpy as np

from .. import _core

BOARD_WORDS = _core.BOARD_BYTES // 8
SIDES = (0, 1)


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

    def to_device(self, host: np.ndarray):
        return np.ascontiguousarray(host)

    def synchronize(self) -> None:
        pass

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


def kernel_source_dir() -> str:
    """Directory of the kernel sources: the installed ``perft_core.kernels`` package data, or the
    source checkout's ``kernels/`` when running from a tree built with ``build_ext --inplace``."""
    try:
        return str(importlib.resources.files("perft_core.kernels"))
    except ModuleNotFoundError:
        return str(Path(__file__).resolve().parents[2] / "kernels")


@functools.cache
def _module(options: tuple[str, ...] = ()):
    """Compile kernels/pc_kernels.cu with NVRTC once per process and upload the attack tables."""
    import cupy as cp

    src_dir = kernel_source_dir()
    with open(f"{src_dir}/pc_kernels.cu") as f:
        code = f.read()
    names = [f"count_kernel<{s}>" for s in SIDES] + [f"gen_kernel<{s}>" for s in SIDES]
    names += [f"make_kernel<{s}>" for s in SIDES] + [f"count_sum_kernel<{s}>" for s in SIDES]
    names += [f"leaf_kernel<{s},{lv}>" for s in SIDES for lv in (2, 3, 4)]
    names += [f"{k}<{s}>" for k in ("keys_kernel", "count_probe_kernel", "make_key_kernel") for s in SIDES]
    names += [f"leaf_values_kernel<{s},{lv}>" for s in SIDES for lv in (2, 3)]
    names += ["upsweep_kernel", "store_kernel"]
    mod = cp.RawModule(code=code, options=("-std=c++17", f"-I{src_dir}") + tuple(options), name_expressions=names)
    blob = np.frombuffer(_core.tables_blob(), dtype=np.uint8)
    ptr = mod.get_global("g_tables_dev")
    ptr.copy_from_host(blob.ctypes.data, blob.nbytes)
    return mod, tuple(names)


class CupyKernels:
    """The real GPU: CuPy arrays and the RawModule kernels (compiled once per process, cached)."""

    name = "gpu"

    def __init__(self, options: tuple[str, ...] = (), gen_threads: int = 128, leaf_threads: int = 128,
                 leaf3: str = "list"):
        import cupy as cp

        self.xp = cp
        self.mod, self.names = _module(tuple(options))
        self.fn = {n: self.mod.get_function(n) for n in self.names}
        self.gen_threads, self.leaf_threads = gen_threads, leaf_threads
        if leaf3 not in ("list", "stream"):
            raise ValueError(f"leaf3 must be 'list' or 'stream', got {leaf3!r}")
        self.leaf3_variant = 3 if leaf3 == "list" else 4
        self.ci = None
        self.total = cp.zeros(1, dtype=cp.uint64)
        self.kernel_seconds = 0.0
        self.kernel_seconds_by_name: dict[str, float] = {}  # device time per kernel, seconds
        self._events = []

    def set_castle(self, ci: bytes) -> None:
        self.ci = self.xp.asarray(np.frombuffer(ci, dtype=np.uint8))

    def free_bytes(self) -> int:
        free, _total = self.xp.cuda.runtime.memGetInfo()
        return int(free)

    def to_device(self, host: np.ndarray):
        return self.xp.asarray(host)

    def synchronize(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()
        for name, a, b in self._events:
            dt = self.xp.cuda.get_elapsed_time(a, b) / 1e3
            self.kernel_seconds += dt
            self.kernel_seconds_by_name[name] = self.kernel_seconds_by_name.get(name, 0.0) + dt
        self._events.clear()

    def _launch(self, name, n, threads, args):
        cp = self.xp
        if n == 0:
            return
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        self.fn[name](((int(n) + threads - 1) // threads,), (threads,), args)
        end.record()
        self._events.append((name, start, end))

    def count(self, boards, n, us, counts):
        self._launch(f"count_kernel<{us}>", n, self.gen_threads, (boards, np.uint32(n), self.ci, counts))

    def scan(self, counts, n, offsets) -> int:
        cp = self.xp
        offsets[:1] = 0
        cp.cumsum(counts[:n], dtype=cp.uint64, out=offsets[1:n + 1])
        return int(offsets[n].get())

    def gen(self, boards, n, us, offsets, moves, parents):
        self._launch(f"gen_kernel<{us}>", n, self.gen_threads, (boards, np.uint32(n), self.ci, offsets, moves, parents))

    def make(self, boards, parents, moves, n, us, children):
        self._launch(f"make_kernel<{us}>", n, self.gen_threads,
                     (boards, parents, moves, np.uint64(n), self.ci, children))

    def leaf(self, boards, parents, moves, n, us, levels) -> int:
        self.total[:] = 0
        variant = self.leaf3_variant if levels == 3 else levels
        self._launch(f"leaf_kernel<{us},{variant}>", n, self.leaf_threads,
                     (boards, parents, moves, np.uint64(n), self.ci, self.total))
        return int(self.total.get()[0])

    def count_sum(self, boards, n, us) -> int:
        self.total[:] = 0
        self._launch(f"count_sum_kernel<{us}>", n, self.gen_threads, (boards, np.uint32(n), self.ci, self.total))
        return int(self.total.get()[0])

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

    def attributes(self) -> dict[str, dict[str, int]]:
        """Registers, local memory (bytes), shared memory (bytes) and max threads of every kernel."""
        out = {}
        for name, f in self.fn.items():
            a = f.attributes
            out[name] = {"registers": a["num_regs"], "local_bytes": a["local_size_bytes"],
                         "shared_bytes": a["shared_size_bytes"], "max_threads": a["max_threads_per_block"]}
        return out
