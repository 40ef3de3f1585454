"""CPU benchmark: our CPU perft beside MPerft, ellxor/perft and Stockfish, in the same run.

    python ci/bench_cpu.py [--runs 3] [--rows startpos-7,kiwipete-6] [--no-stockfish] [--json out.json]
    python ci/bench_cpu.py --scaling 2          # also ours on 2 threads against 1 (issue 25: >= 1.8x)
    python ci/bench_cpu.py --rows none --walks 6 --walk-seed 1   # six positions of seeded random games

Rows (issue 25): startpos 7, Kiwipete 6, CPW positions 3 (d7), 4 (d6), 5 (d5), 6 (d5) and two
Chess960 positions of the CPW set without castling rights (the peers do not implement Chess960
castling; without rights they count the same tree), bulk counting, no tables, ours on one thread
(``threads=1``); then the table rows: startpos 7 and Kiwipete 6 through our CPU tables of 256 MiB
(``tt=True, tt_mb=256``) against ``mperft -h 256``, both timed with their tables' memory (see
``mperft``).

Peers: ``mperft`` (MPerft 2.0, MIT; one thread, ``-b``) and ``ellxor_perft`` (BSD-2; always every
online CPU) are copied with their README and licences from ``--peers`` (default
``/work/shared/peers/cpu`` or $PERFT_CPU_PEERS) into the git-ignored ``.peer/cpu/``, and run from
there in their own process. Times: CPU seconds for one thread (ours: this process's CPU time around
the call; MPerft: its process's CPU time less a run that counts nothing), so a machine shared with
other work disturbs them less than wall time; ellxor's own wall time (it runs on every CPU); our
``--scaling`` runs in wall time; Stockfish (Debian package ``stockfish``, one thread) in wall time
from ``go perft`` to ``Nodes searched``. Runs are interleaved (each run goes through every row and
program) and the minimum of the runs is kept. Every count is checked against the known count; a
wrong count is a failure (exit 1). A peer that cannot count a row (a crash) is reported and skipped.
Ratios are peer seconds / our seconds (above 1: ours is faster).

``--walks N``: N more rows, positions of random games from the start position (python-chess, seeded by
``--walk-seed``; 16-40 plies, never a finished game), each at the least depth (4-7) that takes ours at
least 0.3 s: positions no rule was tuned to. Their counts are not known beforehand: every program
must give ours (a disagreement is a failure, exit 1).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("perft_core") is None:  # a source checkout: its tree (an installed package wins)
    sys.path.insert(0, str(ROOT))

import perft_core  # noqa: E402
from perft_core import _core  # noqa: E402

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
# (name, FEN, depth, nodes, tables): counts from chessprogramming.org Perft_Results and the CPW
# Chess960 set (oracle/data/cpw_perft_results.csv, chess960_fischer_ethereal.csv).
ROWS = [
    ("startpos-7", START, 7, 3_195_901_860, False),
    ("kiwipete-6", KIWIPETE, 6, 8_031_647_685, False),
    ("cpw3-7", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 7, 178_633_661, False),
    ("cpw4-6", "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 6, 706_045_033, False),
    ("cpw5-5", "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 5, 89_941_194, False),
    ("cpw6-5", "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 5, 164_075_551, False),
    ("chess960-297-6", "1nkrbbrn/qppppppp/8/8/p2P4/1P5P/P1P1PPP1/QNKRBBRN w - - 0 9", 6, 410_130_412, False),
    ("chess960-769-6", "bqkrnbrn/1pp1pp1p/p7/1B1p2p1/4P3/7P/PPPP1PP1/BQKRN1RN w - - 0 9", 6, 363_765_666, False),
    ("startpos-7-tt256", START, 7, 3_195_901_860, True),
    ("kiwipete-6-tt256", KIWIPETE, 6, 8_031_647_685, True),
]
TT_MB = 256
PEER_FILES = ("mperft", "ellxor_perft", "README.md", "LICENSE.mperft", "LICENSE.ellxor")


def copy_peers(src: Path, dest: Path = ROOT / ".peer" / "cpu") -> Path | None:
    """Copy the peer binaries, their README and licences from ``src`` into ``dest`` (git-ignored);
    None when ``src`` has no peer binary."""
    if not any((src / f).is_file() for f in PEER_FILES[:2]):
        return None
    dest.mkdir(parents=True, exist_ok=True)
    for f in PEER_FILES:
        if (src / f).is_file():
            (dest / f).unlink(missing_ok=True)  # the copies are read-only like their sources
            shutil.copy2(src / f, dest / f)
    return dest


def ours(fen: str, depth: int, tables: bool, threads: int = 1) -> tuple[int, float]:
    """(nodes, seconds) of our CPU perft in this process (extension loaded before timing): CPU
    seconds of this process on one thread, wall seconds on several."""
    clock = time.process_time if threads == 1 else time.perf_counter
    if tables:
        from perft_core import zobrist

        t = clock()  # the tables' making and their pages (zeroed by the OS when first touched) count
        n = zobrist.perft_tt(fen, depth, threads=threads, table=zobrist.TranspositionTable(depth, TT_MB))
        return n, clock() - t
    args = perft_core.Position.from_fen(fen).core_args()
    t = clock()
    n = _core.perft(args, depth, threads)
    return n, clock() - t


def _child_cpu(cmd: list[str]) -> tuple[str, float]:
    """(stdout, CPU seconds, user + system) of a command run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def mperft(path: Path, fen: str, depth: int, tables: bool) -> tuple[int, float]:
    """(nodes, CPU seconds) of MPerft (one thread): its process's CPU time less that of a run with
    neither tables nor work (``-d 1 -b``: process start, move tables). With ``-h`` that time holds
    the clearing of its whole table, which its own report leaves out; ours holds the pages it
    touches (the OS zeroes them), so both pay for their tables."""
    cmd = [str(path), "-f", fen, "-d", str(depth), "-b"] + (["-h", str(TT_MB)] if tables else [])
    out, cpu = _child_cpu(cmd)
    m = re.search(rf"perft\s+{depth}\s*:\s*(\d+) leaves in", out)
    if not m:
        raise RuntimeError(f"mperft: no result line in {out[-300:]!r}")
    return int(m.group(1)), cpu - _mperft_start(path)


