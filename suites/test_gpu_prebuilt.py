"""Precompiled kernels (perft_core/gpu/prebuilt.py) and the driver's own data-movement kernels.

On every machine: when a cubin is accepted and when it is refused (sources, options, architecture),
the demangling of its symbols, and, where nvcc exists, a real build. On a GPU (marker ``gpu``): the
precompiled cubin and the NVRTC build count the same published numbers, with and without tables,
and the scan and the merge of equal keys agree with NumPy.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import perft_core
from oracle import tables
from perft_core.gpu import prebuilt
from perft_core.gpu.kernels import EmulatedKernels, kernel_source_dir

needs_nvcc = pytest.mark.skipif(prebuilt.find_nvcc() is None, reason="nvcc not found: no cubin can be built here")


def fake_build(tmp_path, archs=("sm_90",), names=None):
    """A copy of the kernel sources with a manifest and empty cubins, as setup.py's build leaves them."""
    src = tmp_path / "kernels"
    shutil.copytree(kernel_source_dir(), src, ignore=shutil.ignore_patterns("*.cubin", "*.json", "__pycache__"))
    for a in archs:
        (src / prebuilt.cubin_name(a)).write_bytes(b"")
    manifest = {"sources": prebuilt.source_digest(src), "options": list(prebuilt.OPTIONS), "archs": list(archs),
                "compiler": "test", "names": names or {n: f"_Z{n}" for n in prebuilt.KERNEL_NAMES}}
    (src / prebuilt.MANIFEST).write_text(json.dumps(manifest))
    return src


def test_find_accepts_a_cubin_built_from_these_sources(tmp_path):
    src = fake_build(tmp_path)
    path, names = prebuilt.find(src, "sm_90")
    assert path == src / "pc_kernels.sm_90.cubin"
    assert set(names) == set(prebuilt.KERNEL_NAMES) and names["upsweep_kernel"] == "_Zupsweep_kernel"


@pytest.mark.parametrize("change, reason", [
    (lambda src: (src / "pc_movegen.h").write_text((src / "pc_movegen.h").read_text() + "\n// edited\n"),
     "the kernel sources changed since the build"),
    (lambda src: (src / prebuilt.MANIFEST).unlink(), "no pc_kernels.cubin.json"),
    (lambda src: (src / "pc_kernels.sm_90.cubin").unlink(), "no cubin for sm_90"),
])
def test_find_refuses_a_stale_or_missing_cubin(tmp_path, change, reason):
    src = fake_build(tmp_path)
    change(src)
    assert reason in prebuilt.find(src, "sm_90")


def test_find_refuses_another_architecture_options_or_an_incomplete_manifest(tmp_path):
    src = fake_build(tmp_path)
    assert prebuilt.find(src, "sm_100") == "no cubin for sm_100 (built for sm_90)"
    assert "differ from the precompiled build" in prebuilt.find(src, "sm_90", ("-DPC_SLOWDOWN_PERCENT=5",))
    names = {n: "_Zx" for n in prebuilt.KERNEL_NAMES if n != "merge_group_kernel"}
    assert prebuilt.find(fake_build(tmp_path / "b", names=names), "sm_90") == "the manifest lacks merge_group_kernel"


@pytest.mark.parametrize("symbol, name", [
    ("_Z11leaf_kernelILi1ELi3EEvPK5BoardPKjPKtyPK10CastleInfoPy", "leaf_kernel<1,3>"),
    ("_Z18leaf_values_kernelILi0ELi2EEvPK5BoardPKjPKtyPK10CastleInfoPy", "leaf_values_kernel<0,2>"),
    ("_Z21scan_apply_u32_kernelPKjyPKyPy", "scan_apply_u32_kernel"),
    ("_Z1fILin3EEvv", "f<-3>"),
    ("_ZN2ns3barEv", "_ZN2ns3barEv"),  # nested names stay mangled
])
def test_demangle_gives_name_expressions(symbol, name):
    assert prebuilt.demangle(symbol) == name


