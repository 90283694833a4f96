"""Inputs for a launch: fresh random Q, K, V from a seed, or arrays from an .npz file."""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as fmt

from flashviz.model.config import LIMITS, ConfigError, shown
from flashviz.model.echo import cut
from flashviz.model.regular_file import why_not

NAMES = ("Q", "K", "V")


def random_inputs(
    n: int, d: int, seed: int, names: tuple[str, ...] = NAMES, rows: dict[str, int] | None = None
) -> dict[str, np.ndarray]:
    """Standard-normal float32 (N, D) arrays drawn in a fixed order (Q, K, V first, then e.g. dO), so that
    one seed gives every algorithm the same Q, K and V. `rows`: an array's rows when not N (the options of real
    models: Q of a group of q heads, K and V of Nk keys; `Config.input_rows`)."""
    rng = np.random.default_rng(seed)
    order = [*NAMES, *(k for k in names if k not in NAMES)]
    rows = rows or {}
    drawn = {name: rng.standard_normal((rows.get(name, n), d), dtype=np.float32) for name in order}  # (N, D) each
    return {name: drawn[name] for name in names}


SHAPED = ("group", "nk", "seqlens", "seqlens_k")  # options that give Q and K/V other shapes than one (N, D)


def shaped_option(launch: Mapping[str, Any]) -> str | None:
    """The first option of `launch` that gives the inputs another shape than one (N, D), which arrays given by the
    user cannot take (their Q, K and V are one (N, D) each): the front doors refuse it, naming it."""
    for name in SHAPED:
        value = launch.get(name)
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if value is None or value in ("", (), []) or (name == "group" and value == 1):
            continue
        return name
    return None