_START: dict[Path, float] = {}


def _mperft_start(path: Path) -> float:
    """CPU seconds of ``mperft -d 1 -b`` (no tables), least of 5 runs, measured once."""
    if path not in _START:
        _START[path] = min(_child_cpu([str(path), "-d", "1", "-b"])[1] for _ in range(5))
    return _START[path]


def ellxor(path: Path, fen: str, depth: int) -> tuple[int, float]:
    """(nodes, seconds) as ellxor/perft reports them (``Result:`` and ``Time taken:``; every online CPU)."""
    out = subprocess.run([str(path), fen, str(depth)], capture_output=True, text=True, check=True).stdout
    n, s = re.search(r"Result:\s*(\d+)", out), re.search(r"Time taken:\s*([\d.]+)", out)
    if not (n and s):
        raise RuntimeError(f"ellxor_perft: no result in {out[-300:]!r}")
    return int(n.group(1)), float(s.group(1))


def stockfish(path: str, fen: str, depth: int) -> tuple[int, float]:
    """(nodes, seconds) of Stockfish's `go perft depth` on one thread, from the command to its answer."""
    p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        p.stdin.write("uci\nsetoption name Threads value 1\nisready\n")
        p.stdin.flush()
        for line in p.stdout:
            if line.strip() == "readyok":
                break
        p.stdin.write(f"position fen {fen}\n")
        t = time.perf_counter()
        p.stdin.write(f"go perft {depth}\n")
        p.stdin.flush()
        for line in p.stdout:
            if line.startswith("Nodes searched"):
                return int(line.split(":")[1]), time.perf_counter() - t
        raise RuntimeError("stockfish ended without 'Nodes searched'")
    finally:
        p.kill()
        p.wait()


