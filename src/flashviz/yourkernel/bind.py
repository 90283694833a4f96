"""Binding a kernel's signature to the picture: which parameter is Q, K, V, O, L, which are strides, sizes, the scale
and the tiles, and the grid, filled by the conventions people write (those of Triton's fused-attention tutorial at
least). docs/yourkernel.md lists them; a parameter none of them fills is one ConfigError naming it.

- Tensors by name: Q (`Q`, `q`, `q_ptr`, `Q_ptr`, `desc_q`), K, V the same way, O (`Out`, `O`, `o`, `out`,
  `out_ptr`, `o_ptr`, `O_ptr`, `desc_o`), L (`M`, `L`, `LSE`, `lse`, `m_ptr`, `lse_ptr`, `L_ptr`). Q, K, V and O
  are (Z, H, N, D) in the launch's dtype, contiguous; L is (Z, H, N) in float32 (the tutorial's M).
- Strides: `stride_{q,k,v,o}{z,h,...}` (and flashviz's own `s{q,k,v,o}{b,h,n}`), in elements. `z`/`b` is the
  batch stride and `h` the head stride; the tensor's other stride parameters, in signature order, are the stride
  along N (a row) and then along D (`stride_qm, stride_qk`; the tutorial's `stride_kn, stride_kk` and
  `stride_vk, stride_vn` are the same two for K and V). Just the row strides (`stride_qm`) work too.
- Sizes: Z (`Z`, `B`, `batch`), H (`H`, `num_heads`, `n_heads`), N (`N_CTX`, `N`, `seqlen`, `seq_len`, `n_ctx`),
  D (`HEAD_DIM`, `D`, `head_dim`, `BLOCK_DMODEL`); the scale (`sm_scale`, `scale`, `softmax_scale`).
- Causal flags: `CAUSAL`, `IS_CAUSAL`, `causal` (True under --causal) and the tutorial's `STAGE` (3 causal, else 1);
  the tutorial's `FP8_OUTPUT` and `warp_specialize` are False.
- Everything else: `--meta NAME=VALUE` (the tiles `BLOCK_M`, `BLOCK_N` and any other parameter), or the default in
  the signature. `--bind ROLE=PARAM` gives a parameter of another name one of the roles above (`Q=query`,
  `N=seq_len`, `stride_qm=row_q`, `BLOCK_M=BR`), and names win over the conventions.
- The grid: (cdiv(N, BLOCK_M), Z·H), or `--grid X,Y[,Z]`.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flashviz.model.config import ConfigError, shown
from flashviz.model.echo import cut

TENSORS = ("Q", "K", "V", "O", "L")
# Triton's interpreter runs a program of N = 40, D = 16 at tiles of 16 in about 50 ms of Python: this many is minutes
MAX_PROGRAMS = 4096
SPELLINGS: dict[str, tuple[str, ...]] = {
    "Q": ("Q", "q", "q_ptr", "Q_ptr", "desc_q"),
    "K": ("K", "k", "k_ptr", "K_ptr", "desc_k"),
    "V": ("V", "v", "v_ptr", "V_ptr", "desc_v"),
    "O": ("Out", "O", "o", "out", "out_ptr", "Out_ptr", "o_ptr", "O_ptr", "desc_o"),
    "L": ("M", "L", "LSE", "lse", "Lse", "m_ptr", "M_ptr", "lse_ptr", "LSE_ptr", "L_ptr"),
    "scale": ("sm_scale", "scale", "softmax_scale"),
    "Z": ("Z", "B", "batch"),
    "H": ("H", "num_heads", "n_heads", "nheads"),
    "N": ("N_CTX", "N", "seqlen", "seq_len", "n_ctx"),
    "D": ("HEAD_DIM", "D", "head_dim", "BLOCK_DMODEL"),
    "causal": ("CAUSAL", "IS_CAUSAL", "causal"),
    "STAGE": ("STAGE",),
    "off": ("FP8_OUTPUT", "warp_specialize"),
    "BLOCK_M": ("BLOCK_M",),
    "BLOCK_N": ("BLOCK_N",),
}
_STRIDE = re.compile(r"^(?:stride_([qkvo])_?([a-z])|s([qkvo])([bhnzmd]))$")
BATCH_LETTERS, HEAD_LETTERS = ("z", "b"), ("h",)
ROLE_WORDS = "Q, K, V, O, L, scale, Z, H, N, D, BLOCK_M, BLOCK_N, causal, or a stride such as stride_qm"


@dataclass(frozen=True)
class Param:
    name: str
    constexpr: bool
    default: Any  # inspect.Parameter.empty when it has none

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


@dataclass(frozen=True)
class Launch:
    """What flashviz runs the kernel on: Z batches of H heads of N rows of D columns."""

    z: int
    h: int
    n: int
    d: int
    scale: float
    causal: bool


@dataclass(frozen=True)
class Binding:
    args: dict[str, Any]  # parameter -> the value passed (tensors for Q, K, V, O, L)
    roles: dict[str, str]  # Q, K, V, O, L -> the parameter bound to it
    filled: dict[str, str]  # parameter -> what filled it, in words ("Q", "stride of K along N", "--meta")
    grid: tuple[int, int, int]
    meta: dict[str, Any]  # the --meta values used


def params(fn: Any) -> list[Param]:
    """The signature of the kernel's Python function (a tl.constexpr annotation marks a compile-time constant)."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        ann = p.annotation
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
        out.append(Param(p.name, text.split(".")[-1] == "constexpr", p.default))
    return out


