"""Static gate: per-kernel registers, local memory and spill bytes against ci/kernel_budgets.json.

Two sources of the numbers, one budget file for both:
- ``nvcc``: ``nvcc -cubin -arch=<budget arch> -Xptxas -v`` of kernels/pc_kernels.cu, whose offline
  block instantiates every kernel the driver launches. ptxas reports registers, the stack frame
  (local memory) and spill stores/loads per function. Runs on any machine with nvcc (CPU CI).
- ``cupy``: the kernels as the driver builds them (NVRTC, same CUDA version) and CuPy's function
  attributes: registers and local bytes per thread, but no spill counts, so spill budgets are
  checked only with nvcc. Runs on the GPU runner (``tox -e gpu``).
The two compilers can allocate a register or two differently; each kernel's ``measured`` keeps
both sources' last numbers and its budgets are derived from the larger (``updated_budgets``).

Budget file keys: ``arch`` (budgets are per architecture: sm_90 = H100/H200), ``block_threads``
(the launch size occupancy is computed for), ``register_ceiling`` (no kernel budget may exceed it),
``defaults`` (local_bytes, spill_stores, spill_loads for kernels that do not say), ``kernels``
(name -> registers [+ local_bytes, spill_stores, spill_loads, reason, measured]). A budget above
the defaults must carry a ``reason``: exceptions are documented where they are granted.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .table import markdown
from .workloads import ROOT
from perft_core.gpu import prebuilt  # after .workloads, which puts the source root on sys.path

BUDGET_FILE = ROOT / "ci" / "kernel_budgets.json"
KERNEL_SOURCE = ROOT / "kernels" / "pc_kernels.cu"
FIELDS = ("local_bytes", "spill_stores", "spill_loads")  # byte budgets, besides registers


class BudgetError(ValueError):
    """A budget file that cannot be read or breaks its own rules."""


class StaticGateError(RuntimeError):
    """The resource numbers could not be obtained (nvcc missing or failing, no GPU)."""


@dataclass(frozen=True)
class KernelResources:
    """Resources of one compiled function, per thread: registers, local memory (stack frame, bytes),
    spill stores/loads (bytes; None when the source does not report them), shared memory per block.
    ``entry`` is False for out-of-line device functions (nvcc lists them; no register line)."""

    name: str
    registers: int | None
    local_bytes: int
    spill_stores: int | None = None
    spill_loads: int | None = None
    shared_bytes: int | None = None
    entry: bool = True


# ----- sources ----------------------------------------------------------------------------------------------

demangle = prebuilt.demangle  # Itanium names of our kernel templates as CuPy's name expressions


_FUNC = re.compile(r"Function properties for (\S+)")
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")


def parse_ptxas(text: str) -> dict[str, KernelResources]:
    """Functions in ``nvcc -Xptxas -v`` output (one architecture), keyed by demangled name.

    Per function ptxas prints "Function properties for F" and "N bytes stack frame, S bytes spill
    stores, L bytes spill loads"; for entry functions (kernels) also "Used R registers[, ...,
    C bytes cumulative stack size][, M bytes smem][, B bytes lmem]". Local bytes = the larger of the
    frame and the cumulative stack (frames of called functions included), plus lmem.
    Raises ValueError when the text holds no function at all (nvcc without -Xptxas -v).
    """
    entries: set[str] = set()
    frames: dict[str, tuple[int, int, int]] = {}
    used: dict[str, str] = {}
    current_props = current_entry = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current_entry = m.group(1)
            entries.add(current_entry)
        elif m := _FUNC.search(line):
            current_props = m.group(1)
        elif (m := _STACK.search(line)) and current_props is not None:
            frames[current_props] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            current_props = None
        elif _USED.search(line) and current_entry is not None:
            used[current_entry] = line
            current_entry = None
    if not frames and not used:
        raise ValueError("no ptxas function report in the text (was nvcc run with -Xptxas -v?)")
    out = {}
    for sym in sorted(set(frames) | entries):
        frame, stores, loads = frames.get(sym, (0, 0, 0))
        line = used.get(sym, "")
        regs = int(_USED.search(line).group(1)) if line else None

        def amount(pattern: str) -> int:
            m = re.search(pattern, line)
            return int(m.group(1)) if m else 0

        local = max(frame, amount(r"(\d+) bytes cumulative stack size")) + amount(r"(\d+) bytes lmem")
        smem = amount(r"(\d+) bytes smem") if line else None
        name = demangle(sym)
        out[name] = KernelResources(name, regs, local, stores, loads, smem, entry=sym in entries)
    return out


def nvcc_resources(arch: str, options: Sequence[str] = (), nvcc: str | None = None,
                   source: Path = KERNEL_SOURCE, timeout: float = 600) -> tuple[dict[str, KernelResources], str]:
    """Compile ``source`` to a throw-away cubin for ``arch`` with ``-Xptxas -v``; returns the parsed
    functions and the raw report. Raises StaticGateError when nvcc is missing or fails."""
    nvcc = nvcc or shutil.which("nvcc")
    if not nvcc:
        raise StaticGateError("nvcc not found on PATH (the static gate needs nvcc on CPU, or --cupy on a GPU)")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++17", f"-I{source.parent}", str(source),
               "-o", str(Path(tmp) / "pc_kernels.cubin"), "-Xptxas", "-v", *options]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError) as exc:
            raise StaticGateError(f"could not run {' '.join(cmd)}: {exc}") from None
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise StaticGateError(f"nvcc failed (exit {proc.returncode}): {' '.join(cmd)}\n{text[-3000:]}")
    return parse_ptxas(text), text


def nvcc_version(nvcc: str | None = None) -> str:
    """"nvcc 13.0.88" (the release line of ``nvcc --version``), or "nvcc ?"."""
    try:
        out = subprocess.run([nvcc or shutil.which("nvcc") or "nvcc", "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "nvcc ?"
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    return f"nvcc {m.group(1)}" if m else "nvcc ?"


def cupy_resources(options: Sequence[str] = ()) -> tuple[dict[str, KernelResources], str]:
    """The driver's kernels built by CuPy/NVRTC on the current device: their attributes, and the
    device's architecture ("sm_90"). Raises StaticGateError without CuPy or a device."""
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        from perft_core.gpu.kernels import CupyKernels

        kernels = CupyKernels(options=tuple(options))
    except Exception as exc:  # ImportError, CUDARuntimeError, CompileException
        raise StaticGateError(f"could not build the kernels with CuPy: {type(exc).__name__}: {exc}") from None
    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    out = {name: KernelResources(name, a["registers"], a["local_bytes"], None, None, a["shared_bytes"])
           for name, a in kernels.attributes().items()}
    return out, arch


