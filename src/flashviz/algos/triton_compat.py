"""What moved in Triton's Gluon between the releases flashviz runs on (3.6 to 3.9), said once: the kernels call these
names, and this module binds each to the release installed.

- The Hopper TMA copies: `tma.async_copy_global_to_shared` / `async_copy_shared_to_global` (3.6) became `async_load`
  / `async_store` (3.9; the old names raise there). Same positional arguments.
- A shared-memory view of other dtype, shape or layout: `shared_memory_descriptor._reinterpret` (3.6) became
  `reinterpret` (3.9); `as_block(buf, desc)` is either (3.6 takes no list of ints into a jit function's constexpr
  argument, so the view is made here, from the descriptor).
- The TMA reduce-add from shared memory into global memory (`cp.reduce.async.bulk.tensor`), `tma.async_atomic_add`,
  is 3.9's only: `HAS_TMA_REDUCE` says whether the installed Gluon has it.
"""

from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma

VERSION = tuple(int(p) for p in triton.__version__.split(".")[:2])
NEW_TMA_NAMES = hasattr(tma, "async_load")

tma_load = tma.async_load if NEW_TMA_NAMES else tma.async_copy_global_to_shared
tma_store = tma.async_store if NEW_TMA_NAMES else tma.async_copy_shared_to_global
HAS_TMA_REDUCE = hasattr(tma, "async_atomic_add")

if hasattr(gl.shared_memory_descriptor, "reinterpret"):

    @gluon.jit
    def as_block(buf, desc):
        """`buf`'s bytes seen as `desc`'s block: its dtype, shape and layout."""
        return buf.reinterpret(desc.dtype, desc.block_type.shape, desc.layout)

else:

    @gluon.jit
    def as_block(buf, desc):
        """`buf`'s bytes seen as `desc`'s block: its dtype, shape and layout."""
        return buf._reinterpret(desc.dtype, desc.block_type.shape, desc.layout)
