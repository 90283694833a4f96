"""The NVRTC source of a kernel, and its compilation (CuPy on a GPU; bare NVRTC for checks without one).

The source handed to NVRTC is the kernel file itself, byte for byte, behind one `#line` directive
so that NVRTC's messages name the file and its real line numbers. Nothing else is added: the file
defines what NVRTC lacks (INFINITY) itself, and NVRTC instantiates each <Br, Bc, D> from a name
expression. No --use_fast_math: expf and logf stay IEEE-accurate, as NumPy's are in the engine.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
from functools import cache
from typing import Any

from flashviz.model import kernels
from flashviz.model.kernels import KernelFile

OPTIONS = ("-std=c++17",)  # CuPy adds the device's -arch; nothing here changes the arithmetic


def source(kernel: KernelFile) -> str:
    """What NVRTC compiles: the kernel file's text behind a `#line 1 "<file>"` directive."""
    return f'#line 1 "{kernel.name}"\n' + kernels.source(kernel)


@cache
def module(kernel: KernelFile, name_expressions: tuple[str, ...]) -> Any:
    """A CuPy RawModule of the algorithm's kernel file with these instantiations (compiled lazily)."""
    import cupy

    return cupy.RawModule(
        code=source(kernel),
        options=OPTIONS,
        name_expressions=list(name_expressions),
        backend="nvrtc",
    )


def function(kernel: KernelFile, name_expression: str, smem_bytes: int) -> Any:
    """The compiled kernel (a CuPy RawKernel), with its dynamic shared-memory limit raised when it needs more
    than 48 KB."""
    fn = module(kernel, (name_expression,)).get_function(name_expression)
    if smem_bytes > 48 * 1024 and fn.max_dynamic_shared_size_bytes < smem_bytes:
        fn.max_dynamic_shared_size_bytes = smem_bytes  # cudaFuncAttributeMaxDynamicSharedMemorySize
    return fn


# ---- bare NVRTC through ctypes: compile to PTX with no GPU and no CuPy (used by the CPU tests) ----


class NvrtcError(RuntimeError):
    pass


def find_libnvrtc() -> str | None:
    """libnvrtc from the CUDA toolkit, the `nvidia-cuda-nvrtc` wheel, or the loader's path."""
    candidates = []
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates += sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so*")))
    for site in sys.path:
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so*")))
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*")))
    found = ctypes.util.find_library("nvrtc")
    if found:
        candidates.append(found)
    for path in candidates:
        if "builtins" not in os.path.basename(path) and "alt" not in os.path.basename(path):
            return path
    return None


def compile_ptx(
    kernel: KernelFile, name_expressions: list[str], arch: str = "compute_90", lib: str | None = None
) -> tuple[str, dict[str, str]]:
    """Compile the NVRTC source to PTX; return the PTX and each name expression's lowered (mangled) name."""
    path = lib or find_libnvrtc()
    if path is None:
        raise NvrtcError("libnvrtc not found (CUDA toolkit or the nvidia-cuda-nvrtc wheel)")
    nvrtc = ctypes.CDLL(path)
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status: int, what: str) -> None:
        if status != 0:
            raise NvrtcError(f"{what}: {nvrtc.nvrtcGetErrorString(status).decode()}")

    prog = ctypes.c_void_p()
    src = source(kernel).encode()
    check(
        nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, kernel.name.encode(), 0, None, None),
        "nvrtcCreateProgram",
    )
    try:
        for expr in name_expressions:
            check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), f"nvrtcAddNameExpression({expr})")
        opts = [o.encode() for o in (*OPTIONS, f"--gpu-architecture={arch}")]
        status = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        if status != 0:
            raise NvrtcError(log.value.decode(errors="replace").strip() or "compilation failed")
        lowered = {}
        for expr in name_expressions:
            name = ctypes.c_char_p()
            check(nvrtc.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(name)), f"lowered name of {expr}")
            lowered[expr] = (name.value or b"").decode()
        nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
        return ptx.value.decode(), lowered
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
