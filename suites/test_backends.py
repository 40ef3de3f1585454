"""One backend interface (issue 27, item 5): ``perft_core.backends``.

Every backend object has the same ways to count (perft, divide, root move by root move under a
Watch) and gives the same counts as the others, with and without tables, Chess960 included; the
verify-seed pass is one, shared by all of them and by each way to count; and the API reaches no
private name of another module (an AST check, shown to catch planted uses).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import perft_core
from perft_core import backends, watch
from perft_core.errors import HashVerificationError
from oracle.engines import PythonChessEngine

ROOT = Path(__file__).resolve().parents[1]
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CPW3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - -"
CHESS960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"  # CPW Chess960 position 1
POSITIONS = [(KIWIPETE, 3), (CPW3, 4), (CHESS960, 3)]
COUNTING = ["cpu", "gpu-emulated"]  # "gpu" needs CuPy and a device: the same class on another driver
OPTIONS = [{}, {"tt": True}, {"tt": True, "verify_seed": 0x5EED}]


def test_every_api_backend_has_a_backend_class_with_the_interface():
    assert set(backends.BACKENDS) == set(perft_core.api.BACKENDS) == {"cpu", "gpu", "gpu-emulated"}
    for name, cls in backends.BACKENDS.items():
        engine = backends.get_backend(name, threads=2, tt=True, tt_mb=8, verify_seed=3)  # no driver made yet
        assert isinstance(engine, backends.Backend) and engine.name == name and type(engine) is cls
        assert engine.speed_floor > 0 and engine.passes == 2
        assert (engine.threads, engine.tt, engine.tt_mb, engine.verify_seed) == (2, True, 8, 3)
        for method in ("_count", "_divide", "_count_moves"):  # each way to count is the backend's own
            assert getattr(cls, method) is not getattr(backends.Backend, method), (name, method)
    with pytest.raises(ValueError, match="unknown backend"):
        backends.get_backend("tpu")
    with pytest.raises(ValueError, match="verify_seed must differ"):
        backends.get_backend("gpu-emulated", tt=True, verify_seed=perft_core.zobrist.DEFAULT_SEED)


@pytest.mark.parametrize("fen,depth", POSITIONS)
def test_backends_agree_on_counts_and_divides(fen, depth):
    """Each backend, each table option, each way to count: python-chess's divide."""
    expected = PythonChessEngine().divide(fen, depth)
    pos = perft_core.Position.from_fen(fen)
    for name in COUNTING:
        for options in OPTIONS:
            engine = backends.get_backend(name, **options)
            where = (name, options)
            assert engine.divide(pos, depth) == expected, where
            assert engine.count(pos, depth) == sum(expected.values()), where
            counted: dict[str, int] = {}
            with watch.Watch(None, None, bar=False, passes=engine.passes) as w:
                engine.count_moves(pos, depth, pos.legal_moves(), w, counted)
            assert counted == expected, where
            assert w.done == engine.passes * sum(expected.values()), where  # each pass reported its moves
            assert engine.count(pos, 0) == 1 and engine.divide(pos, 0) == {}


class _SeedDependent:
    """A backend whose counts depend on the key seed, as a key bug that collides under one seed does."""

    def _count(self, pos, depth, seed):
        return super()._count(pos, depth, seed) + (seed is not None)

    def _divide(self, pos, depth, seed):
        split = super()._divide(pos, depth, seed)
        return {m: n + (seed is not None and m == max(split)) for m, n in split.items()}

    def _count_moves(self, pos, depth, moves, w, on_move, seed, estimate):
        def skewed(move, nodes):
            on_move(move, nodes + (seed is not None and move == max(moves)))

        super()._count_moves(pos, depth, moves, w, skewed, seed, estimate)


