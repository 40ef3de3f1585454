"""Performance gates for GPU CI runners (``python ci/perf_gate.py``; ``tox -e gpu`` runs both).

- ``workloads``: the fixed GPU benchmark set and its timing loop (shared with ci/bench_gpu.py).
- ``timing``: median-of-runs timings against ci/baselines/<gpu-slug>.json, with tolerances.
- ``static``: per-kernel registers, local memory and spill bytes (``nvcc -Xptxas -v`` or CuPy's
  kernel attributes) against ci/kernel_budgets.json.
- ``table``: the aligned Markdown tables both gates print.

Only ``workloads.build_driver`` and the measuring functions touch CuPy; everything else is plain
Python, tested on every machine by suites/test_perf_gate.py.
"""
