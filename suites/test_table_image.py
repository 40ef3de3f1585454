"""Tables that outlive a command (perft_core.gpu.tableimage) on the emulated device: a driver's
tables saved and loaded into another driver hit there and keep every count exact; an image of
another identity, or one whose bytes changed, loads nothing it should not; the byte budget keeps
the upper tables first; a deep run saves its tables at its time limit and loads them on resume.

Expected counts: the CPU backend (perft_core.perft) and the bundled OEIS A048987 table.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import struct

import numpy as np
import pytest

import perft_core
from oracle import tables as known
from perft_core.deep import units
from perft_core.gpu import tableimage
from perft_core.gpu.kernels import EmulatedKernels
from perft_core.gpu.ttdriver import TTBfsDriver
from perft_core.position import Position

STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
CHESS960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"
GAME = Position.from_fen(STARTPOS)
UNITS = [Position.from_fen(u.fen) for u in units.split(GAME, 6, 2)]  # 400 units of depth 4
FIRST, LATER = UNITS[:150], UNITS[150:300]


_KERNELS = {"name": "emulated"}  # the device of the test under way (the ``device`` fixture)


@pytest.fixture(autouse=True, params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """Every test on the emulated device, and with CuPy on the GPU (the copies to and from the
    device are CuPy's there)."""
    _KERNELS["name"] = request.param
    yield request.param
    _KERNELS["name"] = "emulated"


def driver(tt_bytes: int = 4 << 20, seed: int | None = None) -> TTBfsDriver:
    if _KERNELS["name"] == "gpu":
        from perft_core.gpu.kernels import CupyKernels

        kernels = CupyKernels()
    else:
        kernels = EmulatedKernels()
    return TTBfsDriver(kernels, memory_bytes=16 << 20, tt_bytes=tt_bytes, audit=True, chunk_leaf_moves=1 << 11,
                       seed=seed)


def device_hits(drv) -> int:
    return sum(row["hits"] for row in drv.depth_stats.values())


@pytest.fixture(scope="module")
def want() -> list[int]:
    return [perft_core.perft(p, 4) for p in LATER]


@pytest.fixture
def saved(tmp_path):
    """An image of a driver that counted FIRST as a run of startpos perft 6: (path, save summary)."""
    drv = driver()
    path = tmp_path / "run.img"
    drv.keep_tables("run", 6, GAME, image=path)
    drv.count_roots(FIRST, 4, GAME)
    assert drv.image_loads[0]["reason"] == "no image"
    return path, drv.save_image(path, 1 << 30)


def resume(path, **kw):
    """A new driver (another process's, as far as its tables go) counting LATER with the image."""
    drv = driver(**kw)
    drv.keep_tables("run, resumed", 6, GAME, image=path)
    return drv, drv.count_roots(LATER, 4, GAME)


def test_a_loaded_image_hits_and_every_count_and_entry_is_exact(saved, want):
    path, summary = saved
    assert summary["host_entries"] > 0 and summary["tables"] and not summary["skipped"]
    drv, got = resume(path)
    (load,) = drv.image_loads
    assert load["loaded"] and load["reason"] is None
    assert load["entries"] == {r: t["entries"] for r, t in summary["tables"].items()}
    assert load["host_entries"] == summary["host_entries"]
    assert got == want
    cold = driver()
    cold.keep_tables("run, cold", 6, GAME)
    assert cold.count_roots(LATER, 4, GAME) == want
    assert device_hits(drv) > device_hits(cold)  # the loaded entries are hit
    checked, wrong = drv.audit()  # every entry, loaded ones included (their audit records travel too)
    assert checked >= sum(load["entries"].values()) + load["host_entries"] and wrong == []


@pytest.mark.parametrize("other", ["seed", "part", "geometry", "entries", "kernels"])
def test_an_image_of_another_identity_loads_nothing(saved, want, other, monkeypatch):
    path, _ = saved
    drv = driver(seed=12345 if other == "seed" else None)
    game, roots = GAME, LATER
    if other == "part":
        drv.set_part(1, 2)
    if other == "kernels":
        real = tableimage.identity
        monkeypatch.setattr(tableimage, "identity", lambda d: real(d) | {"kernels": "0" * 64})
    if other == "geometry":
        game = Position.from_fen(CHESS960)
        roots = [game.push(m) for m in sorted(game.legal_moves())]
    drv.keep_tables("run", 6, game, image=path)
    if other == "entries":
        got = drv.count_roots(roots, 4, game, stats=True)
        assert [s.nodes for s in got] == want
    else:
        got = drv.count_roots(roots, 4, game)
        if other != "part":
            assert got == [perft_core.perft(p, 4) for p in roots]
    (load,) = drv.image_loads
    assert not load["loaded"] and load["entries"] == {} and load["host_entries"] == 0
    name = {"seed": "seed", "part": "part", "geometry": "castle info", "entries": "entry words",
            "kernels": "kernels"}[other]
    assert load["reason"].startswith(f"another {name} ")


def _corrupt(path, where: str) -> None:
    """Add one to entries' counts in the image, consistently (each check word follows, so its key
    still matches): ``where`` "record": one entry, in a record's bytes (its digest then fails);
    "resealed": every entry of the record, with the record's digest, the index and its digest
    rewritten to match."""
    header, index = tableimage.read_header(path)
    top = max(r["r"] for r in index if r["kind"] != "host")
    row = next(r for r in index if r["kind"] == "sparse" and r["r"] == top)
    raw = bytearray(path.read_bytes())
    m, w = row["entries"], header["identity"]["entry_words"]
    for i in range(m if where == "resealed" else 1):
        at = row["offset"] + 8 * m + 16 * i  # entry i's check word (after m indices)
        check, data = struct.unpack_from("<QQ", raw, at)
        struct.pack_into("<QQ", raw, at, (check ^ data) ^ (data + 1), data + 1)
    if where == "resealed":
        row["sha256"] = hashlib.sha256(raw[row["offset"]:row["offset"] + row["bytes"]]).hexdigest()
        head_len = struct.unpack_from("<Q", raw, 8)[0]
        head = bytes(raw[16:16 + head_len])
        old_tail_len = struct.unpack_from("<Q", raw, len(raw) - 48)[0]
        body = raw[:len(raw) - 48 - old_tail_len]
        tail = json.dumps(index, sort_keys=True).encode()
        raw = body + tail + struct.pack("<Q", len(tail)) + hashlib.sha256(head + tail).digest() + tableimage.END_MAGIC
    path.write_bytes(bytes(raw))
    assert w == 2


def test_a_changed_record_is_refused_and_counts_stay_exact(saved, want):
    path, _ = saved
    _corrupt(path, "record")
    drv, got = resume(path)
    (load,) = drv.image_loads
    assert not load["loaded"] and "digest differs" in load["reason"]
    assert got == want
    assert drv.audit()[1] == []


def test_the_digests_are_what_stands_between_a_changed_entry_and_a_wrong_count(saved, want):
    """The other direction: entries changed so that their keys still match, their record resealed,
    are loaded, and the counts that meet them are wrong; the audit names them. So a check of the
    bytes is needed, and the previous test shows it holds."""
    path, _ = saved
    _corrupt(path, "resealed")
    drv, got = resume(path)
    assert drv.image_loads[0]["loaded"]
    assert got != want
    assert drv.audit()[1] != []


@pytest.mark.parametrize("damage", ["truncate", "header", "magic", "length 2^63", "length 2^40", "length 2^30"])
def test_a_damaged_file_is_refused_whole(saved, want, damage):
    """A truncated image, a changed header byte, another magic, or a header length damaged to a size
    no file here has (a flipped top bit once raised OverflowError out of the load, failing the task;
    2^40 a MemoryError): nothing loaded, the counts exact."""
    path, _ = saved
    raw = bytearray(path.read_bytes())
    if damage == "truncate":
        raw = raw[:len(raw) // 2]
    elif damage == "header":
        raw[20] ^= 1
    elif damage.startswith("length"):
        raw[8:16] = (1 << int(damage.split("^")[1])).to_bytes(8, "little")
    else:
        raw[:8] = b"NOTANIMG"
    path.write_bytes(bytes(raw))
    drv, got = resume(path)
    (load,) = drv.image_loads
    assert not load["loaded"] and load["entries"] == {} and load["host_entries"] == 0
    assert got == want


def test_the_budget_keeps_the_upper_tables_first(tmp_path, monkeypatch):
    """Highest remaining depth first, chunk by chunk: a budget of the host cache and the top table
    saves those; half the next table's bytes more saves part of it (and loads exact counts); the
    host cache's bytes alone save no table."""
    monkeypatch.setattr(tableimage, "CHUNK_SLOTS", 2048)  # tables of many chunks
    later = [Position.from_fen(u.fen) for u in units.split(GAME, 7, 2)]
    drv = driver()
    drv.keep_tables("run", 7, GAME)  # units of depth 5: tables of remaining depths 3 and 4
    drv.count_roots(later[:12], 5, GAME)
    whole = drv.save_image(tmp_path / "whole.img", 1 << 30)
    assert len(whole["tables"]) >= 2 and all(t["whole"] for t in whole["tables"].values()), "needs two tables"
    top, below = sorted(whole["tables"], reverse=True)[:2]
    host = tableimage.read_header(tmp_path / "whole.img")[1][0]
    assert host["kind"] == "host"
    upper = drv.save_image(tmp_path / "upper.img", host["bytes"] + whole["tables"][top]["bytes"])
    assert list(upper["tables"]) == [top] and upper["tables"][top] == whole["tables"][top]
    assert upper["skipped"] == sorted(set(whole["tables"]) - {top}, reverse=True)
    budget = host["bytes"] + whole["tables"][top]["bytes"] + whole["tables"][below]["bytes"] // 2
    part = drv.save_image(tmp_path / "part.img", budget)
    assert part["tables"][top]["whole"] and not part["tables"][below]["whole"]
    assert 0 < part["tables"][below]["entries"] < whole["tables"][below]["entries"]
    assert sum(row["bytes"] for row in tableimage.read_header(tmp_path / "part.img")[1]) <= budget
    none = drv.save_image(tmp_path / "none.img", host["bytes"])
    assert none["tables"] == {} and none["host_entries"] == whole["host_entries"]
    resumed = driver()
    resumed.keep_tables("run, resumed", 7, GAME, image=tmp_path / "part.img")
    assert resumed.count_roots(later[12:24], 5, GAME) == [perft_core.perft(p, 5) for p in later[12:24]]
    assert resumed.image_loads[0]["loaded"] and resumed.audit()[1] == []


def test_an_image_is_loaded_into_tables_of_its_own_slots_when_they_fit(saved, want):
    path, summary = saved
    slots = {int(r): s for r, s in tableimage.read_header(path)[0]["slots"].items()}
    drv, got = resume(path, tt_bytes=8 << 20)  # planned larger here: re-planned to the image's
    assert drv.image_loads[0]["loaded"] and {r: tt.slots for r, tt in drv.tts.items()} == slots
    assert got == want and drv.audit()[1] == []
    small, got = resume(path, tt_bytes=1 << 20)  # the image's tables do not fit: its own plan, empty
    assert not small.image_loads[0]["loaded"] and "do not fit" in small.image_loads[0]["reason"]
    assert got == want


def test_an_interrupted_save_leaves_the_previous_image(saved, monkeypatch):
    path, _ = saved
    before = path.read_bytes()
    drv, _ = resume(path)

    def full_disk(arrays):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tableimage, "_sha", full_disk)
    with pytest.raises(OSError):
        drv.save_image(path, 1 << 30)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(path.name)] == [path.name]


