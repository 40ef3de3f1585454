"""Take a resumed store back from a device call into the checkout, safely (NOTES.md "Session 21").

``python ci/table_value/take_back.py TGZ STORE``: TGZ is the ``$OUT/NAME.tgz`` of a
``paired_call.sh`` call (its ``NAME/store.sqlite``), STORE the committed store that call resumed
(``ST``). The call's store replaces STORE only if it is the same run and carries it forward: every
row passes its checksum, and every row STORE had counted is still counted, with the same count and
statistics (a store never goes backwards). A STORE that does not exist yet (a new run's first call,
``paired_call.sh NEW=...``) is created from the call's store. SQLite's write-ahead log is folded into the file first
(the device's copy may still hold its last writes in ``store.sqlite-wal``), and STORE's own -wal and
-shm files are removed, so that no log of another file is ever applied to it.

Why: each call starts from the STORE in the checkout, so a call resumed before the previous call's
store was taken back counts the same units again (session 21 lost 570 s of four GPUs that way).
Prints the rows counted before and after; exits 1, leaving STORE alone, when the call's store does
not carry it forward.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tarfile
import tempfile
from pathlib import Path

from perft_core.deep.store import Store


def _rows(path: Path) -> tuple[dict, dict[int, tuple]]:
    """The run and each unit row's (count, stats) by index, of a copy of the store at ``path``,
    every row's checksum checked (Store.checked_rows)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        with Store.open(copy, repair=False) as st:
            rows = st.checked_rows()
            return dict(st.run), {r["idx"]: (r["count"], r.get("stats")) for r in rows}


def _fold_wal(path: Path) -> None:
    """Fold the store's write-ahead log into the file and leave it in rollback-journal mode."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()


def take_back(tgz: Path, store: Path) -> str:
    """Replace ``store`` with the store in ``tgz`` when it carries ``store`` forward (or create it).

    Returns the line to print. Raises ValueError naming what is wrong: no store in the archive,
    another run, a row counted in ``store`` that is pending or different in the call's store.
    """
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tgz) as tar:
            members = [m for m in tar.getmembers()
                       if m.isfile() and Path(m.name).name.startswith("store.sqlite") and ".." not in m.name]
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python >= 3.11.4
            tar.extractall(tmp, members=members, **safe)
        found = sorted(Path(tmp).rglob("store.sqlite"))
        if len(found) != 1:
            raise ValueError(f"{tgz}: expected one store.sqlite, found {len(found)}")
        new = found[0]
        _fold_wal(new)
        run_new, rows_new = _rows(new)
        if not store.exists():  # a new run's first call (paired_call.sh NEW=...)
            run_old, rows_old = run_new, {i: (None, None) for i in rows_new}
        else:
            run_old, rows_old = _rows(store)
        same = ("fen", "depth", "split_ply", "backend", "tt", "seed", "stats")
        if any(run_new.get(k) != run_old.get(k) for k in same) or rows_new.keys() != rows_old.keys():
            raise ValueError(f"{tgz}: not the run of {store}")
        lost = [i for i, (count, _) in rows_old.items() if count is not None and rows_new[i] != rows_old[i]]
        if lost:
            raise ValueError(f"{tgz}: {len(lost)} rows counted in {store} are pending or differ there "
                             f"(first: row {lost[0]}); {store} left as it was")
        before = sum(c is not None for c, _ in rows_old.values())
        after = sum(c is not None for c, _ in rows_new.values())
        part = store.with_name(store.name + ".part")
        shutil.copyfile(new, part)
        os.replace(part, store)
        for side in ("-wal", "-shm"):
            Path(str(store) + side).unlink(missing_ok=True)
    return f"{store}: {before} -> {after} of {len(rows_new)} unit rows counted (+{after - before})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tgz", type=Path)
    ap.add_argument("store", type=Path)
    a = ap.parse_args(argv)
    try:
        print(take_back(a.tgz, a.store))
    except ValueError as exc:
        print(f"take_back: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
