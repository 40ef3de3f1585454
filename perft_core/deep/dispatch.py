"""How a deep run's phases go out to the workers: the parts of a unit, the verify sample, units
grouped into tasks (by estimated nodes, under a time limit), tasks submitted a few per worker and
their results taken as they come, the progress they make, and the speed and table readings the
run asks of its workers.
"""
from __future__ import annotations

import itertools
import math
import time
import uuid
from fractions import Fraction

from .. import cliargs, watch
from ..gpu import tableimage
from ..api import BACKENDS
from . import worker
from .store import PART_DEPTH, Store

RETRIES = 2
"""Dask retries a task that raised this many times (a worker that died is Dask's own
``allowed-failures``)."""

MAX_PARTS = 8
"""At most this many parts a unit: every part repeats the levels above the split (measured: nothing
extra at two parts of startpos perft 11, 17 % in total at four parts of perft 10, a 3-s count), so
beyond a host's GPUs the workers share parts: part p goes to workers p, p + MAX_PARTS, ..."""


def choose_parts(backend: str, tt: bool, unit_depth: int, workers: int, part_depth: int = PART_DEPTH,
                 asked: int | None = None) -> int:
    """Parts each unit is counted in: one per worker, at most MAX_PARTS, on the GPU backends with
    tables (each GPU counts its part of every unit, ``TTBfsDriver.set_part``: the levels above
    remaining depth ``part_depth`` are the same work on every GPU, the levels from there down are
    split, and no GPU's tables miss what another GPU's hold, which units dealt out whole would: two
    H200s split startpos perft 11 at ply 2 into whole units did 1.71x the work of one), else 1
    (whole units: the CPU backend, counts without tables, units shallower than the split).
    ``asked``: that many parts instead of one per worker (``deep_perft(parts=...)``; fewer workers
    than parts take turns at them, a part's tasks one after another). Raises ValueError when
    ``asked`` > 1 where units cannot be split (the cases of 1 above)."""
    tables = backend in ("gpu", "gpu-emulated") and tt
    if asked is not None and asked > 1:
        if not tables:
            raise ValueError(f"{asked} parts need tables on a gpu backend (tt with backend gpu or gpu-emulated), "
                             f"not {backend}{' with' if tt else ' without'} tables")
        if unit_depth < part_depth:
            raise ValueError(f"{asked} parts need units of at least {part_depth} plies (the split depth of parts); "
                             f"these are {unit_depth}-ply units")
    if asked is not None:
        return asked
    return max(1, min(workers, MAX_PARTS)) if tables and unit_depth >= part_depth else 1


def sample_keys(keys, fraction: float) -> set[str]:
    """The unit keys of a verify sample of ``fraction``: of the run's distinct keys (hex strings,
    one per unit; parts share their unit's key), the ``ceil(fraction * units)`` lowest in their low
    32 bits (uniform; ties by the whole key), so a sample of 0.05 is at least 5 % of the units and
    always the same units. Until session 22 a unit was sampled when its low 32 bits were below
    ``fraction * 2**32`` (14 of 400 units at 0.05); that rule took a prefix of the same order, so a
    store verified under it keeps its verified units and gains the rest of the sample on resume."""
    distinct = sorted(set(keys), key=lambda k: (int(k[-8:], 16), k))
    if fraction >= 1:
        return set(distinct)
    # The fraction as the decimal it was written as: 0.07 * 400 is 28.000000000000004 in floats,
    # whose ceiling took 29 units (session 26); Fraction("0.07") * 400 is 28.
    return set(distinct[:math.ceil(Fraction(repr(float(fraction))) * len(distinct))])


PROGRESS_LINE_SECONDS = watch.PROGRESS_LINE_SECONDS
"""Without a terminal (a log file, a batch job), a progress line at most this often, and one at the
end of each phase (:class:`perft_core.watch.ProgressLines`)."""