@pytest.mark.timeout(60)  # the old code waited on the FIFO for ever: fail instead
def test_a_fifo_at_the_image_path_is_refused_not_waited_on(tmp_path):
    """An image path that is a FIFO blocked the resume's open for ever (a helper's hunt, session 33):
    refused by its kind, nothing loaded, the count exact."""
    import os

    path = tmp_path / "fifo.img"
    os.mkfifo(path)
    drv, got = resume(path)
    (load,) = drv.image_loads
    assert not load["loaded"] and "not a regular file" in load["reason"]
    assert got == [perft_core.perft(p, 4) for p in LATER]


def test_a_killed_save_s_temporary_file_is_removed_by_the_next_save_and_with_the_images(saved):
    """A worker killed while it wrote leaves IMAGE.tmpPID (its finally never ran): the next save of
    that image removes it, and images_of lists it, so the run's end removes it with the images."""
    path, _ = saved
    orphan = path.with_name(path.name + ".tmp99999")
    orphan.write_bytes(b"half an image")
    store = path.with_name("s.sqlite")
    other = tableimage.image_path(store, 0x1234, 0, 2, 3)
    other_orphan = other.with_name(other.name + ".tmp4242")
    other_orphan.write_bytes(b"x")
    assert other_orphan in tableimage.images_of(store) and other_orphan in tableimage.images_of(store, 0x1234)
    assert tableimage.images_of(store, 0x99) == []
    drv, _ = resume(path)
    drv.save_image(path, 1 << 30)
    assert not orphan.exists() and path.exists()


