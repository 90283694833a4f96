"""Running the kernels for real on a CUDA GPU (optional extra: pip install 'flashviz[gpu]').

- `specs`: one table entry per algorithm: template, launch shape, shared memory, arguments.
- `nvrtc`: the NVRTC source (the kernel file itself) and its compilation.
- `run`: launch on the engine's inputs, B x H heads at once, and compare with the engine and float64.
- `profile`: the kernel under Nsight Compute, measured bytes beside the traffic model's.
- `sanitize`: the kernel under compute-sanitizer's four tools.
- `cli`: `flashviz gpu run | profile | sanitize`.

Nothing here imports CuPy at import time; `run.require_gpu()` does, and says what to install.
"""

INSTALL_HINT = "pip install 'flashviz[gpu]'"
