"""Holding a recorded run to the float64 truth: each program's rows and tiles, its carries at the end of every tile
against the exact online-softmax state after the keys it has loaded so far, and its O and L against attention.

- A program's rows are those of its first load of Q (row r of the carries is row r of that block; rows the mask
  kept out are not judged), its tiles the loop iterations that loaded K (the outermost ones, when loops nest), and a
  tile's keys the rows of K it loaded. The truth after tile t is the state after every key loaded in tiles 0..t,
  masked as the launch is (key <= row under --causal): it does not depend on the order the kernel visits them.
- The carries are found by the names given (`--carry m_i,l_i,acc`) or the common spellings. Kernels keep them in
  different forms; the form is read off the first tile of the first program and kept for the whole run: m in
  natural units, in units of log2 (a kernel that uses exp2 with the scale times log2 e) or unscaled (the scale
  applied inside the exponential); acc unnormalised (FA2) or normalised after every tile (FA1); L natural or log2
  (the tutorial's M).
- Errors are max-norm relative (max |x - ref| over max |ref| over the judged rows; m and L, in the log domain,
  over max(1, max |ref|)), against the tolerance of the launch's dtype; a NaN or inf where the truth is finite is an
  infinite error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from flashviz.model.config import ConfigError, shown

from . import truth
from .record import Access, Iteration, Program
from .source import KernelSource

# Relative max-norm tolerances per dtype. m and L: exact products of 16-bit inputs summed in fp32. l, acc and O: P
# rounded to the dtype before P·V, O stored in it (fp16: 2^-11 relative, bf16: 2^-9), a few times over, as
# fa2-triton's expect.py bounds bf16. float32 inputs: tl.dot's default is tf32 (10 bits of each operand kept), which
# puts every quantity near 1e-3 (measured with examples/my_attn.py: O 2.5e-3, m 9e-4 at N=128, D=128). A planted bug
# errs by 1e-1 and more, far above all of these.
TOLERANCE = {
    "float16": {"m": 1e-4, "l": 2e-3, "acc": 4e-3, "O": 4e-3, "L": 1e-4},
    "bfloat16": {"m": 1e-4, "l": 1e-2, "acc": 2e-2, "O": 2e-2, "L": 1e-4},
    "float32": {"m": 4e-3, "l": 1e-2, "acc": 1e-2, "O": 1e-2, "L": 4e-3},
}
ROLES = ("m", "l", "acc")
SPELLINGS = {
    "m": ("m_i", "mi", "m", "m_prev", "row_max", "max_i", "m_acc"),
    "l": ("l_i", "li", "l", "l_prev", "row_sum", "denom", "sum_i", "l_acc"),
    "acc": ("acc", "Oi", "O_i", "o_i", "acc_o", "o"),
}
M_UNITS = {"natural": 1.0, "log2": truth.LOG2E}  # and "unscaled": 1 / scale
L_UNITS = {"natural": 1.0, "log2": truth.LOG2E}


def nearest(got: np.ndarray, candidates: dict[str, np.ndarray]) -> str:
    """The candidate form `got` is in: the one whose rows' magnitudes are nearest to got's, by the median over rows
    of |log(|got_r| / |cand_r|)|. The median holds when a bug has made some rows wrong (a causal mask off by one moves
    the max of a few rows only), where the largest error would pick the form that fits the bug."""

    def mags(a: np.ndarray) -> np.ndarray:
        return np.abs(a) if a.ndim == 1 else np.linalg.norm(a, axis=1)

    g = mags(got)
    best, score = next(iter(candidates)), float("inf")
    for name, cand in candidates.items():
        c = mags(cand)
        live = np.isfinite(g) & np.isfinite(c) & (g > 1e-6) & (c > 1e-6)
        if not live.any():
            continue
        s = float(np.median(np.abs(np.log(g[live] / c[live]))))
        if s < score:
            best, score = name, s
    return best


def rel_error(got: np.ndarray, ref: np.ndarray, floor: float = 0.0) -> float:
    if got.shape != ref.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    if not np.all(np.isfinite(got)):
        return float("inf")
    diff = float(np.abs(got - ref).max())
    scale = max(floor, float(np.abs(ref).max()))
    return diff / scale if scale > 0 else diff


@dataclass(frozen=True)
class Check:
    name: str  # the kernel's variable, or O, L
    role: str  # m, l, acc, O, L
    error: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(self.error <= self.tolerance)

    def to_dict(self) -> dict:
        finite = bool(np.isfinite(self.error))
        return {
            "name": self.name,
            "role": self.role,
            "error": self.error if finite else None,
            "finite": finite,
            "tolerance": self.tolerance,
            "ok": self.ok,
        }


@dataclass
class Tile:
    iteration: Iteration
    number: int  # the program's how-many-th tile
    j: int  # which tile of keys: its first key // Bc
    keys: np.ndarray  # rows of K loaded in this tile
    seen: np.ndarray  # rows of K loaded in tiles 0..number
    checks: dict[str, Check] = field(default_factory=dict)
    values: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # role -> (kernel's, truth's)


@dataclass
class Block:
    """One program, held to the truth."""

    program: Program
    rows: np.ndarray  # (Br,) query row of each carry row, -1 where none
    head: int  # z * H + h
    tiles: list[Tile] = field(default_factory=list)
    out: dict[str, Check] = field(default_factory=dict)  # O, L
    note: str = ""

    @property
    def judged(self) -> np.ndarray:
        return self.rows >= 0

    @property
    def index(self) -> int:
        """i of "block i": its first row over Br (the grid's order need not be: a causal kernel may run its longest
        blocks first), or the program's first grid index when it has no rows."""
        live = self.rows[self.judged]
        return int(live.min()) // self.rows.size if live.size else self.program.pid[0]

    def name(self, heads: int) -> str:
        return f"block {self.index}" + (f", head {self.head}" if heads > 1 else "")


