"""Deep perft: work units run on Dask, a durable store, resume and verification.

``deep_perft(fen, depth, ...)`` (``perft_core.deep.run``) expands the tree on the host to a split
ply, merges equal positions by their 128-bit Zobrist key (``perft_core.deep.units``), counts each
unique position once on a Dask cluster (``perft_core.deep.worker``), and records every finished
unit in an SQLite store (``perft_core.deep.store``) so that a run survives a lost client or worker.
Dask is imported only when a run starts: ``import perft_core.deep`` needs nothing beyond
perft_core (install ``perft-oracle[dist]`` to run).
"""
from __future__ import annotations

from .store import StoreError
from .units import KeyCollisionError, Unit, split

__all__ = ["deep_perft", "DeepResult", "DeepError", "DeepStopped", "StoreError", "KeyCollisionError", "Unit", "split"]


def __getattr__(name: str):
    if name in ("deep_perft", "DeepResult", "DeepError", "DeepStopped"):
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module 'perft_core.deep' has no attribute {name!r}")
