"""Running a kernel under Triton's interpreter and recording what each program does.

Triton's interpreter (TRITON_INTERPRET=1) runs a @triton.jit function as Python: every tl.load and tl.store reaches
its builder as a block of raw addresses and a mask, every tl.dot as two NumPy arrays, and the function's own frames
carry the kernel file's line numbers. The recorder wraps four of the builder's methods (masked load and store, dot,
the program index) for the length of one launch, and follows the kernel file's frames with `sys.settrace`, which
is how it sees each statement run and each loop iteration begin and end (a `for` or `while` loop in a @triton.jit
function is a Python loop under the interpreter). At the end of every iteration that loaded K it copies the carries
it is told to watch from the loop's frame.

Per program (one grid index) it keeps, in order:
- `events`: each load or store (the tensor, the elements touched after masking, the statement, the open iteration)
  and each dot (the operands' shapes);
- `iterations`: each loop iteration (its loop, its parent iteration, its events, the carries at its end);
- `lines`: each statement run (its line, the open iteration, how many events came before it).

A fault stops the launch where it happens, with one line of what went wrong: an address outside every tensor (found
before the interpreter dereferences it) or in another head's rows, a program that passes the step budget (loop
iterations), an exception from the kernel.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import exits
from .memory import Memory
from .source import Function, KernelSource, Loop

Pid = tuple[int, int, int]


@dataclass
class Access:
    """One tl.load or tl.store (an atomic is both)."""

    kind: str  # "load" or "store"
    tensor: str  # Q, K, V, O, L
    line: int
    iteration: int | None  # the innermost open iteration's id
    elements: np.ndarray  # flat indices of the elements touched after masking, in the block's order
    itemsize: int
    block: np.ndarray | None = None  # Q only: the pointer block's element indices, -1 where masked off

    @property
    def bytes(self) -> int:
        return int(self.elements.size) * self.itemsize


@dataclass
class Dot:
    line: int
    iteration: int | None
    a: tuple[int, ...]
    b: tuple[int, ...]


@dataclass
class Iteration:
    id: int
    loop: int  # the loop's header line
    parent: int | None  # the iteration that was open around it (in this frame or a caller's)
    number: int  # how many iterations of this loop the program ran before it
    first_event: int
    k_loads_at_open: int
    last_event: int = -1
    loads_k: bool = False
    carries: dict[str, np.ndarray] = field(default_factory=dict)  # float64 copies at the iteration's end


@dataclass
class Program:
    pid: Pid
    events: list[Access | Dot] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    lines: list[tuple[int, int | None, int]] = field(default_factory=list)  # (line, iteration, events before it)
    head: int | None = None  # z * H + h of its first load of Q
    k_loads: int = 0
    opened: int = 0
    loop_counts: dict[int, int] = field(default_factory=dict)
    raised_at: int | None = None  # the line where an exception first passed through the kernel's frames
    raised_in: int | None = None  # the iteration open there


@dataclass(frozen=True)
class Fault:
    """What stopped the launch: kind is raised, out_of_bounds, budget or wrote_nothing."""

    kind: str
    pid: Pid | None
    iteration: int | None
    line: int | None
    what: str  # what happened, in words, without the where


class KernelStop(BaseException):
    """Raised from a hook to stop the launch. A BaseException: the interpreter wraps every Exception of a kernel in
    its own InterpreterError, and this must reach the recorder as it is."""

    def __init__(self, fault: Fault):
        super().__init__(fault.what)
        self.fault = fault


class _Frame:
    __slots__ = ("fn", "open")

    def __init__(self, fn: Function):
        self.fn = fn
        self.open: list[tuple[Loop, Iteration]] = []


class Recorder:
    def __init__(self, source: KernelSource, memory: Memory, carry_names: tuple[str, ...], budget: int, heads: int):
        self.source = source
        self.path = source.path
        self.memory = memory
        self.carry_names = carry_names
        self.budget = budget
        self.heads = heads
        self.programs: list[Program] = []
        self.stack: list[Iteration] = []

    @property
    def program(self) -> Program:
        if not self.programs:  # an access before the first program index: the launch's own setup
            self.programs.append(Program((0, 0, 0)))
        return self.programs[-1]

    # -- the interpreter's builder --------------------------------------------------------------------------
    @contextmanager
    def installed(self) -> Iterator[None]:
        """The hooks on Triton's interpreter and the line tracer, for one launch."""
        from triton.runtime import interpreter

        builder = interpreter.interpreter_builder
        cls = type(builder)

        def load(ptrs, mask, other, *args, **kwargs):
            self._access("load", ptrs, mask)
            return cls.create_masked_load(builder, ptrs, mask, other, *args, **kwargs)

        def store(ptrs, value, mask, *args, **kwargs):
            self._access("store", ptrs, mask)
            return cls.create_masked_store(builder, ptrs, value, mask, *args, **kwargs)

        def dot(a, b, d, *args, **kwargs):
            self._dot(a, b)
            return cls.create_dot(builder, a, b, d, *args, **kwargs)

        def atomic_rmw(op, ptr, val, mask, *args, **kwargs):
            self._access("load", ptr, mask)
            self._access("store", ptr, mask)
            return cls.create_atomic_rmw(builder, op, ptr, val, mask, *args, **kwargs)

        def atomic_cas(ptr, cmp, val, *args, **kwargs):
            everywhere = interpreter.TensorHandle(np.ones_like(ptr.data, dtype=bool), interpreter.tl.int1)
            self._access("load", ptr, everywhere)
            self._access("store", ptr, everywhere)
            return cls.create_atomic_cas(builder, ptr, cmp, val, *args, **kwargs)

        def grid_idx(x, y, z):
            self._start((int(x), int(y), int(z)))
            return cls.set_grid_idx(builder, x, y, z)

        hooks = {
            "create_masked_load": load,
            "create_masked_store": store,
            "create_dot": dot,
            "create_atomic_rmw": atomic_rmw,
            "create_atomic_cas": atomic_cas,
            "set_grid_idx": grid_idx,
        }
        for name, hook in hooks.items():
            setattr(builder, name, hook)  # an instance attribute, over the class's method, for this launch only
        before = sys.gettrace()
        sys.settrace(self._call)
        try:
            yield
        finally:
            sys.settrace(before)
            for name in hooks:
                builder.__dict__.pop(name, None)

    def _start(self, pid: Pid) -> None:
        self.stack.clear()
        self.programs.append(Program(pid))

    def _here(self) -> int:
        f = sys._getframe(2)
        while f is not None and f.f_code.co_filename != self.path:
            f = f.f_back  # type: ignore[assignment]
        return f.f_lineno if f is not None else 0

    def _stop(self, what: str, kind: str = "out_of_bounds", line: int | None = None) -> KernelStop:
        prog = self.program
        return KernelStop(
            Fault(
                kind, prog.pid, self.stack[-1].id if self.stack else None, self._here() if line is None else line, what
            )
        )

    def _access(self, kind: str, ptrs: Any, mask: Any) -> None:
        prog = self.program
        addr = np.asarray(ptrs.data).astype(np.uint64, copy=False)
        live = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape) if mask is not None else None
        if live is None:
            live = np.ones(addr.shape, dtype=bool)
        region, element = self.memory.locate(addr)
        verb = "loads" if kind == "load" else "stores"
        outside = live & (region < 0)
        if outside.any():
            raise self._stop(self._outside(verb, addr[outside], int(outside.sum())))
        touched = np.unique(region[live])
        if touched.size > 1:
            names = " and ".join(self.memory.regions[int(r)].name for r in touched)
            raise self._stop(f"{verb} {names} in one access: its addresses run from one tensor into another")
        where = touched if touched.size else np.unique(region[region >= 0])
        if where.size == 0:
            return  # every address masked off and none in a tensor: nothing is touched
        r = self.memory.regions[int(where[0])]
        elements = element[live]
        if self.heads > 1 and elements.size:
            self._check_head(prog, r.name, verb, elements, r.shape)
        block = np.where(live, element, -1) if r.name == "Q" else None
        if r.name == "K" and kind == "load" and elements.size:
            prog.k_loads += 1
        iteration = self.stack[-1].id if self.stack else None
        prog.events.append(Access(kind, r.name, self._here(), iteration, elements, r.itemsize, block))

    def _outside(self, verb: str, bad: np.ndarray, count: int) -> str:
        near, past = self.memory.nearest(int(bad[0]))
        noun = "element" if count == 1 else "elements"
        if past >= 0:
            rows = ""
            if len(near.shape) == 4:
                n, d = near.shape[2], near.shape[3]
                rows = f", from row {n + past // d} of its last head, which has N={n} rows"
            return f"{verb} {count} {noun} out of bounds: past the end of {near.name}{rows}"
        return f"{verb} {count} {noun} out of bounds: before the start of {near.name}"

    def _check_head(self, prog: Program, name: str, verb: str, elements: np.ndarray, shape: tuple[int, ...]) -> None:
        per_head = int(np.prod(shape[2:]))
        heads = elements // per_head
        if prog.head is None:
            if name != "Q":
                return
            prog.head = int(heads[0])
        other = heads != prog.head
        if other.any():
            rows = int(shape[2])
            raise self._stop(
                f"{verb} {name} rows of head {int(heads[other][0])} (past row {rows - 1}, the last of its own head "
                f"{prog.head}): {int(other.sum())} elements out of bounds of its head"
            )

    def _dot(self, a: Any, b: Any) -> None:
        prog = self.program
        iteration = self.stack[-1].id if self.stack else None
        prog.events.append(Dot(self._here(), iteration, tuple(np.shape(a.data)), tuple(np.shape(b.data))))

    # -- the kernel file's frames -----------------------------------------------------------------------------
    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        code = frame.f_code
        if code.co_filename != self.path or event != "call":
            return None
        fn = self.source.function_at(code.co_firstlineno)
        if fn is None:
            return None
        state = _Frame(fn)

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                self._line(state, frame)
            elif event == "return":
                while state.open:
                    self._close(state, frame)
            elif (
                event == "exception"
                and self.programs
                and self.program.raised_at is None
                and not isinstance(arg[1], KernelStop)
            ):
                self.program.raised_at = frame.f_lineno
                self.program.raised_in = self.stack[-1].id if self.stack else None
            return local

        return local

    def _line(self, state: _Frame, frame: Any) -> None:
        line = frame.f_lineno
        while state.open and not state.open[-1][0].holds(line):
            self._close(state, frame)
        for loop in state.fn.loops:
            if loop.holds(line) and all(open_loop is not loop for open_loop, _ in state.open):
                self._open(state, loop, line)
        prog = self.program
        prog.lines.append((line, self.stack[-1].id if self.stack else None, len(prog.events)))

    def _open(self, state: _Frame, loop: Loop, line: int) -> None:
        prog = self.program
        prog.opened += 1
        number = prog.loop_counts.get(loop.header, 0)
        prog.loop_counts[loop.header] = number + 1
        parent = self.stack[-1].id if self.stack else None
        if prog.opened > self.budget:
            raise KernelStop(
                Fault(
                    "budget",
                    prog.pid,
                    parent,
                    loop.header,
                    f"passes the step budget of {self.budget:,} loop iterations per program (--budget) at iteration "
                    f"{number} of the loop at line {loop.header}",
                )
            )
        it = Iteration(len(prog.iterations), loop.header, parent, number, len(prog.events), prog.k_loads)
        prog.iterations.append(it)
        state.open.append((loop, it))
        self.stack.append(it)

    def _close(self, state: _Frame, frame: Any) -> None:
        prog = self.program
        _, it = state.open.pop()
        it.last_event = len(prog.events)
        it.loads_k = prog.k_loads > it.k_loads_at_open
        if it.loads_k:
            it.carries = _snapshot(frame.f_locals, self.carry_names)
        if it in self.stack:
            self.stack.remove(it)


