"""CPU threads: the default thread count, the balanced split of a threaded count (perft_core/src/host.h),
and the run-time choice between the extension's builds (perft_core/_core.py)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import perft_core
from perft_core import Position, _core, isa, threads as threads_mod
from perft_cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
SPLIT_CASES = [
    (START, 5),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 4),  # Kiwipete
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 6),  # CPW position 3
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 5),  # CPW 4: 6 root moves
    ("4k3/8/8/8/8/8/3P1P2/3QK2r w - - 0 1", 6),  # one legal root move: it is the whole tree
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", 5),  # Chess960
]


@pytest.mark.parametrize("fen,depth", SPLIT_CASES)
@pytest.mark.parametrize("threads", [2, 8])
def test_split_balances(fen, depth, threads):
    """Every item of the split is a small share of one thread's work (the largest at most a quarter
    of total / threads), the items add up to the count, and each belongs to a legal root move."""
    pos = Position.from_fen(fen)
    items = _core.split_counts(pos.core_args(), depth, threads)
    total = sum(n for _, _, n in items)
    assert total == perft_core.perft(pos, depth, threads=1)
    assert {m for m, _, _ in items} <= set(perft_core.divide(pos, 1, threads=1))
    assert max(n for _, _, n in items) * threads * 4 <= total, max(n for _, _, n in items) / total
    assert all(1 <= plies <= depth - 1 for _, plies, _ in items)


def test_one_thread_is_one_item_per_root_move():
    pos = Position.from_fen(START)
    items = _core.split_counts(pos.core_args(), 4, 1)
    assert sorted(m for m, _, _ in items) == sorted(perft_core.divide(pos, 1, threads=1))
    assert {plies for _, plies, _ in items} == {3}


def test_dominant_root_move_is_split_deeper():
    """A single legal root move: the split goes below it until the items balance, instead of
    stopping at a fixed ply."""
    pos = Position.from_fen("4k3/8/8/8/8/8/3P1P2/3QK2r w - - 0 1")
    items = _core.split_counts(pos.core_args(), 6, 2)
    assert len(items) >= 64 and {m for m, _, _ in items} == {"e1e2"}


@pytest.mark.parametrize("fen,depth", SPLIT_CASES[:4])
def test_threaded_counts_exact(fen, depth):
    one = perft_core.divide(fen, depth, threads=1)
    assert perft_core.divide(fen, depth, threads=3) == one
    assert perft_core.perft(fen, depth, threads=5) == sum(one.values())
    assert perft_core.perft(fen, depth, tt=True, tt_mb=8, threads=3) == sum(one.values())


def test_default_threads_is_every_available_core(monkeypatch):
    assert threads_mod.available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(threads_mod, "available_cores", lambda: 7)
    seen = []
    real = _core.perft
    monkeypatch.setattr(_core, "perft", lambda args, depth, threads: seen.append(threads) or real(args, depth, threads))
    assert perft_core.perft(START, 3) == 8902
    # the count itself on every core; the estimate's node bound probes (sub-millisecond) on one thread
    assert seen and seen[-1] == 7 and set(seen) <= {1, 7}
    with pytest.raises(ValueError, match="threads"):
        perft_core.perft(START, 3, threads=0)


def test_cli_help_states_the_thread_default(capsys):
    with pytest.raises(SystemExit):
        cli_main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"default: every core this process may run on ({threads_mod.available_cores()} here)" in out


def test_core_choice_by_cpu_flags():
    v3 = isa.V3_FLAGS
    assert isa.choose(frozenset(v3 | {"sse4_2"})) == ["_core_v3", "_core_v3magic", "_core_base"]
    assert isa.choose(frozenset(v3 - {"bmi2"})) == ["_core_base"]
    assert isa.choose(frozenset()) == ["_core_base"]
    assert isa.choose(frozenset(v3), "base") == ["_core_base"]
    assert isa.choose(frozenset(), "v3") == ["_core_v3", "_core_base"]
    assert isa.choose(frozenset(), "v3magic") == ["_core_v3magic", "_core_base"]
    with pytest.raises(ValueError, match="PERFT_CORE"):
        isa.choose(frozenset(), "avx512")
    first_built = next(n for n in isa.choose(isa.cpu_info(), os.environ.get("PERFT_CORE") or None) if _built(n))
    assert _core.__name__ == f"perft_core.{first_built}"


# /proc/cpuinfo blocks (first processor; the fields the choice reads, as Linux prints them).
_CPUINFO = "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: 1\nflags\t\t: {flags}\n\n" \
           "processor\t: 1\nvendor_id\t: Other\ncpu family\t: 99\nflags\t\t: fpu\n"


@pytest.mark.parametrize("vendor, family, slow", [
    ("AuthenticAMD", 21, True),   # Excavator (15h)
    ("AuthenticAMD", 23, True),   # Zen, Zen+, Zen 2 (17h)
    ("HygonGenuine", 24, True),   # Dhyana (18h, a Zen core)
    ("AuthenticAMD", 25, False),  # Zen 3, Zen 4 (19h)
    ("AuthenticAMD", 26, False),  # Zen 5 (1Ah)
    ("GenuineIntel", 6, False),   # Haswell and later
])
def test_microcoded_pext_gets_the_magic_build(tmp_path, vendor, family, slow):
    """AMD before Zen 3 (and Hygon) runs the x86-64-v3 build with magic lookups first; others PEXT."""
    path = tmp_path / "cpuinfo"
    path.write_text(_CPUINFO.format(vendor=vendor, family=family, flags=" ".join(sorted(isa.V3_FLAGS | {"fpu"}))))
    cpu = isa.cpu_info(path)
    assert (cpu.vendor, cpu.family, cpu.flags >= isa.V3_FLAGS) == (vendor, family, True)
    assert cpu.slow_pext is slow
    first = "_core_v3magic" if slow else "_core_v3"
    assert isa.choose(cpu)[0] == first and isa.choose(cpu)[-1] == "_core_base"
    assert isa.choose(cpu, "v3") == ["_core_v3", "_core_base"]  # PERFT_CORE still wins


def test_cpu_info_without_cpuinfo(tmp_path):
    assert isa.cpu_info(tmp_path / "absent") == isa.Cpu()
    assert isa.choose(isa.cpu_info(tmp_path / "absent")) == ["_core_base"]
    (tmp_path / "odd").write_text("vendor_id\t: AuthenticAMD\ncpu family\t: x\nflags\t: avx\n")
    assert isa.cpu_info(tmp_path / "odd") == isa.Cpu(frozenset({"avx"}), "AuthenticAMD", -1)


@pytest.mark.parametrize("build", ["base", "v3", "v3magic"])
def test_each_build_counts_exactly(build):
    """Every build (baseline; x86-64-v3 with PEXT or with magic sliders) gives the same counts."""
    if build != "base" and not (_built(f"_core_{build}") and isa.V3_FLAGS <= isa.cpu_flags()):
        pytest.skip(f"no _core_{build} build here (not x86-64, or PERFT_MARCH set), or the CPU lacks x86-64-v3")
    code = ("import perft_core; from perft_core import _core; print(_core.__name__, "
            "perft_core.perft('r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1', 4, threads=1), "
            "perft_core.perft('8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1', 5, threads=2))")
    # -P keeps the current folder off the path; the package this test imported is put on it instead
    # (an installed package, or a source tree such as a GPU runner's copy).
    home = str(Path(perft_core.__file__).resolve().parents[1])
    env = dict(os.environ, PERFT_CORE=build, PYTHONPATH=os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-P", "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [f"perft_core._core_{build}", "4085603", "674624"]


def _built(name: str) -> bool:
    return importlib.util.find_spec(f"perft_core.{name}") is not None
