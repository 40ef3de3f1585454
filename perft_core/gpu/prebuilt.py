"""Precompiled GPU kernels: build kernels/pc_kernels.cu with nvcc at install time, one cubin per
architecture, and find the cubin that fits the device at run time.

A fresh machine (an empty CuPy kernel cache) would otherwise pay an NVRTC compile of every kernel
in its first count (about 10 s on an H200). ``setup.py``'s build step calls ``build`` when nvcc is
found; ``CupyKernels`` loads the cubin with ``cupy.RawModule(path=...)`` when ``find`` accepts it
and compiles with NVRTC (cached by CuPy, once per machine) otherwise.

Files, beside the kernel sources (``perft_core.kernels``): ``pc_kernels.sm_XX.cubin`` per
architecture and ``pc_kernels.cubin.json``, the manifest: ``sources`` (SHA-256 over the kernel
sources, see ``source_digest``), ``options`` (nvcc options beyond the architecture), ``compiler``,
``archs`` and ``names`` (name expression -> mangled symbol, e.g. ``"leaf_kernel<1,3>"`` ->
``"_Z11leaf_kernelILi1ELi3EEv..."``). A cubin whose sources or options differ from the ones at hand
is never used: editing a kernel falls back to NVRTC until the next build.

Only the standard library here: setup.py loads this file by path before the package is built.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

SIDES = (0, 1)
# Every kernel the drivers launch, as NVRTC name expressions (CupyKernels looks them up by these).
KERNEL_NAMES: tuple[str, ...] = tuple(
    [f"count_kernel<{s}>" for s in SIDES] + [f"gen_kernel<{s}>" for s in SIDES]
    + [f"make_kernel<{s}>" for s in SIDES] + [f"count_sum_kernel<{s}>" for s in SIDES]
    + [f"leaf_kernel<{s},{lv}>" for s in SIDES for lv in (2, 3, 4)]
    + [f"{k}<{s}>" for k in ("keys_kernel", "count_probe_kernel", "make_key_kernel") for s in SIDES]
    + [f"leaf_values_kernel<{s},{lv}>" for s in SIDES for lv in (2, 3)]
    + [f"{k}<{s}>" for k in ("leaf_heads_kernel", "leaf_keys_claim_kernel") for s in SIDES]
    + [f"{k}<{s}>" for k in ("stats_leaf_kernel", "stats_sum_kernel") for s in SIDES]
    + [f"{k}<{s}>" for k in ("stats_values_kernel", "stats_leaf_values_kernel", "stats_heads_kernel") for s in SIDES]
    + ["stats_probe_kernel", "stats_store_kernel"]
    + ["upsweep_kernel", "store_kernel", "upsweep_grouped_kernel", "widen_kernel", "count_hits_kernel", "part_filter_kernel",
       "scan_tiles_u32_kernel", "scan_tiles_u64_kernel", "scan_apply_u32_kernel", "scan_apply_u64_kernel",
       "merge_insert_kernel", "merge_heads_kernel", "merge_group_kernel",
       "leaf_merge_heads_kernel", "upsweep_heads_kernel",
       "part_flags_kernel", "rank_rows_kernel", "gather_rows_kernel", "scatter_rows_kernel", "take_u32_kernel", "nonzero_kernel"])
# Options of the default build, NVRTC and nvcc alike (CuPy adds the architecture).
OPTIONS: tuple[str, ...] = ("-std=c++17",)
MANIFEST = "pc_kernels.cubin.json"
DEFAULT_ARCHS = ("sm_80", "sm_90", "sm_100")  # A100, H100/H200, B200: those the installed nvcc supports


class PrebuildError(RuntimeError):
    """nvcc failed, or its report did not name every kernel."""


def source_digest(src_dir: str | os.PathLike) -> str:
    """SHA-256 (hex) over the names and bytes of the kernel sources (*.cu, *.cuh, *.h), in name order."""
    h = hashlib.sha256()
    for p in sorted(Path(src_dir).iterdir()):
        if p.suffix in (".cu", ".cuh", ".h"):
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def cubin_name(arch: str) -> str:
    return f"pc_kernels.{arch}.cubin"


def demangle(symbol: str) -> str:
    """Itanium name of a function (template with integer arguments) as a name expression:
    ``_Z11leaf_kernelILi1ELi3EEvPK5Board...`` -> ``leaf_kernel<1,3>``; ``_Z3fooPKi`` -> ``foo``.
    Anything else (nested names, other argument kinds) is returned unchanged."""
    m = re.match(r"_Z(\d+)", symbol)
    if not m:
        return symbol
    start = m.end()
    name = symbol[start:start + int(m.group(1))]
    rest = symbol[start + len(name):]
    if len(name) != int(m.group(1)):
        return symbol
    if not rest.startswith("I"):
        return name
    args = re.match(r"I((?:L[a-z]n?\d+E)+)E", rest)
    if not args:
        return symbol
    values = [("-" if neg else "") + v for neg, v in re.findall(r"L[a-z](n?)(\d+)E", args.group(1))]
    return f"{name}<{','.join(values)}>"


def find_nvcc() -> str | None:
    """nvcc on PATH, else under $CUDA_HOME / $CUDA_PATH / /usr/local/cuda; None when there is none."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    return None


