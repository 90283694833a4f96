"""A launch on a real GPU: the device's limits, the CUDA occupancy calculation, the grid of blocks laid onto the SMs
in waves, what each warp of a block owns, and the recorded H200 runs (the trace's `hardware` key,
docs/trace-schema.md). Machinery: it reads an algorithm's launch (`gpu.py`) and its warps (`warps.py`) through the
registry and never names one.

- `device`     the H200's limits: measured properties, and the sm_90 constants of CUDA's occupancy calculator
- `occupancy`  blocks per SM from threads, registers and shared memory; waves
- `recorded`   the shipped facts of the recorded runs (data/hardware/): registers per kernel, the ncu profiles, rates
"""
