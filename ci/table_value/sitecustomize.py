"""A benchmark tool, never imported by the project: with this folder on PYTHONPATH and
PERFT_EXPERIMENT_TABLE_VALUE=V (and PERFT_EXPERIMENT_LOWEST_FLOOR=F) in the environment, every
Python process, Dask workers included, plans its GPU tables with LEVEL_VALUE V (and LOWEST_FLOOR
F) instead of the defaults of perft_core/gpu/tables.py: an A/B of the table rule through
``perft deep --gpus N``, whose workers are processes of their own (NOTES.md "Session 14").

    PYTHONPATH=$PWD:$PWD/ci/table_value PERFT_EXPERIMENT_TABLE_VALUE=1 PERFT_EXPERIMENT_LOWEST_FLOOR=0 \\
        perft deep startpos 13 --backend gpu --gpus 4 --tt --split-ply 2 --store A.sqlite
"""
import os

_value = os.environ.get("PERFT_EXPERIMENT_TABLE_VALUE")
_floor = os.environ.get("PERFT_EXPERIMENT_LOWEST_FLOOR")
if _value or _floor:
    import perft_core.gpu.tables as _tables
    import perft_core.gpu.ttdriver as _driver

    if _value:
        _tables.LEVEL_VALUE = _driver.LEVEL_VALUE = float(_value)
    if _floor:
        _tables.LOWEST_FLOOR = float(_floor)