def supported_archs(nvcc: str, wanted: Sequence[str] = DEFAULT_ARCHS) -> list[str]:
    """The architectures of ``wanted`` that ``nvcc --list-gpu-arch`` names (all of them if it cannot say)."""
    try:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return list(wanted)
    have = {a.replace("compute_", "sm_") for a in out.split()}
    return [a for a in wanted if a in have] if have else list(wanted)


def _compile(nvcc: str, src_dir: Path, out_dir: Path, arch: str) -> dict[str, str]:
    """One cubin; returns {name expression: mangled symbol} of its entry functions (from ptxas -v)."""
    out = out_dir / cubin_name(arch)
    cmd = [nvcc, "-cubin", f"-arch={arch}", *OPTIONS, f"-I{src_dir}", str(src_dir / "pc_kernels.cu"),
           "-o", str(out), "-Xptxas", "-v"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        report = (proc.stdout + proc.stderr)[-3000:]
        raise PrebuildError(f"nvcc failed (exit {proc.returncode}): {' '.join(cmd)}\n{report}")
    entries = re.findall(r"Compiling entry function '([^']+)'", proc.stdout + proc.stderr)
    return {demangle(e): e for e in entries}


def build(src_dir: str | os.PathLike, out_dir: str | os.PathLike, archs: Sequence[str] | None = None,
          nvcc: str | None = None, log=print) -> Path | None:
    """Compile the kernels for ``archs`` (default: DEFAULT_ARCHS that nvcc supports) into ``out_dir``.

    Skips the compile when ``out_dir`` already holds a manifest for the same sources, options and
    architectures. Returns the manifest's path, or None when no nvcc is found.
    Raises PrebuildError when nvcc fails or a kernel of KERNEL_NAMES is missing from its report.
    """
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        log("perft: nvcc not found: GPU kernels will be compiled by NVRTC at first use (cached by CuPy)")
        return None
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    archs = list(archs) if archs else supported_archs(nvcc)
    digest = source_digest(src_dir)
    manifest_path = out_dir / MANIFEST
    old = read_manifest(out_dir)
    if (old and old.get("sources") == digest and old.get("archs") == archs and old.get("options") == list(OPTIONS)
            and all((out_dir / cubin_name(a)).exists() for a in archs)):
        log(f"perft: precompiled GPU kernels up to date ({', '.join(archs)})")
        return manifest_path
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"perft: compiling GPU kernels with {nvcc} for {', '.join(archs)} (once per build)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(archs)) as pool:
        names = list(pool.map(lambda a: _compile(nvcc, src_dir, out_dir, a), archs))
    for arch, found in zip(archs, names):
        missing = [n for n in KERNEL_NAMES if n not in found]
        if missing:
            raise PrebuildError(f"nvcc's report for {arch} names no entry function for {', '.join(missing)}")
        if found != names[0]:
            raise PrebuildError(f"the kernels of {arch} are mangled differently from {archs[0]}'s")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    manifest = {"sources": digest, "options": list(OPTIONS), "archs": archs,
                "compiler": next((line for line in version if "release" in line), nvcc),
                "names": {n: names[0][n] for n in KERNEL_NAMES}}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest_path


def read_manifest(directory: str | os.PathLike) -> dict | None:
    """The manifest in ``directory``, or None when there is none or it is not valid JSON."""
    try:
        data = json.loads((Path(directory) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find(directory: str | os.PathLike, arch: str, options: Sequence[str] = ()) -> tuple[Path, dict[str, str]] | str:
    """The cubin for ``arch`` ("sm_90") in ``directory`` and its {name expression: symbol}, when it
    was built from the sources in ``directory`` with the default options and ``options`` is empty;
    else a one-line reason why not (for logs)."""
    if options:
        return f"options {' '.join(options)} differ from the precompiled build"
    manifest = read_manifest(directory)
    if manifest is None:
        return f"no {MANIFEST} (nvcc was not found at build time)"
    if manifest.get("sources") != source_digest(directory):
        return "the kernel sources changed since the build"
    if manifest.get("options") != list(OPTIONS):
        return f"built with options {manifest.get('options')}, expected {list(OPTIONS)}"
    path = Path(directory) / cubin_name(arch)
    if arch not in manifest.get("archs", []) or not path.exists():
        return f"no cubin for {arch} (built for {', '.join(manifest.get('archs', [])) or 'none'})"
    names = manifest.get("names", {})
    missing = [n for n in KERNEL_NAMES if n not in names]
    if missing:
        return f"the manifest lacks {', '.join(missing)}"
    return path, {n: names[n] for n in KERNEL_NAMES}
