"""perft_core.provenance.package_commit: the package's own commit, never the one of a repository
that merely encloses a copy of it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perft_core import provenance

ROOT = Path(__file__).resolve().parents[1]
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def _other_repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository of another project, with one commit; returns (root, its short commit)."""
    repo = tmp_path / "other"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other project")
    return repo, _git(repo, "rev-parse", "--short=12", "HEAD")


def _commit_of_copy(package_dir: Path) -> str:
    """package_commit() of the provenance module copied into ``package_dir``, in a fresh process."""
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('prov', sys.argv[1]); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); print(m.package_commit())")
    out = subprocess.run([sys.executable, "-c", code, str(package_dir / "provenance.py")],
                         capture_output=True, text=True, check=True, cwd=package_dir)
    return out.stdout.strip()


def _copy_package(dest: Path) -> Path:
    package = dest / "perft_core"
    package.mkdir(parents=True)
    shutil.copy(ROOT / "perft_core" / "provenance.py", package / "provenance.py")
    return package


def test_copy_inside_another_repository_is_unknown(tmp_path):
    repo, other = _other_repo(tmp_path)
    package = _copy_package(repo / "vendor")
    commit = _commit_of_copy(package)
    assert other not in commit and commit == "unknown"


def test_copy_at_another_projects_root_is_unknown(tmp_path):
    """Even as the top folder of another repository (its pyproject names another project)."""
    repo, other = _other_repo(tmp_path)
    package = _copy_package(repo)
    assert _commit_of_copy(package) == "unknown"


def test_copy_reads_its_build_record(tmp_path):
    repo, other = _other_repo(tmp_path)
    package = _copy_package(repo / "vendor")
    (package / provenance.BUILD_INFO).write_text(json.dumps({"commit": "0123456789ab"}))
    assert _commit_of_copy(package) == "0123456789ab"


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout of the project")
def test_source_checkout_reports_its_own_head():
    head = _git(ROOT, "rev-parse", "--short=12", "HEAD")
    assert provenance.source_root(ROOT / "perft_core") == ROOT
    assert provenance.package_commit().split("+")[0] == head


_RUN_SETUP = """
import sys, types
helpers = types.ModuleType("pybind11.setup_helpers")
helpers.Pybind11Extension = lambda *a, **k: None
helpers.build_ext = type("build_ext", (), {})
sys.modules.update({"pybind11": types.ModuleType("pybind11"), "pybind11.setup_helpers": helpers})
import setuptools
setuptools.setup = lambda **k: None
exec(compile(open("setup.py").read(), "setup.py", "exec"), {"__file__": "setup.py", "__name__": "__main__"})
"""


def _tree(dest: Path, pyproject: str) -> Path:
    """setup.py, pyproject.toml and perft_core/provenance.py in a new git repository at ``dest``."""
    dest.mkdir()
    shutil.copy(ROOT / "setup.py", dest / "setup.py")
    (dest / "pyproject.toml").write_text(pyproject)
    for sub in ("kernels", "perft_core/src"):  # setup.py lists their headers
        (dest / sub).mkdir(parents=True)
    shutil.copy(ROOT / "perft_core" / "provenance.py", dest / "perft_core" / "provenance.py")
    _git(dest, "init", "-q")
    _git(dest, "add", ".")
    _git(dest, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tree")
    return dest


def test_setup_records_the_commit_of_our_own_tree_only(tmp_path):
    ours = _tree(tmp_path / "ours", (ROOT / "pyproject.toml").read_text())
    subprocess.run([sys.executable, "-c", _RUN_SETUP], cwd=ours, check=True, capture_output=True)
    record = json.loads((ours / "perft_core" / provenance.BUILD_INFO).read_text())
    assert record["commit"].split("+")[0] == _git(ours, "rev-parse", "--short=12", "HEAD")

    theirs = _tree(tmp_path / "theirs", '[project]\nname = "someone-else"\n')
    subprocess.run([sys.executable, "-c", _RUN_SETUP], cwd=theirs, check=True, capture_output=True)
    assert not (theirs / "perft_core" / provenance.BUILD_INFO).exists()