class Progress:
    """Progress on stderr: a rich bar (units done/total, nodes/s, ETA) on a terminal (``mode``
    True or "bar"), lines of the same facts at most every PROGRESS_LINE_SECONDS and at each phase's
    end without one ("lines"), or nothing (False / None). The ETA is in estimated nodes (the units'
    estimates, ``units.unit_estimates``), so it holds when the estimates are right relative to
    each other, whatever their common scale."""

    def __init__(self, mode: bool | str | None):
        self.bar = None
        self.lines = mode == "lines"
        if mode is True or mode == "bar":
            from rich.console import Console
            from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self.bar = RichProgress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[units]}"),
                                    TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                    console=Console(stderr=True))

    def phase(self, name: str, rows: list[dict]):
        self.t0, self.nodes, self.done, self.total = time.perf_counter(), 0, 0, len(rows)
        self.name, self.est_total, self.est_done = name, sum(r["estimate"] for r in rows) or 1, 0.0
        self.what = "unit rows" if any(r.get("part") for r in rows) else "units"  # a unit in parts: a row a part
        self.printer = watch.ProgressLines(f"perft deep: {name}", of=" of the estimated nodes",
                                           every=PROGRESS_LINE_SECONDS)
        if self.bar is None:
            return None
        return self.bar.add_task(name, total=self.est_total, units=f"0/{len(rows)} {self.what}", rate="")

    def advance(self, task, rows: list[dict], nodes: int) -> None:
        if self.bar is None and not self.lines:
            return
        est = sum(r["estimate"] for r in rows)
        self.done += len(rows)
        self.nodes += nodes
        self.est_done += est
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        rate = self.nodes / elapsed
        if self.bar is not None:
            self.bar.update(task, advance=est, units=f"{self.done}/{self.total} {self.what}",
                            rate=f"{rate / 1e6:,.0f} M nodes/s")
            return
        self.printer.report(f"{self.done}/{self.total} {self.what}", self.est_done / self.est_total, self.nodes, elapsed,
                            final=self.done >= self.total)

    def __enter__(self):
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


TASKS_PER_WORKER = 16
"""A phase sends each worker at least this many tasks (batches of units): small enough to bound
what a lost worker or client costs and to spread the work, large enough that one GPU call merges
many units' positions and Dask's few milliseconds a task vanish."""
MAX_UNITS_PER_TASK = 256
BUDGET_MARGIN = 1.25
"""Under a time limit (``deep_perft(max_seconds=...)``) a task is started only if its estimated
seconds times this margin fit in the time left: the measured pace (seconds per estimated node) of a
run's tasks varies from task to task (the first five of perft 13 on four H200s: within 6 % of their
mean; tables warm up, the estimates err)."""
FIRST_SHARE = 0.1
"""Under a time limit with a pace not yet measured (a calibration count's: off by 6x either way on
the emulated device's statistics, 15x slow at perft 13 on four H200s), the first tasks hold at most
this share of a worker's time by that pace, one task a worker, and the rest is planned by the first
result's pace: a calibration 6x too fast then spends 60 % of the time, not 6 times all of it."""
MAX_TASK_SECONDS = 300.0
"""Once the run's speed is known, a task holds at most about this many seconds of work: a killed
client or worker loses the tasks it was counting, so a run of many hours loses minutes, not a
sixteenth of a worker's share (startpos perft 13 on one H200 would otherwise run 55-min tasks)."""


