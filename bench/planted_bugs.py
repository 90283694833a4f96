"""Two planted bugs, so that a clean compute-sanitizer report means something: the tools catch these.

compute-sanitizer --tool memcheck python bench/planted_bugs.py oob
compute-sanitizer --tool racecheck python bench/planted_bugs.py race
compute-sanitizer --tool memcheck python bench/planted_bugs.py oob-pool  # unseen: why sanitized runs skip the pool
"""

from __future__ import annotations

import sys

import cupy as cp

SOURCE = r"""
extern "C" __global__ void oob(float* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = 1.f;  // no `if (t < n)`: the threads past n write past the allocation
}
extern "C" __global__ void race(float* out) {
    __shared__ float s[32];
    s[threadIdx.x % 32] = threadIdx.x;  // 64 threads, 32 slots, no barrier: write-write hazard
    out[threadIdx.x] = s[(threadIdx.x + 1) % 32];  // and read-after-write without __syncthreads
}
"""

if __name__ == "__main__":
    if sys.argv[1] != "oob-pool":  # oob-pool: the same bug inside CuPy's memory pool, which memcheck cannot see
        cp.cuda.set_allocator(None)  # plain cudaMalloc: memcheck knows each buffer's real end
    module = cp.RawModule(code=SOURCE)
    out = cp.zeros(64, dtype=cp.float32)
    if sys.argv[1].startswith("oob"):
        module.get_function("oob")((2,), (64,), (out, cp.int32(64)))  # 128 threads, 64 floats
    else:
        module.get_function("race")((1,), (64,), (out,))
    cp.cuda.Device().synchronize()
