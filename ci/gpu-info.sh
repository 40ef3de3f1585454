# Sourced by the GPU device scripts (ci/stats_gpu_check.sh, ci/stats_tt_gpu_check.sh): gpu_info FILE
# prints the date, the GPU, the commit, the extension and how the kernels were loaded (the cubin,
# or NVRTC and why), and writes the same to FILE.
gpu_info() {
    {
        date -u
        nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
        git log --oneline -1 2>/dev/null || true
        python3 -c 'import cupy, perft_core, perft_core._core as c; from perft_core.gpu import prebuilt, kernels
found = prebuilt.find(kernels.kernel_source_dir(), f"sm_{cupy.cuda.Device().compute_capability}")
print("extension", c.__name__, "| cupy", cupy.__version__, "| precompiled kernels:",
      found[0] if isinstance(found, tuple) else "none (NVRTC): " + found)' || true
    } 2>&1 | tee "$1"
}
