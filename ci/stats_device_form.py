"""The GPU build's form of the statistics leaf, run on the CPU, against the CPU extension (issue 36).

    python ci/stats_device_form.py [--max-nodes N] [--random K] [--seed S] [--headers DIR] [--json FILE]

The shared headers compile differently for the GPU (PC_HOST_CODE = 0: e.g. generate_legal's one
masked path instead of the host's copy for positions without check or pin, kernels/pc_movegen.h,
and whatever pc_stats.h keeps under ``#if !PC_HOST_CODE``), and the CPU suites run only the host
form, through the extension and the emulated device. nvcc defines ``__CUDACC__`` in its host pass
too, so ci/stats_device_form.cu, compiled by nvcc for the host, runs the GPU form of the same
headers on the CPU: moves listed down to the leaf parents' parents, then ``bfs_stats_leaf`` (the
element of stats_leaf_kernel) per leaf parent, or ``leaf_stats`` at depth 1, with the extension's
attack tables (``tables_blob``, the bytes the GPU backend uploads) and root (``gpu_root``).

Positions: every FEN of the oracle's tricky, perftsuite and chess960 suites (oracle.tables) at its
deepest listed depth with at most N nodes (default 1,000,000), and K seeded random walks
(oracle.strategies.seeded_walk, half Chess960) at depth 3. Each of the 13 counters must equal
``perft_core._core.perft_stats`` (the host form). ``--headers DIR`` compiles against another copy of
kernels/ (a planted bug, in suites/test_stats_device_form.py). Needs nvcc on PATH and the built
extension; no GPU. Exit 0: every position agrees; 1: some differ; 2: cannot run.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("tricky", "perftsuite", "chess960")


def cases(max_nodes: int, random_walks: int, seed: int) -> list[tuple[str, int]]:
    """[(FEN, depth)]: each suite FEN at its deepest listed depth within max_nodes, then the walks."""
    from oracle.strategies import seeded_walk
    from oracle.tables import load

    best: dict[str, int] = {}
    for suite in SUITES:
        for row in load(suite):
            if row.nodes <= max_nodes:
                best[row.fen] = max(best.get(row.fen, 0), row.depth)
    rng = random.Random(seed)
    walks = [(seeded_walk(rng, chess960=i % 2 == 1), 3) for i in range(random_walks)]
    return sorted(best.items()) + walks


def build(headers: Path, out: Path) -> Path:
    """Compiles ci/stats_device_form.cu against `headers` with nvcc; returns the program's path.
    Raises RuntimeError with nvcc's message if it fails."""
    exe = out / "stats_device_form"
    cmd = ["nvcc", "-std=c++17", "-O2", f"-I{headers}", "-x", "cu", str(ROOT / "ci" / "stats_device_form.cu"),
           "-o", str(exe)]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode:
        raise RuntimeError(f"nvcc failed ({got.returncode}): {got.stderr.strip()[-2000:]}")
    return exe


def run(headers: Path, todo: list[tuple[str, int]]) -> list[dict]:
    """Each case's counters from the GPU form and the host form: [{fen, depth, gpu_form, host_form}].
    Raises RuntimeError if the program cannot be built or run."""
    from perft_core import _core
    from perft_core.position import as_position

    with tempfile.TemporaryDirectory() as tmp:
        exe = build(headers, Path(tmp))
        blob = Path(tmp) / "tables.bin"
        blob.write_bytes(_core.tables_blob())
        lines = []
        for fen, depth in todo:
            words, us, ci = _core.gpu_root(as_position(fen).core_args())
            lines.append(" ".join(map(str, (*words, us, depth, ci.hex()))))
        got = subprocess.run([str(exe), str(blob)], input="\n".join(lines) + "\n", capture_output=True, text=True)
        if got.returncode:
            raise RuntimeError(f"{exe.name} exited {got.returncode}: {got.stderr.strip()}")
    out = got.stdout.splitlines()
    if len(out) != len(todo):
        raise RuntimeError(f"{len(out)} result lines for {len(todo)} positions")
    return [{"fen": fen, "depth": depth, "gpu_form": [int(w) for w in line.split()],
             "host_form": list(_core.perft_stats(as_position(fen).core_args(), depth, 1))}
            for (fen, depth), line in zip(todo, out)]


def main(argv: list[str] | None = None) -> int:
    """The command line above; returns the exit status."""
    from perft_core.stats import STATS_FIELDS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-nodes", type=int, default=1_000_000)
    ap.add_argument("--random", type=int, default=40, help="seeded random walks, counted at depth 3")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--headers", type=Path, default=ROOT / "kernels")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if shutil.which("nvcc") is None:
        print("stats_device_form: nvcc is not on PATH", file=sys.stderr)
        return 2
    try:
        rows = run(args.headers, cases(args.max_nodes, args.random, args.seed))
    except RuntimeError as e:
        print(f"stats_device_form: {e}", file=sys.stderr)
        return 2
    bad = [r for r in rows if r["gpu_form"] != r["host_form"]]
    for r in bad[:10]:
        diff = {f: (g, h) for f, g, h in zip(STATS_FIELDS, r["gpu_form"], r["host_form"]) if g != h}
        print(f"differs: {r['fen']} depth {r['depth']}: (GPU form, host form) {diff}")
    nodes = sum(r["host_form"][0] for r in rows)
    print(f"{len(rows)} positions, {nodes:,} leaf moves: {len(bad)} differ in some counter")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "differ": len(bad)}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:  # run from a checkout: its oracle and (built) perft_core
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
