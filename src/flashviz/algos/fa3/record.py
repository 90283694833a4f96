"""What every part of the folder may know of its record: the algorithm's name and its kernel file, whose forward
functions hold its steps (the backward's regions in the same file are not this algorithm's)."""

from __future__ import annotations

from flashviz.model.kernels import KernelFile

NAME = "fa3"
KERNEL = KernelFile(
    __package__ or __name__, "kernel.py", ("_load_kv", "_fwd_producer", "_fwd_tiles_overlapped", "_fwd_consumer")
)
