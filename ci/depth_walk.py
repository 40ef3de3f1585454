"""The walk of ``depth`` through ``perft_core.perft``: which modules a count enters, in order.

    python ci/depth_walk.py

For a few option sets (plain, tables with a verify seed, time-limited, the emulated GPU), prints
every call edge ``caller module.function -> callee module.function`` whose callee takes a ``depth``
argument (each edge once, in the order first made), and the modules those edges pass through.
Calls made inside the counting engines (``perft_core.gpu.*``, ``limits``) are not followed: the
walk is the API's, not the BFS's. Issue 27 (item 5) asked that the walk enter each module once;
NOTES "Session 11: issue 27 — one backend interface" has the walk before and after.
"""
from __future__ import annotations

import sys

import perft_core

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
CASES = (
    {},
    {"tt": True, "verify_seed": 5},
    {"tt": True, "verify_seed": 5, "max_seconds": 60},
    {"backend": "gpu-emulated", "tt": True, "verify_seed": 5, "max_seconds": 60, "force": True},
    {"backend": "gpu-emulated", "tt": True, "max_estimate_seconds": 0.01},
)
NOT_FOLLOWED = ("gpu.", "limits")


def walk(fen: str, depth: int, **options) -> tuple[list[str], list[str]]:
    """(call edges, modules passed through) of ``perft_core.perft(fen, depth, **options)``."""
    edges: list[str] = []

    def profile(frame, event, arg):
        code = frame.f_code
        if event != "call" or "depth" not in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            return
        callee, caller = frame.f_globals.get("__name__", ""), frame.f_back
        source = caller.f_globals.get("__name__", "") if caller else ""
        if not callee.startswith("perft_core") or callee == source:
            return
        source = "caller" if source == __name__ else source
        if not (source == "caller" or source.startswith("perft_core")):
            return
        callee, source = callee.removeprefix("perft_core."), source.removeprefix("perft_core.")
        if source.startswith(NOT_FOLLOWED):
            return
        edge = f"{source}.{caller.f_code.co_name} -> {callee}.{code.co_name}"
        if edge not in edges:
            edges.append(edge)

    sys.setprofile(profile)
    try:
        perft_core.perft(fen, depth, progress=False, **options)
    finally:
        sys.setprofile(None)
    modules: list[str] = []
    for edge in edges:
        for side in edge.split(" -> "):
            module = side.rsplit(".", 1)[0]
            if module != "caller" and (not modules or modules[-1] != module):
                modules.append(module)
    return edges, modules


def main() -> None:
    for options in CASES:
        edges, modules = walk(KIWIPETE, 4, **options)
        print(f"perft(Kiwipete, 4, {', '.join(f'{k}={v!r}' for k, v in options.items())})")
        print("    edges:  ", " | ".join(edges))
        print("    modules:", " -> ".join(modules))


if __name__ == "__main__":
    main()
