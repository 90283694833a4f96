"""The user's kernel file as flashviz reads it, from its text alone: its functions, loops, assignments, statements and
`# step: NAME` ... `# end step` regions (the project's own markers, as in algos/fa2_triton/kernel.py).

The recorder runs the kernel under Triton's interpreter, whose frames carry the file's own line numbers; this module
turns a line number into what the reports say about it: the statement's text, the names it assigns, the loop it is
in, the step region around it.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from flashviz.model.echo import cut

_BEGIN = re.compile(r"^\s*# step: (\w+)\s*$")
_END = re.compile(r"^\s*# end step\s*$")
STATEMENT_CHARS = 72  # a statement quoted in a one-line message is cut to about this many characters


@dataclass(frozen=True)
class Loop:
    """A `for` or `while` loop: its header's first line and its body's lines (1-based, inclusive)."""

    header: int
    first: int
    last: int

    def holds(self, line: int) -> bool:
        return self.first <= line <= self.last


@dataclass(frozen=True)
class Function:
    name: str
    first: int  # the `def` line (a frame's co_firstlineno under the interpreter, which drops the decorators)
    last: int
    loops: tuple[Loop, ...]  # outer loops first
    carried: tuple[str, ...] = ()  # names a loop rebinds that held a value before it (a parameter's, too)
    in_loops: frozenset[str] = frozenset()  # every name a statement in a loop assigns
    calls: frozenset[str] = frozenset()  # the names of the functions it calls


@dataclass(frozen=True)
class KernelSource:
    """One Python file of Triton kernels."""

    path: str
    text: str
    functions: dict[int, Function] = field(repr=False)  # by `def` line
    assigns: dict[int, frozenset[str]] = field(repr=False)  # first line of a statement -> the names it assigns
    spans: dict[int, tuple[int, int]] = field(repr=False)  # every line of a simple statement -> its first, last line
    steps: dict[int, str] = field(repr=False)  # line -> the `# step:` region holding it
    code: dict[int, str] = field(repr=False)  # line -> its text without a comment
    reads: dict[int, frozenset[str]] = field(repr=False)  # first line of a statement -> the names it reads

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def has_markers(self) -> bool:
        return bool(self.steps)

    def function_at(self, def_line: int) -> Function | None:
        return self.functions.get(def_line)

    def reached(self, name: str) -> list[Function]:
        """The functions named `name` and those of this file they call, and those they call, in that order."""
        by_name: dict[str, list[Function]] = {}
        for fn in self.functions.values():
            by_name.setdefault(fn.name, []).append(fn)
        found: list[Function] = []
        todo = [name]
        while todo:
            for fn in by_name.pop(todo.pop(0), []):
                found.append(fn)
                todo.extend(sorted(fn.calls))
        return found

    def carried(self, name: str) -> tuple[str, ...]:
        """The loop carries of kernel `name` (its own loops' and those of the functions it calls)."""
        return tuple(dict.fromkeys(c for fn in self.reached(name) for c in fn.carried))

    def in_loops(self, name: str) -> frozenset[str]:
        """Every name a loop of kernel `name` (or of a function it calls) assigns: what can be read at a tile's end."""
        return frozenset().union(*(fn.in_loops for fn in self.reached(name)))

    def statement(self, line: int) -> str:
        """The statement at `line` as one line of text (whitespace runs collapsed), cut to ~STATEMENT_CHARS."""
        first, last = self.spans.get(line, (line, line))
        text = " ".join(" ".join(self.code.get(k, "") for k in range(first, last + 1)).split())
        text = re.sub(r"([(\[]) ", r"\1", re.sub(r" ([)\]])", r"\1", text))  # `f( a, b )` of a wrapped call
        return cut(text, STATEMENT_CHARS)

    def statement_start(self, line: int) -> int:
        return self.spans.get(line, (line, line))[0]

    def assigned(self, line: int) -> frozenset[str]:
        return self.assigns.get(self.statement_start(line), frozenset())

    def read_names(self, line: int) -> frozenset[str]:
        return self.reads.get(self.statement_start(line), frozenset())


def _names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_names(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return set()  # x[i] = ..., x.a = ...: no name is rebound


def _loops(fn: ast.FunctionDef) -> tuple[Loop, ...]:
    found = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)) and node.body:
            found.append(Loop(node.lineno, node.body[0].lineno, max(n.end_lineno or n.lineno for n in node.body)))
    return tuple(sorted(found, key=lambda lp: (lp.first, -lp.last)))


