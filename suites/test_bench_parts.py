"""ci/bench_parts.py --units N: a part of a count too long to run whole, checked unit by unit
against a finished deep store, so a parts-against-whole measurement at perft 13 cannot pass with a
wrong count."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from perft_core.deep import deep_perft
from perft_core.deep.store import Store

ROOT = Path(__file__).resolve().parents[1]
STARTPOS = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def _bench(tmp_path, *extra):
    return subprocess.run([sys.executable, str(ROOT / "ci" / "bench_parts.py"), "--backend", "gpu-emulated",
                           "--depth", "5", "--split-ply", "2", "--parts", "1", "4", "--batches", "3", *extra],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


def test_the_largest_units_are_checked_against_a_finished_store(cluster, tmp_path):
    store = tmp_path / "p5.sqlite"
    assert deep_perft(STARTPOS, 5, split_ply=2, scheduler=cluster.scheduler_address, store=store).nodes == 4_865_609
    done = _bench(tmp_path, "--units", "12", "--store", str(store))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the 12 largest units at ply 2 (reference: store" in done.stdout
    assert done.stdout.count(", ok") == 2  # whole and four parts, each equal to the store's units
    skipped = _bench(tmp_path, "--units", "5", "--skip", "300", "--store", str(store))
    assert skipped.returncode == 0 and skipped.stdout.count(", ok") == 2
    assert "the 5 largest units at ply 2 after the 300 largest" in skipped.stdout
    # the other direction: one of those units' count one higher in the store, its checksum made
    # again, so that only the comparison can tell: both runs fail
    with Store.open(store) as st:
        idx = st.conn.execute("SELECT idx FROM units ORDER BY idx LIMIT 1").fetchone()[0]
        st.conn.execute("UPDATE units SET count = CAST(CAST(count AS INTEGER) + 1 AS TEXT) WHERE idx = ?", (idx,))
        st._seal("idx = ?", (idx,))
        st.conn.commit()
    bad = _bench(tmp_path, "--units", "12", "--store", str(store))
    assert bad.returncode == 1 and "WRONG" in bad.stdout and ", ok" not in bad.stdout, bad.stdout + bad.stderr
    other = _bench(tmp_path, "--units", "12", "--store", str(store), "--depth", "4")
    assert other.returncode != 0 and "not perft 4 of" in other.stderr
    assert "--store and --skip need --units" in _bench(tmp_path, "--store", str(store)).stderr
