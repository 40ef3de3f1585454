"""File and folder arguments of the ``perft`` command: the problem named on one line, exit 2,
before any counting starts (perft_core.cliargs.output_dir / input_file / output_file)."""
from __future__ import annotations

import argparse
import os

import pytest

from perft_cli import main
from perft_core import cliargs

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _report(capsys, out) -> tuple[int, str]:
    status = main(["report", "--out", str(out), "--max-nodes", "1", "--json"])
    err = capsys.readouterr().err
    return status, err


def test_report_out_existing_file(tmp_path, capsys):
    target = tmp_path / "X"
    target.write_text("not a folder")
    status, err = _report(capsys, target)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("perft: error: argument --out:")
    assert "exists and is not a folder" in err and "Errno" not in err


def test_report_out_under_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    status, err = _report(capsys, tmp_path / "f" / "sub" / "dir")
    assert status == 2 and err.count("\n") == 1
    assert "is a file, not a folder" in err and "Errno" not in err


def test_report_out_where_a_report_file_is_a_folder(tmp_path, capsys):
    (tmp_path / "conformance.html").mkdir()
    status, err = _report(capsys, tmp_path)
    assert status == 2 and err.count("\n") == 1
    assert "conformance.html" in err and "is a folder, not a file" in err


@pytest.mark.skipif(ROOT, reason="root may write anywhere: a read-only folder cannot be made here")
def test_report_out_not_writable(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        status, err = _report(capsys, locked / "new")
    finally:
        locked.chmod(0o700)
    assert status == 2 and "is not writable" in err


def test_output_dir_accepts_new_nested_and_existing_folders(tmp_path):
    assert cliargs.output_dir(str(tmp_path)) == tmp_path
    assert cliargs.output_dir(str(tmp_path / "a" / "b")) == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()  # checked, not made


def test_input_file(tmp_path):
    f = tmp_path / "suite.csv"
    f.write_text("x")
    assert cliargs.input_file(str(f)) == f
    with pytest.raises(argparse.ArgumentTypeError, match="does not exist"):
        cliargs.input_file(str(tmp_path / "missing.csv"))
    with pytest.raises(argparse.ArgumentTypeError, match=r"no folder .*nope"):
        cliargs.input_file(str(tmp_path / "nope" / "missing.csv"))
    with pytest.raises(argparse.ArgumentTypeError, match="is a folder, not a file"):
        cliargs.input_file(str(tmp_path))


def test_output_file(tmp_path):
    assert cliargs.output_file(str(tmp_path / "new.db")) == tmp_path / "new.db"
    with pytest.raises(argparse.ArgumentTypeError, match="does not exist"):
        cliargs.output_file(str(tmp_path / "nope" / "store.db"))
    (tmp_path / "f").write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match="is a file, not a folder"):
        cliargs.output_file(str(tmp_path / "f" / "store.db"))
    with pytest.raises(argparse.ArgumentTypeError, match="is a folder, not a file"):
        cliargs.output_file(str(tmp_path))


def test_report_out_makes_a_missing_folder_and_says_so(tmp_path, capsys):
    """README: a missing --out folder is made with its parents before the run, and said (it was
    made silently, at the end)."""
    out = tmp_path / "a" / "b"
    status = main(["report", "--out", str(out), "--suites", "tricky", "--max-nodes", "100", "--json"])
    err = capsys.readouterr().err
    assert status == 0 and (out / "conformance.html").is_file()
    assert f"perft report: made folder {out}" in err.splitlines()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux): a folder no one can write in")
@pytest.mark.parametrize("argv", [["report", "--suites", "tricky", "--max-nodes", "100", "--out", "/proc/perft-x"],
                                  ["diff", "--engine", "cpu", "startpos", "3", "--svg", "/proc/perft-x.svg"]])
def test_targets_no_one_can_write_are_refused_before_work(argv, capsys):
    """``/proc`` passes ``os.access`` for root, but nothing can be made there: refused at once, one
    line, exit 2, nothing counted (it used to count and fail at the end with ``[Errno 2]``)."""
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1, (out, err)
    assert err.startswith("perft: error: argument --") and "/proc" in err and "Errno" not in err


def test_a_report_that_wrote_nothing_removes_the_folders_it_made(tmp_path, capsys):
    """An engine that cannot start: exit 2, and the folders made for the report (said on stderr)
    are removed again, not left empty; a folder that was there before stays."""
    out = tmp_path / "new" / "deeper"
    assert main(["report", "--engine", str(tmp_path / "no-such-engine"), "--out", str(out), "--max-nodes", "1000"]) == 2
    err = capsys.readouterr().err
    assert f"made folder {out}" in err and f"removed the empty folder {tmp_path / 'new'} again" in err
    assert sorted(tmp_path.iterdir()) == []
    assert main(["report", "--engine", str(tmp_path / "no-such-engine"), "--out", str(tmp_path), "--max-nodes", "1000"]) == 2
    assert tmp_path.is_dir() and "removed" not in capsys.readouterr().err
