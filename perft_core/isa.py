"""Which build of the CPU extension this processor runs (perft_core/_core.py loads it). setup.py builds
``_core_base`` for the compiler's baseline and, on x86-64, two x86-64-v3 builds: ``_core_v3`` with
BMI2 PEXT slider lookups and ``_core_v3magic`` with magic multiplication instead, for the processors
whose PEXT is microcoded (AMD families 15h-18h: Excavator, Zen, Zen+, Zen 2 and Hygon Dhyana: a
latency that grows with the mask's bits, up to about 290 cycles, against 3 on Intel since Haswell
and AMD since Zen 3; uops.info, https://uops.info/html-instr/PEXT_R64_R64_R64.html)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# /proc/cpuinfo flag names of the x86-64-v3 level beyond the baseline (GCC's definition of the level:
# AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT (reported as "abm"), MOVBE).
V3_FLAGS = frozenset({"avx", "avx2", "bmi1", "bmi2", "fma", "abm", "movbe", "f16c"})
BUILDS = ("base", "v3", "v3magic")
# Vendors whose processors of a family below FAST_PEXT_FAMILY have a microcoded PEXT (AMD family 19h
# is Zen 3 and Zen 4, 1Ah Zen 5; Hygon's family 18h is a Zen core).
SLOW_PEXT_VENDORS = frozenset({"AuthenticAMD", "HygonGenuine"})
FAST_PEXT_FAMILY = 0x19


@dataclass(frozen=True)
class Cpu:
    """What /proc/cpuinfo says of the first processor: feature flags, vendor id, family (-1: unknown)."""

    flags: frozenset[str] = frozenset()
    vendor: str = ""
    family: int = -1

    @property
    def slow_pext(self) -> bool:
        """True when this processor's PEXT is microcoded (module docstring), so magic lookups are faster."""
        return self.vendor in SLOW_PEXT_VENDORS and 0 <= self.family < FAST_PEXT_FAMILY


def cpu_info(cpuinfo: str | Path = "/proc/cpuinfo") -> Cpu:
    """The first processor's flags, vendor and family as the kernel reports them (Linux); an empty
    Cpu elsewhere or when the file is unreadable."""
    fields: dict[str, str] = {}
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            if not line.strip():
                if fields:
                    break  # the first processor's block is enough
                continue
            key, sep, value = line.partition(":")
            if sep:
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return Cpu()
    try:
        family = int(fields.get("cpu family", "-1"))
    except ValueError:
        family = -1
    return Cpu(frozenset(fields.get("flags", "").split()), fields.get("vendor_id", ""), family)


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports (Linux); empty elsewhere or when unreadable."""
    return cpu_info(cpuinfo).flags


def choose(cpu: Cpu | frozenset[str], forced: str | None = None) -> list[str]:
    """Extension module names to try, best first (a build that is absent is skipped by the caller).

    ``cpu``: a Cpu, or only its flags (then PEXT counts as fast). With every V3_FLAGS feature:
    ``_core_v3`` (PEXT), or ``_core_v3magic`` first where PEXT is slow (``Cpu.slow_pext``); then
    ``_core_base``. Without them: ``_core_base``. ``forced`` (PERFT_CORE): that build, then
    ``_core_base``; ``"base"``: the base build only.

    Raises:
        ValueError: forced is not None and not one of BUILDS.
    """
    if forced not in (None, *BUILDS):
        raise ValueError(f"PERFT_CORE must be one of {', '.join(BUILDS)}, got {forced!r}")
    if not isinstance(cpu, Cpu):
        cpu = Cpu(frozenset(cpu))
    if forced == "base":
        return ["_core_base"]
    if forced is not None:
        return [f"_core_{forced}", "_core_base"]
    if V3_FLAGS <= cpu.flags:
        v3 = ["_core_v3magic", "_core_v3"] if cpu.slow_pext else ["_core_v3", "_core_v3magic"]
        return [*v3, "_core_base"]
    return ["_core_base"]
