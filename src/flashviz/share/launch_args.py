"""The launch arguments of the Python API and the widget, checked: `launch(...)` makes the Config that
`flashviz.trace`, `flashviz.show` and the widget's messages run, `height_of` the widget's height. Its own module so
that the API and the widget both use it without importing each other."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from flashviz.algos import DEFAULT, resolve
from flashviz.model.config import OPTIONS, Config, ConfigError, option_values, shown

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm

HEIGHT_RANGE = (120, 10_000)  # the widget's height in CSS pixels


def launch(
    algo: Any = DEFAULT,
    n: Any = None,
    d: Any = None,
    br: Any = 4,
    bc: Any = 4,
    seed: Any = 0,
    scale: Any = None,
    causal: Any = False,
    block: Any = None,
    api: bool = False,
    **options: Any,
) -> tuple[Algorithm, Config]:
    """The Python API's launch arguments as their Algorithm (the front door's one lookup, `resolve`) and a Config
    checked by it (`api`: under the API's bounds, Algorithm.api_validated): the one path for `flashviz.trace`,
    `flashviz.show` and the widget's `config` and messages. NumPy's scalars are taken as the Python values they hold
    (np.int64(8), np.True_, np.float32(0.5)); a bool is no number (block=True, scale=True), and bytes are no number
    either (scale=b'8'): each is a ConfigError naming the argument and its range (Algorithm.validated says it).
    `options`: the options of real models (group, nk, window, softcap, seqlens, seqlens_k; Config's fields): with
    seqlens and no n, N is their sum."""
    algorithm = resolve(algo)
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise ConfigError(unknown[0], f"is no launch argument (the options of real models: {', '.join(OPTIONS)})")
    given = option_values(**{k: _integer(v) if k in ("group", "nk") else v for k, v in options.items()})
    given["softcap"] = _number(given["softcap"])
    lens = given["seqlens"]
    if n is None and isinstance(lens, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in lens):
        n = sum(lens)
    cfg = Config(
        **given,
        algo=algo,
        n=8 if n is None else _integer(n),
        d=4 if d is None else _integer(d),
        br=_integer(br),
        bc=_integer(bc),
        seed=_integer(seed),
        scale=None if scale is None else _number(scale),
        causal=_boolean(causal),
        record=None if block is None else (_integer(block),),
    )
    return algorithm, algorithm.api_validated(cfg) if api else algorithm.validated(cfg)


def height_of(value: Any) -> int:
    """The widget's height: an integer number of CSS pixels in HEIGHT_RANGE (a ConfigError otherwise)."""
    lo, hi = HEIGHT_RANGE
    number = _integer(value)
    if isinstance(number, bool) or not isinstance(number, int) or not lo <= number <= hi:
        raise ConfigError("height", f"must be an integer number of CSS pixels in {lo}..{hi} (got {shown(value)})")
    return number


def _integer(value: Any) -> Any:
    """An int from an int or a NumPy integer; anything else (a bool too) goes on to Config, whose message names the
    range."""
    if isinstance(value, bool):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def _number(value: Any) -> Any:
    """A float from a Python or NumPy real number (not a bool); anything else goes on to Config's message."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return value
    try:
        return float(value)
    except (OverflowError, ValueError):  # an int past a float's range: Config says the range
        return value


def _boolean(value: Any) -> Any:
    """A bool from a bool or NumPy's bool (np.True_); anything else goes on to Config's message."""
    import numpy as np

    return bool(value) if isinstance(value, np.bool_) else value
