"""The engine's matrix products on one BLAS thread. They are small (a tile, Br x D by D x Bc) and many; handing each to
several threads makes it wait for them to wake, which on a loaded machine costs milliseconds a product (fa2 at N=4096,
D=128: one block's 64 score tiles took up to 1.2 s on 2 threads at a load of 8 on 2 cores, 9 ms on one). The numbers do
not change: OpenBLAS splits a product's rows and columns over its threads, never the sums of its elements
(tests/test_engine_vectorised.py holds products on one thread and on several equal).

`one_thread()` sets it for the calling thread only (OpenBLAS's `openblas_set_num_threads_local`, 0.3.27 on, as NumPy's
wheels bundle it), and puts back what it was; with another BLAS, or an older OpenBLAS, it changes nothing."""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_setter: Callable[[int], int] | None = None
_looked = False


def _libraries() -> list[str]:
    """OpenBLAS libraries this process may use: the one NumPy's wheel bundles, and any loaded (Linux)."""
    import numpy as np

    found = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            found += [line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line]
    except OSError:
        pass
    return list(dict.fromkeys(found))


def setter() -> Callable[[int], int] | None:
    """openblas_set_num_threads_local (threads for this thread; returns the number before), or None."""
    global _setter, _looked
    if not _looked:
        _looked = True
        for path in _libraries():
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            f = getattr(lib, "openblas_set_num_threads_local", None)
            if f is not None:
                f.argtypes, f.restype = [ctypes.c_int], ctypes.c_int
                _setter = f
                break
    return _setter


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS products of this thread on one thread while inside (see above)."""
    f = setter()
    if f is None:
        yield
        return
    before = f(1)
    try:
        yield
    finally:
        f(before)