def _cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def walk_rows(n: int, seed: int, min_s: float = 0.3) -> list[tuple]:
    """``n`` rows (name, FEN, depth, None, False) of random-game positions (module docstring)."""
    import random

    import chess

    rng = random.Random(seed)
    rows: list[tuple] = []
    while len(rows) < n:
        board = chess.Board()
        for _ in range(rng.randint(16, 40)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if board.is_game_over():
            continue
        fen = board.fen()
        depth = 4
        while depth < 7 and ours(fen, depth, False)[1] < min_s:
            depth += 1
        rows.append((f"walk-{seed}-{len(rows) + 1}-{depth}", fen, depth, None, False))
    return rows


def measure(rows, runs: int, peers: Path | None, sf: str | None, scaling: int) -> tuple[dict, list[str], dict, dict]:
    """{(row, program): min seconds} over ``runs`` interleaved runs, the wrong counts seen,
    {(row, peer): why} for the peers that failed on a row (they are not run on it again), and
    {row: our count} for the rows whose count is not known (None): every program must give it."""
    best: dict[tuple[str, str], float] = {}
    counted: dict[str, int] = {}  # ours, for the rows without a known count
    wrong: list[str] = []
    failed: dict[tuple[str, str], str] = {}
    for _ in range(runs):
        for name, fen, depth, expected, tables in rows:
            progs = [("ours", lambda: ours(fen, depth, tables))]
            if scaling > 1 and not tables:
                progs.append((f"ours-{scaling}t", lambda: ours(fen, depth, tables, scaling)))
            if peers is not None and (peers / "mperft").is_file():
                progs.append(("mperft", lambda: mperft(peers / "mperft", fen, depth, tables)))
            if peers is not None and (peers / "ellxor_perft").is_file() and not tables:
                progs.append(("ellxor", lambda: ellxor(peers / "ellxor_perft", fen, depth)))
            if sf and not tables:
                progs.append(("stockfish", lambda: stockfish(sf, fen, depth)))
            for prog, run in progs:
                if (name, prog) in failed:
                    continue
                try:
                    n, s = run()
                except (subprocess.CalledProcessError, RuntimeError) as exc:  # a peer that cannot count this row
                    if prog.startswith("ours"):
                        raise
                    failed[name, prog] = str(exc).splitlines()[0][:160]
                    continue
                if expected is None:  # ours runs first in each run: the others must agree with it
                    want = counted.setdefault(name, n)
                    if n != want:
                        wrong.append(f"{name}: {prog} counted {n}, ours {want}")
                elif n != expected:
                    wrong.append(f"{name}: {prog} counted {n}, expected {expected}")
                best[name, prog] = min(s, best.get((name, prog), float("inf")))
                print(f"  {name:<17} {prog:<10} {s:8.3f} s", file=sys.stderr, flush=True)
    return best, wrong, failed, counted


def table(rows, best: dict, scaling: int) -> list[dict]:
    """One dict per row: seconds of each program and the ratios (their seconds / ours)."""
    out = []
    for name, fen, depth, nodes, tables in rows:
        r = {"row": name, "nodes": nodes, "ours_s": best[name, "ours"]}
        if name.startswith("walk-"):
            r["fen"] = fen
        for prog in ("mperft", "ellxor", "stockfish"):
            if (name, prog) in best:
                r[f"{prog}_s"] = best[name, prog]
                r[f"vs_{prog}"] = best[name, prog] / best[name, "ours"]
        if (name, f"ours-{scaling}t") in best:
            r["threads"] = scaling
            r["threads_s"] = best[name, f"ours-{scaling}t"]
            r["speedup"] = best[name, "ours"] / r["threads_s"]
        out.append(r)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs; the minimum is kept (default 3)")
    ap.add_argument("--rows", help=f"comma-separated row names (default all: {', '.join(r[0] for r in ROWS)})")
    ap.add_argument("--peers", type=Path, default=Path(os.environ.get("PERFT_CPU_PEERS", "/work/shared/peers/cpu")))
    ap.add_argument("--stockfish", default=shutil.which("stockfish") or "/usr/games/stockfish")
    ap.add_argument("--no-stockfish", action="store_true", help="leave Stockfish out (it takes ~10x our time)")
    ap.add_argument("--scaling", type=int, default=0, metavar="N", help="also ours on N threads (speedup over 1)")
    ap.add_argument("--json", type=Path, help="write the rows as JSON here")
    ap.add_argument("--walks", type=int, default=0, metavar="N", help="N more rows from seeded random games")
    ap.add_argument("--walk-seed", type=int, default=1, help="seed of --walks (default 1)")
    args = ap.parse_args(argv)
    rows = ROWS
    if args.rows:
        wanted = [] if args.rows == "none" else args.rows.split(",")
        unknown = set(wanted) - {r[0] for r in ROWS}
        if unknown:
            ap.error(f"unknown rows: {', '.join(sorted(unknown))}")
        rows = [r for r in ROWS if r[0] in wanted]
    if args.walks < 0:
        ap.error("--walks must be >= 0")
    rows = rows + walk_rows(args.walks, args.walk_seed)
    if not rows:
        ap.error("no rows (--rows none needs --walks)")
    peers = copy_peers(args.peers)
    sf = None if args.no_stockfish or not Path(args.stockfish).exists() else args.stockfish
    cpu = _cpu_name()
    print(f"machine: {cpu}, {os.cpu_count()} CPUs, {len(os.sched_getaffinity(0))} usable; extension {_core.__name__}; "
          f"peers: {peers or 'not found'}; stockfish: {sf or 'not run'}; {time.strftime('%Y-%m-%d %H:%M')}; "
          f"min of {args.runs} interleaved runs")
    best, wrong, failed, counted = measure(rows, args.runs, peers, sf, args.scaling)
    rows = [(n, f, d, counted[n] if nodes is None else nodes, t) for n, f, d, nodes, t in rows]
    out = table(rows, best, args.scaling)
    cols = [("mperft", "MPerft"), ("ellxor", "ellxor (all CPUs)"), ("stockfish", "Stockfish")]
    scale = f" ours {args.scaling} threads s | speedup |" if args.scaling > 1 else ""
    print("\n| row | nodes | ours s | " + " | ".join(f"{t} s | {t} / ours" for _, t in cols) + " |" + scale)
    print("|---|---|---|" + "---|---|" * len(cols) + ("---|---|" if scale else ""))
    for r in out:
        cells = [f"{r[f'{p}_s']:.3f} | **{r[f'vs_{p}']:.2f}x**" if f"{p}_s" in r else "- | -" for p, _ in cols]
        extra = f" {r['threads_s']:.3f} | **{r['speedup']:.2f}x** |" if "speedup" in r else (" - | - |" if scale else "")
        print(f"| {r['row']} | {r['nodes']:,} | {r['ours_s']:.3f} | " + " | ".join(cells) + " |" + extra)
    if args.json:
        args.json.write_text(json.dumps({"machine": cpu, "date": time.strftime("%Y-%m-%d"), "runs": args.runs,
                                         "extension": _core.__name__, "rows": out, "wrong": wrong,
                                         "peer_failures": [f"{p} on {r}: {w}" for (r, p), w in failed.items()]}, indent=2))
    for (row, prog), why in failed.items():
        print(f"peer failed: {prog} on {row}: {why}")
    for w in wrong:
        print(f"WRONG COUNT: {w}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