def workers_per_part(workers: int, parts: int) -> int:
    """The workers counting one part's tasks where there are at least as many workers as parts:
    ``workers // parts`` (a pool when parts = 1). Fewer workers than parts take turns at them, one
    worker a part at a time (:func:`run_phase`): 1."""
    return max(1, workers // max(parts, 1))


def batches(rows: list[dict], workers: int, seconds_per_estimate: float | None = None,
            merged: bool = False, budget: dict[int, float] | None = None, share: float = 1.0,
            run_parts: int | None = None, row_seconds=None) -> list[list[dict]]:
    """Group a phase's rows into tasks: rows of one part together (one worker counts a part, with
    that part's tables), in row order (largest units first), each part in
    ``max(balance, ceil(rows / MAX_UNITS_PER_TASK), ceil(seconds / cap))`` batches of
    about equal estimated nodes (never more batches than rows), where seconds = the part's
    estimated nodes x ``seconds_per_estimate`` (seconds per estimated node,
    :func:`seconds_per_estimate`; None: no time bound), cap = MAX_TASK_SECONDS (or the part's
    budget, if less) and balance = TASKS_PER_WORKER x workers / parts, so that the workers sharing
    a part's tasks finish together. ``merged``: a task's units
    are counted as one count whose equal positions merge (GPU backends with tables,
    ``TTBfsDriver.count_roots``), so a task split in two costs work: balance is then 1 where no two
    workers share a part (a part's worker counts its part of every unit, balanced by key).
    ``budget``: part -> seconds each of its workers has left (a time limit; needs
    ``seconds_per_estimate``): only rows that fit are taken, in order, each row's seconds counted
    BUDGET_MARGIN times, a part's workers sharing its budget (the rest of the rows are left out of
    the tasks). ``share``: the share of the phase's estimated nodes that ``rows`` are (a phase's rest,
    cut again): balance is scaled by it. ``run_parts``: the run's parts, when ``rows`` may hold fewer
    (the workers' share of each, :func:`workers_per_part`, is of them all). ``row_seconds``: a row's
    predicted seconds (:class:`RowSeconds`), in place of its estimate x ``seconds_per_estimate``.
    Tasks are returned part by part interleaved (batch 0 of every part, then batch 1, ...), so every
    worker starts at once."""
    by_part: dict[int, list[dict]] = {}
    for r in rows:
        by_part.setdefault(r["part"], []).append(r)
    parts = max(len(by_part), 1)
    per_worker = workers_per_part(max(workers, 1), max(parts, run_parts or 1))
    if row_seconds is None and seconds_per_estimate is not None:
        def row_seconds(r):
            return max(r["estimate"], 1.0) * seconds_per_estimate
    per_part = []
    for part, part_rows in by_part.items():
        cap = MAX_TASK_SECONDS
        if budget is not None and row_seconds is not None:
            left, cap = budget.get(part, 0.0) * per_worker, min(cap, budget.get(part, 0.0))
            fitting = []
            for r in part_rows:
                s = row_seconds(r) * BUDGET_MARGIN
                if left > 0 and s <= min(left, cap):  # no time left: nothing starts, however small
                    fitting.append(r)
                    left -= s
            part_rows = fitting
            if not part_rows:
                continue
        total = sum(max(r["estimate"], 1.0) for r in part_rows)
        by_time = math.ceil(sum(map(row_seconds, part_rows)) / cap) if row_seconds else 1
        balance = math.ceil(share * -(-TASKS_PER_WORKER * workers // parts)) if workers > parts or not merged else 1
        n = min(len(part_rows), max(balance, -(-len(part_rows) // MAX_UNITS_PER_TASK), by_time))
        out, cur, acc = [], [], 0.0
        for r in part_rows:
            cur.append(r)
            acc += max(r["estimate"], 1.0)
            if acc >= total * (len(out) + 1) / n and len(out) < n - 1:
                out.append(cur)
                cur = []
        if cur:
            out.append(cur)
        per_part.append(out)
    tasks = []
    for i in range(max(len(p) for p in per_part) if per_part else 0):
        tasks += [p[i] for p in per_part if i < len(p)]
    return tasks


def seconds_per_estimate(rows: list[dict], nodes_per_second: float | None) -> float | None:
    """Seconds a task takes per estimated node: measured on this run's counted rows (their seconds
    over their estimates, so the estimates' own scale error cancels) when any has seconds, else
    1 / ``nodes_per_second`` (a calibration on a worker; estimates are then taken as nodes), else
    None (unknown)."""
    done = [(r["seconds"], r["estimate"]) for r in rows if r.get("seconds") and r["count"] is not None]
    est = sum(max(e, 1.0) for _, e in done)
    if done and est > 0:
        return sum(t for t, _ in done) / est
    return 1.0 / nodes_per_second if nodes_per_second else None


class RowSeconds:
    """A phase's prediction of a row's seconds, which its time limit and task lengths use, learnt
    from the rows counted as the phase goes (``add``). A row is predicted by:

    1. the seconds its unit's other parts took (this phase's results and ``history``, the store's
       counted rows; their mean), times its part's ratio in this phase of what its rows took to
       what their units' other parts had taken (1 before it has one). The parts divide each unit's
       boards about evenly, and a part that starts, on empty tables or on an image, where an earlier
       part started, starts as slowly and warms up as it did. One GPU taking turns at four parts of
       perft 13 ended part 0 at 3.9e15 estimated nodes a second and began part 1's first units at
       about 28 s each, as part 0's had begun: planned by part 0's last pace, a task of 158 rows
       went out for the 380 s left and ran past the limit by minutes (session 36);
    2. else (no other part of its unit counted), its estimated nodes at its part's pace in this
       phase (seconds per estimated node of the part's results), once the part has one;
    3. else at the phase's pace: this phase's results over all parts, else ``pace`` (the store's
       counted rows' or a calibration's seconds per estimated node), else unknown (None).
    """

    def __init__(self, pace: float | None, history=()):
        self.start = pace
        self.tally = [0.0, 0.0]  # this phase's results: seconds, estimates
        self.by_part: dict[int, list[float]] = {}  # part -> its results' seconds, estimates
        self.ratio: dict[int, list[float]] = {}  # part -> its results' seconds, their units' other parts'
        self.units: dict[int, dict[int, float]] = {}  # unit -> part -> seconds
        for r in history:
            if r.get("seconds") and r.get("count") is not None:
                self.units.setdefault(r["unit"], {})[r["part"]] = r["seconds"]

    @property
    def pace(self) -> float | None:
        """Seconds per estimated node over the phase's results so far, else the starting pace."""
        return self.tally[0] / self.tally[1] if self.tally[1] else self.start

    def _others(self, r: dict) -> float | None:
        others = [s for p, s in self.units.get(r["unit"], {}).items() if p != r["part"]]
        return sum(others) / len(others) if others else None

    def add(self, batch: list[dict], seconds: float) -> None:
        """A task's result: its ``seconds`` shared over its rows by estimate (a task is one part's)."""
        est = sum(max(r["estimate"], 1.0) for r in batch)
        for t in (self.tally, self.by_part.setdefault(batch[0]["part"], [0.0, 0.0])):
            t[0] += seconds
            t[1] += est
        for r, s in zip(batch, share_by_estimate(float(seconds), batch)):
            others = self._others(r)
            if others is not None:
                ratio = self.ratio.setdefault(r["part"], [0.0, 0.0])
                ratio[0] += s
                ratio[1] += others
            self.units.setdefault(r["unit"], {})[r["part"]] = s

    def __call__(self, r: dict) -> float | None:
        others = self._others(r)
        if others is not None:
            own, then = self.ratio.get(r["part"], (1.0, 1.0))
            return others * own / then if then else others
        est = max(r["estimate"], 1.0)
        own = self.by_part.get(r["part"])
        if own:
            return est * own[0] / own[1]
        pace = self.pace
        return None if pace is None else est * pace


def phase_done(rows: list[dict], phase: str) -> list[dict]:
    """The rows a phase judged before (``phase``: "count", "verify" or "recount"), each with
    ``seconds`` and ``count`` as that phase wrote them (its ``verify_seconds``, ``verify_count``,
    ...): what :func:`seconds_per_estimate` and :class:`RowSeconds` read for the phase's own pace.
    A verify pass's rows are not timed by the first counts: under a second key seed its tables
    start empty and hold only the sample's history (session 35's verify of 24 perft 13 units on four
    H200s took 558.4 worker-seconds, where the first counts' pace gave 157.3), and a recount has
    no tables at all."""
    if phase == "count":
        return [r for r in rows if r.get("seconds") and r["count"] is not None]
    s, c = (f"{phase}_seconds", phase if phase == "recount" else f"{phase}_count")
    return [dict(r, seconds=r[s], count=r[c]) for r in rows if r.get(s) and r.get(c) is not None]


def share_by_estimate(total, rows: list[dict]) -> list:
    """``total`` (seconds, or an int count) shared over a task's rows in proportion to their
    estimates (ints: exact sum, the remainder on the last row); None stays None."""
    if total is None:
        return [None] * len(rows)
    w = [max(r["estimate"], 1.0) for r in rows]
    s = sum(w)
    if isinstance(total, float):
        return [total * x / s for x in w]
    out = [int(total * x // s) for x in w]
    out[-1] += total - sum(out)
    return out


def run_phase(client, st: Store, rows: list[dict], task, on_result, workers: list[str], progress: Progress,
               name: str, parts: int = 1, pace: float | None = None, merged: bool = False,
               measured: bool = True, deadline: float | None = None,
               history=()) -> tuple[list[str], int, str | None]:
    """Submit ``worker.run_task(*task(batch))`` for the ``batches`` of ``rows``, at most a few per
    worker in flight, each preferring the workers of its part (``workers``: addresses; part p of P
    -> workers p, p + P, ...; another worker takes it if those are gone); ``on_result(batch, result)``
    for each result as it completes; ``pace``: seconds per estimated node and ``merged``: a task's
    units merge inside one count (both shape the tasks, see :func:`batches`).

    ``measured`` False: ``pace`` is not this phase's own but a guess: a calibration count's (a small
    count without deep tables; it was at least 15x slower than perft 13's units on four H200s,
    whose tasks it cut to one unit each), or for a verify pass or a recount the first counts'
    (:func:`phase_done`): the tasks not yet submitted are cut again with the pace
    of the first result; under a ``deadline`` only one task a worker goes first, holding at most
    FIRST_SHARE of its time by that pace (all of it when nothing fits that share). Once results
    come in, what they took is what later cuts and the deadline use (:class:`RowSeconds`: a row's
    unit's other parts' seconds, from them and from ``history``, the phase's rows judged before,
    scaled by its part's ratio to them; else its part's own pace; else the phase's: tables warm
    up, later units are smaller).
    ``deadline`` (``time.perf_counter()`` seconds): a task is submitted only if it is estimated to
    end before it (``batches``' budget, counting the work already in flight for its part); rows
    that fit no more are left pending in the store.

    Fewer workers than parts take turns at them: part p goes to worker p mod W (to any worker when
    W = 1: a task pinned to the one worker waited for ever once it died and came back under another
    address), and each worker's parts are planned one after another (a change of part resets the
    worker's tables), so a part's tasks run together within one command and a time limit is shared,
    not given to every part. Under a time limit a worker's time goes to its first part with rows
    left only: when the rest of that part does not fit, the command ends rather than start the next
    part for a small row, which would drop the first part's tables and save the next one's image
    instead (the first part's history is what its later units hit: NOTES.md, session 35).

    Returns (failures as lines: tasks that raised on every try, rows left unsubmitted by the
    deadline, why: when rows were left and no task was started, why none fit, else None)."""
    from collections import deque

    from distributed import as_completed

    if not rows:
        return [], 0, None
    bar = progress.phase(name, rows)
    n_workers = max(len(workers), 1)
    turns = parts > 1 and n_workers < parts  # each worker takes turns at its parts p = w, w + W, ...

    def slot(part: int) -> int:  # whose time a part's tasks take: its worker's (turns), else its own workers'
        return part % n_workers if turns else part

    per_slot = 1 if turns else workers_per_part(n_workers, parts)
    unsubmitted = {r["idx"]: r for r in rows}
    inflight: dict[str, float] = {}  # key -> the task's estimated seconds
    ends: dict[int, float] = {}  # slot -> when its workers are estimated to finish what they were sent
    predict = RowSeconds(pace, history)
    phase_estimate = sum(max(r["estimate"], 1.0) for r in rows)
    time_left = [None]  # the most any slot had at the first plan with a deadline (for ``why``)

    def est_seconds(batch) -> float:
        return sum(predict(r) or 0.0 for r in batch)

    def plan() -> deque:
        rest = list(unsubmitted.values())
        share = sum(max(r["estimate"], 1.0) for r in rest) / phase_estimate
        budget = None
        if deadline is not None and predict.pace is not None:
            now = time.perf_counter()
            budget = {s: max(0.0, deadline - max(now, ends.get(s, now))) for s in {slot(r["part"]) for r in rest}}
            if time_left[0] is None:
                time_left[0] = max(budget.values(), default=0.0)
            if not measured:  # a first task a worker, small, to measure the pace before the time is planned
                first = cut(rest, share, {s: b * FIRST_SHARE for s, b in budget.items()})
                if first:  # else (a short limit) the whole time, as before the pace is known
                    return first
        return cut(rest, share, budget)

    def cut(rest: list[dict], share: float, budget: dict[int, float] | None) -> deque:
        by = predict if predict.pace is not None else None
        if not turns:
            return deque(batches(rest, n_workers, predict.pace, merged, budget, share, run_parts=parts, row_seconds=by))
        by_slot: dict[int, dict[int, list[dict]]] = {}
        for r in rest:
            by_slot.setdefault(slot(r["part"]), {}).setdefault(r["part"], []).append(r)
        lists = []
        for s_, by_part in sorted(by_slot.items()):
            left, mine = None if budget is None else budget[s_], []
            for p_ in sorted(by_part):  # the worker's parts one after another
                got = batches(by_part[p_], 1, predict.pace, merged, None if left is None else {p_: left}, row_seconds=by)
                mine += got
                if left is not None:  # a time limit: the first part with rows left takes it all, even when
                    break  # they do not fit, rather than a next part's small row and a reset of its tables
            lists.append(mine)
        return deque(b for group in itertools.zip_longest(*lists) for b in group if b is not None)

    tasks = plan()
    futures: dict = {}
    ac = as_completed()
    run_tag = uuid.uuid4().hex[:8]
    order = itertools.count()  # the tasks' order of submission: the plan's order, also within a worker's queue
    submitted = [0]

    def submit_next() -> None:
        if not tasks:
            return
        batch = tasks.popleft()
        for r in batch:
            unsubmitted.pop(r["idx"])
        st.submitted(r["idx"] for r in batch)
        # A part's tasks prefer its workers (their tables hold that part's entries); whole units go anywhere.
        p = batch[0]["part"]
        if parts == 1 or not workers or (turns and n_workers == 1):
            where = None
        elif turns:
            where = [workers[slot(p)]]
        else:
            where = [w for i, w in enumerate(workers) if i % parts == p % parts] or None
        fut = client.submit(worker.run_task, *task(batch), key=f"perft-{name}-{batch[0]['idx']}-{run_tag}",
                            retries=RETRIES, pure=False, priority=-next(order), workers=where,
                            allow_other_workers=where is not None)
        futures[fut.key] = batch
        inflight[fut.key] = est = est_seconds(batch)
        now, s_ = time.perf_counter(), slot(p)
        ends[s_] = max(now, ends.get(s_, now)) + est / per_slot
        submitted[0] += 1
        ac.add(fut)

    failures = []
    in_flight = max(4 * len(workers), 16)
    try:
        for _ in range(n_workers if deadline is not None and not measured else in_flight):
            submit_next()
        for fut in ac:
            if cliargs.stop_requested():  # a Ctrl-C whose KeyboardInterrupt Python dropped (cliargs.note_stop)
                raise KeyboardInterrupt
            batch = futures.pop(fut.key)
            est = inflight.pop(fut.key, 0.0)
            try:
                result = fut.result()
            except Exception as exc:  # the task raised on every try, or its workers kept dying
                failures.append(f"units {batch[0]['unit']}.. ({len(batch)} rows, first {batch[0]['fen']}): "
                                f"{type(exc).__name__}: {exc}")
            else:
                nodes = on_result(batch, result, fut.key)
                progress.advance(bar, batch, nodes)
                predict.add(batch, result["seconds"])
                s_ = slot(batch[0]["part"])  # its workers' queue ends as much sooner (later) as it took less (more)
                ends[s_] = ends.get(s_, 0.0) - (est - result["seconds"]) / per_slot
                if not measured and unsubmitted:  # the first measured pace: cut the rest again
                    measured = True
                    tasks = plan()
                    while tasks and len(futures) < in_flight - 1:  # the first wave was one task a worker
                        submit_next()
            fut.release()
            if deadline is not None and not tasks and unsubmitted:
                tasks = plan()  # rows passed over for time: smaller ones may fit what is left
            submit_next()
    finally:  # stopped (Ctrl-C, a full disk): nothing left running or queued on the cluster
        if futures:
            client.cancel(list(ac.futures), force=True)
    why = None
    if unsubmitted and not submitted[0] and predict.pace and time_left[0] is not None:
        cand = list(unsubmitted.values())
        if turns:  # what a worker may take: its first part with rows left
            first: dict[int, int] = {}
            for r in cand:
                first[slot(r["part"])] = min(first.get(slot(r["part"]), r["part"]), r["part"])
            cand = [r for r in cand if r["part"] == first[slot(r["part"])]]
        need = min(map(predict, cand)) * BUDGET_MARGIN
        of = " of a worker's current part" if turns else ""
        by = "its unit's other parts' seconds or " if predict.units else ""
        guess = "a calibration count" if name == "count" else "the first counts"  # a verify's or recount's first guess
        why = (f"no task fit: the smallest row left{of} is estimated at "
               f"{need:,.1f} s ({BUDGET_MARGIN} x the seconds predicted by {by}its estimated nodes at the pace of "
               f"{'this run' if measured else guess}) with {time_left[0]:,.1f} s left to a worker")
    return failures, len(unsubmitted), why


READ_TABLES_SECONDS = 60.0
"""How long the end of a phase waits for the workers' readings of their tables (one pass over
them: milliseconds) before it goes on without them."""


def calibrate_speed(client, fen: str, depth: int, backend: str, tt: bool, seed: int, stats: bool) -> float:
    """Nodes per second of the run's counts, measured on a worker (``worker.calibrate``, plain
    counts); a statistics run's divided by the backend's ``stats_cost`` (its statistics against its
    plain count: 12 on the GPU). Without it a statistics run's units and tasks were cut for the
    plain count's speed: two H200s counting perft 12 statistics finished no task in 210 s of a
    190-s ``--max-seconds`` (session 16, call C)."""
    speed = client.submit(worker.calibrate, fen, depth, backend, tt, seed, pure=False).result()
    return speed / BACKENDS[backend].stats_cost if stats else speed


def read_tables(client, st: Store, phase: str, backend: str, run_key: str, seed: int) -> None:
    """At the end of a phase, the tables of each worker there is now as they stand
    (``worker.table_reading``: their last batch may have skipped the occupancy pass), recorded in
    the store's ``tables``. Statistics only: a worker that is gone, fails or does not answer within
    READ_TABLES_SECONDS is skipped (its statistics stay as last recorded), never an error of the run."""
    if backend == "cpu":
        return
    workers = sorted(client.nthreads())  # a worker lost in the phase may have been restarted elsewhere
    futures = [client.submit(worker.table_reading, backend, run_key, seed, pure=False, workers=[addr],
                             allow_other_workers=False) for addr in workers]
    end = time.monotonic() + READ_TABLES_SECONDS
    try:
        for addr, fut in zip(workers, futures):
            try:
                reading = fut.result(timeout=max(end - time.monotonic(), 0.0))
            except Exception:  # noqa: BLE001 - a lost or silent worker (TimeoutError, a CancelledError...)
                continue
            if reading is not None:
                st.tables_read(phase, addr, reading)
    finally:
        client.cancel(futures, force=True)


def _image(st: Store, seed: int, part: int) -> str:
    run = st.run
    return str(tableimage.image_path(st.path, seed, part, run["parts"], run["part_depth"]))


def load_table_images(client, st: Store, rows: list[dict], backend: str, run_key: str, seed: int) -> list[dict]:
    """Before a phase of a run with tables on a GPU backend (``rows``: its pending rows): each worker
    plans the tables of the part its tasks prefer (worker i: part i mod parts, as
    :func:`run_phase` sends them) and loads that part's table image under ``seed``
    (``worker.load_tables``), so that no unit's time includes a load. Returns each load's summary
    (``tableimage.load``, with ``"part"``); a worker that fails is skipped (its first task loads
    the image instead), never an error of the run."""
    run, parts = st.run, st.run["parts"]
    first: dict[int, dict] = {}
    for r in rows:
        first.setdefault(r["part"], r)
    futures = []
    for i, addr in enumerate(sorted(client.nthreads())):
        p = i % parts
        if p in first:
            futures.append((p, client.submit(worker.load_tables, first[p]["fen"], first[p]["depth"], backend, seed,
                                             run_key, run["fen"], run["depth"], p, parts, run["part_depth"],
                                             _image(st, seed, p), run["stats"], run["part_cut"], pure=False,
                                             workers=[addr],
                                             allow_other_workers=False)))
    out = []
    for p, fut in futures:
        try:
            out += [load | {"part": p} for load in fut.result()]
        except Exception as exc:  # noqa: BLE001 - a lost worker, a driver that failed: counting goes on
            out.append({"part": p, "loaded": False, "reason": f"{type(exc).__name__}: {exc}"})
    return out


NO_TABLES = "no tables of the part"
"""The reason of a part's image not saved because no worker holds its tables (none counted it in
this command): not a failure."""


def save_table_images(client, st: Store, backend: str, run_key: str, seed: int, max_bytes: int) -> list[dict]:
    """At a run's time limit (a phase with tables keyed by ``seed`` left rows): the worker that part
    p's tasks prefer (worker p mod W) writes its tables to part p's table image (``worker.save_tables``),
    each within ``max_bytes`` / min(parts, W): a worker holds one part's tables at a time, so with
    fewer workers than parts (turns) at most W images are written. Returns the saves' summaries
    (``tableimage.save``, with ``"part"``); a worker whose tables are not the part's, or that
    fails (its reason then), is reported, never an error of the run."""
    parts = st.run["parts"]
    workers = sorted(client.nthreads())
    each = max_bytes // max(1, min(parts, len(workers)))
    futures = [(p, client.submit(worker.save_tables, backend, run_key, seed, p, parts, _image(st, seed, p),
                                 each, pure=False, workers=[workers[p % len(workers)]],
                                 allow_other_workers=False)) for p in range(parts)]
    out = []
    for p, fut in futures:
        try:
            got = fut.result()
            out.append(got if got is not None else {"part": p, "saved": False, "reason": NO_TABLES})
        except Exception as exc:  # noqa: BLE001 - a full disk, a lost worker: the run's units are stored
            out.append({"part": p, "saved": False, "reason": f"{type(exc).__name__}: {exc}"})
    return out