def cupy_version() -> str:
    """"CuPy 13.6.0, NVRTC 13.0, NVIDIA H200" for the budget file's provenance."""
    import cupy

    try:
        nvrtc = "NVRTC {}.{}".format(*cupy.cuda.nvrtc.getVersion())
    except Exception:  # an older CuPy without the binding: the version is not essential
        nvrtc = "NVRTC ?"
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"CuPy {cupy.__version__}, {nvrtc}, {name}"


# ----- occupancy --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of an architecture (CUDA C++ Programming Guide, compute capabilities table)."""

    registers: int = 65536
    max_warps: int = 64
    max_blocks: int = 32
    register_unit: int = 256  # registers are allocated per warp in units of this many
    shared_bytes: int = 233472  # 228 KiB per SM
    shared_reserved: int = 1024  # per block, by the system


SM_LIMITS = {"sm_90": SmLimits()}


def occupancy_warps(registers: int, threads: int, shared_bytes: int = 0, arch: str = "sm_90") -> int | None:
    """Resident warps per SM of a kernel using ``registers`` per thread in blocks of ``threads``;
    None for an architecture without limits here."""
    lim = SM_LIMITS.get(arch)
    if lim is None or registers <= 0 or threads <= 0:
        return None
    warps_per_block = -(-threads // 32)
    per_warp = -(-registers * 32 // lim.register_unit) * lim.register_unit
    blocks = min(lim.max_blocks, lim.max_warps // warps_per_block,
                 (lim.registers // per_warp) // warps_per_block,
                 lim.shared_bytes // (shared_bytes + lim.shared_reserved))
    return blocks * warps_per_block


# ----- budgets ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    registers: int
    local_bytes: int
    spill_stores: int
    spill_loads: int
    reason: str | None = None


@dataclass(frozen=True)
class Budgets:
    arch: str
    block_threads: int
    register_ceiling: int
    kernels: dict[str, Budget]
    defaults: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str, source: str = "budgets") -> Budgets:
        """Parse and validate a budget file; raises BudgetError naming ``source`` and the key."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BudgetError(f"{source}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BudgetError(f"{source}: expected a JSON object at the top")

        def count(obj: dict, key: str, where: str, default: int | None = None) -> int:
            v = obj.get(key, default)
            if v is None:
                raise BudgetError(f"{where}: missing '{key}'")
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise BudgetError(f"{where}: '{key}' must be a non-negative integer, got {v!r}")
            return v

        arch = data.get("arch")
        if not isinstance(arch, str) or not re.fullmatch(r"sm_\d+a?", arch):
            raise BudgetError(f"{source}: 'arch' must be like \"sm_90\", got {arch!r}")
        threads = count(data, "block_threads", source)
        ceiling = count(data, "register_ceiling", source)
        raw_defaults = data.get("defaults", {})
        if not isinstance(raw_defaults, dict):
            raise BudgetError(f"{source}: 'defaults' must be an object")
        defaults = {k: count(raw_defaults, k, f"{source}: defaults", 0) for k in FIELDS}
        raw = data.get("kernels")
        if not isinstance(raw, dict) or not raw:
            raise BudgetError(f"{source}: 'kernels' must be a non-empty object of kernel name -> budget")
        kernels = {}
        for name, b in raw.items():
            where = f"{source}: kernels.{name}"
            if not isinstance(b, dict):
                raise BudgetError(f"{where}: expected an object, got {type(b).__name__}")
            unknown = set(b) - {"registers", *FIELDS, "reason", "measured"}
            if unknown:
                raise BudgetError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
            regs = count(b, "registers", where)
            measured = b.get("measured", {})
            if not isinstance(measured, dict) or not all(isinstance(v, dict) for v in measured.values()):
                raise BudgetError(f"{where}: 'measured' must map a source (nvcc, cupy) to its numbers")
            if regs > ceiling:
                raise BudgetError(f"{where}: registers {regs} exceed the register_ceiling {ceiling}")
            budget = Budget(regs, *(count(b, k, where, defaults[k]) for k in FIELDS), reason=b.get("reason") or None)
            above = [k for k in defaults if getattr(budget, k) > defaults[k]]
            if above and not budget.reason:
                raise BudgetError(f"{where}: {', '.join(above)} above the defaults needs a 'reason'")
            kernels[name] = budget
        return cls(arch, threads, ceiling, kernels, defaults)

    @classmethod
    def load(cls, path: Path = BUDGET_FILE) -> Budgets:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise BudgetError(f"cannot read the budget file: {exc}") from None
        return cls.from_json(text, str(path))


def register_budget(registers: int, threads: int, arch: str) -> int:
    """The most registers per thread that keep the resident warps per SM of ``registers``
    (shared memory left out); ``registers`` itself for an architecture without limits here."""
    warps = occupancy_warps(registers, threads, 0, arch)
    if warps is None:
        return registers
    r = registers
    while r < 255 and occupancy_warps(r + 1, threads, 0, arch) == warps:
        r += 1
    return r


def updated_budgets(raw: dict, resources: dict[str, KernelResources], source: str,
                    provenance: str) -> tuple[dict, list[str]]:
    """The budget file (as parsed JSON) after ``--update`` from ``source`` ("nvcc" or "cupy").

    Each kernel's ``measured[source]`` is replaced; other sources' numbers are kept (run the update
    with both after a kernel change). Budgets are derived from the largest number over the sources:
    registers rounded up to the occupancy step (``register_budget``), local and spill bytes exactly
    (no growth without review; at or under the defaults they are left out). Reasons are kept;
    kernels no longer compiled are dropped. Returns the new dict and one line per change, with
    "needs a reason" lines for exceptions that have none (the file will not load until written).
    """
    raw = copy.deepcopy(raw)
    threads, arch = raw["block_threads"], raw["arch"]
    defaults = {f: raw.get("defaults", {}).get(f, 0) for f in FIELDS}
    old = raw.get("kernels", {})
    kernels, notes = {}, []
    for name, r in sorted(resources.items()):
        if not r.entry:
            continue
        entry = old.get(name, {})
        before = entry.get("measured") if isinstance(entry.get("measured"), dict) else {}
        measured = {k: v for k, v in before.items() if isinstance(v, dict) and k != source}
        now = {"registers": r.registers, "local_bytes": r.local_bytes}
        if r.spill_stores is not None:
            now.update(spill_stores=r.spill_stores, spill_loads=r.spill_loads)
        measured[source] = now
        measured = dict(sorted(measured.items()))
        regs = register_budget(max(m["registers"] for m in measured.values()), threads, arch)
        new: dict[str, object] = {"registers": regs}
        if entry.get("registers") != regs:
            notes.append(f"{name}: registers {entry.get('registers', '(new)')} -> {regs} "
                         f"({occupancy_warps(regs, threads, 0, arch)} warps/SM at {threads} threads)")
        for f in FIELDS:
            most = max(m.get(f, 0) for m in measured.values())
            if most > defaults[f]:
                new[f] = most
            if entry.get(f, defaults[f]) != new.get(f, defaults[f]):
                notes.append(f"{name}: {f} {entry.get(f, defaults[f])} -> {new.get(f, defaults[f])}")
        exceptions = [f for f in FIELDS if f in new]
        if exceptions and entry.get("reason"):
            new["reason"] = entry["reason"]
        elif exceptions:
            notes.append(f"{name}: needs a reason for {', '.join(exceptions)} above the defaults "
                         f"(write it in the file; it will not load until then)")
        new["measured"] = measured
        kernels[name] = new
    for name in sorted(set(old) - set(kernels)):
        notes.append(f"{name}: dropped, {source} compiled no such kernel")
    raw["kernels"] = kernels
    raw.setdefault("measured_with", {})[source] = provenance
    return raw, notes


def dump_budgets(raw: dict) -> str:
    """The budget file's JSON text: one line per kernel field, nested objects on one line."""
    def one(v: object) -> str:
        return json.dumps(v, separators=(", ", ": "))

    lines = ["{"]
    items = list(raw.items())
    for i, (key, value) in enumerate(items):
        end = "," if i < len(items) - 1 else ""
        if key == "kernels":
            lines.append('  "kernels": {')
            for j, (name, entry) in enumerate(value.items()):
                fields = [f"      {one(k)}: {one(v)}" for k, v in entry.items()]
                lines.append(f"    {one(name)}: {{\n" + ",\n".join(fields) + "\n    }"
                             + ("," if j < len(value) - 1 else ""))
            lines.append("  }" + end)
        elif isinstance(value, list):
            lines.append(f"  {one(key)}: [\n" + ",\n".join(f"    {one(v)}" for v in value) + "\n  ]" + end)
        else:
            lines.append(f"  {one(key)}: {one(value)}{end}")
    return "\n".join(lines + ["}"]) + "\n"


@dataclass(frozen=True)
class Violation:
    kernel: str
    message: str

    def __str__(self) -> str:
        return f"{self.kernel}: {self.message}"


def check(resources: dict[str, KernelResources], budgets: Budgets, source: str) -> list[Violation]:
    """Every budget a function passes, as a Violation naming the kernel and the numbers.

    Kernels (entry functions) need a budget; budgets need a compiled kernel; out-of-line device
    functions are held to the default spill budgets unless they have their own entry.
    Spill budgets are checked only when the source reports spills (nvcc).
    """
    out = []
    threads, arch = budgets.block_threads, budgets.arch
    for name, r in sorted(resources.items()):
        b = budgets.kernels.get(name)
        if b is None:
            if r.entry:
                out.append(Violation(name, f"no budget in ci/kernel_budgets.json (measured by {source}: "
                                           f"{describe(r)}); add one"))
            elif (r.spill_stores or 0) > budgets.defaults["spill_stores"] or \
                    (r.spill_loads or 0) > budgets.defaults["spill_loads"]:
                out.append(Violation(name, f"device function spills {r.spill_stores} B stores / {r.spill_loads} B "
                                           f"loads > default budget {budgets.defaults['spill_stores']}/"
                                           f"{budgets.defaults['spill_loads']} B"))
            continue
        if r.registers is not None and r.registers > b.registers:
            now = occupancy_warps(r.registers, threads, r.shared_bytes or 0, arch)
            was = occupancy_warps(b.registers, threads, r.shared_bytes or 0, arch)
            occ = f" (occupancy {was} -> {now} warps/SM at {threads} threads/block)" if now is not None else ""
            out.append(Violation(name, f"{r.registers} registers > budget {b.registers}{occ}"))
        if r.local_bytes > b.local_bytes:
            out.append(Violation(name, f"{r.local_bytes} B local memory per thread > budget {b.local_bytes} B"))
        for kind in ("spill_stores", "spill_loads"):
            v = getattr(r, kind)
            if v is not None and v > getattr(b, kind):
                out.append(Violation(name, f"{v} B {kind.replace('_', ' ')} > budget {getattr(b, kind)} B"))
    for name in sorted(set(budgets.kernels) - set(resources)):
        out.append(Violation(name, f"has a budget but {source} compiled no such kernel (renamed or removed?); "
                                   f"drop or rename its budget"))
    return out


def describe(r: KernelResources) -> str:
    """"40 registers, 8 B local, spill 16/16 B" (spills only when the source reports them)."""
    spill = f", spill {r.spill_stores}/{r.spill_loads} B" if r.spill_stores is not None else ""
    return f"{r.registers} registers, {r.local_bytes} B local{spill}"


def render(resources: dict[str, KernelResources], budgets: Budgets, violations: Sequence[Violation]) -> str:
    """Table: per function, the numbers with their budgets, warps/SM and a verdict."""
    bad = {v.kernel for v in violations}
    rows = []
    for name in sorted(set(resources) | set(budgets.kernels)):
        r, b = resources.get(name), budgets.kernels.get(name)
        if r is not None and not r.entry and name not in bad and b is None:
            continue  # device functions are listed only when they break a rule
        regs = warps = local = spill = shared = None
        if r is not None and not r.entry and b is None:  # an out-of-line device function: spills only
            d = budgets.defaults
            spill = f"{r.spill_stores}+{r.spill_loads} / {d['spill_stores']}+{d['spill_loads']}"
        elif r is not None:
            regs = f"{r.registers if r.registers is not None else '-'} / {b.registers if b else '?'}"
            if r.registers:
                warps = occupancy_warps(r.registers, budgets.block_threads, r.shared_bytes or 0, budgets.arch)
            local = f"{r.local_bytes} / {b.local_bytes if b else '?'}"
            if r.spill_stores is not None:
                spill = (f"{r.spill_stores}+{r.spill_loads} / "
                         f"{f'{b.spill_stores}+{b.spill_loads}' if b else '?'}")
            shared = r.shared_bytes
        rows.append([name if r is None or r.entry else f"{name} (device fn)", regs, warps, local, spill, shared,
                     "FAIL" if name in bad else "ok"])
    return markdown(["kernel", "registers / budget", "warps/SM", "local B / budget", "spill st+ld B / budget",
                     "shared B", "verdict"], rows, "lrrrrrl")
