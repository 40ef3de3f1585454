"""The errors of a deep run that are not the store's (``store.StoreError``) nor bad options
(``ValueError``): a run that cannot go on, and one stopped at its time limit."""
from __future__ import annotations

import time


class DeepError(RuntimeError):
    """A deep run that cannot go on: Dask or dask-cuda missing, or a unit failed on every try
    (finished units stay in the store; resume the run)."""


class Overdue(Exception):
    """A deep run's time limit passed in a step before its count: ``step`` is "split" (a new run's
    tree expanded into units), "store" (its store written) or "open" (a resumed run's store read
    again: its rows' checksums and its split). Raised where those steps poll the deadline
    (:func:`check_deadline`); ``deep_perft`` turns it into :class:`DeepStopped`."""

    def __init__(self, step: str):
        super().__init__(step)
        self.step = step


def past(deadline: float | None) -> bool:
    """Whether ``deadline`` (``time.perf_counter()`` seconds; None: no limit) has passed."""
    return deadline is not None and time.perf_counter() > deadline


def check_deadline(deadline: float | None, step: str) -> None:
    """Raise :class:`Overdue` (``step``) once ``deadline`` (``time.perf_counter()`` seconds, or
    None) has passed."""
    if past(deadline):
        raise Overdue(step)


# what a stop before the count left, and what to do: DeepStopped's line for each step of Overdue
BEFORE_COUNT = {
    "split": "while splitting the run into units: no store was made at {store}, so nothing is lost and there is "
             "nothing to resume; run it again with more time (or a lower split ply)",
    "store": "while writing the new store's unit rows: nothing of it was kept at {store} (it held no count yet); run "
             "it again with more time (or a lower split ply)",
    "open": "while opening the store to resume it (its rows' checksums and its split are read again): no row or "
            "count in it changed (a store of an older schema stays migrated to this one); resume it with more time "
            "(--resume {store})",
}


class DeepStopped(DeepError):
    """A deep run stopped at its time limit (``deep_perft(max_seconds=...)``) before every unit was
    counted: nothing is lost, resume it. Attributes: ``store`` (path, str), ``phase`` (the phase it
    stopped in: "count", "verify" or "recount"; or a step before the count, :class:`Overdue`'s
    "split", "store" or "open", where ``rows``, ``counted`` and ``done`` are None and ``why`` says
    what was left: after "split" or "store" no store exists), ``rows`` / ``counted`` (unit rows of
    the run / with a first count), ``counted_now`` (rows counted by this call), ``done`` (the
    counted rows' share of the run's estimated nodes, 0..1), ``seconds`` (this call's wall time),
    ``timings`` (as ``DeepResult.timings``), ``images`` (as ``DeepResult.images``: the table
    images loaded and saved), ``why`` (when this command counted nothing: why no task was
    started, else None), ``judged`` (stopped in the verify or recount phase: (rows of that phase,
    rows of it done, rows done by this call): the verify sample's rows counted again under the
    verify seed, or the mismatched rows counted again without tables; None in the count phase)."""

    def __init__(self, store: str, phase: str, rows: int | None, counted: int | None, counted_now: int,
                 done: float | None, seconds: float, timings: dict, images: dict | None = None,
                 why: str | None = None, judged: tuple[int, int, int] | None = None):
        self.store, self.phase, self.rows, self.counted, self.counted_now = store, phase, rows, counted, counted_now
        self.done, self.seconds, self.timings = done, seconds, timings
        self.images = images or {}
        self.why = why
        self.judged = judged
        if phase in BEFORE_COUNT:
            super().__init__(f"stopped at the time limit after {seconds:.0f} s, {why}")
            return
        if judged is None:
            where = (f"{counted} of {rows} unit rows counted ({done:.1%} of the run's estimated nodes), "
                     f"{counted_now} by this command")
        else:
            what = ("of the verify sample counted again under the verify seed" if phase == "verify"
                    else "that differed counted again without tables")
            where = (f"{judged[1]} of {judged[0]} unit rows {what}, {judged[2]} by this command "
                     f"({counted} of {rows} rows have their first count)")
        super().__init__(f"stopped at the time limit in the {phase} phase after {seconds:.0f} s: {where}"
                         f"{'; ' + why if why else ''}; resume with --resume {store}")

    @classmethod
    def before_count(cls, store: str, step: str, seconds: float, timings: dict) -> DeepStopped:
        """The stop of :class:`Overdue` ``step`` ("split", "store", "open") of the run of ``store``
        (its path) after ``seconds`` of the call, with the ``timings`` of the steps done."""
        return cls(store, step, None, None, 0, None, seconds, timings, {"loaded": [], "saved": []},
                   BEFORE_COUNT[step].format(store=store))

    def as_dict(self) -> dict:
        return {"finished": False, "store": self.store, "phase": self.phase, "rows": self.rows,
                "counted": self.counted, "counted_now": self.counted_now, "done": self.done,
                "phase_rows": None if self.judged is None else self.judged[0],
                "phase_done": None if self.judged is None else self.judged[1],
                "phase_done_now": None if self.judged is None else self.judged[2],
                "seconds": self.seconds, "timings": self.timings, "images": self.images, "why": self.why}