def test_a_save_the_disk_refuses_is_a_reason_not_a_failed_task(tmp_path, monkeypatch):
    """worker.save_tables turns an OSError of the save (a full disk, a name too long) into the
    part's summary with its reason (Dask logged the failed task's traceback on the worker), and the
    CLI's stop says that part's tables were not saved."""
    from perft_core.deep import worker

    monkeypatch.setitem(worker._tables_of, "gpu-emulated", ("run-x", 7))

    class Drv:
        part, parts = 1, 2

        def save_image(self, image, max_bytes):
            raise OSError(36, "File name too long")

    monkeypatch.setattr(worker, "get_driver", lambda backend: Drv())
    got = worker.save_tables("gpu-emulated", "run-x", 7, 1, 2, str(tmp_path / "i.img"), 1 << 20)
    assert got == {"part": 1, "saved": False, "reason": "OSError: [Errno 36] File name too long"}


@pytest.mark.parametrize("parts, workers, each", [(4, 4, 100), (8, 4, 100), (8, 2, 200), (2, 4, 200), (3, 1, 400)])
def test_the_image_budget_is_shared_by_the_parts_a_worker_can_hold(tmp_path, parts, workers, each):
    """save_table_images gives each part's save max_bytes / min(parts, workers): a worker holds one
    part's tables at a time, so with workers taking turns at more parts than there are workers only
    W images can be written, and a budget cut by P would leave (P - W) / P of it unused. On the old
    code, 8 parts on 4 workers saved within 50 of 400 bytes each."""
    from types import SimpleNamespace

    from perft_core.deep import dispatch

    class Done:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

    class Client:
        def __init__(self):
            self.asked = []

        def nthreads(self):
            return {f"tcp://w{i}": 1 for i in range(workers)}

        def submit(self, fn, backend, run_key, seed, part, parts_, image, max_bytes, **kw):
            self.asked.append((part, max_bytes, kw["workers"]))
            return Done({"part": part, "saved": True, "bytes": max_bytes})

    st = SimpleNamespace(run={"parts": parts, "part_depth": 3}, path=tmp_path / "s.sqlite")
    client = Client()
    got = dispatch.save_table_images(client, st, "gpu", "run-x", 7, 400)
    assert [a[1] for a in client.asked] == [each] * parts
    assert [a[2] for a in client.asked] == [[f"tcp://w{p % workers}"] for p in range(parts)]
    assert [g["part"] for g in got] == list(range(parts))


