"""fa2-triton's closed forms at a launch (`base.LaunchModels`): traffic.py and flops.py given the launch's options
of real models (one K/V head and its group of q heads, packed sequences, Nq ≠ Nk, a window, soft-capping) and its
scale (SCALE_FIRST when it is <= 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import flops as flop_model
from . import traffic

if TYPE_CHECKING:
    from flashviz.algos.picture import Rule
    from flashviz.model.config import Config


def options(cfg: Config) -> dict[str, Any]:
    """The keyword arguments of traffic.py's closed forms at this launch."""
    plain = not cfg.has_options
    return {
        "group": cfg.group,
        "seqs": None if plain else cfg.seqs,
        "window": tuple(cfg.window),
    }


def count(cfg: Config) -> dict[str, dict[str, int]]:
    return traffic.count(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal, **options(cfg))


def steps(cfg: Config) -> int:
    return traffic.steps(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal, **options(cfg))


def rules(cfg: Config) -> dict[str, Rule]:
    return traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal, **options(cfg))


def flops(cfg: Config) -> dict[str, int]:
    return flop_model.count(
        cfg.n,
        cfg.d,
        cfg.br,
        cfg.bc,
        cfg.causal,
        **options(cfg),
        softcap=cfg.softcap,
        scale_first=cfg.softmax_scale <= 0,
    )