def _snapshot(local_vars: dict[str, Any], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        data = getattr(getattr(local_vars.get(name), "handle", None), "data", None)
        if isinstance(data, np.ndarray) and data.dtype.kind == "f":
            out[name] = np.array(data, dtype=np.float64)
    return out


def raised(recorder: Recorder, exc: BaseException) -> Fault:
    """The fault of a kernel that raised: the exception Triton's interpreter wrapped, where it passed first."""
    from triton.runtime.errors import InterpreterError

    root: BaseException = exc
    while isinstance(root, InterpreterError) and root.__cause__ is not None:
        root = root.__cause__
    prog = recorder.programs[-1] if recorder.programs else None
    line = prog.raised_at if prog is not None else None
    if prog is not None and line is None and prog.lines:
        line = prog.lines[-1][0]
    iteration = prog.raised_in if prog is not None else None
    return Fault("raised", prog.pid if prog else None, iteration, line, exits.said(root, 160))


@contextmanager
def interpreted_library(kernel_globals: dict[str, Any]) -> Iterator[None]:
    """Triton's own @jit functions (tl.zeros, tl.sum, tl.cdiv ...) and the kernel file's imported ones, as the
    interpreter runs them, for one launch. Triton decorates its library when it is first imported: in a process
    that imported it without TRITON_INTERPRET=1 they are compiled-mode JITFunctions, which refuse to be called
    from an interpreted kernel ("Cannot call @triton.jit'd outside of the scope of a kernel")."""
    import types

    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    spaces: list[dict[str, Any]] = [vars(tl), kernel_globals]
    spaces += [
        vars(m)
        for m in vars(tl).values()
        if isinstance(m, types.ModuleType) and m.__name__.startswith("triton.language")
    ]
    made: dict[int, Any] = {}
    saved: list[tuple[dict[str, Any], str, Any]] = []
    for space in spaces:
        for name, value in list(space.items()):
            if isinstance(value, JITFunction):
                saved.append((space, name, value))
                space[name] = made.setdefault(id(value), InterpretedFunction(value.fn))
    try:
        yield
    finally:
        for space, name, value in reversed(saved):
            space[name] = value


def launch(recorder: Recorder, kernel: Any, args: dict[str, Any], grid: tuple[int, int, int]) -> Fault | None:
    """Run every program of the grid with the hooks in place; the fault that stopped it, or None."""
    with interpreted_library(kernel.fn.__globals__), recorder.installed(), exits.watched() as watch:
        try:
            kernel[grid](**args)
        except KernelStop as stop:
            return stop.fault
        except BaseException as exc:  # SystemExit, KeyboardInterrupt and the kernel's own included
            if not watch.users(exc):
                raise  # a Ctrl-C from the terminal
            return raised(recorder, exc)
    return None
