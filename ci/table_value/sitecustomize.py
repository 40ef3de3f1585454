"""A benchmark tool, never imported by the project: with this folder on PYTHONPATH and
PERFT_EXPERIMENT_TABLE_VALUE=V (and PERFT_EXPERIMENT_LOWEST_FLOOR=F) in the environment, every
Python process, Dask workers included, plans its GPU tables with LEVEL_VALUE V (and LOWEST_FLOOR
F) instead of the defaults of perft_core/gpu/tables.py: an A/B of the table rule through
``perft deep --gpus N``, whose workers are processes of their own (NOTES.md "Session 14").

    PYTHONPATH=$PWD:$PWD/ci/table_value PERFT_EXPERIMENT_TABLE_VALUE=1 PERFT_EXPERIMENT_LOWEST_FLOOR=0 \\
        perft deep startpos 13 --backend gpu --gpus 4 --tt --split-ply 2 --store A.sqlite

PERFT_EXPERIMENT_SLOTS_PER_POSITION=S plans with SLOTS_PER_POSITION S (the bound of every table
but a deep run's lowest); PERFT_EXPERIMENT_PART_COMPACT=1 (or 0) sets every new TT driver's
``part_compact`` (merge.keep_part). With PERFT_EXPERIMENT_ARM_DEVICES=2,3 the experiment's settings apply
only in the processes whose device (the first of CUDA_VISIBLE_DEVICES, which dask-cuda sets per
worker, after a forked worker started) is listed: the other workers keep the defaults, so one
``perft deep --gpus 4`` call is a paired A/B, each arm counting its parts of the same units
(NOTES.md "Session 18"). Each plan and each new driver is written to stderr with the arm it used
and, in a Dask worker, the worker's address (``paired_summary.py --log`` reads the arms from it).
"""
import os
import sys

_value = os.environ.get("PERFT_EXPERIMENT_TABLE_VALUE")
_floor = os.environ.get("PERFT_EXPERIMENT_LOWEST_FLOOR")
_spp = os.environ.get("PERFT_EXPERIMENT_SLOTS_PER_POSITION")
_devices = os.environ.get("PERFT_EXPERIMENT_ARM_DEVICES")
_compact = os.environ.get("PERFT_EXPERIMENT_PART_COMPACT")


def _in_arm() -> bool:
    if not _devices:
        return True
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return device in {d.strip() for d in _devices.split(",")}


def _say(arm: bool, what: str) -> None:
    try:
        from distributed import get_worker

        where = f"worker {get_worker().address} "
    except (ImportError, ValueError):
        where = ""
    # One write a line: print's text and its newline are two writes, and the workers' lines, sharing
    # one stderr pipe, ran together (session 19: "...part_compact True[table_value] worker ...").
    sys.stderr.write(f"[table_value] {where}pid {os.getpid()} device {os.environ.get('CUDA_VISIBLE_DEVICES', '?')} "
                     f"arm {'B' if arm else 'A'}: {what}\n")
    sys.stderr.flush()


if _compact:
    import perft_core.gpu.ttdriver as _ttdriver

    _init = _ttdriver.TTBfsDriver.__init__

    def __init__(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        arm = _in_arm()
        if arm:
            self.part_compact = _compact == "1"
        _say(arm, f"part_compact {self.part_compact}")

    _ttdriver.TTBfsDriver.__init__ = __init__

if _value or _floor or _spp:
    import perft_core.gpu.tables as _tables
    import perft_core.gpu.ttdriver as _driver

    _defaults = (_tables.LEVEL_VALUE, _tables.LOWEST_FLOOR, _tables.SLOTS_PER_POSITION)
    _arm = (float(_value) if _value else _defaults[0], float(_floor) if _floor else _defaults[1],
            float(_spp) if _spp else _defaults[2])
    _plan = _tables.plan_slots

    def _set(values) -> None:
        _tables.LEVEL_VALUE = _driver.LEVEL_VALUE = values[0]
        _tables.LOWEST_FLOOR, _tables.SLOTS_PER_POSITION = values[1], values[2]

    def plan_slots(distinct, budget_slots, cap_lowest=True, value=None, above_lowest=1.0, split=None):
        arm = _in_arm()
        _set(_arm if arm else _defaults)
        try:
            if value is None or (arm and _value):
                value = _tables.LEVEL_VALUE
            got = _plan(distinct, budget_slots, cap_lowest, value, above_lowest, split)
        finally:
            _set(_defaults)
        _say(arm, f"{repr(_arm) if arm else '(defaults)'} slots {got}")
        return got

    _tables.plan_slots = plan_slots
    if not _devices:
        _set(_arm)