@dataclass
class Forms:
    names: dict[str, str]  # role -> the kernel's variable
    m: str = "natural"
    acc: str = "unnormalised"
    L: str = "natural"


def rows_of(access: Access, n: int, d: int) -> np.ndarray | None:
    """Query row of each row of the block of a load of Q (-1 where the mask kept it out), or None when the block
    has no axis of rows (a row of the block mixes query rows)."""
    block = access.block
    if block is None or block.ndim == 0:
        return None
    if block.ndim == 1:
        block = block[:, None]
    rows = np.where(block >= 0, (block // d) % n, -1)  # (Br, D) or (D, Br)
    for axis in (0, 1):
        by = rows if axis == 0 else rows.T
        out = np.full(by.shape[0], -1, dtype=np.int64)
        ok = True
        for r in range(by.shape[0]):
            live = by[r][by[r] >= 0]
            if live.size and np.any(live != live[0]):
                ok = False
                break
            out[r] = live[0] if live.size else -1
        if ok:
            return out
    return None


def tiles_of(program: Program) -> list[Iteration]:
    """The iterations that loaded K and sit in no other iteration that did: one per tile of keys."""
    by_id = {it.id: it for it in program.iterations}

    def outer_k(it: Iteration) -> bool:
        parent = it.parent
        while parent is not None:
            if by_id[parent].loads_k:
                return False
            parent = by_id[parent].parent
        return True

    return [it for it in program.iterations if it.loads_k and outer_k(it)]


def keys_of(program: Program, it: Iteration, n: int, d: int) -> np.ndarray:
    found = [
        e.elements
        for e in program.events[it.first_event : it.last_event]
        if isinstance(e, Access) and e.tensor == "K" and e.kind == "load"
    ]
    if not found:
        return np.zeros(0, dtype=np.int64)
    return np.unique((np.concatenate(found) // d) % n)


WORDS = {"m": "the running max", "l": "the running sum", "acc": "the accumulator"}


def theirs(carried: tuple[str, ...]) -> str:
    """What a refusal of --carry says the kernel has."""
    return f"its loops carry {', '.join(carried)}" if carried else "no loop of it carries a value to the next iteration"


def check_names(given: dict[str, str] | None, source: KernelSource, kernel: str) -> None:
    """Before the run: every name --carry gives is one that a loop of the kernel assigns (or of a function it calls),
    else ConfigError naming the carries it has."""
    known = source.in_loops(kernel)
    for name in (given or {}).values():
        if name not in known:
            raise ConfigError("--carry", f"{kernel} has no carry {shown(name)} ({theirs(source.carried(kernel))})")


def carry_names(given: dict[str, str] | None) -> tuple[str, ...]:
    """The names the recorder copies at each tile's end."""
    if given:
        return tuple(given.values())
    return tuple(dict.fromkeys(name for role in ROLES for name in SPELLINGS[role]))


class Judge:
    def __init__(
        self,
        heads: list[truth.Head],
        n: int,
        d: int,
        causal: bool,
        dtype: str,
        given: dict[str, str] | None,
        carried: tuple[str, ...] = (),
    ):
        self.heads = heads
        self.n, self.d = n, d
        self.mask = truth.Mask(0 if causal else None)
        self.tol = TOLERANCE[dtype]
        self.given = given
        self.carried = carried  # the kernel's loop carries (source.py), named when --carry is refused

    def blocks(
        self, programs: list[Program], out: np.ndarray, lse: np.ndarray | None, whole: bool = True
    ) -> tuple[list[Block], Forms]:
        """Every program held to the truth; `out` is O as the kernel left it (Z·H, N, D), `lse` L (Z·H, N); `whole`:
        the run was not stopped by a fault, so that --carry's names are held to their roles."""
        blocks = [b for b in (self._block(p) for p in programs) if b is not None]
        if self.given and whole:
            self._hold_given(blocks)
        forms = self._forms(blocks)
        if lse is not None:
            forms.L = self._l_form(blocks, lse)
        for b in blocks:
            self._judge_tiles(b, forms)
            self._judge_out(b, forms, out, lse)
        return blocks, forms

    def block_of(self, program: Program) -> Block | None:
        """The program's block (its rows and head), its tiles not yet judged; None when it loaded no Q."""
        return self._block(program)

    def _block(self, program: Program) -> Block | None:
        # its first load of Q that touched an element (one masked off whole touches no row of its own)
        first_q = next(
            (e for e in program.events if isinstance(e, Access) and e.tensor == "Q" and e.elements.size), None
        )
        if first_q is None:
            return None
        rows = rows_of(first_q, self.n, self.d)
        head = program.head if program.head is not None else int(first_q.elements[0] // (self.n * self.d))
        if rows is None:
            return Block(program, np.zeros(0, dtype=np.int64), head, note="its load of Q mixes query rows in a row")
        block = Block(program, rows, head)
        tiles = tiles_of(program)
        keys = [keys_of(program, it, self.n, self.d) for it in tiles]
        bc = max((k.size for k in keys), default=1) or 1
        seen = np.zeros(0, dtype=np.int64)
        for number, (it, k) in enumerate(zip(tiles, keys, strict=True)):
            seen = np.union1d(seen, k)
            j = int(k.min()) // bc if k.size else number
            block.tiles.append(Tile(it, number, j, k, seen))
        return block

    def _truth(self, block: Block, keys: np.ndarray, mask: truth.Mask | None = None) -> truth.State:
        rows = block.rows[block.judged]
        return truth.state(self.heads[block.head], rows, keys, mask or self.mask)

    # -- forms ----------------------------------------------------------------------------------------------
    def _names(self, first: dict[str, np.ndarray]) -> dict[str, str]:
        if self.given:
            return dict(self.given)
        names = {}
        for role in ROLES:
            found = next((name for name in SPELLINGS[role] if name in first), None)
            if found is not None:
                names[role] = found
        return names

    def _forms(self, blocks: list[Block]) -> Forms:
        first = next((t for b in blocks for t in b.tiles if b.judged.any() and t.iteration.carries), None)
        if first is None:
            return Forms(self._names({}))
        block = next(b for b in blocks if first in b.tiles)
        forms = Forms(self._names(first.iteration.carries))
        ref = self._truth(block, first.seen)
        seen = ref.seen
        units = {**M_UNITS, "unscaled": 1.0 / self.heads[block.head].scale}
        m = self._carry(block, first, forms.names.get("m"), 1)
        if m is not None:
            forms.m = nearest(m[seen], {u: units[u] * ref.m[seen] for u in units})
        acc = self._carry(block, first, forms.names.get("acc"), 2)
        if acc is not None:
            cands = {"unnormalised": ref.acc, "normalised": ref.normalised}
            forms.acc = nearest(acc[seen], {f: c[seen] for f, c in cands.items()})
        return forms

    def _hold_given(self, blocks: list[Block]) -> None:
        """The names --carry gives, held at the end of the first tile to the roles they were given: a float tensor,
        one value per row (m, l) or D per row (acc), and not the other one of m and l by its values (swapped names).
        ConfigError naming the first that is not."""
        first = next((t for b in blocks for t in b.tiles if b.judged.any()), None)
        if first is None or not self.given:
            return
        block = next(b for b in blocks if first in b.tiles)
        order = f"the names go max, sum, accumulator; {theirs(self.carried)}"
        for role, name in self.given.items():
            value = first.iteration.carries.get(name)
            if value is None:
                raise ConfigError("--carry", f"{role}={name} is not a float tensor at the end of a tile ({order})")
            shape = f"a {tuple(value.shape)} tensor at the end of a tile"
            if role != "acc" and value.ndim > 1 and value.shape[1] > 1:
                raise ConfigError(
                    "--carry", f"{role}={name} is {shape}, where {WORDS[role]} is one value per row ({order})"
                )
            if role == "acc" and value.ndim < 2:
                raise ConfigError(
                    "--carry", f"{role}={name} is {shape}, where the accumulator is D={self.d} values per row ({order})"
                )
        ref = self._truth(block, first.seen)
        units = [*M_UNITS.values(), 1.0 / self.heads[block.head].scale]
        for role, other in (("m", "l"), ("l", "m")):
            got = self._carry(block, first, self.given.get(role), 1)
            if got is None:
                continue
            got = got[ref.seen]
            as_m = min(rel_error(got, u * ref.m[ref.seen], 1.0) for u in units)
            as_l = rel_error(got, ref.l[ref.seen])
            fits = {"m": as_m <= self.tol["m"], "l": as_l <= self.tol["l"]}
            if fits[other] and not fits[role]:
                raise ConfigError(
                    "--carry",
                    f"{role}={self.given[role]} holds {WORDS[other]}, not {WORDS[role]} ({order})",
                )

    def _carry(self, block: Block, tile: Tile, name: str | None, ndim: int) -> np.ndarray | None:
        """The kernel's carry at the end of `tile`, judged rows only ((R,) or (R, D)), or None."""
        value = tile.iteration.carries.get(name) if name else None
        if value is None:
            return None
        value = value.reshape(value.shape[0], -1) if value.ndim > 1 else value
        if value.shape[0] != block.rows.size:
            block.note = f"{name} has {value.shape[0]} rows where the block of Q has {block.rows.size}: not judged"
            return None
        value = value[block.judged]
        if ndim == 1:
            return value.reshape(-1) if value.ndim == 1 or value.shape[1] == 1 else None
        if value.ndim != 2 or value.shape[1] < self.d:
            return None
        return value[:, : self.d]

    def expected(self, role: str, forms: Forms, ref: truth.State, scale: float) -> np.ndarray:
        """The truth of a carry in the kernel's form."""
        if role == "m":
            u = 1.0 / scale if forms.m == "unscaled" else M_UNITS[forms.m]
            return u * ref.m
        if role == "l":
            return ref.l
        return ref.normalised if forms.acc == "normalised" else ref.acc

    def _judge_tiles(self, block: Block, forms: Forms) -> None:
        scale = self.heads[block.head].scale
        for tile in block.tiles:
            ref = self._truth(block, tile.seen)
            seen = ref.seen
            for role in ROLES:
                name = forms.names.get(role)
                got = self._carry(block, tile, name, 1 if role != "acc" else 2)
                if got is None or name is None:
                    continue
                want = self.expected(role, forms, ref, scale)
                error = rel_error(got[seen], want[seen], 1.0 if role == "m" else 0.0)
                tile.checks[role] = Check(name, role, error, self.tol[role])
                tile.values[role] = (got, want)

    def _judge_out(self, block: Block, forms: Forms, out: np.ndarray, lse: np.ndarray | None) -> None:
        if not block.judged.any():
            return
        rows = block.rows[block.judged]
        ref = self._truth(block, np.arange(self.n))
        got = out[block.head][rows]  # (R, D)
        block.out["O"] = Check("O", "O", rel_error(got, ref.normalised), self.tol["O"])
        if lse is not None:
            want = L_UNITS[forms.L] * (ref.m + np.log(ref.l))
            block.out["L"] = Check("L", "L", rel_error(lse[block.head][rows], want, 1.0), self.tol["L"])

    def _l_form(self, blocks: list[Block], lse: np.ndarray) -> str:
        block = next((b for b in blocks if b.judged.any()), None)
        if block is None:
            return "natural"
        ref = self._truth(block, np.arange(self.n))
        got = lse[block.head][block.rows[block.judged]]
        want = ref.m + np.log(ref.l)
        return nearest(got, {u: L_UNITS[u] * want for u in L_UNITS})