# ----- a deep run: saved at the time limit, loaded on resume, removed when done ------------------------

distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install 'perft-oracle[dist]')")


@pytest.mark.timeout(300)  # a lost worker would hang a gather: fail instead
def test_a_deep_run_saves_its_tables_at_the_limit_and_a_resume_loads_them(tmp_path, monkeypatch, device):
    """On a 2-worker LocalCluster of this test's own (not the module's: its workers live exactly as
    long as the three runs below)."""
    if device == "gpu":
        pytest.skip("the deep run's workers count on the emulated device (CPU CI's Dask cluster)")
    from conftest import local_cluster

    with local_cluster() as cluster:
        with distributed.Client(cluster.scheduler_address) as client:
            client.wait_for_workers(2, timeout=60)
        _deep_run_saves_and_loads(cluster, tmp_path, monkeypatch)


def _deep_run_saves_and_loads(cluster, tmp_path, monkeypatch) -> None:
    from perft_core.deep import deep_perft
    from perft_core.deep import run as run_mod
    from perft_core.deep.errors import DeepStopped

    real = run_mod.run_phase

    def stop_after_60(client, st, rows, *a, **kw):  # the count phase stops at a deadline after 60 rows
        if a[4] == "count" and len(rows) > 60:
            failed, _, _ = real(client, st, rows[:60], *a, **kw)
            return failed, len(rows) - 60, None
        return real(client, st, rows, *a, **kw)

    monkeypatch.setattr(run_mod, "run_phase", stop_after_60)
    store = tmp_path / "s.sqlite"
    with pytest.raises(DeepStopped) as stop:
        deep_perft(STARTPOS, 6, backend="gpu-emulated", tt=True, split_ply=2, scheduler=cluster.scheduler_address,
                   store=store, progress=False)
    saved = stop.value.images["saved"]
    assert sorted(s["part"] for s in saved) == [0, 1]  # two workers: two parts, one image each
    assert all(s["bytes"] > 0 and s["tables"] for s in saved)
    assert sorted(p.name for p in tableimage.images_of(store)) == sorted(p.rsplit("/", 1)[-1] for p in
                                                                          (s["path"] for s in saved))
    # The cluster's workers still hold these tables for this store; a copy (another run key) with
    # its images beside it is what another process resuming the run meets.
    moved = tmp_path / "moved.sqlite"
    shutil.copy(store, moved)
    for p in tableimage.images_of(store):
        shutil.copy(p, moved.with_name(p.name.replace(store.name, moved.name, 1)))
    cold = tmp_path / "cold.sqlite"
    shutil.copy(store, cold)
    monkeypatch.setattr(run_mod, "run_phase", real)
    res = deep_perft(resume=moved, scheduler=cluster.scheduler_address, progress=False)
    expected = next(r.nodes for r in known.load("startpos") if r.depth == 6)
    assert res.nodes == expected
    loads = [x for x in res.images["loaded"] if x["loaded"]]
    assert sorted(x["part"] for x in loads) == [0, 1]
    by_part = {s["part"]: {int(r): t["entries"] for r, t in s["tables"].items()} for s in saved}
    assert all({int(r): n for r, n in x["entries"].items()} == by_part[x["part"]] for x in loads)
    assert tableimage.images_of(moved) == []  # the run is done: its images are removed
    res_cold = deep_perft(resume=cold, scheduler=cluster.scheduler_address, progress=False)
    assert res_cold.nodes == expected and not any(x["loaded"] for x in res_cold.images["loaded"])
    assert res.tt_hits > res_cold.tt_hits  # the same 340 units counted: the loaded entries hit


