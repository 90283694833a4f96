"""An algorithm's kernel file, and the cutting of its marked step regions into the code a step shows.

Every algorithm's kernel file lies in its folder (`flashviz/algos/<name>/`); a step is the lines between
`// step: NAME` and `// end step`, and the code a step shows is that region with the loop indices substituted.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from .algos import get

if TYPE_CHECKING:
    from importlib.abc import Traversable

_BEGIN = re.compile(r"^\s*// step: (\w+)\s*$")
_END = re.compile(r"^\s*// end step\s*$")


@dataclass(frozen=True)
class Region:
    """The lines of one step, 1-based and inclusive, excluding the two marker comments."""

    op: str
    first: int
    last: int
    body: str  # dedented source of the region, loop indices still symbolic


def kernel_file(algo: str) -> str:
    """The kernel file's name, as the trace and NVRTC's messages name it (fa2_forward.cu)."""
    return get(algo).kernel_file


def path(algo: str) -> Traversable:
    """Where the kernel file lies: in the algorithm's folder."""
    return get(algo).kernel_path


@cache
def source(algo: str) -> str:
    return path(algo).read_text()


@cache
def regions(algo: str) -> dict[str, Region]:
    """Parse the `// step: NAME` ... `// end step` regions of an algorithm's kernel file."""
    lines = source(algo).splitlines()
    found: dict[str, Region] = {}
    op: str | None = None
    start = 0
    for n, line in enumerate(lines, 1):
        if m := _BEGIN.match(line):
            if op is not None:
                raise ValueError(f"{kernel_file(algo)}:{n}: step {m[1]} opens inside step {op}")
            op, start = m[1], n + 1
        elif _END.match(line):
            if op is None:
                raise ValueError(f"{kernel_file(algo)}:{n}: end step without a step")
            if op in found:
                raise ValueError(f"{kernel_file(algo)}: step {op} is marked twice")
            body = textwrap.dedent("\n".join(lines[start - 1 : n - 1]))
            found[op] = Region(op, start, n - 1, body)
            op = None
    if op is not None:
        raise ValueError(f"{kernel_file(algo)}: step {op} is never closed")
    return found


def substitute(body: str, **indices: int | None) -> str:
    """Replace the loop indices (whole identifiers only) by their values, as the seed prints them."""
    for name, value in indices.items():
        if value is not None:
            body = re.sub(rf"\b{name}\b", str(value), body)
    return body


def step_code(algo: str, op: str, **indices: int | None) -> str:
    """The code a step shows: a `// i = 0, j = 1` header (indices in the order given, those that are
    None left out), then its region with the indices substituted."""
    header = "// " + ", ".join(f"{name} = {value}" for name, value in indices.items() if value is not None)
    return header + "\n" + substitute(regions(algo)[op].body, **indices)
