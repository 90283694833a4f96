"""Finding the user's kernel: `my_attn.py:attn_fwd` from the command line, or the function itself from Python, as a
function Triton's interpreter runs.

A file is imported under TRITON_INTERPRET=1 (Triton reads it when a kernel is decorated), as a module of its own,
with its folder first on sys.path so that it can import its neighbours; importing it runs the user's own code in
their own process, as `python my_attn.py` would. A kernel decorated without the interpreter (a JITFunction, or an
autotuned one) is read again from its file the same way. The autotuner's first config gives the tiles --meta does
not.
"""

from __future__ import annotations

import importlib.util
import itertools
import linecache
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flashviz.model.config import ConfigError, shown

from . import exits
from . import source as sources

_COUNTER = itertools.count()
USAGE = "must be FILE.py:FUNCTION, a @triton.jit forward kernel in a Python file (such as my_attn.py:attn_fwd)"


@dataclass(frozen=True)
class Kernel:
    name: str
    fn: Any  # triton's InterpretedFunction
    source: sources.KernelSource
    defaults: dict[str, Any] = field(default_factory=dict)  # the autotuner's first config, if it has one

    @property
    def python(self) -> Any:
        """The plain Python function under the decorators (its signature is the kernel's)."""
        return self.fn.fn


def _interpreted(obj: Any) -> tuple[Any, dict[str, Any]] | None:
    """(the InterpretedFunction under obj's decorators, the autotuner's first config) or None."""
    from triton.runtime.interpreter import InterpretedFunction

    defaults: dict[str, Any] = {}
    for _ in range(8):
        if isinstance(obj, InterpretedFunction):
            return obj, defaults
        configs = getattr(obj, "configs", None)
        if configs and not defaults:
            defaults = dict(getattr(configs[0], "kwargs", {}) or {})
        obj = getattr(obj, "fn", None)
        if obj is None:
            return None
    return None


def _base(obj: Any) -> Any:
    for _ in range(8):
        inner = getattr(obj, "fn", None)
        if inner is None:
            return obj
        obj = inner
    return obj


def _import(path: Path, where: str) -> Any:
    name = f"flashviz_kernel_{next(_COUNTER)}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError("--kernel", f"{where} is not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        with exits.watched() as watch:
            spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise ConfigError("--kernel", f"{where} does not parse: {exc.msg}{at_line(exc)}") from None
    except BaseException as exc:  # SystemExit, KeyboardInterrupt and the file's own included
        sys.modules.pop(name, None)
        if not watch.users(exc):
            raise  # a Ctrl-C from the terminal
        raise ConfigError("--kernel", f"importing {where} {exits.said(exc, 120)}") from None
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before
        if sys.path and sys.path[0] == str(path.parent):
            sys.path.pop(0)
    return module


def _from_module(module: Any, name: str, where: str) -> Kernel:
    obj = getattr(module, name, None)
    if obj is None:
        found = sorted(k for k, v in vars(module).items() if _interpreted(v) is not None)
        listed = ", ".join(found) if found else "none"
        raise ConfigError("--kernel", f"{where} has no function {shown(name)} (its @triton.jit functions: {listed})")
    got = _interpreted(obj)
    if got is None:
        raise ConfigError(
            "--kernel", f"{name} in {where} is not a @triton.jit function (got {shown(type(obj).__name__)})"
        )
    fn, defaults = got
    return Kernel(name, fn, _source_of(fn.fn, where), defaults)


def _source_of(python_fn: Any, where: str) -> sources.KernelSource:
    filename = python_fn.__code__.co_filename
    text = "".join(linecache.getlines(filename))
    if not text:
        raise ConfigError("kernel", f"the source of {python_fn.__name__} ({shown(filename)}) cannot be read")
    try:
        return sources.parse(text, filename)
    except SyntaxError as exc:
        raise ConfigError("--kernel", f"{where} does not parse: {exc.msg}{at_line(exc)}") from None


def at_line(exc: SyntaxError) -> str:
    """The " (line 3)" a message ends with where a SyntaxError knows its line; nothing where it does not (a NUL
    byte in the file)."""
    return "" if exc.lineno is None else f" (line {exc.lineno})"


def from_spec(spec: str) -> Kernel:
    """`FILE.py:FUNCTION` -> its kernel, imported under the interpreter."""
    text, colon, name = str(spec).rpartition(":")
    if not colon or not text or not name.isidentifier():
        raise ConfigError("--kernel", f"{USAGE} (got {shown(spec)})")
    path = Path(text)
    where = shown(text)
    if not path.is_file():
        raise ConfigError("--kernel", f"{where} is not a file")
    return _from_module(_import(path.resolve(), where), name, where)


def from_object(obj: Any) -> Kernel:
    """A kernel passed from Python: run as it is when it was decorated under the interpreter, else read again from
    its file under it."""
    if isinstance(obj, (str, os.PathLike)):
        return from_spec(os.fspath(obj))
    got = _interpreted(obj)
    if got is not None:
        fn, defaults = got
        return Kernel(fn.fn.__name__, fn, _source_of(fn.fn, shown(fn.fn.__code__.co_filename)), defaults)
    base = _base(obj)
    code = getattr(base, "__code__", None)
    if code is None:
        raise ConfigError("kernel", f"must be a @triton.jit function or 'FILE.py:FUNCTION' (got {type(obj).__name__})")
    path = Path(code.co_filename)
    if not path.is_file():
        raise ConfigError(
            "kernel",
            f"{base.__name__} was decorated without Triton's interpreter and its file cannot be read again; "
            "set os.environ['TRITON_INTERPRET'] = '1' before defining it",
        )
    return from_spec(f"{path}:{base.__name__}")
