"""The errors of a deep run that are not the store's (``store.StoreError``) nor bad options
(``ValueError``): a run that cannot go on, and one stopped at its time limit."""
from __future__ import annotations


class DeepError(RuntimeError):
    """A deep run that cannot go on: Dask or dask-cuda missing, or a unit failed on every try
    (finished units stay in the store; resume the run)."""


class DeepStopped(DeepError):
    """A deep run stopped at its time limit (``deep_perft(max_seconds=...)``) before every unit was
    counted: nothing is lost, resume it. Attributes: ``store`` (path, str), ``phase`` (the phase it
    stopped in: "count", "verify" or "recount"), ``rows`` / ``counted`` (unit rows of the run / with
    a first count), ``counted_now`` (rows counted by this call), ``done`` (the counted rows' share of
    the run's estimated nodes, 0..1), ``seconds`` (this call's wall time), ``timings`` (as
    ``DeepResult.timings``), ``images`` (as ``DeepResult.images``: the table images loaded and
    saved), ``why`` (when this command counted nothing: why no task was started, else None),
    ``judged`` (stopped in the verify or recount phase: (rows of that phase, rows of it done, rows
    done by this call): the verify sample's rows counted again under the verify seed, or the
    mismatched rows counted again without tables; None in the count phase)."""

    def __init__(self, store: str, phase: str, rows: int, counted: int, counted_now: int, done: float,
                 seconds: float, timings: dict, images: dict | None = None, why: str | None = None,
                 judged: tuple[int, int, int] | None = None):
        self.store, self.phase, self.rows, self.counted, self.counted_now = store, phase, rows, counted, counted_now
        self.done, self.seconds, self.timings = done, seconds, timings
        self.images = images or {}
        self.why = why
        self.judged = judged
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

    def as_dict(self) -> dict:
        return {"finished": False, "store": self.store, "phase": self.phase, "rows": self.rows,
                "counted": self.counted, "counted_now": self.counted_now, "done": self.done,
                "phase_rows": None if self.judged is None else self.judged[0],
                "phase_done": None if self.judged is None else self.judged[1],
                "phase_done_now": None if self.judged is None else self.judged[2],
                "seconds": self.seconds, "timings": self.timings, "images": self.images, "why": self.why}
