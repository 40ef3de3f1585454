"""``perft deep`` on a real external Dask cluster (issue 26, item 6): ``dask scheduler`` and two
``dask worker`` processes on the loopback, started here on free ports; one worker is killed in the
middle of the run. The total must be exact (OEIS A048987, the bundled startpos table) and no unit
counted twice. Every process this test starts is ended in a ``finally``; the whole test is bounded
(well under a minute on 2 cores).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import perft_core
from oracle import tables

pytestmark = pytest.mark.core
distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install 'perft-oracle[dist]')")

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
#: The folder holding the perft_core this test imports: the scheduler, the workers and the client
#: import the same one.
IMPORT_ROOT = Path(perft_core.__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def start(args: list[str], log: Path) -> subprocess.Popen:
    """A Dask process (``python -m distributed.cli.X ARGS``) in its own session, output to ``log``;
    it imports the perft_core this test imports (the installed package in CI, where the checkout
    has no built extension; the checkout where it is built in place), from outside the checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(IMPORT_ROOT), os.environ.get("PYTHONPATH", "")])}
    with log.open("w") as out:
        return subprocess.Popen([sys.executable, "-P", "-m", *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=log.parent, start_new_session=True)


def end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=10)


def counted_rows(store: Path) -> int:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM units WHERE count IS NOT NULL").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def test_an_external_cluster_survives_a_killed_worker(tmp_path):
    depth = 7
    expected = next(r.nodes for r in tables.load("startpos") if r.depth == depth)
    port = free_port()
    address = f"tcp://{LOOPBACK}:{port}"
    procs: list[subprocess.Popen] = []
    t0 = time.monotonic()
    try:
        procs.append(start(["distributed.cli.dask_scheduler", "--host", LOOPBACK, "--port", str(port),
                            "--dashboard-address", ":0"], tmp_path / "scheduler.log"))
        workers = [start(["distributed.cli.dask_worker", address, "--host", LOOPBACK, "--nthreads", "1",
                          "--no-nanny", "--dashboard-address", ":0"], tmp_path / f"worker{i}.log") for i in range(2)]
        procs += workers
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=30)
        store = tmp_path / "ext.sqlite"
        run = subprocess.Popen([sys.executable, "-P", "-m", "perft_cli", "deep", START, str(depth), "--scheduler", address,
                                "--split-ply", "3", "--store", str(store), "--json"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        procs.append(run)
        while counted_rows(store) == 0:  # the count phase has begun: some units are done, most are not
            assert run.poll() is None and time.monotonic() - t0 < 40, run.stderr.read() if run.poll() is not None else ""
            time.sleep(0.05)
        workers[0].kill()
        killed_at = counted_rows(store)
        out, err = run.communicate(timeout=max(5.0, 55 - (time.monotonic() - t0)))
        assert run.returncode == 0, err[-3000:]
        result = json.loads(out)
        assert result["nodes"] == expected
        with sqlite3.connect(store) as conn:
            n, missing, twice, units = conn.execute(
                "SELECT COUNT(*), SUM(count IS NULL), SUM(finishes > 1), COUNT(DISTINCT unit) FROM units").fetchone()
        assert n == result["units"] == units and missing == 0 and twice == 0
        assert killed_at < n, "the worker was killed after the run had counted everything"
    finally:
        for p in reversed(procs):
            end(p)
    assert time.monotonic() - t0 < 60
