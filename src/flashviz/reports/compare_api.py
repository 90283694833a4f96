"""What the viewer's comparison view asks for: every algorithm at one config from the closed-form models
(`flashviz.reports.compare`, the same numbers `flashviz compare` prints), the bytes causal masking saves and a sweep
of N
for the traffic chart (`GET /api/compare`: no engine), and launch-wide counters per phase so the page can advance
every algorithm's counters together (`GET /api/curves`).

Only the phase curves run an engine (no values recorded: counters only, ~0.1 s at N=1024); the server queues them
with traces, and they are left out (with the reason) when the config is past the API's work bounds. `flashviz
export` and the notebook widget put both in one document (`compare_document`).
"""

from __future__ import annotations

from typing import Any

from flashviz.algos import ALGOS, BASELINE, REGISTRY
from flashviz.model import fields
from flashviz.model.config import (
    API_LIMITS,
    API_MAX_TILES,
    API_MAX_VALUES,
    API_MAX_WORK,
    SCALE_RANGE,
    Config,
    ConfigError,
)
from flashviz.model.inputs import random_inputs
from flashviz.reports.compare import compare

SWEEP_EXPONENTS = range(6, 17)  # N = 64 .. 65536, reaching down to (and through) the current N
MAX_CURVE_POINTS = 240  # phases per algorithm sent for the animation (evenly sampled, the last one kept)


def sweep_ns(n: int) -> list[int]:
    """The chart's N: powers of two from 2^6 (or from the largest power of two <= N, when N is smaller) to
    2^16, and N itself, so that the current config is a point of every line."""
    lo = min(SWEEP_EXPONENTS.start, n.bit_length() - 1)
    return sorted({2**k for k in range(lo, SWEEP_EXPONENTS.stop)} | {n})


def sweep(n: int, d: int, br: int, bc: int, causal: bool, names: list[str] | None = None) -> dict[str, Any]:
    """Total HBM bytes of each forward algorithm (of `names`: those that run this config) at the N of `sweep_ns(n)`
    at this D, Br, Bc (closed forms; each tensor at its own element size)."""
    ns = sweep_ns(n)
    out: dict[str, list[int]] = {}
    for name in names if names is not None else list(REGISTRY):
        algo = REGISTRY[name]
        if algo.direction != "forward" or not algo.rival:  # the passes the chart draws
            continue
        out[name] = [
            sum(
                algo.bytes_of(t) * (c["read"] + c["written"])
                for t, c in algo.traffic.count(n=n, d=d, br=br, bc=bc, causal=causal).items()
            )
            for n in ns
        ]
    return {"n": ns, "bytes": out}


def phase_curve(cfg: Config) -> dict[str, Any]:
    """Launch-wide cumulative counters per phase of one algorithm, sampled to at most MAX_CURVE_POINTS phases:
    `phase` (the phase indices kept), `read` and `written` (elements, all tensors), `tensors` {name: [[read,
    written], ...]} at the same phases."""
    # counters only: the engine on this config's inputs, without the float64 check or the Trace around it
    algo = REGISTRY[cfg.algo]
    rec = algo.engine.execute(algo.validated(cfg), random_inputs(cfg.n, cfg.d, cfg.seed, algo.inputs))
    names = list(rec.hbm.tensors)
    phases = rec.phases(tuple(names), writes=False)
    total = len(phases)
    if total <= MAX_CURVE_POINTS:
        keep = list(range(total))
    else:
        keep = sorted({round(k * (total - 1) / (MAX_CURVE_POINTS - 1)) for k in range(MAX_CURVE_POINTS)})
    rows = [phases[p]["hbm"] for p in keep]
    return {
        "phases": total,
        "phase": keep,
        "op": [phases[p]["op"] for p in keep],
        "read": [sum(h[t]["read"] for t in names) for h in rows],
        "written": [sum(h[t]["written"] for t in names) for h in rows],
        "bytes": [sum(algo.bytes_of(t) * (h[t]["read"] + h[t]["written"]) for t in names) for h in rows],
        "tensors": {t: [[h[t]["read"], h[t]["written"]] for h in rows] for t in names},
    }


