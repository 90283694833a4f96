"""What every part of the folder may know of its record, in a module none of them imports the others through: the
algorithm's name and its kernel file (the rest of the record, and the parts, make `ALGORITHM` in `__init__`)."""

from __future__ import annotations

from flashviz.model.kernels import KernelFile

NAME = "fa2"
KERNEL = KernelFile(__package__ or __name__, "fa2_forward.cu")
