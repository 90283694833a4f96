"""The verdict on a run: a fault, the first divergence, or correct with its worst error, each as one line.

The first divergence is the first tile, block by block (block 0 first, whatever order the grid runs them in; head by
head), where a carry's error passes the dtype's tolerance (then O, then L, at each block's write-back), told as the
issue tells it: "block 3, tile 5: acc diverges — 2.1e-1 against 4e-3 — after `acc = acc + tl.dot(p, v)`; m_i is
right, so the rescale by alpha is missing". Block i is the block of rows a program loaded, not its grid index.
The statement is the last one of that tile that assigned the carry. The cause is named only when the kernel's value
matches, within the same tolerance, the float64 state one common mistake leaves (truth.py): no rescale by alpha, a
running max that forgets earlier tiles, a causal mask off by one or missing (or present on a launch that is not
causal), O not divided by l, L without log l.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import truth
from .carries import ROLES, Block, Check, Forms, Judge, Tile, rel_error
from .record import Access, Fault, Pid, Program
from .source import KernelSource


def sci(x: float) -> str:
    """2.1e-1, 4e-3: a number as the issue writes it (no exponent padding, no trailing .0)."""
    if not np.isfinite(x):
        return "inf (NaN or inf in the kernel's values)"
    if x == 0:
        return "0"
    mantissa, exponent = f"{x:.1e}".split("e")
    mantissa = mantissa[:-2] if mantissa.endswith(".0") else mantissa
    return f"{mantissa}e{int(exponent)}"


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def spans(rows: np.ndarray, most: int = 3) -> str:
    """Sorted row numbers as runs: "16..39", "7", "0..3, 8..11 and 16..19", "0, 2, 4 and 5 more runs"."""
    rows = np.unique(np.asarray(rows, dtype=np.int64))
    if rows.size == 0:
        return "none"
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    runs = [(int(r[0]), int(r[-1])) for r in np.split(rows, breaks)]
    words = [f"{a}" if a == b else f"{a}..{b}" for a, b in runs]
    if len(words) > most:
        return ", ".join(words[:most]) + f" and {len(words) - most} more runs"
    return _and(words)


@dataclass(frozen=True)
class Divergence:
    where: str  # "block 3, tile 5", "block 2, write-back", or "rows 16..39" that no program stored
    pid: Pid | None
    tile: int | None  # the program's tile number
    j: int | None
    check: Check
    right: tuple[str, ...]
    line: int | None
    statement: str
    cause: str
    text: str = ""  # the whole line, where the usual one does not fit (rows no program stored: coverage.py)

    @property
    def message(self) -> str:
        if self.text:
            return self.text
        text = f"{self.where}: {self.check.name} diverges — {sci(self.check.error)} against {sci(self.check.tolerance)}"
        if self.statement:
            text += f" — after `{self.statement}`"
        if self.right:
            text += f"; {_and(list(self.right))} {'is' if len(self.right) == 1 else 'are'} right"
            if self.cause:
                text += f", so {self.cause}"
        elif self.cause:
            text += f"; {self.cause}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "program": None if self.pid is None else list(self.pid),
            "tile": self.tile,
            "j": self.j,
            **self.check.to_dict(),
            "right": list(self.right),
            "line": self.line,
            "statement": self.statement,
            "cause": self.cause,
            "message": self.message,
        }


def tile_owner(program: Program) -> dict[int, int]:
    """iteration id -> the id of the tile (outermost iteration that loaded K) it belongs to."""
    by_id = {it.id: it for it in program.iterations}
    owner: dict[int, int] = {}
    for it in program.iterations:
        chain, node = [], it
        while True:
            chain.append(node)
            if node.parent is None:
                break
            node = by_id[node.parent]
        tiles = [c for c in chain if c.loads_k]
        if tiles:
            owner[it.id] = tiles[-1].id
    return owner


def _last_assignment(program: Program, source: KernelSource, tile: Tile, name: str) -> int | None:
    owner = tile_owner(program)
    line = None
    for ln, iteration, _ in program.lines:
        if iteration is not None and owner.get(iteration) == tile.iteration.id and name in source.assigned(ln):
            line = ln
    return line


def _last_store(program: Program, tensor: str) -> int | None:
    lines = [e.line for e in program.events if isinstance(e, Access) and e.kind == "store" and e.tensor == tensor]
    return lines[-1] if lines else None


def _variants(causal: bool) -> list[tuple[truth.Mask, str]]:
    if causal:
        return [
            (truth.Mask(1), "its mask keeps key <= row + 1, one key past the diagonal: the causal mask is off by one"),
            (truth.Mask(-1), "its mask keeps key < row, dropping the diagonal: the causal mask is off by one"),
            (truth.Mask(None), "its values match no mask at all: the causal mask is missing"),
        ]
    return [(truth.Mask(0), "its values match a causal mask (key <= row), but the launch is not causal (--causal)")]


class Finder:
    def __init__(
        self,
        judge: Judge,
        forms: Forms,
        source: KernelSource,
        grid: tuple[int, int, int],
        causal: bool,
        out: np.ndarray,
        lse: np.ndarray | None,
        unstored: dict[str, np.ndarray] | None = None,
    ):
        self.judge, self.forms, self.source, self.grid, self.causal = judge, forms, source, grid, causal
        self.out, self.lse = out, lse  # O (Z·H, N, D) and L (Z·H, N) as the kernel left them
        self.unstored = unstored or {}  # O, L -> (Z·H, N): True where a row was never stored (coverage.py)

    def first(self, blocks: list[Block]) -> Divergence | None:
        for block in sorted(blocks, key=lambda b: (b.head, b.index)):
            for tile in block.tiles:
                bad = [role for role in ROLES if role in tile.checks and not tile.checks[role].ok]
                if bad:
                    return self._in_tile(block, tile, bad[0])
            for role in ("O", "L"):
                check = block.out.get(role)
                if check is not None and not check.ok:
                    return self._at_write_back(block, check)
        return None

    def _in_tile(self, block: Block, tile: Tile, role: str) -> Divergence:
        check = tile.checks[role]
        right = tuple(c.name for r, c in tile.checks.items() if r != role and c.ok)
        line = _last_assignment(block.program, self.source, tile, check.name)
        return Divergence(
            f"{block.name(len(self.judge.heads))}, tile {tile.j}",
            block.program.pid,
            tile.number,
            tile.j,
            check,
            right,
            line,
            self.source.statement(line) if line else "",
            self._cause(block, tile, role),
        )

    def _cause(self, block: Block, tile: Tile, role: str) -> str:
        got, _ = tile.values[role]
        head = self.judge.heads[block.head]
        rows = block.rows[block.judged]
        tol = tile.checks[role].tolerance
        floor = 1.0 if role == "m" else 0.0
        if role in ("l", "acc"):
            keys = [t.keys for t in block.tiles[: tile.number + 1]]
            alt = truth.unrescaled(head, rows, keys, self.judge.mask)[-1]
            want = self.judge.expected(role, self.forms, alt, head.scale)
            seen = alt.seen
            if rel_error(got[seen], want[seen], floor) <= tol:
                name = self.forms.names.get(role, role)
                return (
                    "the rescale by alpha is missing" if role == "acc" else f"the rescale of {name} by alpha is missing"
                )
        if role == "m":
            m = truth.tile_max(head, rows, tile.keys, self.judge.mask)
            want = self.judge.expected("m", self.forms, truth.State(m, m, m[:, None]), head.scale)
            seen = np.isfinite(m)
            if rel_error(got[seen], want[seen], 1.0) <= tol:
                return (
                    f"{self.forms.names['m']} forgets the tiles before: the running max with its old value is missing"
                )
        for mask, words in _variants(self.causal):
            alt = truth.state(head, rows, tile.seen, mask)
            want = self.judge.expected(role, self.forms, alt, head.scale)
            seen = alt.seen
            if seen.any() and rel_error(got[seen], want[seen], floor) <= tol:
                return words
        return ""

    def _at_write_back(self, block: Block, check: Check) -> Divergence:
        line = _last_store(block.program, check.role)
        right = tuple(c.name for c in block.out.values() if c.role != check.role and c.ok)
        if block.tiles:
            last = block.tiles[-1]
            right = tuple(c.name for c in last.checks.values() if c.ok) + right
        return Divergence(
            f"{block.name(len(self.judge.heads))}, write-back",
            block.program.pid,
            None,
            None,
            check,
            right,
            line,
            self.source.statement(line) if line else "",
            self._out_cause(block, check),
        )

    def _out_cause(self, block: Block, check: Check) -> str:
        head = self.judge.heads[block.head]
        rows = block.rows[block.judged]
        every = np.arange(head.q.shape[0])
        ref = truth.state(head, rows, every, self.judge.mask)
        never = self.unstored.get(check.role)
        if never is not None and never[block.head][rows].any():
            missing = rows[never[block.head][rows]]
            if missing.size == 1:
                return f"row {spans(missing)} of {check.role} was never stored"
            return f"rows {spans(missing)} of {check.role} were never stored ({missing.size} rows)"
        if check.role == "O":
            got = self.out[block.head][rows]  # (R, D)
            if rel_error(got, ref.acc) <= check.tolerance:
                return "O equals the unnormalised accumulator: the division by l is missing"
            for mask, words in _variants(self.causal):
                alt = truth.state(head, rows, every, mask)
                if rel_error(got, alt.normalised) <= check.tolerance:
                    return words
        elif self.lse is not None:
            got_l = self.lse[block.head][rows]
            units = {"natural": 1.0, "log2": truth.LOG2E}[self.forms.L]
            if rel_error(got_l, units * ref.m, 1.0) <= check.tolerance:
                return "L equals the running max: log l is not added"
        return ""


def worst(blocks: list[Block], heads: int) -> dict[str, dict[str, Any]]:
    """Per role, the largest error and where it was."""
    found: dict[str, dict[str, Any]] = {}
    for block in blocks:
        checks = [(c, t.j) for t in block.tiles for c in t.checks.values()] + [(c, None) for c in block.out.values()]
        for c, j in checks:
            best = found.get(c.role)
            if best is None or not c.error <= best["error"]:
                found[c.role] = {
                    "name": c.name,
                    "error": c.error,
                    "tolerance": c.tolerance,
                    "program": list(block.program.pid),
                    "block": block.name(heads),
                    "j": j,
                }
    return found


def fault_message(fault: Fault, programs: list[Program], judge: Judge, source: KernelSource) -> str:
    parts = []
    prog = next((p for p in programs if p.pid == fault.pid), None)
    if fault.pid is not None:
        block = judge.block_of(prog) if prog is not None else None
        name = block.name(len(judge.heads)) if block is not None else f"block {fault.pid[0]}"
        parts.append(f"{name} (program {fault.pid})")
    if fault.iteration is not None and prog is not None and fault.iteration < len(prog.iterations):
        it = prog.iterations[fault.iteration]
        parts.append(f"iteration {it.number} of the loop at line {it.loop}")
    where = ", ".join(parts)
    at = f"line {fault.line} `{source.statement(fault.line)}`" if fault.line else ""
    if fault.kind == "wrote_nothing":
        last = f"; the last program, {where}, ended at {at}" if at else ""
        return f"the kernel wrote nothing: no program stored anything to O{last}"
    head = ": ".join(x for x in (where, at) if x)
    return f"{head}: {fault.what}" if head else fault.what


def correct_message(found: dict[str, dict[str, Any]], dtype: str) -> str:
    if not found:
        return "correct?: nothing to judge (no block loaded Q)"
    key = max(found, key=lambda r: found[r]["error"] / found[r]["tolerance"])
    w = found[key]
    where = w["block"] + (f", tile {w['j']}" if w["j"] is not None else "")
    judged = _and([found[r]["name"] for r in (*ROLES, "O", "L") if r in found])
    return (
        f"correct: {judged} match float64 at every tile of every block within the {dtype} tolerances; worst error "
        f"{sci(w['error'])} against {sci(w['tolerance'])} ({w['name']}, {where})"
    )
