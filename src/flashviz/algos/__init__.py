"""The algorithms flashviz runs, one folder each (`flashviz/algos/<folder>/`, see `base` and
docs/adding-an-algorithm.md), and the one lookup by name: a front door (CLI, API, server, widget, GPU runner)
resolves the name it was given once (`resolve`) and passes the `Algorithm` down. Adding one is a new folder and its
line below; nothing else names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashviz.model.config import DEFAULT, ConfigError, shown

from .base import Algorithm, Idea
from .fa1 import ALGORITHM as FA1
from .fa2 import ALGORITHM as FA2
from .fa2_backward import ALGORITHM as FA2_BACKWARD
from .fa2_splitkv import ALGORITHM as FA2_SPLITKV
from .fa2_triton import ALGORITHM as FA2_TRITON
from .fa3 import ALGORITHM as FA3
from .ring import ALGORITHM as RING
from .standard import ALGORITHM as STANDARD

if TYPE_CHECKING:
    from flashviz.algos.launch import KernelSpec, TritonSpec

# In the order the page, the API and `flashviz compare` list them.
ORDER: tuple[Algorithm, ...] = (STANDARD, FA1, FA2, FA2_BACKWARD, FA2_TRITON, FA3, FA2_SPLITKV, RING)
FOLDERS: tuple[str, ...] = tuple(a.package.rpartition(".")[2] for a in ORDER)
BASELINE = "fa2"  # the algorithm the others' traffic is measured against (`traffic_vs_fa2`)

REGISTRY: dict[str, Algorithm] = {a.name: a for a in ORDER}
ALGOS: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Algorithm:
    """The algorithm of a name the caller knows is one (KeyError otherwise); a front door's input goes to `resolve`."""
    return REGISTRY[name]


def resolve(name: object) -> Algorithm:
    """The algorithm a front door was asked for, or ConfigError("algo") naming the ones there are."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ConfigError("algo", f"must be one of {', '.join(ALGOS)} (got {shown(name)})")
    return REGISTRY[name]


def gpu_specs() -> dict[str, KernelSpec | TritonSpec]:
    """Every algorithm that has a GPU launch, in registry order."""
    return {a.name: a.gpu for a in ORDER if a.gpu is not None}


def gpu_spec(name: str) -> KernelSpec | TritonSpec:
    """The GPU launch of an algorithm, or ConfigError("algo") when it has none yet."""
    s = REGISTRY[name].gpu if name in REGISTRY else None
    if s is None:
        raise ConfigError("algo", f"{name} has no GPU launch yet (flashviz gpu runs {', '.join(gpu_specs())})")
    return s


__all__ = [
    "ALGOS",
    "BASELINE",
    "DEFAULT",
    "FOLDERS",
    "REGISTRY",
    "Algorithm",
    "Idea",
    "get",
    "gpu_spec",
    "gpu_specs",
    "resolve",
]