@needs_nvcc
@pytest.mark.slow
def test_nvcc_build_names_every_kernel_and_is_skipped_when_up_to_date(tmp_path):
    """A real build for sm_90 (about 30 s): every kernel's symbol recorded, the cubin accepted; a second
    build of unchanged sources compiles nothing; an edited source makes the cubin stale."""
    src = tmp_path / "kernels"
    shutil.copytree(kernel_source_dir(), src, ignore=shutil.ignore_patterns("*.cubin", "*.json", "__pycache__"))
    log = []
    prebuilt.build(src, src, ["sm_90"], log=log.append)
    path, names = prebuilt.find(src, "sm_90")
    assert path.stat().st_size > 100_000
    assert {prebuilt.demangle(v) for v in names.values()} == set(prebuilt.KERNEL_NAMES)
    prebuilt.build(src, src, ["sm_90"], log=log.append)
    assert "up to date" in log[-1]
    (src / "pc_tt.h").write_text((src / "pc_tt.h").read_text() + "\n")
    assert prebuilt.find(src, "sm_90") == "the kernel sources changed since the build"


# ----- the emulated data-movement operations (the reference of the device kernels) ---------------------------

def test_emulated_merge_groups_equal_keys_in_head_order():
    k = EmulatedKernels()
    keys = np.array([[5, 1], [7, 2], [5, 1], [5, 9], [7, 2]], dtype=np.uint64).reshape(-1)
    boards = np.arange(25, dtype=np.uint64)
    groups, plan = k.merge_groups(keys, 5)
    assert groups == 3
    ub, uk = np.empty(15, dtype=np.uint64), np.empty(6, dtype=np.uint64)
    group_of = k.merge_gather(plan, boards, keys, 5, ub, uk)
    assert list(group_of) == [0, 1, 0, 2, 1]
    assert uk.reshape(3, 2).tolist() == [[5, 1], [7, 2], [5, 9]]
    assert ub.reshape(3, 5)[:, 0].tolist() == [0, 5, 15]  # the first board of each group


# ----- on the GPU -------------------------------------------------------------------------------------------

def _rows(max_nodes: int):
    """Every 4th of the deepest rows within ``max_nodes``, and every CPW row among them."""
    rows = tables.deepest_rows(max_nodes)
    return [r for i, r in enumerate(rows) if i % 4 == 0 or r.suite == "cpw"]


def test_the_gpu_row_selection_holds_every_cpw_row():
    """The docstring below promises all CPW rows: a suite name that matches none would keep only a quarter."""
    chosen = {r.test_id for r in _rows(2_000_000)}
    cpw = [r.test_id for r in tables.deepest_rows(2_000_000) if r.suite == "cpw"]
    assert cpw and set(cpw) <= chosen