@pytest.mark.parametrize("name", COUNTING)
def test_the_verify_pass_is_shared_by_every_way_to_count(name):
    """The same seed-dependent miscount is caught by count, divide and count_moves on each backend;
    without a verify seed it is not (so the check is the verify pass, not something else)."""
    base = backends.BACKENDS[name]
    skewed = type("Skewed", (_SeedDependent, base), {})
    pos = perft_core.Position.from_fen(KIWIPETE)
    engine = skewed(tt=True, verify_seed=0x77)
    with pytest.raises(HashVerificationError, match="perft 3: 97862 with key seed .* but 97863 with seed 0x77"):
        engine.count(pos, 3)
    with pytest.raises(HashVerificationError, match="divide 3: h1g1 has"):
        engine.divide(pos, 3)
    counted: dict[str, int] = {}
    with pytest.raises(HashVerificationError, match="divide 3: h1g1"):
        with watch.Watch(None, None, bar=False, passes=2) as w:
            engine.count_moves(pos, 3, pos.legal_moves(), w, counted)
    assert "h1g1" not in counted and len(counted) == len(pos.legal_moves()) - 1  # only agreeing moves kept
    unverified = skewed(tt=True)
    assert unverified.count(pos, 3) == 97862 and sum(unverified.divide(pos, 3).values()) == 97862


# ----- no module reaches into another's private names ---------------------------------------------------
def private_uses(source: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The private names of other modules that ``source`` (a module's text) uses: names starting
    with one underscore imported ``from M import _x``, private modules imported (``from . import
    _core``), and attributes ``m._x`` of a name bound by an import. ``allowed``: private module
    names that may be imported (the extension ``_core``). Dunder names are public."""
    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    tree = ast.parse(source)
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                modules.add(bound)
                parts = alias.name.split(".") + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                for part in (p for name in parts for p in name.split(".")):
                    if private(part) and part not in allowed:
                        found.append(f"import {part}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            if private(node.attr):
                found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_private_use_check_catches_planted_uses():
    """The check, both ways: each planted private use is reported, their public forms are not."""
    planted = ("from . import zobrist\nfrom .position import _zobrist_seed\nfrom . import _core\n"
               "import perft_core._core as core\n"
               "def f(pos):\n    return zobrist._tables(pos), zobrist.__name__, pos.core_args()\n")
    assert private_uses(planted) == ["import _zobrist_seed", "import _core", "import _core", "zobrist._tables"]
    assert private_uses(planted, frozenset({"_core"})) == ["import _zobrist_seed", "zobrist._tables"]
    public = "from . import zobrist\nfrom .position import zobrist_seed\ndef f(pos):\n    return zobrist.new_tables(pos)\n"
    assert private_uses(public) == []


def test_the_api_uses_no_private_name_of_another_module():
    """api.py: not even the extension (it counts through a backend object)."""
    assert private_uses((ROOT / "perft_core" / "api.py").read_text()) == []


@pytest.mark.parametrize("module", ["backends", "estimate", "zobrist", "limits", "watch", "deep/worker", "deep/run",
                                    "deep/check", "deep/units", "deep/store"])
def test_modules_of_the_count_path_use_no_private_name_of_another_module(module):
    """The modules a count walks through import only the extension ``_core`` privately."""
    source = (ROOT / "perft_core" / f"{module}.py").read_text()
    assert private_uses(source, frozenset({"_core"})) == []


def test_perft_core_and_the_oracle_import_without_the_extension():
    """``import perft_core`` (and the oracle, its tables) needs no built extension: a count asks
    for it. A source checkout without a build, and the tests' subprocesses in a clean clone, import
    the package from the checkout (CI caught test_tables failing when backends imported it at once)."""
    code = ("import sys; sys.modules['perft_core._core'] = None  # as if no extension were built\n"
            "import perft_core, oracle\nfrom oracle import tables\nassert len(tables.load_all()) > 1000\n"
            "try:\n    perft_core.perft('8/8/8/8/8/8/8/K1k5 w - - 0 1', 2)\nexcept ImportError:\n    print('ok')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


@pytest.mark.parametrize("value", ["-1", "abc", "1e99", "²", "0"])
def test_a_bad_emulated_memory_names_its_variable(monkeypatch, value):
    """PERFT_EMULATED_MB=-1 said "negative dimensions are not allowed" and "abc" int()'s words (a
    helper's hunt, session 33): now the variable and what it takes; empty is unset (256 MiB), as
    PERFT_GPU_MB's empty value is."""
    from perft_core.gpu import registry

    monkeypatch.setenv("PERFT_EMULATED_MB", value)
    with pytest.raises(ValueError, match=f"PERFT_EMULATED_MB must be a positive number of MiB, got '{value}'"):
        registry._make_driver("gpu-emulated", None)
    monkeypatch.setenv("PERFT_EMULATED_MB", "")
    assert registry._make_driver("gpu-emulated", None).arena.capacity < 256 << 20