def curves(n: int, d: int, br: int, bc: int, causal: bool) -> dict[str, Any]:
    """Per algorithm its phase curve, or {"skipped": reason} when the engine may not run this config here."""
    out: dict[str, Any] = {}
    for name in ALGOS:
        if not REGISTRY[name].rival:  # not in the comparison (compare.compare): no race of its own
            continue
        cfg = Config(algo=name, n=n, d=d, br=br, bc=bc, causal=causal, record=())
        try:
            REGISTRY[name].api_validated(cfg)
        except ConfigError as exc:
            out[name] = {"skipped": f"{exc.field}: {exc.message}"}
            continue
        out[name] = phase_curve(cfg)
    return out


def compare_document(n: int, d: int, br: int, bc: int, causal: bool, with_curves: bool = True) -> dict[str, Any]:
    """`flashviz compare --json` for this config, plus per algorithm `noncausal_bytes` and `saved_bytes` (what
    causal masking saves; 0 without it), the `sweep` for the chart and, with `with_curves`, the phase curves."""
    doc = compare(n, d, br, bc, causal)
    plain = compare(n, d, br, bc, False)["algorithms"] if causal else doc["algorithms"]
    for name, entry in doc["algorithms"].items():
        base = plain[name].get("total", {}).get("bytes") if entry["supported"] else None  # none for what cannot run
        mine = entry.get("total", {}).get("bytes")
        entry["noncausal_bytes"] = base
        entry["saved_bytes"] = None if base is None or mine is None else base - mine
    doc["baseline"] = BASELINE  # the algorithm traffic_vs_<baseline> divides by
    doc["sweep"] = sweep(n, d, br, bc, causal, [name for name, e in doc["algorithms"].items() if e["supported"]])
    doc["curves"] = curves(n, d, br, bc, causal) if with_curves else None
    return doc


def api_algos() -> list[dict[str, Any]]:
    """The algorithms for the viewer's picker, in registry order: name, title, causal support, N limit."""
    return [
        {
            "name": a.name,
            "title": a.title,
            "causal": a.causal,
            "pass": a.direction,
            "max_n": min(a.max_n or API_LIMITS["n"][1], API_LIMITS["n"][1]),
            "max_n_reason": a.max_n_reason,  # why max_n is lower than the API's, as an error says it (or "")
            "kernel_file": a.kernel_file,
            # the launches its kernel runs, where it has rules of its own (a Triton kernel): the only values of a
            # field, in words, and a launch it runs (the page switches to it when the fields break the rules)
            "allowed": None if a.allowed is None else {k: list(v) for k, v in a.allowed.items()},
            "launch_rule": a.launch_rule,
            "example": None if a.example is None else dict(a.example),
            "example_why": a.example_why,  # why those are its defaults, for the page's note when it switches to them
            # the options of real models it runs and the fields of its own (ring's devices): the form's options
            # panel shows their inputs for it
            "options": sorted(a.options | a.own_fields),
        }
        for a in REGISTRY.values()
    ]


def limits_document(
    profile: bool = False, algos: list[str] | None = None, default: str | None = None
) -> dict[str, Any]:
    """`GET /api/limits`: the API's bounds, its launch fields (`fields`: their table's rows at "api") and the algorithms
    (`algos`: only these, for a page that holds some; each with its own defaults, `example`). The server answers it;
    `flashviz export` and the notebook widget inline it."""
    from flashviz.algos import DEFAULT

    offered = [a for a in api_algos() if algos is None or a["name"] in algos]
    return {
        **{name: list(bounds) for name, bounds in API_LIMITS.items()},
        "scale": list(SCALE_RANGE),
        # the launch fields the API takes (flashviz.model.fields): what the page's form and URL parser accept
        "fields": fields.document("api"),
        "work": {"n*n*d": API_MAX_WORK, "tr*tc": API_MAX_TILES, "values": API_MAX_VALUES},
        "algos": offered,
        "default": default or DEFAULT,  # the algorithm a launch runs when none is named
        "profile": profile,  # whether GET /api/profile has one (the page asks only then: no 404)
    }
