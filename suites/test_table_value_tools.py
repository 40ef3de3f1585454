"""The A/B tools of the table plan (ci/table_value/): the arm a process plans with, and the paired
summary of a call (NOTES.md "Session 18"). Benchmark tools, but their answer decides a rule, so a
tool that put every worker in one arm, or told the arms apart wrongly, would decide it wrongly."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "ci" / "table_value"
STORE = ROOT / "ci" / "stores" / "perft13-h200x4-s17.sqlite"

# The distinct positions per ply that size perft 13's tables at split 3 in four parts (A083276,
# plies 10..6), and a budget of about one H200's table memory.
PLAN = ("from perft_core.gpu import tables as T; import json; "
        "d = {3: 85375278064 / 4, 4: 9183421888, 5: 988187354, 6: 96400068, 7: 9417681}; "
        "print(json.dumps(T.plan_slots(d, 4.53e9, False, 10.0, 0.25, 3)))")


def _python(code: str, device: str | None, **env) -> subprocess.CompletedProcess:
    """``python -c code`` with the tools' sitecustomize.py on its path and perft_core as installed
    (run from the tools' folder: the checkout's own perft_core, which may hold no built extension,
    is not on the path), ``CUDA_VISIBLE_DEVICES`` = ``device`` and the experiment's ``env``."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("PERFT_EXPERIMENT") and k not in ("CUDA_VISIBLE_DEVICES", "PYTHONPATH")}
    e["PYTHONPATH"] = str(TOOLS)
    if device is not None:
        e["CUDA_VISIBLE_DEVICES"] = device
    e.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=e, cwd=TOOLS, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


