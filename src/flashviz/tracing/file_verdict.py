"""A trace file's verdict judged again from the arrays a reader draws: its `reference` (each output against float64,
and `ok`) is what `flashviz trace` computed, and a file can say ✓ over NaN outputs (an edit, a corruption). Readers
(`flashviz view`, `flashviz export --trace`, `flashviz.show(path)`) run the algorithm's own check again on the file's
inputs and outputs (its float64 expectation and tolerances, as flashviz.tracing.build checks a run) and refuse a file
whose stored verdict is not its arrays' in one line. `verdict_problem` answers it, or None."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flashviz.tracing.codec import is_compact, resolver

# how far a stored max_rel may be from the one judged again: the float64 expectation sums in another order on another
# machine's BLAS (a few ulps of float64), nothing that moves a float32 kernel's error by a thousandth
REL = 1e-3


def verdict_problem(doc: dict[str, Any]) -> str | None:
    """The first output whose stored verdict (`reference[name]`: ok, nonfinite, max_rel) is not what its values give
    against float64, or a stored overall `ok` that is not theirs, in one line; None when the file's verdict is its
    arrays'. `doc`: a whole trace (flashviz.share.trace_files: checked, its drawn inputs drawn again)."""
    from flashviz.model import reference
    from flashviz.tracing.build import _expected
    from flashviz.tracing.file_schema import launch_of

    algo, cfg = launch_of(doc)
    values = _values(doc)
    inputs = {k: values("inputs", k) for k in algo.inputs}
    refs, magnitudes = _expected(algo, cfg, inputs)
    outputs = {k: values("outputs", k) for k in refs}
    judged = reference.check(outputs, refs, algo.expect.TOLERANCE, algo.expect.LOG_DOMAIN, magnitudes)
    stored = doc.get("reference")
    stored = stored if isinstance(stored, dict) else {}
    for name in refs:
        said, now = stored.get(name), judged[name]
        if not isinstance(said, dict) or not _same(said, now):  # type: ignore[arg-type]
            return _disagree(name, said, now)  # type: ignore[arg-type]
    if stored.get("ok") is not judged["ok"]:
        return f"reference.ok says {_mark(stored.get('ok'))}, but its outputs' checks say {_mark(judged['ok'])}"
    return None


def _same(said: dict[str, Any], now: dict[str, Any]) -> bool:
    if said.get("ok") is not now["ok"] or said.get("nonfinite") != now["nonfinite"]:
        return False
    a, b = said.get("max_rel"), now["max_rel"]
    if not isinstance(a, (int, float)) or isinstance(a, bool) or not math.isfinite(b):
        return a is None and not math.isfinite(b)  # NaN (an output not finite) is written null
    return math.isclose(a, b, rel_tol=REL, abs_tol=REL * now["tolerance_rel"])


def _disagree(name: str, said: Any, now: dict[str, Any]) -> str:
    """`reference.O` against what O's values give, in words like the page's badge."""
    if now["nonfinite"]:
        count = now["nonfinite"]
        got = f"{count:,} value{'s' if count != 1 else ''} not finite"
    else:
        got = f"rel err {now['max_rel']:.1e} {'<=' if now['ok'] else '>'} {now['tolerance_rel']:g}"
    mark = _mark(said.get("ok")) if isinstance(said, dict) else "nothing"
    return (
        f"its verdict is not its arrays': its reference says {mark} for {name}, but judged again against float64 "
        f"its outputs {name}: {got}"
    )


def _mark(ok: Any) -> str:
    return "✓" if ok is True else "✗" if ok is False else repr(ok)


def _values(doc: dict[str, Any]):
    """(part, name) -> that input's or output's values as the engine held them: compact arrays decoded (references
    followed; bfloat16 as float32), plain ones as `--plain` writes float32 values (null for −∞, "NaN", "Infinity")."""
    compact = resolver(doc)

    def values(part: str, name: str) -> np.ndarray:
        v = doc[part][name]
        return compact(f"{part}/{name}") if is_compact(v) else _plain(v)

    return values


WORDS = {"NaN": np.nan, "Infinity": np.inf}


def _plain(v: Any) -> np.ndarray:
    number = np.frompyfunc(lambda x: -np.inf if x is None else WORDS[x] if isinstance(x, str) else x, 1, 1)
    return number(np.array(v, dtype=object)).astype(np.float32)
