"""Instructions per source line of one kernel launch: Nsight Compute's per-instruction counts joined
with the inline chains of ``nvdisasm -gi`` (NOTES.md, session 7: how the warp-shared leaf was found).

On the GPU machine, with a cubin built here by nvcc with ``-lineinfo`` (same nvcc version as there;
SASS is identical with or without the flag) and loaded by the driver::

    ncu --clock-control none --section SourceCounters --kernel-name regex:leaf_kernel \\
        --launch-count 1 -o REP python3 ...
    ncu -i REP.ncu-rep --page source --csv --print-source sass > launch.csv

Here (nvdisasm from the ``nvidia-cuda-nvdisasm`` wheel)::

    nvdisasm -gi -c pc_kernels.sm_90.cubin > kernels.sass
    python ci/sass_lines.py launch.csv kernels.sass [--frame pc_movegen.h:197] [--top 40]

Prints, per source line (the innermost frame, or with ``--frame FILE:LINE`` the frame that line
calls, e.g. the line of generate_legal that count_moves reached), its share of the launch's warp
instructions, the mean active lanes of those instructions (thread / warp instructions executed) and
its share of the warp stall samples. Only the standard library.
"""
from __future__ import annotations

import argparse
import collections
import csv
import re
import sys

Frame = tuple[str, int]  # (file name without directories, line)


def parse_sass(lines, function: str) -> dict[int, tuple[tuple[Frame, ...], str]]:
    """``nvdisasm -gi`` text -> {offset within ``function``: (inline chain, innermost first; instruction)}.

    ``function``: a substring of the mangled name (the first section whose header holds it).
    Raises ValueError when no such function is in the text.
    """
    inside, found, chain, pending, out = False, False, (), [], {}
    for line in lines:
        if line.startswith("//----"):
            inside = function in line and not found
            found = found or inside
            continue
        if not inside:
            continue
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', line)
        if m:
            pending.append((m.group(1).rsplit("/", 1)[-1], int(m.group(2))))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            if pending:
                chain, pending = tuple(pending), []
            out[int(m.group(1), 16)] = (chain, m.group(2))
    if not found:
        raise ValueError(f"no function matching {function!r} in the disassembly")
    return out


def read_counts(lines) -> tuple[str, list[tuple[int, int, int, int]]]:
    """``ncu --page source --csv --print-source sass`` -> (kernel name, [(offset, warp instructions,
    thread instructions, stall samples)]), offsets relative to the first instruction."""
    rows = list(csv.reader(lines))
    kernel, header = rows[0][1], rows[1]
    col = {name: header.index(name) for name in ("Address", "Instructions Executed",
                                                  "Thread Instructions Executed", "Warp Stall Sampling (All Samples)")}
    body = [r for r in rows[2:] if r and r[col["Address"]].startswith("0x")]
    base = int(body[0][col["Address"]], 16)

    def num(r, name):
        return int(r[col[name]] or 0)

    return kernel, [(int(r[col["Address"]], 16) - base, num(r, "Instructions Executed"),
                     num(r, "Thread Instructions Executed"), num(r, "Warp Stall Sampling (All Samples)")) for r in body]


def mangled_fragment(kernel: str) -> str:
    """A substring of the mangled name for ncu's demangled template kernel name:
    ``void leaf_kernel<(int)1, (int)3>(...)`` -> ``leaf_kernelILi1ELi3E``; other names: the bare name."""
    m = re.match(r"(?:void )?(\w+)<(.*?)>\(", kernel)
    if not m:
        return re.match(r"(?:void )?(\w+)", kernel).group(1)
    args = "".join(f"Li{v}E" for v in re.findall(r"\(int\)(-?\d+)", m.group(2)))
    return f"{m.group(1)}I{args}"


def per_line(sass, counts, frame: Frame | None = None) -> dict[Frame, list[int]]:
    """{source line: [warp instructions, thread instructions, stall samples]}; with ``frame``, the
    frame inside the chain that ``frame`` calls (instructions not under ``frame`` keep their innermost)."""
    out = collections.defaultdict(lambda: [0, 0, 0])
    for offset, warp, thread, stall in counts:
        chain, _ins = sass.get(offset, ((("?", 0),), ""))
        key = chain[0] if chain else ("?", 0)
        if frame is not None and frame in chain[1:]:
            key = chain[chain.index(frame) - 1]
        acc = out[key]
        acc[0] += warp
        acc[1] += thread
        acc[2] += stall
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --page source --csv --print-source sass output")
    ap.add_argument("sass", help="nvdisasm -gi -c output of the same cubin")
    ap.add_argument("--frame", help="FILE:LINE: group by the frame this line calls")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    with open(args.csv, newline="") as f:
        kernel, counts = read_counts(f)
    with open(args.sass) as f:
        sass = parse_sass(f, mangled_fragment(kernel))
    frame = None
    if args.frame:
        name, _, line = args.frame.rpartition(":")
        frame = (name, int(line))
    table = per_line(sass, counts, frame)
    warp = sum(v[0] for v in table.values()) or 1
    thread = sum(v[1] for v in table.values())
    stall = sum(v[2] for v in table.values()) or 1
    print(f"{kernel}\n{warp:,} warp instructions, {thread / warp:.1f} active lanes on average")
    print(f"{'source line':32s} {'instr':>7s} {'lanes':>6s} {'stalls':>7s}")
    for (name, line), (w, t, s) in sorted(table.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"{name + ':' + str(line):32s} {100 * w / warp:6.1f}% {t / max(w, 1):6.1f} {100 * s / stall:6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
