"""Running the kernels for real on a CUDA GPU (optional extra: pip install 'flashviz[gpu]').

- `specs`: what a launch spec is (each algorithm's folder declares its own in `gpu.py`), and the lookup.
- `nvrtc`: the NVRTC source (the kernel file itself) and its compilation.
- `device`: CuPy and the CUDA device, or one line saying what to install.
- `launch`: compile and launch an algorithm's kernels on B x H heads at once; the child command line.
- `check`: the GPU's outputs against the engine's and float64, head by head.
- `run`: `flashviz gpu run`: launch on the engine's inputs, check, report.
- `ncu`: Nsight Compute's command line and CSV; `sectors`: the traffic model as a profiler counts it.
- `profile`: the kernel under Nsight Compute, measured bytes beside the model's.
- `sanitize`: the kernel under compute-sanitizer's four tools.
- `cli`: `flashviz gpu run | profile | sanitize`.

Nothing here imports CuPy at import time; `device.require_gpu()` does, and says what to install.
"""

INSTALL_HINT = "pip install 'flashviz[gpu]'"