def test_the_cli_says_the_tables_were_saved_for_the_resume(monkeypatch, capsys, device):
    """A stop at --max-seconds with saved images: exit 3, the stop line, then one line with the
    images' size and time (from DeepStopped.images)."""
    if device == "gpu":
        pytest.skip("a message of the CLI: no device")
    import perft_core.deep.run as run_mod
    from perft_cli import main
    from perft_core.deep.errors import DeepStopped

    def stopped(*a, **kw):
        raise DeepStopped("s.sqlite", "count", 400, 10, 10, 0.1, 6.0, {},
                          {"saved": [{"part": 0, "bytes": 2_520_375_682, "seconds": 4.6},
                                     {"part": 1, "saved": False, "reason": "no tables of the part"},
                                     {"part": 2, "saved": False, "reason": "OSError: [Errno 28] No space left"}]})

    monkeypatch.setattr(run_mod, "deep_perft", stopped)
    assert main(["deep", "startpos", "8", "--backend", "gpu-emulated", "--workers", "1", "--tt",
                 "--max-seconds", "6"]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[-3].startswith("perft deep: stopped at the time limit")
    assert err[-2] == ("perft deep: part 2's tables were not saved (OSError: [Errno 28] No space left): its resume "
                       "starts with empty tables")  # part 1 had none: not a failure, no line
    assert err[-1] == "perft deep: the tables are saved beside the store for the resume (1 image, 2.52 GB in 4.6 s)"


def test_statistics_tables_round_trip(tmp_path):
    """A statistics run's tables (8-word entries, the 13-counter host cache) saved and loaded: the
    resumed driver's statistics equal the CPU backend's, and its audit finds nothing wrong."""
    path = tmp_path / "stats.img"
    first = driver()
    first.keep_tables("run", 6, GAME, image=path)
    first.count_roots(FIRST[:60], 4, GAME, stats=True)
    saved = first.save_image(path, 1 << 30)
    assert saved["tables"] and saved["host_entries"] > 0
    drv = driver()
    drv.keep_tables("run, resumed", 6, GAME, image=path)
    got = drv.count_roots(LATER[:60], 4, GAME, stats=True)
    (load,) = drv.image_loads
    assert load["loaded"] and load["entries"] == {r: t["entries"] for r, t in saved["tables"].items()}
    assert got == [perft_core.perft_stats(p, 4) for p in LATER[:60]]
    assert drv.audit()[1] == []


@pytest.mark.timeout(120)
def test_cluster_workers_import_this_perft_core_whatever_sys_path_holds(tmp_path, monkeypatch, device):
    """The test clusters' workers import the perft_core the tests import, even when a folder
    holding another perft_core is on sys.path (as a ci/ script puts the checkout there); a process
    started with that sys.path imports the other one, and with ``no_shadowing_sys_path``'s not."""
    if device == "gpu":
        pytest.skip("about the test clusters: no device")
    import subprocess
    import sys

    from conftest import local_cluster, no_shadowing_sys_path

    fake = tmp_path / "perft_core"
    fake.mkdir()
    (fake / "__init__.py").write_text("__file__ = 'the shadow'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    which = "import sys; sys.path[:] = sys.argv[1].split('\\n'); import perft_core; print(perft_core.__file__)"

    def child() -> str:  # what a spawned process, which takes this sys.path, imports
        return subprocess.run([sys.executable, "-c", which, "\n".join(sys.path)], capture_output=True, text=True,
                              timeout=60, check=True).stdout.strip()

    assert child() == "the shadow"
    with no_shadowing_sys_path():
        assert child() == perft_core.__file__
    with local_cluster() as cluster, distributed.Client(cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=60)
        assert set(client.run(eval, "__import__('perft_core').__file__").values()) == {perft_core.__file__}


@pytest.mark.parametrize("text", ["²", "٣", "1e9", "-5"])
def test_a_byte_budget_that_is_not_ascii_digits_is_ignored(tmp_path, monkeypatch, text):
    """PERFT_TABLE_IMAGE_BYTES and PERFT_HOST_CACHE_ENTRIES take ASCII digits only: "²" passed
    str.isdigit and then raised int()'s ValueError at the stop, naming no variable; "٣" was read as
    3. Anything else is ignored, as "abc" always was (the budget from the disk, the entries from
    the memory)."""
    from perft_core.gpu import hostcache

    monkeypatch.setenv("PERFT_TABLE_IMAGE_BYTES", text)
    monkeypatch.setenv("PERFT_HOST_CACHE_ENTRIES", text)
    assert tableimage.byte_budget(tmp_path / "s.sqlite") > 1000
    assert hostcache.default_entries() >= hostcache.MIN_ENTRIES