@pytest.mark.gpu
def test_precompiled_and_nvrtc_kernels_count_the_published_numbers():
    """Both builds, with and without tables, on every 4th table row up to 2M nodes and all CPW rows:
    each count equals the published one (so the two builds agree)."""
    from perft_core.gpu.driver import BfsDriver
    from perft_core.gpu.kernels import CupyKernels
    from perft_core.gpu.ttdriver import TTBfsDriver

    auto = CupyKernels()
    if auto.build != "cubin":
        pytest.skip(f"no precompiled kernels for this device: {auto.build_reason} (build with nvcc on PATH)")
    nvrtc = CupyKernels(build="nvrtc")
    assert nvrtc.build == "nvrtc"
    rows = _rows(2_000_000)
    bad = []
    for k in (auto, nvrtc):
        for drv in (BfsDriver(k, memory_bytes=1 << 30), TTBfsDriver(k, memory_bytes=1 << 30, tt_bytes=256 << 20)):
            for row in rows:
                pos = perft_core.Position.from_fen(row.fen, chess960=row.chess960 or None)
                got = drv.perft(pos, row.depth)
                if got != row.nodes:
                    bad.append((k.build, type(drv).__name__, row.test_id, row.depth, got, row.nodes))
    assert not bad, bad[:10]


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 1, 2047, 2048, 2049, 5_000_001])
def test_device_scan_matches_numpy(n):
    import cupy as cp

    from perft_core.gpu.kernels import CupyKernels

    k = CupyKernels()
    rng = np.random.default_rng(n)
    host = rng.integers(0, 300, n, dtype=np.uint32)
    offsets = cp.full(n + 1, 12345, dtype=cp.uint64)
    total = k.scan(cp.asarray(host), n, offsets)
    want = np.concatenate([[0], np.cumsum(host, dtype=np.uint64)])
    assert total == int(want[-1])
    assert np.array_equal(offsets.get(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("n, distinct", [(1, 1), (1000, 7), (300_000, 100_000), (300_000, 300_000)])
def test_device_merge_matches_numpy(n, distinct):
    import cupy as cp

    from perft_core.gpu.kernels import CupyKernels

    k = CupyKernels()
    rng = np.random.default_rng(n + distinct)
    table = rng.integers(0, 2**63, (distinct, 2), dtype=np.uint64)
    table[: distinct // 2, 0] = table[0, 0]  # equal low words, different high words: separate groups
    pick = rng.integers(0, distinct, n)
    pick[:distinct] = np.arange(distinct)
    keys = table[pick].reshape(-1)
    boards = rng.integers(0, 2**63, n * 5, dtype=np.uint64)
    groups, plan = k.merge_groups(cp.asarray(keys), n)
    assert groups == distinct
    ub, uk = cp.empty(groups * 5, dtype=cp.uint64), cp.empty(groups * 2, dtype=cp.uint64)
    group_of = k.merge_gather(plan, cp.asarray(boards), cp.asarray(keys), n, ub, uk).get()
    uk, ub = uk.get().reshape(-1, 2), ub.get().reshape(-1, 5)
    assert np.array_equal(uk[group_of], keys.reshape(-1, 2))  # every board's group has its key
    assert len({tuple(r) for r in uk}) == groups  # one group per key
    firsts = [np.flatnonzero((keys.reshape(-1, 2) == uk[g]).all(axis=1)) for g in range(min(groups, 50))]
    for g, idx in enumerate(firsts):  # the group's board is one of the boards with that key
        assert any(np.array_equal(ub[g], boards.reshape(-1, 5)[i]) for i in idx)


def _part_keys(rng, n: int, parts: int, own: str) -> np.ndarray:
    """n random keys (flat lo, hi), all in part 0 of ``parts`` (own "all"), none (own "none") or mixed."""
    keys = rng.integers(0, 2**64 - 1, (n, 2), dtype=np.uint64, endpoint=True)
    if own == "all":
        keys[:, 1] &= np.uint64((1 << 32) - 1)  # top word 0: part 0 of any number of parts
    elif own == "none":
        keys[:, 1] |= np.uint64(0xFFFFFFFF << 32)  # top word all ones: the last part
    return keys.reshape(-1)


def _part_boards(rng, n: int, parts: int, own: str, us: int, salt: int) -> np.ndarray:
    """n random boards (flat, 5 words each) whose board cut (kernels.board_part, side ``us`` to move,
    ``salt``) puts all in part 0 of ``parts`` (own "all"), none (own "none": all in the last part)
    or mixed."""
    from perft_core.gpu.kernels import board_part

    out = []
    while sum(len(b) for b in out) < n:
        b = rng.integers(0, 2**64 - 1, (max(n, 64), 5), dtype=np.uint64, endpoint=True)
        part = board_part(b, us, salt, parts)
        out.append(b if own == "mixed" else b[part == (0 if own == "all" else parts - 1)])
    return np.concatenate(out)[:n].reshape(-1)


def _part_input(rng, n: int, parts: int, own: str, cut: str):
    """(keys, boards, side to move, salt) of n positions for the part selection tests: the keys
    decide the parts by the key cut, the boards by the board cut."""
    us, salt = int(rng.integers(0, 2)), int(rng.integers(0, 2**63))
    if cut == "key":
        return _part_keys(rng, n, parts, own), rng.integers(0, 2**63, n * 5, dtype=np.uint64), us, salt
    return _part_keys(rng, n, parts, "mixed"), _part_boards(rng, n, parts, own, us, salt), us, salt


@pytest.mark.gpu
@pytest.mark.parametrize("cut", ["board", "key"])
@pytest.mark.parametrize("n, parts, own", [(1, 2, "mixed"), (1, 2, "none"), (2047, 4, "mixed"), (2048, 3, "mixed"),
                                           (2049, 4, "all"), (2049, 4, "none"), (300_001, 4, "mixed")])
def test_device_part_selection_and_gathers_match_the_emulated_device(n, parts, own, cut):
    """The precompiled kernels that replaced CuPy's array operations (part_rows, gather_rows,
    scatter_rows, take_u32, nonzero_rows) give the emulated device's NumPy results, over one tile,
    tile edges and many tiles, with every board, none or some in the part, by either cut (the
    device's board_part against NumPy's)."""
    import cupy as cp

    from perft_core.gpu.kernels import CupyKernels, Split
    from perft_core.hostbatch import WORDS

    k, e = CupyKernels(), EmulatedKernels()
    rng = np.random.default_rng(n + parts)
    keys, boards, us, salt = _part_input(rng, n, parts, own, cut)
    for part in (0, parts - 1):
        split = Split(parts, part, cut, salt)
        m, rows, group_of = k.part_rows(cp.asarray(keys), cp.asarray(boards), n, us, split)
        want_m, want_rows, want_groups = e.part_rows(keys, boards, n, us, split)
        assert m == (n if own == "all" and part == 0 else 0 if own == "none" and part == 0 else m)
        assert m == want_m
        assert np.array_equal(rows.get()[:m + (m < n)], want_rows[:m + (m < n)])
        assert np.array_equal(group_of.get(), want_groups)
        if m < n:
            kept = cp.empty((m + 1) * WORDS, dtype=cp.uint64)
            k.gather_rows(cp.asarray(boards), rows, m + 1, WORDS, kept)
            assert np.array_equal(kept.get().reshape(-1, WORDS), boards.reshape(-1, WORDS)[want_rows])
    table = rng.integers(0, 1000, 5000, dtype=np.uint32)
    index = rng.integers(0, 5000, n, dtype=np.uint32)
    assert np.array_equal(k.take_u32(cp.asarray(table), cp.asarray(index)).get(), table[index])
    entries = np.where(rng.random(n * 3) < 0.3, rng.integers(1, 2**63, n * 3, dtype=np.uint64), np.uint64(0))
    for stride in (1, 3):
        count, found = k.nonzero_rows(cp.asarray(entries[1:]), n, stride)
        want_count, want_found = e.nonzero_rows(entries[1:], n, stride)
        assert count == want_count == k.nonzero_rows(cp.asarray(entries[1:]), n, stride, rows=False)[0]
        assert np.array_equal(found.get(), want_found)
    dst, want = cp.zeros(n * 3, dtype=cp.uint64), np.zeros(n * 3, dtype=np.uint64)
    slots = rng.permutation(n)[:max(1, n // 2)].astype(np.uint32)
    src = rng.integers(0, 2**63, len(slots) * 3, dtype=np.uint64)
    k.scatter_rows(cp.asarray(src), cp.asarray(slots), len(slots), 3, dst)
    e.scatter_rows(src, slots, len(slots), 3, want)
    assert np.array_equal(dst.get(), want)


# ----- CupyKernels' launch glue, on NumPy stand-ins for the device kernels ------------------------------------
# Each stand-in follows its kernel's signature in kernels/pc_kernels.cu (argument order and meaning), run
# serially over the grid: a wrong argument order or size in CupyKernels' scan and merge fails here, on
# every machine, before a GPU sees it.

class FakeDeviceArray(np.ndarray):
    def get(self):
        return np.asarray(self).copy()

    @property
    def data(self):
        arr = self

        class Ptr:
            ptr = np.asarray(arr).ctypes.data  # a host address: the fake runtime's copies are memmove

            def memset_async(self, value, nbytes):
                np.asarray(arr).view(np.uint8)[:nbytes] = value

        return Ptr()


def fake_cupy_kernels(order_seed: int = 0):
    import ctypes
    import types

    from perft_core.gpu.kernels import SCAN_TILE, CupyKernels, Split

    def empty(n, dtype):
        return np.empty(n, dtype=dtype).view(FakeDeviceArray)

    def null(p):
        return None if isinstance(p, np.integer) else p

    def scan_tiles(grid, block, args):
        values, n, sums = args
        for b in range(grid[0]):
            sums[b] = values[b * SCAN_TILE:min(int(n), (b + 1) * SCAN_TILE)].sum(dtype=np.uint64)

    def scan_apply(grid, block, args):
        values, n, tile_offsets, out = args
        tile_offsets = null(tile_offsets)
        out[0] = 0
        for b in range(grid[0]):
            lo, hi = b * SCAN_TILE, min(int(n), (b + 1) * SCAN_TILE)
            base = np.uint64(0) if tile_offsets is None else tile_offsets[b]
            out[lo + 1:hi + 1] = base + np.cumsum(values[lo:hi], dtype=np.uint64)

    def merge_insert(grid, block, args):  # threads in a random order: any may win a slot's CAS
        keys, n, owner, mask, shift, slot_of, head = args
        for i in np.random.default_rng(order_seed).permutation(int(n)):
            lo, hi = int(keys[2 * i]), int(keys[2 * i + 1])
            s = ((lo * 0x9E3779B97F4A7C15) & (2**64 - 1)) >> int(shift)
            while True:
                if owner[s] == 0:
                    owner[s], slot_of[i], head[i] = i + 1, s, 1
                    break
                j = int(owner[s]) - 1
                if int(keys[2 * j]) == lo and int(keys[2 * j + 1]) == hi:
                    slot_of[i], head[i] = s, 0
                    break
                s = (s + 1) & int(mask)

    def leaf_keys_claim(grid, block, args):  # the child keys, then as merge_insert recording each group head
        boards, keys, parents, moves, n, ci, z, child_keys, owner, mask, shift, head_of, head = args
        c = parents[:int(n)].astype(np.uint64) // 3 + moves[:int(n)]  # a stand-in key: the child is p // 3 + m
        child_keys[0:2 * int(n):2], child_keys[1:2 * int(n):2] = c * 7919, c
        slot_of = np.empty(int(n), dtype=np.uint32)
        merge_insert(grid, block, (child_keys, n, owner, mask, shift, slot_of, head))
        head_of[:int(n)] = owner[slot_of] - 1

    def leaf_merge_heads(grid, block, args):  # each tile writes its heads from the tile's offset
        head, n, tile_offsets, heads = args
        for b in range(grid[0]):
            idx = b * SCAN_TILE + np.flatnonzero(head[b * SCAN_TILE:min(int(n), (b + 1) * SCAN_TILE)])
            heads[int(tile_offsets[b]):int(tile_offsets[b]) + len(idx)] = idx

    def leaf_heads(grid, block, args):  # a stand-in perft 2 of the head's child: 1000 + its key
        boards, parents, moves, heads, n, ci, values = args
        h = heads[:int(n)]
        values[h] = 1000 + parents[h].astype(np.uint64) // 3 + moves[h]

    def upsweep_heads(grid, block, args):
        parents, head_of, values, n, parent_values = args
        np.add.at(parent_values, parents[:int(n)], values[head_of[:int(n)]])

    def merge_heads(grid, block, args):
        boards, keys, head, rank, slot_of, n, group_of_slot, merged_boards, merged_keys = args
        for i in range(int(n)):
            if head[i]:
                g = int(rank[i])
                merged_boards[5 * g:5 * g + 5] = boards[5 * i:5 * i + 5]
                merged_keys[2 * g:2 * g + 2] = keys[2 * i:2 * i + 2]
                group_of_slot[slot_of[i]] = g

    def merge_group(grid, block, args):
        slot_of, group_of_slot, n, group_of = args
        group_of[:int(n)] = group_of_slot[slot_of[:int(n)]]

    def part_flags(grid, block, args):
        keys, boards, n, us, salt, cut, parts, part, flag, first_other = args
        n = int(n)
        split = Split(int(parts), int(part), "board" if int(cut) else "key", int(salt))
        mine = split.mine(np.asarray(keys)[:2 * n].reshape(n, 2), np.asarray(boards)[:5 * n], int(us))
        flag[:int(n)] = mine
        if not mine.all():
            first_other[0] = min(int(first_other[0]), int(np.flatnonzero(~mine)[0]))

    def rank_rows(grid, block, args):  # each tile ranks its flagged elements from the tile's offset
        flag, n, tile_offsets, other, first_other, rows, group_of = args
        tile_offsets, first_other, group_of = null(tile_offsets), null(first_other), null(group_of)
        for b in range(grid[0]):
            lo = b * SCAN_TILE
            idx = lo + np.flatnonzero(flag[lo:min(int(n), lo + SCAN_TILE)])
            at = 0 if tile_offsets is None else int(tile_offsets[b])
            rows[at:at + len(idx)] = idx
            if group_of is not None:
                group_of[lo:min(int(n), lo + SCAN_TILE)] = other
                group_of[idx] = np.arange(at, at + len(idx))
        if first_other is not None:
            rows[int(other)] = first_other[0]

    def gather_rows(grid, block, args):
        src, rows, m, words, dst = args
        EmulatedKernels().gather_rows(np.asarray(src), np.asarray(rows), int(m), int(words), dst)

    def take_u32(grid, block, args):
        table, index, n, out = args
        out[:int(n)] = table[index[:int(n)]]

    def nonzero(grid, block, args):
        a, n, stride, flag, total = args
        found = np.asarray(a)[:int(n) * int(stride):int(stride)] != 0
        if null(flag) is not None:
            flag[:int(n)] = found
        total[0] += int(found.sum())

    runtime = types.SimpleNamespace(memcpyDeviceToHost=2, streamSynchronize=lambda stream: None,
                                    memcpyAsync=lambda dst, src, size, kind, stream: ctypes.memmove(dst, src, size))
    k = object.__new__(CupyKernels)
    k.xp = types.SimpleNamespace(empty=empty, uint32=np.uint32, uint64=np.uint64,
                                 cuda=types.SimpleNamespace(Event=lambda: types.SimpleNamespace(record=lambda: None),
                                                            runtime=runtime,
                                                            get_current_stream=lambda: types.SimpleNamespace(ptr=0)))
    k._events, k._spare_events = [], []
    k._pinned = np.zeros(1 << 12, dtype=np.uint8)  # the staging memory (page-locked on a GPU)
    k.gen_error = np.zeros(1, dtype=np.uint64).view(FakeDeviceArray)  # gen_kernel's report word
    k.fn = {"scan_tiles_u32_kernel": scan_tiles, "scan_tiles_u64_kernel": scan_tiles,
            "scan_apply_u32_kernel": scan_apply, "scan_apply_u64_kernel": scan_apply,
            "merge_insert_kernel": merge_insert, "merge_heads_kernel": merge_heads, "merge_group_kernel": merge_group,
            "leaf_keys_claim_kernel<0>": leaf_keys_claim, "leaf_merge_heads_kernel": leaf_merge_heads,
            "leaf_heads_kernel<0>": leaf_heads,
            "upsweep_heads_kernel": upsweep_heads, "part_flags_kernel": part_flags, "rank_rows_kernel": rank_rows,
            "gather_rows_kernel": gather_rows, "take_u32_kernel": take_u32, "nonzero_kernel": nonzero}
    k.total = np.zeros(1, dtype=np.uint64).view(FakeDeviceArray)
    k.gen_threads = k.leaf_threads = 128
    k.ci = None
    return k


@pytest.mark.parametrize("seed,n", [(0, 1), (1, 700), (2, 5000)])  # tiles of the compaction: 1, 1, 3
def test_cupy_leaf_merge_glue_counts_each_distinct_child_once(seed, n):
    """CupyKernels.leaf_merged on stand-in kernels (a child's key and count from its parent and
    move): every move adds its child's count to its parent, the count is made once a distinct
    child (the heads), whichever move of a group wins the claim, across tiles of the compaction."""
    k = fake_cupy_kernels(seed)
    rng = np.random.default_rng(seed)
    parents = np.sort(rng.integers(0, max(1, n // 4), n)).astype(np.uint32).view(FakeDeviceArray)
    moves = rng.integers(0, 5, n).astype(np.uint16).view(FakeDeviceArray)
    values = np.zeros(max(1, n // 4), dtype=np.uint64).view(FakeDeviceArray)
    groups = k.leaf_merged(None, None, parents, moves, n, 0, None, values)
    child = np.asarray(parents).astype(np.uint64) // 3 + np.asarray(moves)
    assert groups == len(np.unique(child))
    want = np.zeros(len(values), dtype=np.uint64)
    np.add.at(want, np.asarray(parents), 1000 + child)
    assert np.array_equal(np.asarray(values), want)


@pytest.mark.parametrize("cut", ["board", "key"])
@pytest.mark.parametrize("n, own", [(1, "mixed"), (1, "none"), (700, "mixed"), (5000, "mixed"), (5000, "all"),
                                    (5000, "none")])
def test_cupy_part_selection_and_gather_glue_match_the_emulated_device(n, own, cut):
    """CupyKernels.part_rows, gather_rows, take_u32 and nonzero_rows on stand-in kernels (over 1-3
    tiles of the compaction) give the emulated device's results: the glue that replaced CuPy's
    array operations (merge.keep_part, then_group, the tables' occupancy, table images)."""
    from perft_core.gpu.kernels import Split

    k, e = fake_cupy_kernels(), EmulatedKernels()
    rng = np.random.default_rng(n)
    keys, boards, us, salt = _part_input(rng, n, 4, own, cut)
    for part in (0, 3):
        split = Split(4, part, cut, salt)
        m, rows, group_of = k.part_rows(keys.copy().view(FakeDeviceArray), boards.copy().view(FakeDeviceArray), n, us,
                                        split)
        want = e.part_rows(keys, boards, n, us, split)
        assert m == (n if own == "all" and part == 0 else 0 if own == "none" and part == 0 else m)
        assert m == want[0] and np.array_equal(np.asarray(group_of), want[2])
        assert np.array_equal(np.asarray(rows)[:m + (m < n)], want[1][:m + (m < n)])
        if m < n:
            kept = np.empty((m + 1) * 5, dtype=np.uint64)
            k.gather_rows(boards, rows, m + 1, 5, kept)
            assert np.array_equal(kept.reshape(-1, 5), boards.reshape(-1, 5)[want[1]])
    index = rng.integers(0, 40, n).astype(np.uint32)
    table = rng.integers(0, 9, 40).astype(np.uint32)
    assert np.array_equal(np.asarray(k.take_u32(table, index.view(FakeDeviceArray))), table[index])
    entries = np.where(rng.random(3 * n) < 0.3, np.uint64(5), np.uint64(0))
    got, want = k.nonzero_rows(entries[1:], n, 3), e.nonzero_rows(entries[1:], n, 3)
    assert got[0] == want[0] == k.nonzero_rows(entries[1:], n, 3, rows=False)[0]
    assert np.array_equal(np.asarray(got[1]), want[1])


@pytest.mark.parametrize("n", [0, 1, 2048, 2049, 2048 * 2048 + 3])  # one tile, two, three levels of tiles
def test_cupy_scan_glue_recurses_over_tiles(n):
    k = fake_cupy_kernels()
    values = np.random.default_rng(n).integers(0, 300, n, dtype=np.uint32).view(FakeDeviceArray)
    offsets = np.full(n + 1, 7, dtype=np.uint64).view(FakeDeviceArray)
    total = k.scan(values, n, offsets)
    want = np.concatenate([[0], np.cumsum(values, dtype=np.uint64)]).astype(np.uint64)
    assert total == int(want[-1]) and np.array_equal(np.asarray(offsets), want)


def test_cupy_read_glue_raises_the_generate_kernels_report():
    """Every read brings gen_kernel's error word back (kernels/pc_kernels.cu: bit 63 | board << 20 |
    generated << 10 | reserved): a non-zero word raises GeneratorMismatch with the three numbers
    decoded, and is cleared, so the next count reads clean."""
    from perft_core.errors import GeneratorMismatch

    k = fake_cupy_kernels()
    values = np.arange(10, dtype=np.uint32).view(FakeDeviceArray)
    offsets = np.zeros(11, dtype=np.uint64).view(FakeDeviceArray)
    assert k.scan(values, 10, offsets) == 45
    k.gen_error[0] = (1 << 63) | (123456 << 20) | (31 << 10) | 30
    with pytest.raises(GeneratorMismatch, match="board 123456 of a BFS level generates 31 moves where its count "
                                                "promised 30") as caught:
        k.scan(values, 10, offsets)
    assert (caught.value.board, caught.value.generated, caught.value.reserved) == (123456, 31, 30)
    assert int(k.gen_error[0]) == 0 and k.scan(values, 10, offsets) == 45
    k.gen_error[0] = (1 << 63) | (7 << 20) | (0 << 10) | 20
    with pytest.raises(GeneratorMismatch, match="generates 0 moves where its count promised 20"):
        k.read(offsets)


@pytest.mark.parametrize("seed", range(3))
def test_cupy_merge_glue_groups_equal_keys_like_the_emulated_device(seed):
    k = fake_cupy_kernels(seed)
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 2**63, (40, 2), dtype=np.uint64)
    table[:10, 0] = table[0, 0]  # equal low words: still different keys
    keys = table[rng.integers(0, 40, 500)].reshape(-1)
    boards = rng.integers(0, 2**63, 2500, dtype=np.uint64)
    groups, plan = k.merge_groups(keys.view(FakeDeviceArray), 500)
    want, _ = EmulatedKernels().merge_groups(keys, 500)
    assert groups == want == len({tuple(r) for r in keys.reshape(-1, 2)})
    ub, uk = np.empty(groups * 5, dtype=np.uint64), np.empty(groups * 2, dtype=np.uint64)
    group_of = np.asarray(k.merge_gather(plan, boards, keys, 500, ub, uk))
    assert np.array_equal(uk.reshape(-1, 2)[group_of], keys.reshape(-1, 2))
    for g in range(groups):  # each group's board is a board of that key
        idx = np.flatnonzero((keys.reshape(-1, 2) == uk.reshape(-1, 2)[g]).all(axis=1))
        assert any(np.array_equal(ub.reshape(-1, 5)[g], boards.reshape(-1, 5)[i]) for i in idx)
