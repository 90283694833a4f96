"""Issue 18: the redesign must leave every trace of the existing algorithms equal, value for value and counter for
counter, to one made before it. This script regenerates a fixed set of documents with whatever flashviz is
importable and either writes them as the baseline or compares them with one:

    PYTHONPATH=src python bench/trace_equality.py --write-baseline /work/trace-baseline   # once, from the old code
    PYTHONPATH=src python bench/trace_equality.py --check /work/trace-baseline            # after every change

What it regenerates (each a JSON file in DIR, compared exactly after parsing, floats bit for bit):

- `trace/...`: `flashviz.trace(...)` (the public entry) for every algorithm of the registry at several launches:
  the seed's example, ragged N, Br != Bc both ways, a scale, all blocks recorded and one block of many (block 0
  and another), each causal and not (where the algorithm has a causal mask); fa2-triton, fa3 and ring at launches
  their kernels run (fa2-triton: powers of two, D in its table; fa3: Br = Bc = 128, D of 64 or 128; ring: Br = Bc =
  N/P on 2 to 5 devices, zigzag and contiguous).
- `gpu/...`: what the GPU runner decides without a GPU, for every algorithm with a GPU launch, at 1 and 3 heads
  (B*H flattened): the traffic model for H heads with its 32-byte-sector rounding (`gpu.sectors.model`), each
  launch's template instance, grid, blockDim and shared memory (CUDA C++) or program grid and tensor descriptors
  (Triton), and the check of each head's engine outputs against float64 (`gpu.check.compare`).
- `compare/...`: `flashviz compare --json`'s document with the chart's sweep and the phase curves, and the
  sweep of Bc/Br, causal and not; `limits.json`: `GET /api/limits`.
- `errors.json`: the one-line messages of bad launches (unknown algorithm, a tile fa2-triton cannot run, N past
  standard's limit, a block out of range, ...).

Exit 0 when everything is equal; else 1, naming each file and the first differing paths in it. A file in the
baseline that the code no longer makes (or the reverse) is a difference too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

# (name, flashviz.trace keywords): forward and backward algorithms of the float32 kernels
SIZES: dict[str, dict[str, Any]] = {
    "n8": {"n": 8, "d": 4, "br": 4, "bc": 4, "seed": 1},
    "n11_ragged": {"n": 11, "d": 3, "br": 4, "bc": 3, "seed": 5},
    "n13_br2_bc5_scale": {"n": 13, "d": 2, "br": 2, "bc": 5, "seed": 7, "scale": 0.7},
    "n40_one_of_many": {"n": 40, "d": 4, "br": 4, "bc": 4, "seed": 2},
    "n40_block3": {"n": 40, "d": 4, "br": 4, "bc": 4, "seed": 3, "block": 3},
    "n30_br8_bc4": {"n": 30, "d": 5, "br": 8, "bc": 4, "seed": 11},
    "n30_br4_bc8": {"n": 30, "d": 5, "br": 4, "bc": 8, "seed": 12},
    "n64_d16_br16_bc32": {"n": 64, "d": 16, "br": 16, "bc": 32, "seed": 913},
    "n333_d16_br32_bc16_many": {"n": 333, "d": 16, "br": 32, "bc": 16, "seed": 41},
    "n333_d16_br16_bc32_block5": {"n": 333, "d": 16, "br": 16, "bc": 32, "seed": 42, "block": 5, "scale": -0.4},
}
# fa2-triton's kernel runs powers of two 16..256 with D in its table; causal wants Br a multiple of Bc
TRITON_SIZES: dict[str, dict[str, Any]] = {
    "n128_d32_br64_bc32": {"n": 128, "d": 32, "br": 64, "bc": 32, "seed": 4},
    "n100_ragged_br32_bc16": {"n": 100, "d": 32, "br": 32, "bc": 16, "seed": 17},
    "n200_d64_block2": {"n": 200, "d": 64, "br": 32, "bc": 32, "seed": 23, "block": 2, "scale": 0.3},
    "n48_br16_bc16": {"n": 48, "d": 64, "br": 16, "bc": 16, "seed": 6},
    "n512_d64_br64_bc32_many": {"n": 512, "d": 64, "br": 64, "bc": 32, "seed": 43},
}
TRITON_NONCAUSAL: dict[str, dict[str, Any]] = {
    "n96_br16_bc32": {"n": 96, "d": 32, "br": 16, "bc": 32, "seed": 8},
}
# fa3's kernel runs Br = Bc = 128 and D of 64 or 128: ragged N, one block of several, both head dims
FA3_SIZES: dict[str, dict[str, Any]] = {
    "n256_d64": {"n": 256, "d": 64, "br": 128, "bc": 128, "seed": 41},
    "n200_d64_ragged_scale": {"n": 200, "d": 64, "br": 128, "bc": 128, "seed": 42, "scale": 0.2},
    "n384_d128_block1": {"n": 384, "d": 128, "br": 128, "bc": 128, "seed": 43, "block": 1},
}
# ring attention runs Br = Bc = N/P on P devices (Config.devices), zigzag or contiguous (Config.layout): launches
# flashviz.trace has no keywords for are made from a Config (`block` is then `record`)
RING_SIZES: dict[str, dict[str, Any]] = {
    "n16_p4_zigzag": {"n": 16, "d": 4, "br": 4, "bc": 4, "seed": 51},
    "n24_d3_p3_zigzag": {"n": 24, "d": 3, "br": 8, "bc": 8, "seed": 52, "devices": 3},
    "n12_d5_p2_contiguous_scale": {
        "n": 12,
        "d": 5,
        "br": 6,
        "bc": 6,
        "seed": 53,
        "devices": 2,
        "layout": "contiguous",
        "scale": 0.6,
    },
    "n40_p5_contiguous_block2": {
        "n": 40,
        "d": 4,
        "br": 8,
        "bc": 8,
        "seed": 54,
        "devices": 5,
        "layout": "contiguous",
        "block": 2,
    },
}
# the sizes of each algorithm whose kernel runs only some launches (the others run SIZES)
OWN_SIZES: dict[str, dict[str, dict[str, Any]]] = {"fa2-triton": TRITON_SIZES, "fa3": FA3_SIZES, "ring": RING_SIZES}
GPU_SIZES: dict[str, dict[str, Any]] = {
    "n40_d8_br8_bc8": {"n": 40, "d": 8, "br": 8, "bc": 8, "seed": 31},
    "n37_d4_br4_bc8": {"n": 37, "d": 4, "br": 4, "bc": 8, "seed": 32},
}
GPU_TRITON_SIZES: dict[str, dict[str, Any]] = {
    "n128_d32_br64_bc32": {"n": 128, "d": 32, "br": 64, "bc": 32, "seed": 33},
}
GPU_OWN_SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "fa3": {"n200_d64": {"n": 200, "d": 64, "br": 128, "bc": 128, "seed": 34}},
}
COMPARE_SIZES = ((4096, 64, 64, 64), (1000, 32, 32, 64), (300, 16, 16, 8))
BAD: dict[str, dict[str, Any]] = {
    "unknown_algo": {"algo": "fa9"},
    "n_zero": {"n": 0},
    "br_too_big": {"br": 300},
    "block_out_of_range": {"n": 8, "block": 2},
    "backward_block_out_of_range": {"algo": "fa2-backward", "n": 8, "bc": 4, "block": 2},
    "standard_past_max_n": {"algo": "standard", "n": 5000, "br": 64, "bc": 64},
    "triton_d4": {"algo": "fa2-triton", "n": 64, "d": 4, "br": 16, "bc": 16},
    "triton_br_not_power": {"algo": "fa2-triton", "n": 64, "d": 32, "br": 24, "bc": 16},
    "triton_causal_br_lt_bc": {"algo": "fa2-triton", "n": 64, "d": 32, "br": 16, "bc": 32, "causal": True},
    "tiles_too_many": {"n": 16384, "br": 1, "bc": 1},
    "scale_zero": {"scale": 0.0},
}


def _json(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS, default=_default)


def _default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return np.ascontiguousarray(obj).tolist()
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def trace_cases() -> Iterator[tuple[str, Callable[[], bytes]]]:
    from flashviz.algos import ALGOS, get

    for algo in ALGOS:
        triton = algo == "fa2-triton"
        sizes = OWN_SIZES.get(algo, SIZES)
        for causal in (False, True) if get(algo).causal else (False,):
            every = {**sizes, **(TRITON_NONCAUSAL if triton and not causal else {})}
            for size, kw in every.items():
                name = f"trace/{algo}_{'causal_' if causal else ''}{size}.json"
                yield name, lambda a=algo, c=causal, kw=kw: traced(a, c, kw).to_json()


def traced(algo: str, causal: bool, kw: dict[str, Any]) -> Any:
    """flashviz.trace(...) (the public entry), or for fields it has no keyword for the Config of them, traced."""
    import flashviz

    if not {"devices", "layout"} & set(kw):
        return flashviz.trace(algo=algo, causal=causal, **kw)
    from flashviz.model.config import Config
    from flashviz.tracing.build import make_trace

    fields = {k: v for k, v in kw.items() if k != "block"}
    return make_trace(Config(algo=algo, causal=causal, record=(kw["block"],) if "block" in kw else None, **fields))


def gpu_plan(cfg: Any, heads: int) -> dict[str, Any]:
    import numpy as np

    from flashviz.algos import gpu_spec
    from flashviz.algos.launch import TritonSpec
    from flashviz.gpu import check, sectors

    s = gpu_spec(cfg.algo)
    if isinstance(s, TritonSpec):
        launches = [
            {"template": k.template, "tensors": list(k.tensors), "grid": list(k.grid(cfg, heads))} for k in s.kernels
        ]
        extra: dict[str, Any] = {"descriptors": s.descriptors(cfg, heads), "paths": s.paths}
    else:
        launches = [
            {
                "template": k.template,
                "name": k.name_expression(cfg),
                "tensors": list(k.tensors),
                "scalars": [list(x) for x in k.scalars(cfg)],
                "grid": list(k.grid(cfg, heads)),
                "threads": k.threads(cfg),
                "min_threads": k.min_threads(cfg),
                "smem_bytes": s.smem_bytes(k, cfg),
                "counted": s.counts(k.template),
            }
            for k in s.kernels
        ]
        extra = {"paths": s.paths}
    shapes = {name: list(f(cfg)) for name, f in s.shapes.items()}
    inputs = check.head_inputs(cfg, heads)
    per_head = [check.engine_outputs(cfg, {k: v[g] for k, v in inputs.items()}) for g in range(heads)]
    outputs = {name: np.stack([h[name] for h in per_head]) for name in per_head[0]}
    return {
        "model": sectors.model(cfg, heads),
        "launches": launches,
        "shapes": shapes,
        "reuse": s.reuse,
        **extra,
        "inputs": {k: v for k, v in inputs.items()},
        "engine_outputs": outputs,
        "check": check.compare(cfg, inputs, outputs, cfg.seed),
    }


def gpu_cases() -> Iterator[tuple[str, Callable[[], bytes]]]:
    from flashviz.algos import get, gpu_specs
    from flashviz.algos.launch import TritonSpec
    from flashviz.model.config import Config

    for algo, s in gpu_specs().items():
        sizes = GPU_OWN_SIZES.get(algo, GPU_TRITON_SIZES if isinstance(s, TritonSpec) else GPU_SIZES)
        for causal in (False, True) if get(algo).causal else (False,):
            for size, kw in sizes.items():
                for heads in (1, 3):
                    cfg = Config(algo=algo, causal=causal, **kw)
                    name = f"gpu/{algo}_{'causal_' if causal else ''}{size}_h{heads}.json"
                    yield name, lambda cfg=cfg, heads=heads: _json(gpu_plan(get(cfg.algo).validated(cfg), heads))


def other_cases() -> Iterator[tuple[str, Callable[[], bytes]]]:
    from flashviz.reports import compare_api, regimes

    for n, d, br, bc in COMPARE_SIZES:
        for causal in (False, True):
            tag = f"n{n}_d{d}_br{br}_bc{bc}{'_causal' if causal else ''}"
            yield (
                f"compare/document_{tag}.json",
                lambda n=n, d=d, br=br, bc=bc, causal=causal: _json(compare_api.compare_document(n, d, br, bc, causal)),
            )
            yield (
                f"compare/regimes_{tag}.json",
                lambda n=n, d=d, br=br, bc=bc, causal=causal: _json(regimes.sweep(n, d, br, bc, causal)),
            )
    yield "limits.json", lambda: _json(compare_api.limits_document())
    yield "errors.json", errors


def errors() -> bytes:
    import flashviz
    from flashviz.model.config import ConfigError

    out: dict[str, Any] = {}
    for name, kw in BAD.items():
        try:
            flashviz.trace(**kw)
        except ConfigError as e:
            out[name] = {"field": e.field, "message": str(e)}
        else:
            out[name] = "accepted"
    return _json(out)


def cases() -> Iterator[tuple[str, Callable[[], bytes]]]:
    yield from trace_cases()
    yield from gpu_cases()
    yield from other_cases()


def differences(a: Any, b: Any, path: str = "$", out: list[str] | None = None, most: int = 12) -> list[str]:
    """Paths where a (the baseline) and b (now) differ, at most `most` of them."""
    out = [] if out is None else out
    if len(out) >= most:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                out.append(f"{path}.{k}: gone")
            elif k not in a:
                out.append(f"{path}.{k}: new")
            else:
                differences(a[k], b[k], f"{path}.{k}", out, most)
            if len(out) >= most:
                break
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} -> {len(b)}")
        for k, (x, y) in enumerate(zip(a, b, strict=False)):
            differences(x, y, f"{path}[{k}]", out, most)
            if len(out) >= most:
                break
    elif type(a) is not type(b) or a != b:
        out.append(f"{path}: {str(a)[:60]!s} -> {str(b)[:60]!s}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write-baseline", type=Path, metavar="DIR")
    group.add_argument("--check", type=Path, metavar="DIR")
    ap.add_argument("-k", default="", help="only the files whose name contains this")
    ap.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="KEY",
        help="a top-level key not compared (repeatable): `--ignore schema` across a schema version bump",
    )
    args = ap.parse_args(argv)
    chosen = [(name, make) for name, make in cases() if args.k in name]
    if args.write_baseline is not None:
        for name, make in chosen:
            path = args.write_baseline / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(make())
        print(f"wrote {len(chosen)} files under {args.write_baseline}")
        return 0
    base: Path = args.check
    if not base.is_dir():
        print(f"--check: {base} is not a folder (write one with --write-baseline)", file=sys.stderr)
        return 2
    made = {name for name, _ in chosen}
    stored = {str(p.relative_to(base)) for p in base.rglob("*.json") if args.k in str(p.relative_to(base))}
    bad = 0
    for name in sorted(stored - made):
        print(f"{name}: in the baseline, no longer made")
        bad += 1
    for name, make in chosen:
        path = base / name
        if not path.is_file():
            print(f"{name}: made now, not in the baseline")
            bad += 1
            continue
        before, now = orjson.loads(path.read_bytes()), orjson.loads(make())
        for key in args.ignore:
            for doc in (before, now):
                if isinstance(doc, dict):
                    doc.pop(key, None)
        if before != now:
            bad += 1
            print(f"{name}: differs")
            for line in differences(before, now):
                print(f"    {line}")
    print(f"{len(chosen) - bad} of {len(chosen)} equal" if bad else f"all {len(chosen)} equal to {base}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
