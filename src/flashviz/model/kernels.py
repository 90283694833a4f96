"""An algorithm's kernel file, and the cutting of its marked step regions into the code a step shows.

Every algorithm's kernel file lies in its folder (`flashviz/algos/<name>/`); a step is the lines between
`// step: NAME` and `// end step` (`# step: NAME` and `# end step` in a Triton kernel, a Python file), and the code
a step shows is that region with the loop indices substituted. A kernel file that holds more than one algorithm's
kernels (the Triton file: forward and backward) gives each its own functions (`KernelFile.functions`): only
the regions inside those are that algorithm's.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

_BEGIN = re.compile(r"^\s*(?://|#) step: (\w+)\s*$")
_END = re.compile(r"^\s*(?://|#) end step\s*$")


@dataclass(frozen=True)
class Region:
    """The lines of one step, 1-based and inclusive, excluding the two marker comments."""

    op: str
    first: int
    last: int
    body: str  # dedented source of the region, loop indices still symbolic


@dataclass(frozen=True)
class KernelFile:
    """An algorithm's kernel file: the package of its folder, the file's name there, and (a file shared with another
    algorithm: the Triton file) the top-level functions whose steps are this algorithm's. Plain data, so that every
    layer can take one without knowing the registry (`Algorithm.kernel` is the algorithm's)."""

    package: str  # its folder as a Python package, e.g. "flashviz.algos.fa2"
    name: str  # e.g. "fa2_forward.cu"
    functions: tuple[str, ...] = ()
    # the package the file lies in when it is not the folder (the ring's flashviz/ops/ring.py, the module that
    # flashviz.ring_attention is: its steps are cut from the code users run), else None
    lies_in: str | None = None


def kernel_file(kernel: KernelFile) -> str:
    """The kernel file's name, as the trace and NVRTC's messages name it (fa2_forward.cu)."""
    return kernel.name


def path(kernel: KernelFile) -> Traversable:
    """Where the kernel file lies: in the algorithm's folder (or where `lies_in` says)."""
    return files(kernel.lies_in or kernel.package).joinpath(kernel.name)


@cache
def source(kernel: KernelFile) -> str:
    return path(kernel).read_text()


def comment(kernel: KernelFile) -> str:
    """The kernel file's line comment: `#` in a Python (Triton) file, `//` in CUDA C++."""
    return "#" if kernel.name.endswith(".py") else "//"


def function_lines(text: str, names: tuple[str, ...]) -> set[int]:
    """The 1-based lines of the named top-level functions of a Python file: from the first decorator to the line
    before the next top-level statement (so that a closing `# end step` comment after the last statement counts)."""
    tree = ast.parse(text)
    body = tree.body
    starts = [min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", []))]) for n in body]
    found = {node.name: k for k, node in enumerate(body) if isinstance(node, ast.FunctionDef)}
    missing = [name for name in names if name not in found]
    if missing:
        raise ValueError(f"no function {', '.join(missing)} in the kernel file")
    end = len(text.splitlines())
    lines: set[int] = set()
    for name in names:
        k = found[name]
        last = starts[k + 1] - 1 if k + 1 < len(body) else end
        lines.update(range(starts[k], last + 1))
    return lines


@cache
def regions(kernel: KernelFile) -> dict[str, Region]:
    """Parse the `// step: NAME` ... `// end step` regions of an algorithm's kernel file (those inside its
    `functions` when it names some)."""
    text = source(kernel)
    lines = text.splitlines()
    own = kernel.functions
    inside = function_lines(text, own) if own else None
    found: dict[str, Region] = {}
    op: str | None = None
    start = 0
    for n, line in enumerate(lines, 1):
        if inside is not None and n not in inside:
            continue
        if m := _BEGIN.match(line):
            if op is not None:
                raise ValueError(f"{kernel.name}:{n}: step {m[1]} opens inside step {op}")
            op, start = m[1], n + 1
        elif _END.match(line):
            if op is None:
                raise ValueError(f"{kernel.name}:{n}: end step without a step")
            if op in found:
                raise ValueError(f"{kernel.name}: step {op} is marked twice")
            body = textwrap.dedent("\n".join(lines[start - 1 : n - 1]))
            found[op] = Region(op, start, n - 1, body)
            op = None
    if op is not None:
        raise ValueError(f"{kernel.name}: step {op} is never closed")
    return found


def substitute(body: str, **indices: int | None) -> str:
    """Replace the loop indices (whole identifiers only) by their values, as the seed prints them."""
    for name, value in indices.items():
        if value is not None:
            body = re.sub(rf"\b{name}\b", str(value), body)
    return body


def step_code(
    kernel: KernelFile, op: str, subst: dict[str, int] | None = None, note: str = "", **indices: int | None
) -> str:
    """The code a step shows: a `// i = 0, j = 1` header (`# i = 0, j = 1` in a Python file; indices in the order
    given, those that are None left out, then `subst` and a `note`), then its region with the indices and `subst`
    (names of the kernel's own loop variables, e.g. the Triton loop's `start` = j·Bc) substituted."""
    shown = [f"{name} = {value}" for name, value in indices.items() if value is not None]
    shown += [f"{name} = {value}" for name, value in (subst or {}).items()]
    header = f"{comment(kernel)} " + ", ".join(shown) + (f" \u00b7 {note}" if note else "")
    return header + "\n" + substitute(regions(kernel)[op].body, **indices, **(subst or {}))
