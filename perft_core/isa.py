"""Which build of the CPU extension this processor runs (perft_core/_core.py loads it; setup.py
builds ``_core_base`` for the compiler's baseline and, on x86-64, ``_core_v3`` for x86-64-v3)."""
from __future__ import annotations

from pathlib import Path

# /proc/cpuinfo flag names of the x86-64-v3 level beyond the baseline (GCC's definition of the level:
# AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT (reported as "abm"), MOVBE).
V3_FLAGS = frozenset({"avx", "avx2", "bmi1", "bmi2", "fma", "abm", "movbe", "f16c"})
BUILDS = ("base", "v3")


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports (Linux); empty elsewhere or when unreadable."""
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def choose(flags: frozenset[str], forced: str | None = None) -> list[str]:
    """Extension module names to try, best first: ``_core_v3`` when every V3_FLAGS feature is in
    ``flags`` (or ``forced == "v3"``), then ``_core_base``; ``forced == "base"``: the base build only.

    Raises:
        ValueError: forced is not None, "base" or "v3".
    """
    if forced not in (None, *BUILDS):
        raise ValueError(f"PERFT_CORE must be one of {', '.join(BUILDS)}, got {forced!r}")
    if forced == "base":
        return ["_core_base"]
    if forced == "v3" or V3_FLAGS <= flags:
        return ["_core_v3", "_core_base"]
    return ["_core_base"]
