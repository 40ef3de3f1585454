"""The GPU build's form of the shared headers' statistics leaf, compiled by nvcc for the host,
against the CPU extension's form on every counter (ci/stats_device_form.py; issue 36). The lines only
GPU builds compile (PC_HOST_CODE = 0) are otherwise run only on a GPU machine. Needs nvcc, not a GPU."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="nvcc is not on PATH: it compiles the GPU form of pc_stats.h for the host")


def _tool():
    spec = importlib.util.spec_from_file_location("stats_device_form", ROOT / "ci" / "stats_device_form.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_gpu_form_of_the_statistics_leaf_equals_the_cpu_s(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert _tool().main(["--max-nodes", "200000", "--random", "12", "--json", str(out)]) == 0
    import json

    rows = json.loads(out.read_text())["rows"]
    assert len(rows) > 1000 and sum(r["host_form"][0] for r in rows) > 10_000_000
    # the positions exercise every counter the GPU form keeps apart (mates of more than one kind too)
    assert all(sum(r["host_form"][k] for r in rows) > 0 for k in range(13) if k not in (8, 12))


@pytest.mark.parametrize("planted", [
    # a discovered check by a plain move counted as direct
    ("                                                  : CHECK_SINGLE_DISCOVERED);",
     "                                                  : CHECK_DIRECT);"),
    # en passant captures not reported
    ("w[2] = s.en_passant;", "w[2] = 0;"),
])
def test_a_bug_in_the_gpu_form_only_is_found(tmp_path, planted):
    """The bug is planted in a copy of kernels/ that only the nvcc program compiles: the extension,
    built before, keeps the right form, as a bug under PC_HOST_CODE = 0 would leave it."""
    headers = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", headers, ignore=shutil.ignore_patterns("*.cubin", "*.json", "*.py"))
    text = (headers / "pc_stats.h").read_text()
    old, new = planted
    assert text.count(old) == 1
    (headers / "pc_stats.h").write_text(text.replace(old, new))
    assert _tool().main(["--max-nodes", "20000", "--random", "0", "--headers", str(headers)]) == 1
