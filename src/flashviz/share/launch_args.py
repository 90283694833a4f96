"""The launch arguments of the Python API and the widget, checked: `launch(...)` makes the Config that
`flashviz.trace`, `flashviz.show` and the widget's messages run, `height_of` the widget's height. Its own module so
that the API and the widget both use it without importing each other."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flashviz.algos import DEFAULT, resolve
from flashviz.model import fields
from flashviz.model.config import Config, ConfigError, shown, with_seqlens

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm

HEIGHT_RANGE = (120, 10_000)  # the widget's height in CSS pixels


def launch(given: Mapping[str, Any], api: bool = False) -> tuple[Algorithm, Config]:
    """The Python API's launch arguments (`given`: launch fields, flashviz.model.fields) as their Algorithm (the front
    door's one lookup, `resolve`) and a Config checked by it (`api`: under the API's bounds, Algorithm.api_validated):
    the one path for `flashviz.trace`, `flashviz.show` and the widget's `config` and messages. A field left out, or
    None where an algorithm may bring its own default (n, d, br, bc), takes the algorithm's own default, else the
    table's. NumPy's scalars are taken as the Python values they hold (np.int64(8), np.True_, np.float32(0.5)); a bool
    is no number (block=True, scale=True), and bytes are no number either (scale=b'8'): each is a ConfigError naming
    the argument and its range (Algorithm.validated says it)."""
    algorithm = resolve(given.get("algo", DEFAULT))
    # None where the field has a default of its own or says what leaving it out means (group, softcap): that default
    kept = {k: v for k, v in given.items() if not (v is None and (fields.BY_NAME[k].own or fields.BY_NAME[k].empty))}
    values = fields.filled(kept, algorithm.example)
    plain = {k: _plain(fields.BY_NAME[k], v) for k, v in values.items()}
    # packed sequences (seqlens) with n left out: N is their sum
    cfg = Config.of(with_seqlens(plain, given.get("n") is not None))
    return algorithm, algorithm.api_validated(cfg) if api else algorithm.validated(cfg)


def _plain(f: fields.Field, value: Any) -> Any:
    """A field's value as the Python value it holds, by its kind (anything else goes on to Config's message)."""
    if f.kind == "ints":  # text or a sequence of integers, read by Config (option_values)
        return _integers(value)
    if value is None or f.kind == "choice":
        return value
    if f.kind == "flag":
        return _boolean(value)
    if f.kind == "number":
        return _number(value)
    return _integer(value)


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


def _integers(value: Any) -> Any:
    """A list field's value: a tuple of ints from a list, tuple or 1-d NumPy array of Python or NumPy integers; text
    and anything else go on to Config (option_values reads text; its message names the field and its range)."""
    if hasattr(value, "tolist") and getattr(value, "ndim", None) == 1:  # a NumPy array (a 0-d one is no list)
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(_integer(x) for x in value)
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