def load_npz(path: str | Path, names: tuple[str, ...] = NAMES, optional: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Read float arrays of one shape (N, D) from an .npz; every problem is a ConfigError naming it.

    Shapes and dtypes are read from each member's .npy header and checked before any data is: a small
    compressed file cannot make this allocate more than the limits allow (N*D elements per array), and a
    pickle (dtype object) or a member that is not an .npy array is refused by name."""
    path = Path(path)
    where = shown(str(path))
    try:
        st = os.stat(path)
    except OSError as exc:  # missing, a dangling symlink, a name too long for the file system, no permission ...
        raise ConfigError("--inputs", f"cannot read {where}: {why_not(path, exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError("--inputs", f"{where} is not a regular file (a directory, FIFO or device is not read)")
    if st.st_size > MAX_FILE_BYTES:
        raise ConfigError("--inputs", f"{where} holds {st.st_size:,} bytes, at most {MAX_FILE_BYTES:,} are read")
    try:
        with zipfile.ZipFile(path) as npz:
            members = {_array_name(m.filename): m for m in npz.infolist()}
            wanted = [k for k in (*names, *optional) if k in members]
            missing = [k for k in names if k not in members]
            if missing:
                raise ConfigError("--inputs", f"{where} lacks array {', '.join(missing)} (needs {', '.join(names)})")
            headers = {k: _header(npz, members[k], k) for k in wanted}
            _check_shapes(headers, names[0])
            arrays = {k: _read(npz, members[k], k) for k in wanted}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, RuntimeError) as exc:
        # not a zip, a truncated one, an encrypted member, a compression method zipfile does not know
        raise ConfigError("--inputs", f"{where} is not a readable .npz ({type(exc).__name__})") from None
    with np.errstate(over="ignore"):
        out = {k: a.astype(np.float32) for k, a in arrays.items()}
    for name in arrays:
        if not np.all(np.isfinite(arrays[name])):
            raise ConfigError(name, "holds NaN or inf; only finite values are accepted")
        if not np.all(np.isfinite(out[name])):
            raise ConfigError(name, "overflows float32; values must stay within ±3.4e38")
    return out


# Four float64 arrays at the largest N x D (16384 x 256) take 128 MiB; room for a few more arrays beside them.
MAX_FILE_BYTES = 256 * 2**20
MAX_HEADER_BYTES = 10_000  # NumPy's own default bound on an .npy header


def _array_name(member: str) -> str:
    """np.savez stores array Q as the member Q.npy; np.load answers to the name without .npy."""
    return member[: -len(".npy")] if member.endswith(".npy") else member


def _header(npz: zipfile.ZipFile, member: zipfile.ZipInfo, name: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from the member's .npy header, without reading its data."""
    with npz.open(member) as f:
        try:
            version = fmt.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = fmt.read_array_header_1_0(f, max_header_size=MAX_HEADER_BYTES)
            elif version == (2, 0):
                shape, _, dtype = fmt.read_array_header_2_0(f, max_header_size=MAX_HEADER_BYTES)
            else:  # 3.0 only differs for structured dtypes with non-Latin-1 field names: not float data
                raise ValueError(f"format version {version}")
        except (ValueError, SyntaxError, TypeError, EOFError) as exc:
            raise ConfigError(name, f"is not an .npy array ({cut(' '.join(str(exc).split()), 60)})") from None
    if dtype.hasobject:
        raise ConfigError(name, "holds Python objects (a pickle), which are never loaded; save float arrays")
    if dtype.kind != "f":
        raise ConfigError(name, f"must hold floating-point data (got dtype {shown(str(dtype))})")
    return tuple(shape), dtype


def _check_shapes(headers: dict[str, tuple[tuple[int, ...], np.dtype]], first: str) -> None:
    """Every array 2-D, the shape of the first, and N, D within the engine's limits."""
    for name, (shape, _) in headers.items():
        if len(shape) != 2:
            raise ConfigError(name, f"must be 2-D (N, D) (got shape {shown(shape)})")
    shape = headers[first][0]
    for key, value in zip(("n", "d"), shape, strict=True):
        lo, hi = LIMITS[key]
        if not lo <= value <= hi:
            raise ConfigError(first, f"{key.upper()} = {shown(value)} is outside {lo}..{hi}")
    for name, (other, _) in headers.items():
        if other != shape:
            raise ConfigError(name, f"shape {shown(other)} does not match {first}'s {shown(shape)}")


def _read(npz: zipfile.ZipFile, member: zipfile.ZipInfo, name: str) -> np.ndarray:
    """The member's data, whose size its (already checked) header bounds."""
    with npz.open(member) as f:
        try:
            return fmt.read_array(f, allow_pickle=False, max_header_size=MAX_HEADER_BYTES)
        except ValueError as exc:  # shorter than its header says
            raise ConfigError(name, f"cannot be read ({cut(' '.join(str(exc).split()), 60)})") from None


def from_arrays(
    arrays: object, names: tuple[str, ...] = NAMES, optional: tuple[str, ...] = ()
) -> dict[str, np.ndarray]:
    """Q, K, V (and `optional`: dO) from a dict of NumPy arrays or torch tensors, checked as `load_npz` checks an
    .npz: every problem is a ConfigError (a ValueError) naming the array or `inputs`."""
    if not isinstance(arrays, dict):
        raise ConfigError("inputs", f"must be a dict of arrays {', '.join(names)} (got {shown(type(arrays).__name__)})")
    unknown = [k for k in arrays if k not in (*names, *optional)]
    if unknown:
        accepted = ", ".join((*names, *optional))
        raise ConfigError("inputs", f"has {shown(', '.join(map(str, unknown)))}; it takes {accepted}")
    missing = [k for k in names if k not in arrays]
    if missing:
        raise ConfigError("inputs", f"lacks array {', '.join(missing)} (needs {', '.join(names)})")
    plain = {k: _as_numpy(k, v) for k, v in arrays.items()}
    for k, a in plain.items():
        if a.dtype.hasobject or a.dtype.kind != "f":
            raise ConfigError(k, f"must hold floating-point data (got dtype {shown(str(a.dtype))})")
    _check_shapes({k: (a.shape, a.dtype) for k, a in plain.items()}, names[0])
    for name, a in plain.items():
        if not np.all(np.isfinite(a)):
            raise ConfigError(name, "holds NaN or inf; only finite values are accepted")
    with np.errstate(over="ignore"):
        out = {k: np.ascontiguousarray(a, dtype=np.float32) for k, a in plain.items()}
    for name, a in out.items():
        if not np.all(np.isfinite(a)):
            raise ConfigError(name, "overflows float32; values must stay within ±3.4e38")
    return out


def _as_numpy(name: str, value: object) -> np.ndarray:
    """A NumPy array of `value`: an ndarray, or a torch tensor (moved to the CPU; bf16 widened to float32 first,
    which NumPy has no type for), without importing torch."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        tensor = value.detach().cpu()
        if getattr(tensor, "is_floating_point", lambda: False)():
            tensor = tensor.float()
        value = tensor.numpy()
    if not isinstance(value, np.ndarray):
        raise ConfigError(name, f"must be a NumPy array or a torch tensor (got {shown(type(value).__name__)})")
    return value
