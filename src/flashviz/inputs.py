"""Inputs for a launch: fresh random Q, K, V from a seed, or arrays from an .npz file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .config import LIMITS, ConfigError

NAMES = ("Q", "K", "V")


def random_inputs(n: int, d: int, seed: int, names: tuple[str, ...] = NAMES) -> dict[str, np.ndarray]:
    """Standard-normal float32 (N, D) arrays drawn in a fixed order (Q, K, V first, then e.g. dO), so that
    one seed gives every algorithm the same Q, K and V."""
    rng = np.random.default_rng(seed)
    order = [*NAMES, *(k for k in names if k not in NAMES)]
    drawn = {name: rng.standard_normal((n, d), dtype=np.float32) for name in order}  # (N, D) each
    return {name: drawn[name] for name in names}


def random_qkv(n: int, d: int, seed: int) -> dict[str, np.ndarray]:
    return random_inputs(n, d, seed)


def load_npz(path: str | Path, names: tuple[str, ...] = NAMES, optional: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Read float arrays of one shape (N, D) from an .npz; every problem is a ConfigError naming it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("--inputs", f"no such file: {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in (*names, *optional) if k in npz.files}
    except Exception as exc:  # a truncated or non-zip file, a pickled array
        raise ConfigError("--inputs", f"{path} is not a readable .npz of arrays ({type(exc).__name__})") from None
    missing = [k for k in names if k not in arrays]
    if missing:
        raise ConfigError("--inputs", f"{path} lacks array {', '.join(missing)} (needs {', '.join(names)})")
    shape = arrays[names[0]].shape
    for name, a in arrays.items():
        if a.dtype.kind != "f":
            raise ConfigError(name, f"must hold floating-point data (got dtype {a.dtype})")
        if a.ndim != 2:
            raise ConfigError(name, f"must be 2-D (N, D) (got shape {a.shape})")
        if a.shape != shape:
            raise ConfigError(name, f"shape {a.shape} does not match {names[0]}'s {shape}")
        if not np.all(np.isfinite(a)):
            raise ConfigError(name, "holds NaN or inf; only finite values are accepted")
    n, d = shape
    for key, value in (("n", n), ("d", d)):
        lo, hi = LIMITS[key]
        if not lo <= value <= hi:
            raise ConfigError(names[0], f"{key.upper()} = {value} is outside {lo}..{hi}")
    with np.errstate(over="ignore"):
        out = {k: a.astype(np.float32) for k, a in arrays.items()}
    for name, a in out.items():
        if not np.all(np.isfinite(a)):
            raise ConfigError(name, "overflows float32; values must stay within ±3.4e38")
    return out