def _assigned(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Assign):
        return set().union(*(_names(t) for t in node.targets))
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return _names(node.target)
    return set()


def _carries(fn: ast.FunctionDef) -> tuple[tuple[str, ...], frozenset[str]]:
    """(the names a loop rebinds that held a value before the loop, in the order they were first bound; every name
    a statement in a loop assigns)."""
    args = fn.args
    bound: dict[str, int] = {a.arg: 0 for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    statements = [(node.lineno, _assigned(node)) for node in ast.walk(fn) if isinstance(node, ast.stmt)]
    for line, names in sorted(statements, key=lambda x: x[0]):
        for name in names:
            bound.setdefault(name, line)
    carried: set[str] = set()
    in_loops: set[str] = set()
    for loop in ast.walk(fn):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        inside = set().union(set(), *(_assigned(node) for stmt in loop.body for node in ast.walk(stmt)))
        in_loops |= inside
        carried |= {name for name in inside if bound.get(name, loop.lineno) < loop.lineno}
    return tuple(sorted(carried, key=lambda name: bound[name])), frozenset(in_loops)


def _regions(lines: list[str]) -> dict[int, str]:
    steps: dict[int, str] = {}
    open_name, open_at = None, 0
    for k, text in enumerate(lines, start=1):
        begin = _BEGIN.match(text)
        if begin:
            open_name, open_at = begin.group(1), k
        elif _END.match(text) and open_name is not None:
            steps.update({line: open_name for line in range(open_at + 1, k)})
            open_name = None
    return steps


def parse(text: str, path: str) -> KernelSource:
    tree = ast.parse(text, filename=path)
    functions: dict[int, Function] = {}
    assigns: dict[int, frozenset[str]] = {}
    spans: dict[int, tuple[int, int]] = {}
    reads: dict[int, frozenset[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            carried, in_loops = _carries(node)
            calls = frozenset(
                n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            )
            last = node.end_lineno or node.lineno
            functions[node.lineno] = Function(node.name, node.lineno, last, _loops(node), carried, in_loops, calls)
        if isinstance(node, ast.stmt) and not isinstance(
            node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.If, ast.With, ast.Try)
        ):
            last = node.end_lineno or node.lineno
            for line in range(node.lineno, last + 1):
                spans.setdefault(line, (node.lineno, last))
            loaded = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            if isinstance(node, ast.AugAssign):
                loaded |= _names(node.target)
            reads[node.lineno] = frozenset(loaded)
            if isinstance(node, ast.Assign):
                assigns[node.lineno] = frozenset(set().union(*(_names(t) for t in node.targets)))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                assigns[node.lineno] = frozenset(_names(node.target))
        elif isinstance(node, (ast.For, ast.While, ast.If)):
            # a compound statement's header line(s) quote as the header alone
            body_first = node.body[0].lineno if node.body else node.lineno
            for line in range(node.lineno, max(node.lineno, body_first - 1) + 1):
                spans.setdefault(line, (node.lineno, max(node.lineno, body_first - 1)))
    lines = text.splitlines()
    return KernelSource(path, text, functions, assigns, spans, _regions(lines), _code(text, lines), reads)


def _code(text: str, lines: list[str]) -> dict[int, str]:
    """Each line without its comment (found by Python's tokenizer, so that a '#' inside a string stays)."""
    cut = {k: line for k, line in enumerate(lines, start=1)}
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                cut[row] = cut[row][:col]
    return {k: line.rstrip() for k, line in cut.items()}


def read(path: str | Path) -> KernelSource:
    return parse(Path(path).read_text(), str(path))