def parse_pairs(text: str | None, flag: str) -> dict[str, str]:
    """`A=x,B=y` as {A: x, B: y}; ConfigError naming `flag` for anything else."""
    if not text:
        return {}
    pairs: dict[str, str] = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key or not value:
            raise ConfigError(flag, f"must be NAME=VALUE pairs separated by commas (got {shown(item)})")
        if key in pairs:
            raise ConfigError(flag, f"names {shown(key)} twice")
        pairs[key] = value
    return pairs


def meta_value(name: str, text: str | Any) -> Any:
    """An int, a float, or True/False from a --meta value (values given from Python pass as they are)."""
    if not isinstance(text, str):
        return text
    if re.fullmatch(r"[+-]?[0-9]+", text) and len(text) <= 20:
        return int(text)
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    try:
        value = float(text)
    except ValueError:
        raise ConfigError("--meta", f"{name} must be an integer, a number or True/False (got {shown(text)})") from None
    if not math.isfinite(value):
        raise ConfigError("--meta", f"{name} must be finite (got {shown(text)})")
    return value


def parse_grid(text: str | tuple[int, ...] | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    parts: list[Any] = list(text) if isinstance(text, (tuple, list)) else re.split(r"[,x]", str(text))
    try:
        dims = [int(p) for p in parts]
    except (TypeError, ValueError):
        dims = []
    if not 1 <= len(dims) <= 3 or any(not 1 <= g <= 65535 for g in dims):
        raise ConfigError("--grid", f"must be 1 to 3 integers in 1..65535, such as 4,2 (got {shown(text)})")
    return (*dims, 1, 1)[:3]  # type: ignore[return-value]


def _conventional(fn_params: list[Param], renames: Mapping[str, str], kernel: str) -> dict[str, str]:
    """parameter -> the conventional name it is read as: --bind's role, else its own name."""
    names = {p.name for p in fn_params}
    out = {p.name: p.name for p in fn_params}
    for role, param in renames.items():
        if param not in names:
            raise ConfigError("--bind", f"{kernel} has no parameter {shown(param)} (its parameters: {_list(names)})")
        if not (role in SPELLINGS or role in TENSORS or _STRIDE.match(role)):
            raise ConfigError("--bind", f"{shown(role)} is not a role; roles are {ROLE_WORDS}")
        out[param] = SPELLINGS[role][0] if role in SPELLINGS else role
    return out


def _list(names: set[str]) -> str:
    text = ", ".join(sorted(names))
    return cut(text, 120)


def _role_of(name: str) -> str | None:
    for role, spellings in SPELLINGS.items():
        if name in spellings:
            return role
    return None


def _strides(conv: dict[str, str], order: list[str], kernel: str) -> dict[str, tuple[str, int]]:
    """parameter -> (tensor, dimension of the (Z, H, N, D) tensor) for every stride parameter."""
    per_tensor: dict[str, list[tuple[str, str]]] = {}
    for param in order:
        m = _STRIDE.match(conv[param])
        if m:
            tensor = (m.group(1) or m.group(3)).upper()
            per_tensor.setdefault(tensor, []).append((param, m.group(2) or m.group(4)))
    out: dict[str, tuple[str, int]] = {}
    for tensor, found in per_tensor.items():
        rest = 2
        for param, letter in found:
            if letter in BATCH_LETTERS:
                out[param] = (tensor, 0)
            elif letter in HEAD_LETTERS:
                out[param] = (tensor, 1)
            elif rest <= 3:
                out[param] = (tensor, rest)
                rest += 1
            else:
                raise ConfigError(
                    "--kernel",
                    f"cannot fill parameter {param} of {kernel}: {tensor} has only two strides besides "
                    "batch and head (N, then D); give its value with --meta "
                    f"{param}=VALUE",
                )
    return out


DIM_WORDS = ("batch", "head", "N", "D")


def bind(
    fn_params: list[Param],
    kernel: str,
    launch: Launch,
    tensors: Mapping[str, Any],
    meta: Mapping[str, Any],
    renames: Mapping[str, str],
    grid: tuple[int, int, int] | None,
) -> Binding:
    """Fill every parameter of the kernel, or raise ConfigError naming the first one that cannot be filled.

    `tensors`: Q, K, V, O, L as torch tensors; `meta`: --meta values (already parsed); `renames`: --bind's
    role -> parameter."""
    names = [p.name for p in fn_params]
    for key in meta:
        if key not in names:
            raise ConfigError("--meta", f"{kernel} has no parameter {shown(key)} (its parameters: {_list(set(names))})")
    conv = _conventional(fn_params, renames, kernel)
    strides = _strides(conv, names, kernel)
    args: dict[str, Any] = {}
    roles: dict[str, str] = {}
    filled: dict[str, str] = {}
    sizes = {"Z": launch.z, "H": launch.h, "N": launch.n, "D": launch.d}
    for p in fn_params:
        role = _role_of(conv[p.name])
        if p.name in meta:
            if role in TENSORS:
                raise ConfigError("--meta", f"{p.name} is {kernel}'s {role} tensor, which flashviz passes itself")
            args[p.name], filled[p.name] = meta[p.name], "--meta"
        elif role in TENSORS:
            if role in roles:
                raise ConfigError(
                    "--bind",
                    f"both {roles[role]} and {p.name} of {kernel} read as {role}; name one with --bind {role}=PARAM",
                )
            roles[role] = p.name
            args[p.name], filled[p.name] = tensors[role], role
        elif p.name in strides:
            tensor, dim = strides[p.name]
            args[p.name] = int(tensors[tensor].stride(dim))
            filled[p.name] = f"stride of {tensor} along {DIM_WORDS[dim]}"
        elif role in sizes:
            args[p.name], filled[p.name] = sizes[role], role
        elif role == "scale":
            args[p.name], filled[p.name] = float(launch.scale), "the softmax scale"
        elif role == "causal":
            args[p.name], filled[p.name] = launch.causal, "--causal"
        elif role == "STAGE":
            args[p.name], filled[p.name] = 3 if launch.causal else 1, "the tutorial's STAGE (3 causal, 1 not)"
        elif role == "off":
            args[p.name], filled[p.name] = False, "off"
        elif p.has_default:
            args[p.name], filled[p.name] = p.default, "its default"
        else:
            role_hint = "" if p.constexpr else f", or its role with --bind ROLE={p.name}"
            raise ConfigError(
                "--kernel",
                f"cannot fill parameter {p.name} of {kernel}: give its value with --meta {p.name}=VALUE{role_hint}",
            )
    missing = [t for t in ("Q", "K", "V", "O") if t not in roles]
    if missing:
        raise ConfigError(
            "--bind",
            f"no parameter of {kernel} reads as {', '.join(missing)}; name it with --bind "
            f"{missing[0]}=PARAM (parameters: {_list(set(names))})",
        )
    given = grid is not None
    if grid is None:
        grid = _default_grid(fn_params, conv, args, launch, kernel)
    _hold_grid(grid, given)
    return Binding(args, roles, filled, grid, {k: v for k, v in meta.items()})


def _hold_grid(grid: tuple[int, int, int], given: bool) -> None:
    """ConfigError for a grid of more programs than the interpreter runs in minutes."""
    programs = math.prod(grid)
    if programs <= MAX_PROGRAMS:
        return
    limit = f"at most {MAX_PROGRAMS:,} programs run under Triton's interpreter (about 50 ms each)"
    if given:
        raise ConfigError("--grid", f"{limit}; got {' × '.join(map(str, grid))} = {programs:,}")
    raise ConfigError(
        "--grid",
        f"the default grid (cdiv(N, BLOCK_M), Z·H) = {tuple(grid)} is {programs:,} programs, and {limit}; give a "
        "smaller --n, --heads or --batch, a larger BLOCK_M, or --grid",
    )


def _default_grid(
    fn_params: list[Param], conv: dict[str, str], args: dict[str, Any], launch: Launch, kernel: str
) -> tuple[int, int, int]:
    rows = [p.name for p in fn_params if _role_of(conv[p.name]) == "BLOCK_M"]
    if not rows:
        raise ConfigError(
            "--grid",
            f"{kernel} has no BLOCK_M parameter to size the grid by; give the grid with --grid X,Y "
            "(or the tile's parameter with --bind BLOCK_M=PARAM)",
        )
    block_m = args[rows[0]]
    if isinstance(block_m, bool) or not isinstance(block_m, int) or block_m < 1:
        raise ConfigError("--meta", f"{rows[0]} must be a positive integer to size the grid (got {shown(block_m)})")
    return (-(-launch.n // block_m), launch.z * launch.h, 1)