def _plan(device: str | None, **env) -> dict[int, int]:
    out = _python(PLAN, device, **env)
    return {int(r): s for r, s in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def test_only_the_listed_devices_plan_with_the_arm():
    shipped = _plan(None)
    arm = {"PERFT_EXPERIMENT_SLOTS_PER_POSITION": "1", "PERFT_EXPERIMENT_ARM_DEVICES": "2,3"}
    in_arm = _plan("2,3,0,1", **arm)
    out_of_arm = _plan("1,2,3,0", **arm)  # device 2 is listed, but it is not this worker's (the first)
    assert out_of_arm == shipped
    assert in_arm != shipped
    # the arm's bound: no table above the lowest gets more than one slot a position of its ply
    assert in_arm[5] <= 988187354 < shipped[5]
    assert in_arm[4] > shipped[4]  # what the upper tables gave up went where the plan values it
    assert sum(in_arm.values()) == pytest.approx(sum(shipped.values()), rel=1e-6)


def test_without_listed_devices_every_process_is_in_the_arm():
    arm = _plan("0", PERFT_EXPERIMENT_SLOTS_PER_POSITION="1")
    assert arm == _plan("3", PERFT_EXPERIMENT_SLOTS_PER_POSITION="1") != _plan("0")


DRIVER = ("from perft_core.gpu.kernels import EmulatedKernels; from perft_core.gpu.ttdriver import TTBfsDriver; "
          "print(TTBfsDriver(EmulatedKernels(), memory_bytes=1 << 20, tt_bytes=1 << 16).part_compact)")


@pytest.mark.parametrize("device,setting,want", [("2,3,0,1", "0", "False"), ("0,1,2,3", "0", "True"),
                                                 ("3", "0", "False"), (None, None, "True")])
def test_part_compact_is_set_in_the_arm_s_drivers_only(device, setting, want):
    """part_compact is on by default (session 19); an arm with PERFT_EXPERIMENT_PART_COMPACT=0 turns
    it off in its own drivers only, and says so in one whole line."""
    env = {} if setting is None else dict(PERFT_EXPERIMENT_PART_COMPACT=setting, PERFT_EXPERIMENT_ARM_DEVICES="2,3")
    out = _python(DRIVER, device, **env)
    assert out.stdout.strip() == want
    assert ("arm B: part_compact False\n" in out.stderr) == (want == "False")


def _summary(session: int, log: str | None = None, tmp: Path | None = None) -> dict:
    cmd = [sys.executable, str(TOOLS / "paired_summary.py"), str(STORE), "--session", str(session)]
    if log is not None:
        (tmp / "err.txt").write_text(log)
        cmd += ["--log", str(tmp / "err.txt")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_the_arms_said_in_the_log_outrank_the_slots(tmp_path):
    """An A/B whose arms plan the same slots (part_compact) is told apart by the workers' own lines."""
    import sqlite3

    con = sqlite3.connect(f"file:{STORE}?mode=ro", uri=True)
    workers = sorted(w for (w,) in con.execute("SELECT DISTINCT worker FROM tables WHERE session = 3"))
    con.close()
    assert len(workers) == 4
    log = "\n".join([f"[table_value] worker {w} pid 1 device {i} arm {'B' if i % 2 else 'A'}: part_compact x"
                      for i, w in enumerate(workers)] + ["perft deep: something else", "[table_value] pid 2 arm B: x"])
    got = _summary(3, log, tmp_path)
    assert sorted(p["arms"][0] for p in got["per_part"].values()) == ["A", "A", "B", "B"]
    assert set(got["tables"]) == {"A", "B"}


def test_worker_lines_that_ran_together_keep_each_worker_s_arm():
    """Two workers' lines written into one pipe at once shared a line in session 19's call A; each
    worker keeps its own arm (a greedy match gave the first worker the second's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("paired_summary", TOOLS / "paired_summary.py")
    paired_summary = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(paired_summary)
    text = ("[table_value] worker tcp://127.0.0.1:37069 pid 1127 device 2,3,0,1 arm B: part_compact True"
            "[table_value] worker tcp://127.0.0.1:36373 pid 1122 device 1,2,3,0 arm A: part_compact False\n"
            "[table_value] worker tcp://127.0.0.1:43211 pid 1131 device 3,0,1,2 arm B: part_compact True\n")
    assert paired_summary.arms_from_log(text) == {"tcp://127.0.0.1:37069": "B", "tcp://127.0.0.1:36373": "A",
                                                  "tcp://127.0.0.1:43211": "B"}


def test_the_paired_summary_tells_the_arms_apart_from_the_tables():
    """Session 18's three calls ran the shipped plan on two GPUs and an arm on the other two; the
    sessions before ran the shipped plan everywhere."""
    for session in (4, 5, 6):
        got = _summary(session)
        arms = [p["arms"] for p in got["per_part"].values()]
        assert sorted(arms) == [["A"], ["A"], ["B"], ["B"]], (session, arms)
        assert got["units_every_part"] > 0
        assert set(got["tables"]) == {"A", "B"}
        assert got["tables"]["B"]["5"]["slots"] < got["tables"]["A"]["5"]["slots"]
    before = _summary(3)
    assert [p["arms"] for p in before["per_part"].values()] == [["A"]] * 4


def test_the_paired_summary_sums_the_units_every_part_finished():
    import sqlite3

    got = _summary(6)
    con = sqlite3.connect(f"file:{STORE}?mode=ro", uri=True)
    start, end = con.execute("SELECT started, ended FROM sessions WHERE id = 6").fetchone()
    rows = con.execute("SELECT unit, part, seconds FROM units WHERE count IS NOT NULL AND finished BETWEEN ? AND ?",
                       (start, end)).fetchall()
    con.close()
    parts_of: dict[int, dict[int, float]] = {}
    for unit, part, seconds in rows:
        parts_of.setdefault(unit, {})[part] = seconds
    common = [u for u, d in parts_of.items() if len(d) == 4]
    assert got["units_every_part"] == len(common) < len(parts_of)
    for p in range(4):
        assert got["per_part"][str(p)]["seconds"] == pytest.approx(sum(parts_of[u][p] for u in common), abs=0.01)
    with pytest.raises(subprocess.CalledProcessError):
        _summary(99)


# take_back.py: a device call's store into the checkout only when it carries the checkout's forward.
STATS_STORE = ROOT / "ci" / "stores" / "perft12-stats-h200x2-s16.sqlite"


def _take_back(tgz: Path, store: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOLS / "take_back.py"), str(tgz), str(store)], cwd=TOOLS, check=False,
                          capture_output=True, text=True, timeout=120)


def _rows(store: Path) -> dict:
    import sqlite3

    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return {r[0]: r[1:] for r in con.execute("SELECT idx, count, stats, checksum FROM units")}
    finally:
        con.close()


def _older(path: Path, n: int, source: Path = STATS_STORE) -> Path:
    """A copy of ``source`` (default: the committed statistics store) with its last ``n`` counted
    rows pending again (resealed: a valid store, as it was ``n`` rows earlier)."""
    import shutil

    from perft_core.deep.store import Store

    shutil.copyfile(source, path)
    with Store.open(path, repair=False) as st:
        # the columns Store's own reset clears, so the store stays valid once verified rows exist
        st.conn.execute("UPDATE units SET status = 'pending', count = NULL, seconds = NULL, finishes = 0, "
                        "stats = NULL, probes = NULL, hits = NULL, task = NULL, verify_count = NULL, "
                        "verify_stats = NULL, recount = NULL, recount_stats = NULL WHERE idx IN (SELECT idx FROM units "
                        f"WHERE count IS NOT NULL ORDER BY finished DESC, idx DESC LIMIT {n})")
        st._seal("count IS NULL")
    return path


def _archive(tmp: Path, name: str, base: Path, sql: str = "") -> Path:
    """``$OUT/NAME.tgz`` as paired_call.sh leaves it (NAME/store.sqlite): a copy of ``base`` with
    ``sql`` run on it (the committed store attached as ``c``), tarred while its connection is open,
    so that the change is in store.sqlite-wal only, as when a device's last writes were not yet
    checkpointed."""
    import shutil
    import sqlite3
    import tarfile

    folder = tmp / name
    folder.mkdir()
    shutil.copyfile(base, folder / "store.sqlite")
    con = sqlite3.connect(folder / "store.sqlite", isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(f"ATTACH DATABASE '{STATS_STORE}' AS c")
        if sql:
            con.execute(sql)
        con.execute("DETACH DATABASE c")
        tgz = tmp / f"{name}.tgz"
        with tarfile.open(tgz, "w:gz") as tar:
            tar.add(folder, arcname=name)
        assert not sql or (folder / "store.sqlite-wal").stat().st_size > 0
    finally:
        con.close()
    return tgz


def test_take_back_carries_a_store_forward_and_never_back(tmp_path):
    """A call's store that counted more rows replaces the checkout's, its write-ahead log folded in;
    one that would lose counted rows, or that changes a counted row, is refused and the checkout's
    store left as it was."""
    committed = _rows(STATS_STORE)
    full = sum(r[0] is not None for r in committed.values())
    checkout = _older(tmp_path / "checkout.sqlite", 40)
    # forward: the 40 rows counted again, in the archive's log only
    cols = ("status, count, seconds, finishes, stats, probes, hits, task, finished, checksum, verify_count, "
            "verify_seconds, verify_stats, recount, recount_seconds, recount_stats")
    restore = f"UPDATE units SET ({cols}) = (SELECT {cols} FROM c.units u WHERE u.idx = units.idx) WHERE count IS NULL"
    newer = _archive(tmp_path, "newer", checkout, restore)
    Path(str(checkout) + "-wal").write_bytes(b"a stale log of another file")
    got = _take_back(newer, checkout)
    assert got.returncode == 0, got.stderr
    assert f"{full - 40} -> {full} of 800 unit rows counted (+40)" in got.stdout
    assert _rows(checkout) == committed
    assert not Path(str(checkout) + "-wal").exists()
    kept = checkout.read_bytes()

    # back: an archive of the older store would lose 40 counted rows
    got = _take_back(_archive(tmp_path, "older", _older(tmp_path / "o.sqlite", 40)), checkout)
    assert got.returncode == 1 and "40 rows counted" in got.stderr, got.stderr
    assert checkout.read_bytes() == kept

    # a counted row changed and resealed (its checksum passes: only the comparison can tell)
    bumped = tmp_path / "bumped.sqlite"
    _older(bumped, 0)
    from perft_core.deep.store import Store
    with Store.open(bumped, repair=False) as st:
        first = "(SELECT MIN(idx) FROM units WHERE count IS NOT NULL)"
        st.conn.execute(f"UPDATE units SET count = CAST(CAST(count AS INTEGER) + 1 AS TEXT) WHERE idx = {first}")
        st._seal(f"idx = {first}")
    got = _take_back(_archive(tmp_path, "bumped", bumped), checkout)
    assert got.returncode == 1 and "1 rows counted" in got.stderr, got.stderr
    assert checkout.read_bytes() == kept

    # a new run's first call (paired_call.sh NEW=...): no store in the checkout yet, so it is created
    fresh = tmp_path / "fresh" / "new.sqlite"
    fresh.parent.mkdir()
    got = _take_back(_archive(tmp_path, "first", _older(tmp_path / "f.sqlite", 40)), fresh)
    assert got.returncode == 0, got.stderr
    assert f"0 -> {full - 40} of 800 unit rows counted (+{full - 40})" in got.stdout
    assert _rows(fresh) == _rows(tmp_path / "f.sqlite")


ONE_GPU_STORE = Path(__file__).resolve().parents[1] / "ci" / "stores" / "perft13-h200x1-s22.sqlite"


def _pair_stores(*args) -> subprocess.CompletedProcess:
    tool = Path(__file__).resolve().parents[1] / "ci" / "table_value" / "pair_stores.py"
    return subprocess.run([sys.executable, str(tool), *map(str, args)], capture_output=True, text=True,
                          timeout=60, check=False)


def test_pair_stores_compares_the_units_both_runs_counted(tmp_path):
    """pair_stores.py over two copies of the one-GPU perft 13 store: B with its last 4 counted rows
    pending again and the rest 10 % faster compares on the units both counted (B/A 0.9); a count
    that differs exits 1 and names the unit; a store of another run exits 2."""
    import shutil
    import sqlite3

    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    shutil.copyfile(ONE_GPU_STORE, a)
    shutil.copyfile(ONE_GPU_STORE, b)
    con = sqlite3.connect(b)
    with con:
        counted = [r[0] for r in con.execute("SELECT idx FROM units WHERE count IS NOT NULL ORDER BY idx")]
        con.execute(f"UPDATE units SET count = NULL WHERE idx IN ({','.join(map(str, counted[-4:]))})")
        con.execute("UPDATE units SET seconds = seconds * 0.9")
    con.close()
    got = _pair_stores(a, b)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert (out["units_a"], out["units_b"], out["units_both"]) == (len(counted), len(counted) - 4, len(counted) - 4)
    assert out["b_over_a"] == pytest.approx(0.9, abs=1e-3) and out["counts_differ"] == []
    con = sqlite3.connect(f"file:{ONE_GPU_STORE}?mode=ro", uri=True)
    most = con.execute("SELECT MAX(slots) FROM tables WHERE r = 4").fetchone()[0]  # its tables' last reading
    con.close()
    assert out["tables"]["a"]["4"]["slots"] == most > 1024  # session 26's r = 4 (75 % of the memory; 1,024 before)
    con = sqlite3.connect(b)
    with con:
        con.execute(f"UPDATE units SET count = CAST(CAST(count AS INTEGER) + 1 AS TEXT) WHERE idx = {counted[0]}")
    con.close()
    got = _pair_stores(a, b)
    assert got.returncode == 1 and json.loads(got.stdout)["counts_differ"] == [counted[0]]
    got = _pair_stores(a, STATS_STORE)
    assert got.returncode == 2 and "not the same run" in got.stderr and "depth 13 / 12" in got.stderr


def test_one_gpu_pair_script_dry_run(tmp_path, device_tree):
    """ci/table_value/one_gpu_pair.sh end to end on the emulated device (DRY=1): two new runs of the
    same count, arm B with its setting (its plan lines on stderr), the comparison over every unit,
    one archive under $OUT and nothing else; an empty B_ENV is refused before anything runs."""
    import tarfile

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "PERFT_WHEELS", "PYTHONPATH")}
    env.update(OUT=str(out_dir), DRY="1", DEPTH="5", LEFT="120", PERFT_WHEELS=str(tmp_path / "no-wheels"),
               PERFT_SITE=str(tmp_path / "site"), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    script = str(device_tree / "ci" / "table_value" / "one_gpu_pair.sh")
    got = subprocess.run(["bash", script], env=dict(env, B_ENV="PERFT_EXPERIMENT_TABLE_VALUE=3"), cwd=device_tree,
                         capture_output=True, text=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout + got.stderr
    assert [p.name for p in out_dir.iterdir()] == ["pair.tgz"]
    with tarfile.open(out_dir / "pair.tgz") as tar:
        pair = json.load(tar.extractfile("pair/pair.json"))
        b_err = tar.extractfile("pair/B.err").read().decode()
        a_err = tar.extractfile("pair/A.err").read().decode()
    assert pair["units_both"] == pair["units_a"] == pair["units_b"] == 400 and pair["counts_differ"] == []
    assert "arm B: (3.0," in b_err and "[table_value]" not in a_err

    # ST=: both arms resume copies of one store; only its pending units are compared, and arm A's
    # store (NAME/store.sqlite) is what take_back.py takes back into ST.
    with tarfile.open(out_dir / "pair.tgz") as tar:
        tar.extract("pair/store.sqlite", tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    st = _older(tmp_path / "st.sqlite", 150, tmp_path / "pair" / "store.sqlite")
    (out_dir / "pair.tgz").unlink()
    got = subprocess.run(["bash", script], env=dict(env, B_ENV="PERFT_EXPERIMENT_TABLE_VALUE=3", ST=str(st), NAME="res"),
                         cwd=device_tree, capture_output=True, text=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "store at start: 250 of 400 unit rows counted" in got.stdout
    with tarfile.open(out_dir / "res.tgz") as tar:
        pair = json.load(tar.extractfile("res/pair.json"))
        assert "arm B: (3.0," in tar.extractfile("res/B.err").read().decode()
    assert (pair["units_a"], pair["units_b"], pair["units_both"]) == (400, 400, 150) and pair["counts_differ"] == []
    back = _take_back(out_dir / "res.tgz", st)
    assert back.returncode == 0 and "250 -> 400 of 400 unit rows counted (+150)" in back.stdout, back.stdout + back.stderr
    (out_dir / "res.tgz").unlink()
    got = subprocess.run(["bash", script], env=env, cwd=device_tree, capture_output=True, text=True, timeout=60,
                         check=False)
    assert got.returncode == 2 and "B_ENV is empty" in got.stderr and not list(out_dir.iterdir())


@pytest.mark.slow  # 98 s of counting, a fifth of CI's margin under 25 minutes; its dry run stays in CI
def test_one_gpu_pair_script_links_carry_table_images(tmp_path, device_tree):
    """one_gpu_pair.sh LINKS=2 (DRY=1): each arm makes the run in its first link and resumes it in
    the second; arm A saves its tables at link 1's limit and loads them in link 2, arm B (B_ENV
    PERFT_TABLE_IMAGE_BYTES=0) never; a pair per link; the archive holds no table image.

    Startpos perft 9 split at ply 3 (8,902 units) so that neither arm can finish in a link on any
    machine (about 0.9 s a unit at the top here, some 10 minutes of counting in all) and each link
    counts many units even on a loaded one. Perft 8 split at ply 2 (the first form) finished in
    one 45-s link on a fast CI machine, so link 2 had no units to pair (CI, session 25)."""
    import tarfile

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "PERFT_WHEELS", "PYTHONPATH")}
    env.update(OUT=str(out_dir), DRY="1", DEPTH="9", SPLIT="3", LEFT="120", LINKS="2", NAME="ln",
               B_ENV="PERFT_TABLE_IMAGE_BYTES=0", PERFT_WHEELS=str(tmp_path / "no-wheels"),
               PERFT_SITE=str(tmp_path / "site"), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    script = str(device_tree / "ci" / "table_value" / "one_gpu_pair.sh")
    got = subprocess.run(["bash", script], env=env, cwd=device_tree, capture_output=True, text=True, timeout=300,
                         check=False)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "== link 1:" in got.stdout and "== link 2:" in got.stdout
    with tarfile.open(out_dir / "ln.tgz") as tar:
        names = tar.getnames()
        runs = {f: json.load(tar.extractfile(f"ln/{f}.json")) for f in ("A.1", "A.2", "B.1", "B.2")}
        links = [json.load(tar.extractfile(f"ln/pair.link{i}.json")) for i in (1, 2)]
        whole = json.load(tar.extractfile("ln/pair.json"))
        counted = {}
        for arm in "AB":
            for i in (1, 2):
                path = tmp_path / f"{arm}{i}.sqlite"
                path.write_bytes(tar.extractfile(f"ln/{arm}.link{i}.sqlite").read())
                con = sqlite3.connect(path)
                counted[arm, i] = {r[0] for r in con.execute("SELECT idx FROM units WHERE count IS NOT NULL")}
                con.close()
    assert not [n for n in names if n.endswith(".img")]
    saved = runs["A.1"]["images"]["saved"]
    assert runs["A.1"]["finished"] is False and saved and saved[0].get("bytes", 0) > 0, saved
    assert runs["B.1"]["images"]["saved"] == []
    assert any(x["loaded"] for x in runs["A.2"]["images"]["loaded"])
    assert not any(x["loaded"] for x in runs["B.2"]["images"]["loaded"])
    # each link's pair compares exactly the units that both arms counted in that link, whatever
    # their number: that depends on the two arms' speeds on this machine (none in link 2 of CI
    # session 38's run: one arm's link 1 had run far ahead, or its link 2 was left a few seconds);
    # in link 1 both start from the same largest pending units, so both count some of them
    seen = set()
    for i, link in zip((1, 2), links):
        assert link["units_both"] == len((counted["A", i] & counted["B", i]) - seen)
        assert link["counts_differ"] == []
        seen = counted["A", i] | counted["B", i]
    assert links[0]["units_both"] > 0
    assert whole["units_both"] == len(counted["A", 2] & counted["B", 2]) and whole["counts_differ"] == []


def test_unit_locality_counts_the_published_positions():
    """ci/unit_locality.py at ply 4 below startpos's 400 units: no position repeats within a unit
    two plies down (so the units' own positions sum to perft 4, 197,281), and all of them together
    are the 72,078 distinct positions at ply 4 of OEIS A083276; windows of every unit agree."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ci"))
    try:
        import unit_locality as ul
    finally:
        sys.path.pop(0)
    units = ul.unit_sets("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 2, 4)
    sets = [keys for _, keys in units]
    assert len(units) == 400 and sum(p for p, _ in units) == sum(len(s) for s in sets) == 197_281
    order = list(range(400))
    assert ul.sharing(sets, order, 400) == pytest.approx(197_281 / 72_078)
    assert ul.sharing(sets, order, 1) == 1.0
    seq = ul.greedy(sets, 0, 8)
    assert sorted(seq) == order and seq[0] == 0


def test_replay_plans_gives_the_plans_the_stores_recorded():
    """ci/table_value/replay_plans.py replays plan_slots on the CPU: at one-GPU perft 13 the shipped
    rule gives r = 4 the minimum with 60 % of an H200's memory for tables, as the committed one-GPU
    store's first session recorded (1,024 slots), and a table of its own with session 26's 75 % (the
    store's last session's budget: r = 4 within 1 % of the 656 M slots recorded); LEVEL_VALUE 3
    would give four GPUs the minimum (session 18's slower arm C); one slot a position and the
    upper-tables-at-one variant are one plan there (NOTES.md, session 23)."""
    import sqlite3

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ci" / "table_value"))
    try:
        import replay_plans
    finally:
        sys.path.pop(0)
    from perft_core.gpu.tables import MIN_SLOTS

    got = {(setting, rule): slots for setting, rule, slots in
           replay_plans.plans("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 13, 4_528_596_848)}
    con = sqlite3.connect(f"file:{ONE_GPU_STORE}?mode=ro", uri=True)
    first, last = con.execute("SELECT MIN(session), MAX(session) FROM tables").fetchone()
    recorded = {session: dict(con.execute("SELECT r, MAX(slots) FROM tables WHERE session = ? AND phase = 'count' "
                                          "AND slots IS NOT NULL GROUP BY r", (session,)).fetchall())
                for session in (first, last)}
    con.close()
    assert got[("1 GPU", "shipped")][4] == recorded[first][4] == MIN_SLOTS
    now = {(setting, rule): slots for setting, rule, slots in
           replay_plans.plans("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 13,
                              sum(recorded[last].values()))}
    assert now[("1 GPU", "shipped")][4] == pytest.approx(recorded[last][4], rel=0.01) and recorded[last][4] > 1e8
    assert got[("4 GPUs, split at r = 3", "LEVEL_VALUE 3")][4] == MIN_SLOTS
    assert got[("4 GPUs, split at r = 3", "shipped")][4] > 100 * MIN_SLOTS
    assert got[("1 GPU", "upper tables at 1")] == got[("1 GPU", "1 slot a position")]
    assert got[("1 GPU", "LEVEL_VALUE 3")][4] > 1e9
