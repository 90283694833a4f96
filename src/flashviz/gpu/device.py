"""The CUDA device: CuPy, once a device answers (else one line saying what to install), and its facts."""

from __future__ import annotations

import os
from typing import Any

from flashviz.model.config import ConfigError

from . import INSTALL_HINT

# Plain cudaMalloc per tensor instead of CuPy's pool, so compute-sanitizer sees each tensor's true bounds.
NO_POOL = os.environ.get("FLASHVIZ_NO_POOL") == "1"


class GpuUnavailable(ConfigError):
    """No CuPy, or no CUDA device: the CLI prints one line naming the extra to install, exit code 2."""

    def __init__(self, message: str):
        super().__init__("GPU", message)


def require_gpu() -> Any:  # the cupy module
    """CuPy, once a CUDA device answers; else GpuUnavailable saying what to install."""
    try:
        import cupy
    except ImportError:
        raise GpuUnavailable(f"CuPy is not installed; {INSTALL_HINT}") from None
    except Exception as exc:  # a CuPy built for another CUDA fails on import with its own error
        raise GpuUnavailable(f"CuPy does not load ({type(exc).__name__}: {exc}); {INSTALL_HINT}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise GpuUnavailable(f"no CUDA device ({str(exc).splitlines()[0]}); flashviz gpu needs an NVIDIA GPU") from None
    if count == 0:
        raise GpuUnavailable("no CUDA device; flashviz gpu needs an NVIDIA GPU")
    if NO_POOL:
        cupy.cuda.set_allocator(None)
    return cupy


def device_info() -> dict[str, Any]:
    cp = require_gpu()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    attrs = dev.attributes
    return {
        "name": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": int(props["multiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "smem_optin_bytes": int(attrs["MaxSharedMemoryPerBlockOptin"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "driver": cp.cuda.runtime.driverGetVersion(),
        "runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cupy": cp.__version__,
    }
