"""Triton's runtime as the kernels' launchers use it: the tuned choices kept per bucket of lengths and on disk
(`tuning`), the autotuner's candidates compiled in parallel (`precompile`), the interpreter's gaps filled
(`interpreter`), tensors made ready for TMA descriptors (`tma`). Needs no torch or Triton to import."""
