"""The client of a deep perft: plan the units, run them on Dask, record them, verify, add up.

Phases: (1) count every unit not yet counted; (2) with a verify seed, count the sampled units
again through tables keyed by that seed; (3) count every unit whose two counts differ once more
without tables, and take that count. Each phase submits units largest first with at most a few per
worker in flight, consumes them with ``distributed.as_completed`` and commits each result to the
store as it arrives. Dask reruns the task of a lost worker elsewhere (its scheduler's
``allowed-failures``) and retries a task that raised (``dispatch.RETRIES``).

The cluster is ``cluster.py``'s; how a phase's units become tasks and go out, ``dispatch.py``'s;
what a worker runs, ``worker.py``'s; the store, ``store.py``'s. This module plans the run and its
phases and adds up.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field

from .. import _core, limits
from ..gpu import tableimage
from ..api import BACKENDS
from ..position import Position
from . import cluster
from . import units as units_mod
from . import worker
from .dispatch import (
    MAX_PARTS,
    Progress,
    calibrate_speed,
    choose_parts,
    load_table_images,
    phase_done,
    read_tables,
    run_phase,
    sample_keys,
    save_table_images,
    seconds_per_estimate,
    share_by_estimate,
)
from . import errors
from .errors import DeepError, DeepStopped, Overdue
from .store import (
    PART_CUT_BOARD,
    PART_CUT_KEY,
    PART_CUTS,
    PART_DEPTH,
    RUN_OPTIONS,
    Store,
    StoreError,
    StoreWriteError,
    check_new_store_path,
    default_store_path,
    stats_values,
    sum_stats_texts,
)

__all__ = ["deep_perft", "DeepResult", "DeepError", "DeepStopped", "check_estimate"]


@dataclass
class DeepResult:
    """The outcome of :func:`deep_perft`.

    nodes: perft(fen, depth) (Python int); seconds: this call's wall time; store: the store's path;
    fen, depth, split_ply, backend, tt: the run; units: unit count; parts: the parts each unit is
    counted in (one per GPU worker with tables, else 1; ``TTBfsDriver.set_part``), split at remaining
    depth part_depth, cut by part_cut ("board" or "key"); counted_now:
    unit parts (store rows) counted by this call (the rest came from the store); verified: units
    whose every part was counted again with the verify seed (0 without one); verify: how the run
    was verified, in words; mismatches: the units whose two counts differed, as dicts
    (:func:`_unit_mismatches`: unit, fen, rows, count, verify_count, recount, differs); count_seconds: wall time
    of this call's counting phase (first submission to last result, after a small warm-up count
    on every worker; 0 if nothing was left);
    unit_seconds: the workers' seconds over all units of the run, every session (first counts);
    tt_probes / tt_hits: device TT probes and hits over those counts (GPU backends with TTs, else 0);
    tampered: unit rows found changed when the store was opened (dicts: idx, unit, part, fen,
    count, why: ``store.TAMPERED_WHY``'s key: "checksum", "status" or "plan"), counted again by
    this call instead of summed;
    tables / verify_tables: the transposition tables' statistics per remaining depth over the run's
    first counts / its verify counts, every session and worker (``Store.table_statistics``: probes,
    hits and hit rate, host cache probes, hits and rate, stores; slots, occupied and evictions of the
    workers' tables as last read; GPU backends with tables, else {}).
    stats: a statistics run's perft statistics (``perft_core.Stats``: the units' counters times
    their multiplicities, summed), else None.
    timings: wall seconds of this call's steps (floats; a step not taken is absent or 0):
    ``cluster_start`` (the Dask cluster or client until a worker is up), ``calibrate`` (speed counts
    on a worker), ``split`` (the units on the host), ``store_create``, ``store_open`` (a resumed
    store read again: its checksums and its split), ``warm_up`` (every worker
    makes its driver), ``count`` (= count_seconds), ``dispatch`` (of the count phase, the time its
    busiest worker was not counting), ``store`` (the store's writes of results, every phase),
    ``read_tables``, ``verify``, ``recount``, ``load_tables`` (the workers' loads of the table
    images before a phase), ``save_tables`` (their saves at the time limit).
    images: the table images (``perft_core.gpu.tableimage``: a GPU run's tables saved beside its
    store when a command stops at its time limit, loaded when it resumes): ``{"loaded": [each
    worker's load: part, path, loaded, reason, entries per remaining depth, host_entries, bytes,
    seconds], "saved": [each part's save: part, path, bytes, seconds, tables, host_entries,
    skipped]}``; empty lists without tables or on the CPU.
    workers: this call's count phase per worker address: ``{"busy": seconds its tasks took (wall,
    in the worker), "kernels": device seconds of their kernels (None on the CPU), "leaf_moves",
    "leaf_positions": the moves its leaf merges grouped and the positions the fused leaf counted
    for them (GPU backends with tables, else None)}``; busy minus kernels is the host's share of a
    GPU worker's counting (its host levels, launches, the reads); moves over positions is what its
    leaf merge saved (a part's: repeats whose parents are in other parts are not merged).
    """

    nodes: int
    seconds: float
    store: str
    fen: str
    depth: int
    split_ply: int
    backend: str
    tt: bool
    units: int
    parts: int
    counted_now: int
    verified: int
    verify: str
    mismatches: list[dict] = field(default_factory=list)
    count_seconds: float = 0.0
    unit_seconds: float = 0.0
    tt_probes: int = 0
    tt_hits: int = 0
    tampered: list[dict] = field(default_factory=list)
    part_depth: int = PART_DEPTH
    part_cut: str = PART_CUT_KEY
    tables: dict = field(default_factory=dict)
    verify_tables: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    stats: object = None
    images: dict = field(default_factory=dict)
    workers: dict = field(default_factory=dict)

    def summary(self) -> str:
        """The final line: total, time and store."""
        return f"perft {self.depth}: {self.nodes} nodes in {self.seconds:.1f} s (store {self.store})"

    def as_dict(self) -> dict:
        """The result as JSON-ready values (``stats`` as ``Stats.to_json()`` plus its CPW columns)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        if self.stats is not None:
            out["stats"] = self.stats.to_json() | {"cpw": self.stats.cpw()}
        return out


def _positive(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check(fen, depth, backend, tt, workers, gpus, scheduler, split_ply, store, resume, verify_seed,
           verify_sample) -> None:
    if resume is None:
        if fen is None or depth is None:
            raise ValueError("a deep run needs a FEN and a depth (or resume=STORE)")
        if store is not None:
            check_new_store_path(store)  # holds data, or a device, FIFO or socket: refused before any work
    elif store is not None:
        raise ValueError("give either store= (a new run) or resume= (continue one), not both")
    if depth is not None:
        limits.check_depth(depth)
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if tt is not None and not isinstance(tt, bool):
        raise ValueError(f"tt must be True or False, got {tt!r}")
    if sum(x is not None for x in (workers, gpus, scheduler)) > 1:
        raise ValueError("give at most one of workers, gpus and scheduler")
    _positive("workers", workers)
    if workers is not None:
        limits.check_local_workers(workers)
    _positive("gpus", gpus)
    if split_ply is not None:
        limits.check_split_ply(split_ply, depth)
    if verify_seed is not None:
        if isinstance(verify_seed, bool) or not isinstance(verify_seed, int) or not 0 <= verify_seed < 2**64:
            raise ValueError(f"verify seed must be an integer in 0..2**64-1, got {verify_seed!r}")
        if verify_seed == _core.ZOBRIST_DEFAULT_SEED:
            raise ValueError(f"verify seed must differ from the key seed {_core.ZOBRIST_DEFAULT_SEED:#x}")
    if verify_sample is not None:
        if isinstance(verify_sample, bool) or not isinstance(verify_sample, (int, float)) or not 0 < verify_sample <= 1:
            raise ValueError(f"verify sample must be a fraction in (0, 1], got {verify_sample!r}")
        if verify_seed is None and resume is None:
            raise ValueError("verify sample needs a verify seed")


def _sum_nodes(rows: list[dict]) -> int:
    """A run's total nodes: each counted row's count (a recounted row's recount) times its
    multiplicity (``rows`` from ``Store.checked_rows``)."""
    return sum(int(r["multiplicity"]) * int(r["recount"] if r["recount"] is not None else r["count"]) for r in rows)


def _unit_mismatches(rows: list[dict], stats: bool) -> list[dict]:
    """The units whose count under the verify seed differed (their rows in status mismatch or
    recounted), one dict a unit, in unit order: unit, fen, rows (its rows' idx), count,
    verify_count, recount (the unit's parts summed, decimal text; None where a part has none: a
    unit's parts are cut by each seed's keys, so only the sums compare), differs (what differed:
    "nodes" and, in a statistics run, each counter of ``perft_core.stats.STATS_FIELDS`` whose sums
    differ)."""
    from ..stats import STATS_FIELDS

    by_unit: dict[int, list[dict]] = {}
    for r in rows:
        if r["status"] in ("mismatch", "recounted"):
            by_unit.setdefault(r["unit"], []).append(r)

    def total(rs: list[dict], key: str) -> str | None:
        return None if any(r[key] is None for r in rs) else str(sum(int(r[key]) for r in rs))

    out = []
    for unit, rs in sorted(by_unit.items()):
        m = {"unit": unit, "fen": rs[0]["fen"], "rows": [r["idx"] for r in rs], "count": total(rs, "count"),
             "verify_count": total(rs, "verify_count"), "recount": total(rs, "recount")}
        m["differs"] = ["nodes"] if m["count"] != m["verify_count"] else []
        texts = [r.get("stats") for r in rs], [r.get("verify_stats") for r in rs]
        # counters that are not 13 decimals are named by _sum_stats, not here
        if stats and all(stats_values(t) is not None for ts in texts for t in ts):
            first, second = (sum_stats_texts(ts) for ts in texts)
            m["differs"] += [name for name, a, b in zip(STATS_FIELDS, first, second) if a != b and name != "nodes"]
        out.append(m)
    return out


def _sum_stats(st: Store, rows: list[dict]):
    """A statistics run's total: each row's counters (proven by its checksum: ``rows`` from
    ``Store.checked_rows``; a recounted row's recount's) times its multiplicity. Raises DeepError for
    a counted row without counters or whose nodes differ from its count."""
    from ..stats import Stats

    total = Stats()
    for r in rows:
        recounted = r["recount"] is not None
        text, count = (r.get("recount_stats"), r["recount"]) if recounted else (r.get("stats"), r["count"])
        values = stats_values(text)
        if values is None or values[0] != count:
            raise DeepError(f"store {st.path}: unit {r['unit']} part {r['part']} has statistics {text!r} that do not "
                            f"match its {'recount' if recounted else 'count'} {count}")
        total = total + Stats.from_tuple(int(v) for v in values) * int(r["multiplicity"])
    return total


def check_estimate(pos: Position, depth: int, backend: str, tt: bool, workers: int,
                   max_seconds: float | None = None, cost: float = 1.0) -> None:
    """Refuse (CountRefused) a run of perft(pos, depth) that even a fast speed says takes longer than
    ``max_seconds`` (default ``estimate.DEFAULT_MAX_ESTIMATE_SECONDS``) on ``workers`` workers of
    ``backend``: the cheap node bound over the backend's speed floor first (about 1 ms), the sampled
    CPU estimate (``estimate.estimate``, 20-250 ms) only when that bound is over; the speed is the
    larger of the measured CPU speed and the backend's floor, times the workers (a GPU counts far
    faster than the CPU probe). With ``tt``, only the count through perfect tables is judged.
    ``cost``: the count's time as a multiple of the plain count's (a backend's ``stats_cost`` for
    statistics)."""
    from .. import estimate
    from ..api import BACKENDS as _BACKENDS
    from ..errors import CountRefused

    limits.check_depth(depth)
    limit = estimate.DEFAULT_MAX_ESTIMATE_SECONDS if max_seconds is None else max_seconds
    floor = _BACKENDS[backend].speed_floor
    if estimate.node_bound(pos, depth) / (floor * workers) * cost <= limit:
        return
    est = estimate.estimate(pos, depth, backend="cpu", threads=1, tt=tt)
    speed = max(est.nodes_per_second, floor) * workers / cost
    seconds = est.nodes / speed * (est.tt_fraction if tt else 1.0)
    if seconds > limit:
        how = f"{workers} {backend} worker{'s' * (workers != 1)}"
        basis = (f"the {backend} backend's floor of {estimate.format_speed(floor)} a worker"
                 if est.nodes_per_second < floor else "the CPU speed measured here")
        raise CountRefused(est, limit, f"perft deep {depth}: about {est.nodes:.2g} nodes, about "
                           f"{estimate.format_seconds(seconds)} at {estimate.format_speed(speed)} ({how}"
                           f"{', tt at best' if tt else ''}; speed from {basis}): over the limit of "
                           f"{estimate.format_seconds(limit)}")


def deep_perft(fen: str | None = None, depth: int | None = None, *, backend: str | None = None,
               tt: bool | None = None, workers: int | None = None, gpus: int | None = None,
               scheduler: str | None = None, split_ply: int | None = None, store: str | os.PathLike | None = None,
               resume: str | os.PathLike | None = None, verify_seed: int | None = None,
               verify_sample: float | None = None, progress: bool | str = False, force: bool = False,
               max_estimate_seconds: float | None = None, on_new_store=None,
               max_seconds: float | None = None, stats: bool | None = None,
               part_depth: int | None = None, part_cut: str | None = None, parts: int | None = None) -> DeepResult:
    """perft(fen, depth) as work units on Dask, recorded in a durable store.

    Args:
        fen, depth: the position (FEN / X-FEN / Shredder-FEN) and plies; omit both with ``resume``.
        backend: "cpu" (default), "gpu" or "gpu-emulated", on the workers; tt: count through
            transposition tables (default False), kept warm across a worker's units.
        workers: a LocalCluster of that many processes (one thread each; default 1 for cpu and
            gpu-emulated); gpus: a dask-cuda LocalCUDACluster of one worker per GPU (backend gpu;
            default 1, and for a resumed run of P parts min(P, the GPUs visible)); scheduler: the
            address of an existing Dask scheduler (any backend).
        split_ply: plies expanded on the host (default: ``units.choose_split_ply`` from the first
            plies' growth and a speed measured on a worker).
        store: the new store's path (default ``store.default_store_path()``: in the user's data
            folder, never the current one); it must not hold data or be a device, FIFO or socket.
            resume: the path of a store to continue; options given must match its run, except
            that a run with tables and without a verify seed takes one (``Store.add_verification``).
        verify_seed: count the units again with tables keyed by this Zobrist seed (needs tt);
            verify_sample: the fraction of units to verify, rounded up to whole units (default 1:
            all; the units of lowest key bits, ``dispatch.sample_keys``: the same units every time).
        progress: True or "bar": a rich progress bar on stderr; "lines": a line on stderr at most
            every PROGRESS_LINE_SECONDS and at each phase's end (a log file); False: nothing.
        force, max_estimate_seconds: a new run estimated (:func:`check_estimate`) to take longer
            than ``max_estimate_seconds`` (default ``estimate.DEFAULT_MAX_ESTIMATE_SECONDS``, a day)
            is refused before any cluster, split or store is made, unless ``force`` (with
            ``scheduler`` the workers are not known yet: the estimate counts one). ``max_seconds``
            does not lift it: such a run would make its split and store (a CPU perft 13 at split
            ply 5: 822,518 units, 217 MB, 41 s) for a count that never ends.
        on_new_store: called with the new store's path (a Path) once the store is made, before any
            count (the CLI says where a default store went).
        max_seconds: a time limit for this call (seconds from its start): tasks are cut and
            started only where they are estimated (the run's measured seconds per estimated node,
            times BUDGET_MARGIN) to end within it, so a batch job of fixed length or a machine lent
            for minutes loses no work; a task that runs past it is waited for. The steps before the
            count poll it too (a new run's split and store, every 4,096 units; a resumed store's
            opening: its SQL and its split), so a split too big for the limit stops near it with no
            store left, not a minute past it. Default: none.
        stats: count perft statistics (``perft_core.Stats``: the leaf moves by kind) of every unit,
            with ``tt`` on the GPU backends in parts as a plain run's (a part's counters are its leaf
            moves') through statistics tables each worker keeps warm across the run's units
            (``worker.count_stats``, ``TTBfsDriver.count_roots``), else whole; the store keeps each
            row's counters under its checksum and the result's ``stats`` is their sum; with a
            verify seed each sampled unit's 13 counters are counted again and compared. A resumed
            run keeps its own (asking otherwise is a StoreError).
        part_depth: the remaining depth (plies, >= 3) at which a unit counted in parts is split
            among them (``TTBfsDriver.set_part``; default PART_DEPTH, 3: splits at 4 measured 1.44x
            slower at perft 12 and about 1.5x slower at perft 13 on four H200s, NOTES.md session
            17). A resumed run keeps its own (asking otherwise is a StoreError); a run of whole
            units ignores it.
        part_cut: how the parts divide the split level (``perft_core.gpu.kernels.Split``): "board"
            (the default; a hash of the pieces of the side not to move, so a leaf position that two
            orders of one side's quiet moves reach is counted in one part) or "key" (the Zobrist
            key's top bits: every run stored before schema 9; NOTES.md, session 33, has the two
            measured). A resumed run keeps its own (asking otherwise is a StoreError); a run of
            whole units ignores it.
        parts: count each unit in this many parts (1..MAX_PARTS; gpu backends with ``tt``) instead
            of one per worker. Fewer workers than parts take turns at them, each part's tasks one
            after another with the whole of the GPU's tables for that part's share of the split
            level and below; under ``max_seconds`` a worker stays on its part to the end. The
            default stays one part a worker: on one batch from empty tables, four parts of perft 13
            units cost 6 % more device time on one H200 and eight 15 % (NOTES.md, session 35);
            over a whole one-GPU run it is not measured. A resumed run keeps its own (asking
            otherwise is a StoreError).

    Returns:
        DeepResult (its ``nodes`` is the count, a Python int).

    Raises:
        ValueError: bad options; FenError: a bad FEN; CountRefused (a ValueError): estimated over
        the limit; LimitError: a split that cannot fit the memory; StoreError (a ValueError): the store is
        missing, corrupt, of another run or in use; KeyCollisionError: two positions share a key
        at the split; DeepError: Dask missing, or units failed on every try (finished units stay
        in the store: resume); DeepStopped (a DeepError): ``max_seconds`` reached with units left
        (nothing lost: resume), or reached before the count: while a new run splits or writes its
        store (no store is left: run it again) or a resumed store is opened (its rows and counts
        unchanged); StatsUnsupported (a ValueError): ``stats`` with ``tt`` on a backend without
        statistics tables (every backend has them now).
    """
    t0 = time.perf_counter()
    _check(fen, depth, backend, tt, workers, gpus, scheduler, split_ply, store, resume, verify_seed, verify_sample)
    if stats and split_ply is not None and depth and split_ply >= depth:
        # a unit at depth 0 is one position: the counters of the move into it (capture, check, ...) are lost
        raise ValueError(f"statistics need units of at least one ply (they classify the moves of the last ply): "
                         f"split ply {split_ply} must be below the depth {depth}")
    if part_depth is not None and (isinstance(part_depth, bool) or not isinstance(part_depth, int) or part_depth < 3):
        raise ValueError(f"part_depth must be an integer >= 3 (remaining plies at the split of parts), got {part_depth!r}")
    if parts is not None and (isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= MAX_PARTS):
        raise ValueError(f"parts must be an integer from 1 to {MAX_PARTS}, got {parts!r}")
    if part_cut is not None and part_cut not in PART_CUTS:
        raise ValueError(f"part_cut must be one of {', '.join(PART_CUTS)}, got {part_cut!r}")
    if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(max_seconds, (int, float))
                                    or not math.isfinite(max_seconds) or max_seconds <= 0):
        raise ValueError(f"max_seconds must be a positive number of seconds, got {max_seconds!r}")
    add_verify = None  # a verify pass added to a resumed run without one: written once every option is accepted
    # the steps before the count (a new run's split and store, a resumed store's opening) poll it too
    deadline = None if max_seconds is None else t0 + max_seconds
    timings: dict[str, float] = {}
    if resume is not None:
        try:
            t = time.perf_counter()
            st = Store.open(resume, deadline=deadline)
        except Overdue as exc:
            timings["store_open"] = time.perf_counter() - t
            raise _stopped_before(str(resume), exc.step, t0, timings) from None
        timings["store_open"] = time.perf_counter() - t
        try:
            if verify_seed is not None and st.run["verify_seed"] is None:
                add_verify = (verify_seed, 1.0 if verify_sample is None else verify_sample)
            # a run of whole units ignores part_depth (its store records the default), as a new run does
            asked = dict(zip(RUN_OPTIONS, (None if fen is None else Position.from_fen(fen).fen(), depth, split_ply,
                                           backend, tt, None, None if add_verify else verify_seed,
                                           None if add_verify else verify_sample, stats,
                                           part_depth if st.run["parts"] > 1 else None,
                                           part_cut if st.run["parts"] > 1 else None)))
            st.check_options(asked)
            if parts is not None and parts != st.run["parts"]:
                have = st.run["parts"]
                raise StoreError(f"store {st.path} is a run in {have} part{'s' * (have != 1)}, not {parts}; resume it "
                                 f"without that option or use a new store")
        except BaseException:
            st.close()
            raise
        run = st.run
        backend, tt, verify_seed, verify_sample = run["backend"], run["tt"], run["verify_seed"], run["verify_sample"]
    else:
        pos = Position.from_fen(fen)
        backend = backend or "cpu"
        tt = bool(tt)
        stats = bool(stats)
        if stats and tt and not BACKENDS[backend].stats_tables:
            from ..errors import StatsUnsupported

            raise StatsUnsupported(f"backend {backend!r} counts no statistics through tables")
        if verify_seed is not None and not tt:
            raise ValueError("verify seed needs tt (it counts again through tables keyed by another seed)")
        if parts is not None and parts > 1 and not (tt and backend in ("gpu", "gpu-emulated")):
            choose_parts(backend, tt, depth, 1, part_depth or PART_DEPTH, parts)  # raises, naming why
        if verify_seed is not None and verify_sample is None:
            verify_sample = 1.0
        if not force:
            check_estimate(pos, depth, backend, tt, workers or gpus or 1, max_estimate_seconds,
                           BACKENDS[backend].stats_cost if stats else 1.0)
        st = None
    if backend == "gpu" and workers is not None:
        if st is not None:
            st.close()
        raise ValueError("backend gpu runs one worker per GPU: use gpus= (or a scheduler), not workers=")
    if gpus is not None and backend != "gpu":
        if st is not None:
            st.close()
        raise ValueError(f"gpus= runs the gpu backend, not {backend!r}")
    if add_verify is not None:  # last: a command refused for another option leaves the store as it was
        try:
            st.add_verification(*add_verify)
        except BaseException:
            st.close()
            raise
    if workers is None and gpus is None and scheduler is None:
        if backend == "gpu":  # a resumed run of parts continues on as many GPUs as it has parts, if here
            gpus = 1 if st is None else max(1, min(st.run["parts"], cluster.visible_gpus() or 1))
        else:
            workers = 1
    new_run = st is None
    if new_run:
        store = default_store_path() if store is None else store
        seed = _core.ZOBRIST_DEFAULT_SEED
        split_at = PART_DEPTH if part_depth is None else part_depth
        cut = PART_CUT_BOARD if part_cut is None else part_cut

        def create(n_workers: int, split: int):
            made = _create_store(store, pos, depth, split, backend, tt, seed, verify_seed, verify_sample, stats,
                                 choose_parts(backend, tt, depth - split, n_workers, split_at, parts), split_at, cut,
                                 timings, deadline)
            if on_new_store is not None:  # once it exists: a split stopped by the time limit leaves none
                on_new_store(store)
            return made
    try:
        # A local cluster's workers are known before it starts: with the split given, the store is
        # made first, so a store that cannot be made (a full disk, say) is one error line with no
        # cluster started and torn down under it.
        if new_run and split_ply is not None and scheduler is None:
            cluster.require_dask(gpus is not None)  # a missing Dask is said before a store is made
            st = create(gpus if gpus is not None else workers, split_ply)
        t_cluster = time.perf_counter()
        with cluster.dask_client(backend, workers, gpus, scheduler) as (client, cluster_desc):
            n_workers = max(len(client.nthreads()), 1)  # every worker (some scheduler_info versions list 5)
            speed = None
            timings["cluster_start"] = time.perf_counter() - t_cluster
            if st is None:
                if split_ply is None:
                    t = time.perf_counter()
                    speed = calibrate_speed(client, pos.fen(), depth, backend, tt, seed, stats)
                    timings["calibrate"] = time.perf_counter() - t
                    # A unit's parts are counted side by side, one a worker: its time is its nodes
                    # over the speed of all its parts' workers.
                    n_parts = choose_parts(backend, tt, depth - 1, n_workers, split_at, parts)
                    split_ply = units_mod.choose_split_ply(pos, depth, n_workers, speed * min(n_parts, n_workers),
                                                           deadline=deadline)
                    if stats and depth:
                        split_ply = min(split_ply, depth - 1)  # units of at least one ply (see above)
                    if parts is not None and parts > 1:  # parts asked: units deep enough to split
                        split_ply = min(split_ply, depth - split_at)
                st = create(n_workers, split_ply)
            if progress:
                print(f"perft deep: {'' if new_run else 'resumed, '}{st.run['units']} units at split ply "
                      f"{st.run['split_ply']}"
                      + (f", each in {st.run['parts']} parts split at remaining depth {st.run['part_depth']}"
                         if st.run["parts"] > 1 else "")
                      + f", on the {cluster_desc}; store {st.path}", file=sys.stderr, flush=True)
            return _work(client, st, cluster_desc, progress, t0, speed, timings, deadline)
    except Overdue as exc:  # a new run's split or store creation (the store is removed: Store.create)
        raise _stopped_before(str(store), exc.step, t0, timings) from None
    finally:
        if st is not None:
            try:
                st.end_session()
            except StoreWriteError:  # a full disk: the error that stopped the run is the one to show
                pass
            st.close()


def _stopped_before(store: str, step: str, t0: float, timings: dict) -> DeepStopped:
    """The DeepStopped of a time limit passed in ``step`` before the count (errors.Overdue)."""
    return DeepStopped.before_count(store, step, time.perf_counter() - t0, {k: round(v, 6) for k, v in timings.items()})


def _create_store(path, pos: Position, depth: int, split_ply: int, backend: str, tt: bool, seed: int,
                  verify_seed: int | None, verify_sample: float | None, stats: bool, parts: int, split_at: int,
                  cut: str, timings: dict, deadline: float | None = None) -> Store:
    """A new run's units (split at ``split_ply``) in a new store at ``path``, each in ``parts``
    parts split at remaining depth ``split_at`` by ``cut``; the split's and the store's seconds go into
    ``timings`` ("split", "store_create"). Raises as :func:`units.split` and :meth:`Store.create`
    (Overdue once ``deadline`` has passed)."""
    t = time.perf_counter()
    try:
        units = units_mod.split(pos, depth, split_ply, seed, deadline)
    finally:
        timings["split"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        return Store.create(path, {"fen": pos.fen(), "depth": depth, "split_ply": split_ply, "backend": backend,
                                   "tt": tt, "seed": seed, "verify_seed": verify_seed, "verify_sample": verify_sample,
                                   "stats": stats,
                                   # whole units have no split: their identity as before
                                   "part_depth": split_at if parts > 1 else PART_DEPTH,
                                   "part_cut": cut if parts > 1 else PART_CUT_KEY}, units, parts, deadline)
    finally:
        timings["store_create"] = time.perf_counter() - t


def _work(client, st: Store, cluster_desc: str, progress: bool | str, t0: float,
          speed: float | None = None, timings: dict[str, float] | None = None,
          deadline: float | None = None) -> DeepResult:
    """Phases 1-3 on ``client``; the result from the store. ``speed``: nodes per second measured on a
    worker (``worker.calibrate``), if any; the tasks' length is bounded by the store's measured
    speed, else by this one, else by one measured now (:func:`batches`), and cut again by the
    first measured task's where the store had none. ``timings``: the seconds
    of the steps before (DeepResult.timings), completed here. ``deadline``
    (``time.perf_counter()`` seconds): no task is started that is estimated to end after it;
    raises DeepStopped when rows are left for it."""
    timings = {} if timings is None else timings
    run = st.run
    st.begin_session(cluster_desc)
    run_key = f"{st.path.resolve()}:{run['started']}"
    backend, tt, seed, parts = run["backend"], run["tt"], run["seed"], run["parts"]
    counted_now = 0
    imaged = tt and backend != "cpu"  # tables that outlive the command: the table images beside the store
    images: dict[str, list] = {"loaded": [], "saved": []}
    image_bytes = tableimage.byte_budget(st.path, None if deadline is None else deadline - t0) if imaged else 0
    phase_deadline = deadline
    if image_bytes > 0 and deadline is not None:  # keep a share of the time limit for saving the tables
        phase_deadline = deadline - tableimage.SAVE_SHARE * max(deadline - t0, 0.0)

    def load_images(rows: list[dict], seed_: int) -> None:
        if imaged and rows:
            t = time.perf_counter()
            images["loaded"] += load_table_images(client, st, rows, backend, run_key, seed_)
            timings["load_tables"] = timings.get("load_tables", 0.0) + time.perf_counter() - t

    def stopped(phase: str, left: int, seed_: int | None = None, why: str | None = None) -> None:
        """Raise DeepStopped when the deadline left rows of ``phase`` unsubmitted, after saving the
        tables of that phase (keyed by ``seed_``) to the table images."""
        if not left:
            return
        if image_bytes > 0 and seed_ is not None:
            t = time.perf_counter()
            images["saved"] += save_table_images(client, st, backend, run_key, seed_, image_bytes)
            timings["save_tables"] = time.perf_counter() - t
        timings["count"] = timings.get("count", count_seconds)
        n_rows, n_counted, share = st.progress()
        judged = None
        if phase == "verify":
            units = st.units()
            keys = sample_keys((r["key"] for r in units), run["verify_sample"])
            sample = [r for r in units if r["key"] in keys]
            judged = (len(sample), sum(r["verify_count"] is not None for r in sample), judged_now[phase])
        elif phase == "recount":
            differed = [r for r in st.units() if r["status"] in ("mismatch", "recounted")]
            judged = (len(differed), sum(r["status"] == "recounted" for r in differed), judged_now[phase])
        raise DeepStopped(str(st.path), phase, n_rows, n_counted, counted_now, share, time.perf_counter() - t0,
                          {k: round(v, 6) for k, v in timings.items()}, images, why, judged)

    def args(batch, tt_, seed_, tables=True):
        image = str(tableimage.image_path(st.path, seed_, batch[0]["part"], parts, run["part_depth"]))
        return ([r["fen"] for r in batch], batch[0]["depth"], backend, tt_, seed_, run_key, run["fen"], run["depth"],
                batch[0]["part"], parts, tables, run["stats"], run["part_depth"], image if imaged and tables else None,
                run["part_cut"])

    # worker -> its count phase (DeepResult.workers): seconds its tasks counted, their kernels'
    # device seconds (GPU backends), their leaf merges' moves and positions (GPU tables)
    per_worker: dict[str, dict] = {}

    def stored(write):
        """Time a store write (``timings["store"]``)."""
        t = time.perf_counter()
        try:
            return write()
        finally:
            timings["store"] = timings.get("store", 0.0) + time.perf_counter() - t

    def counted(batch, res, task):
        nonlocal counted_now
        w = per_worker.setdefault(res["worker"], {"busy": 0.0, "kernels": None, "leaf_moves": None,
                                               "leaf_positions": None})
        w["busy"] += res["seconds"]
        for key, value in (("kernels", res.get("kernel_seconds")),
                           *zip(("leaf_moves", "leaf_positions"), res.get("leaf_merge") or (None, None))):
            if value is not None:
                w[key] = (w[key] or 0) + value
        counted_now += stored(lambda: st.finish(batch, res["counts"], share_by_estimate(res["seconds"], batch), res["worker"],
                                                res["device"], task, share_by_estimate(res["probes"], batch),
                                                share_by_estimate(res["hits"], batch), res.get("tables"), res.get("stats")))
        return sum(int(r["multiplicity"]) * c for r, c in zip(batch, res["counts"]))

    judged_now = {"verify": 0, "recount": 0}  # rows of those phases done by this call (DeepStopped.judged)

    def verified(batch, res, task):
        judged_now["verify"] += len(batch)
        stored(lambda: st.verified(batch, res["counts"], share_by_estimate(res["seconds"], batch), res["worker"], task,
                                   res.get("tables"), res.get("stats")))
        return sum(int(r["multiplicity"]) * c for r, c in zip(batch, res["counts"]))

    def recounted(batch, res, task):
        judged_now["recount"] += len(batch)
        stored(lambda: st.recounted(batch, res["counts"], share_by_estimate(res["seconds"], batch), res.get("stats")))
        return sum(int(r["multiplicity"]) * c for r, c in zip(batch, res["counts"]))

    failures = []
    workers = sorted(client.nthreads())
    merged = backend != "cpu" and (tt or parts > 1)  # a GPU task's units merge in one count (count_roots)
    with Progress(progress) as bar:
        if errors.past(phase_deadline):  # spent already (a big store's opening): no read of every row, no warm-up
            n_rows, n_counted, _ = st.progress()  # a pending row is one without a count (Store._check_units)
            count_seconds = 0.0
            stopped("count", n_rows - n_counted, why="the time limit had passed before the count began")
        every = st.units()
        rows = [r for r in every if r["status"] == "pending"]
        t = time.perf_counter()
        if rows:  # every worker makes its driver before the clock starts (workers that join later: in their first task)
            client.gather([client.submit(worker.warm_up, run["fen"], run["depth"], backend, tt, seed, pure=False,
                                         workers=[addr], allow_other_workers=False) for addr in workers])
        timings["warm_up"] = time.perf_counter() - t
        load_images(rows, seed)
        # A part's row takes about 1/parts of its unit's time (its share of the leaf, which is most
        # of the work), so the calibrated speed of one worker is scaled by the parts.
        done = phase_done(every, "count")
        pace = seconds_per_estimate(done, speed and speed * parts)
        measured = bool(done)
        if rows and pace is None:
            t = time.perf_counter()
            speed = calibrate_speed(client, run["fen"], run["depth"], backend, tt, seed, run["stats"])
            pace = seconds_per_estimate([], speed * parts)
            timings["calibrate"] = timings.get("calibrate", 0.0) + time.perf_counter() - t
        t_count = time.perf_counter()
        count_seconds = 0.0
        failed, left, why = run_phase(client, st, rows, lambda b: args(b, tt, seed), counted, workers, bar, "count",
                                       parts, pace, merged, measured, phase_deadline, history=done)
        failures += failed
        count_seconds = time.perf_counter() - t_count if rows else 0.0
        if not failures:
            stopped("count", left, seed, why)
            _remove_images(st, seed)  # every unit counted: no later command needs these tables
        t = time.perf_counter()
        if rows and tt:
            read_tables(client, st, "count", backend, run_key, seed)
        timings["read_tables"] = time.perf_counter() - t
        pace = seconds_per_estimate(st.units(), speed and speed * parts)
        t = time.perf_counter()
        if run["verify_seed"] is not None and not failures:
            every = st.units()
            keys = sample_keys((r["key"] for r in every), run["verify_sample"])
            rows = [r for r in every if r["status"] == "counted" and r["verify_count"] is None and r["key"] in keys]
            load_images(rows, run["verify_seed"])
            done = phase_done(every, "verify")  # its own pace; the first counts' only as a first guess
            failed, left, why = run_phase(client, st, rows, lambda b: args(b, True, run["verify_seed"]), verified,
                                           workers, bar, "verify", parts, seconds_per_estimate(done, None) or pace,
                                           merged, bool(done), phase_deadline, history=done)
            failures += failed
            if not failures:
                timings["verify"] = time.perf_counter() - t  # a run stopped here reports its verify seconds too
                stopped("verify", left, run["verify_seed"], why)
                _remove_images(st, run["verify_seed"])
            if rows:
                read_tables(client, st, "verify", backend, run_key, run["verify_seed"])
        timings["verify"] = time.perf_counter() - t
        t = time.perf_counter()
        every = st.units()
        rows = [r for r in every if r["status"] == "mismatch"]
        done = phase_done(every, "recount")
        failed, left, why = run_phase(client, st, rows, lambda b: args(b, False, seed, tables=False), recounted,
                                       workers, bar, "recount", parts, seconds_per_estimate(done, None) or pace,
                                       measured=bool(done), deadline=deadline, history=done)
        failures += failed
        if not failures:
            timings["recount"] = time.perf_counter() - t
            stopped("recount", left, why=why)
        timings["recount"] = time.perf_counter() - t
    timings["count"] = count_seconds
    # The count phase's time when its busiest worker was not counting: Dask's submission and
    # results, the store's writes, and the tail where other workers finish.
    timings["dispatch"] = (max(0.0, count_seconds - max((w["busy"] for w in per_worker.values()), default=0.0))
                           if count_seconds else 0.0)
    if failures:
        raise DeepError(f"{len(failures)} tasks failed on every try (finished units are stored; resume "
                        f"with --resume {st.path}); first: {failures[0]}")
    rows = st.checked_rows()  # every row proven by its checksum before it is summed
    for r in rows:
        if r["count"] is None:
            raise DeepError(f"unit {r['unit']} part {r['part']} of store {st.path} has no count after the run")
    nodes = _sum_nodes(rows)
    units_verified = {r["unit"] for r in rows if r["verify_count"] is not None}
    units_verified -= {r["unit"] for r in rows if r["verify_count"] is None}  # every part counted again
    mismatches = _unit_mismatches(rows, run["stats"])
    n_units = run["units"]
    if run["verify_seed"] is None:
        verify = "not verified (no verify seed)"
    else:
        sample = "all units" if run["verify_sample"] >= 1 else f"a {run['verify_sample']:g} sample of units by key"
        verify = (f"{len(units_verified)} of {n_units} units ({sample}) counted again with tables keyed by seed "
                  f"{run['verify_seed']:#x}: {len(mismatches)} differed"
                  + (" and were counted again without tables" if mismatches else ""))  # units, not their parts
    tables = st.table_statistics()
    total_stats = _sum_stats(st, rows) if run["stats"] else None
    return DeepResult(nodes=nodes, seconds=time.perf_counter() - t0, store=str(st.path), fen=run["fen"],
                      depth=run["depth"], split_ply=run["split_ply"], backend=backend, tt=tt, units=n_units,
                      parts=parts, part_depth=run["part_depth"], part_cut=run["part_cut"], counted_now=counted_now, verified=len(units_verified), verify=verify,
                      mismatches=mismatches, count_seconds=count_seconds,
                      unit_seconds=sum(r["seconds"] or 0.0 for r in rows),
                      tt_probes=sum(r["probes"] or 0 for r in rows), tt_hits=sum(r["hits"] or 0 for r in rows),
                      tampered=[{k: r[k] for k in ("idx", "unit", "part", "fen", "count", "why")} for r in st.tampered],
                      tables=tables.get("count", {}), verify_tables=tables.get("verify", {}),
                      timings={k: round(v, 6) for k, v in timings.items()}, stats=total_stats, images=images,
                      workers={a: {k: round(v, 6) if isinstance(v, float) else v for k, v in w.items()}
                               for a, w in sorted(per_worker.items())})


def _remove_images(st: Store, seed: int) -> None:
    """Delete the table images of ``seed`` beside the store (their phase is finished); one that
    cannot be deleted stays (it is never loaded by another seed or run shape)."""
    for path in tableimage.images_of(st.path, seed):
        try:
            path.unlink()
        except OSError:
            pass
