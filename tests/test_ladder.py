"""The ladder: `flashviz ladder` through a subprocess, the flashviz.ladder/1 schema and its checks, the recorded
run shipped with the package, and the Triton kernel's private fp32 path (ieee and tf32 dots) under Triton's
interpreter against float64.

A ladder document here is made by `ladder_doc()` with random numbers that are consistent with each other, as the
schema demands; it stands for a recorded run and is never shipped."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import torch

    GPU = torch.cuda.is_available()
except ImportError:
    GPU = False
if not GPU:
    # Triton picks compiled or interpreted kernels when it is first imported: choose before it is.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import flashviz
from flashviz.hardware import ladder
from flashviz.hardware.ladder_schema import LadderError, check

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "ladder_bench.py"
RESULTS = ROOT / "bench" / "results" / "ladder"


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, env=env, cwd=cwd)


def rung(name: str, label: str, dtype: str, peak: str, ms: float, doc: dict, tiles=(64, 64, 4, 2)) -> dict:
    tflops = doc["shape"]["flops"] / ms / 1e9
    return {
        "name": name,
        "label": label,
        "kernel": "algos/fa2_triton/kernel.py fa2_fwd" if name.startswith("triton") else "fa2_forward.cu",
        "dtype": dtype,
        "tensor_cores": dtype == "bf16",
        "mma": "wgmma" if dtype == "bf16" else "none",
        "tiles": None if tiles is None else dict(zip(("br", "bc", "warps", "stages"), tiles, strict=True)),
        "ms": ms,
        "tflops": tflops,
        "share_of_peak": tflops / doc["peaks"][peak]["tflops"],
        "peak": peak,
        "hbm_bytes": None if tiles is None else random.randint(10**8, 10**10),
        "sram_bytes_per_block": None if tiles is None else random.randint(10**4, 2 * 10**5),
        "registers": 128,
        "spill_bytes": 0,
        "max_rel_err": random.uniform(1e-7, 1e-2),
        "what_changed": f"what changed at {label}",
    }


def ladder_doc() -> dict:
    """A consistent flashviz.ladder/1 document with fresh random times and peaks."""
    b, h, n, d = 4, 32, 4096, 64
    doc = {
        "schema": "flashviz.ladder/1",
        "date": "2031-05-0" + str(random.randint(1, 9)),
        "gpu": "Test GPU " + str(random.randint(100, 999)),
        "mode": "full",
        "complete": True,
        "command": "PYTHONPATH=src python bench/ladder_bench.py",
        "versions": {"torch": "2.11.0", "cudnn": 91900, "cupy": None},
        "shape": {
            "batch": b,
            "heads": h,
            "n": n,
            "d": d,
            "causal": False,
            "tokens": b * n,
            "flops": 4.0 * b * h * n**2 * d,
        },
        "timing": "do_bench median",
        "check": "max rel err against float64",
        "peaks": {
            "bf16_matmul": {"tflops": random.uniform(600, 800), "what": "bf16 matmul"},
            "fp32_ffma": {"tflops": random.uniform(50, 70), "what": "FMA chains"},
        },
        "rungs": [],
        "skipped": [{"name": "sdpa-cudnn", "why": "RuntimeError: no backend"}],
        "input_seed": random.randint(0, 2**32 - 1),
    }
    doc["shape"]["flops"] = 4.0 * b * h * n**2 * d
    doc["rungs"] = [
        rung("seed", "seed kernel, as written", "fp32", "fp32_ffma", random.uniform(200, 400), doc, (32, 32, 4, 1)),
        rung("triton-bf16-tuned", "Triton bf16, autotuned", "bf16", "bf16_matmul", random.uniform(1, 2), doc),
        rung("sdpa-flash", "SDPA FlashAttention-2", "bf16", "bf16_matmul", random.uniform(1, 3), doc, None),
    ]
    return doc


@pytest.fixture
def doc_file(tmp_path):
    doc = ladder_doc()
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(doc))
    return doc, path


# ----------------------------------------------------------------------------------------------------------
# flashviz ladder, through the real entry point
# ----------------------------------------------------------------------------------------------------------
def test_cli_shows_a_recorded_run_with_its_date_gpu_and_numbers(doc_file):
    doc, path = doc_file
    res = run_cli("ladder", "--from", str(path))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert doc["date"] in out and doc["gpu"] in out
    for r in doc["rungs"]:
        assert r["label"] in out
        assert f"{r['tflops']:.4g}" in out  # the recorded number, as recorded
        assert f"{100 * r['share_of_peak']:.1f}%" in out
        assert r["what_changed"] in out
    assert f"{doc['peaks']['bf16_matmul']['tflops']:.1f} TFLOP/s" in out
    assert "not measured: sdpa-cudnn" in out
    assert res.stderr == ""


def test_cli_json_is_the_file(doc_file):
    doc, path = doc_file
    res = run_cli("ladder", "--from", str(path), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == doc


def package_without_runs(tmp_path: Path) -> dict:
    """A copy of the flashviz package with no recorded ladder run in it; the environment that imports it."""
    src = Path(ladder.__file__).parents[1]  # the package (hardware/ladder.py is in it)
    shutil.copytree(
        src, tmp_path / "flashviz", ignore=shutil.ignore_patterns("__pycache__", "static", "ladder", "*.pyc")
    )
    assert not (tmp_path / "flashviz" / "data" / "ladder").exists()
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def test_cli_says_in_one_line_that_no_run_was_recorded(tmp_path):
    res = run_cli("ladder", env=package_without_runs(tmp_path))
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("flashviz: error: no recorded ladder run ships with this flashviz")


def test_cli_without_from_shows_the_newest_shipped_run():
    runs = ladder.shipped()
    res = run_cli("ladder")
    if not runs:
        assert res.returncode == 2 and "no recorded ladder run" in res.stderr
        return
    newest = json.loads(runs[-1].read_text())
    assert res.returncode == 0, res.stderr
    assert newest["date"] in res.stdout and newest["gpu"] in res.stdout
    assert all(r["label"] in res.stdout for r in newest["rungs"])


def mutate(doc: dict, change) -> dict:
    bad = copy.deepcopy(doc)
    change(bad)
    return bad


BAD = [
    (lambda d: d["rungs"][1].__setitem__("ms", "fast"), "rungs[1].ms"),
    (lambda d: d["rungs"][0].__setitem__("ms", -1.0), "rungs[0].ms"),
    (lambda d: d["rungs"][1].__setitem__("tflops", d["rungs"][1]["tflops"] * 1.1), "tflops"),
    (lambda d: d["rungs"][1].__setitem__("share_of_peak", 0.99), "share_of_peak"),
    (lambda d: d["rungs"][0].__setitem__("peak", "fp64_magic"), "fp64_magic"),
    (lambda d: d["rungs"][2].__setitem__("name", "seed"), "unique"),
    (lambda d: d["rungs"][0].__setitem__("speedup", 3), "rungs[0].speedup"),
    (lambda d: d["rungs"][0].__delitem__("max_rel_err"), "rungs[0].max_rel_err: missing"),
    (lambda d: d.__setitem__("rungs", []), "rungs"),
    (lambda d: d["shape"].__setitem__("flops", 1e9), "shape"),
    (lambda d: d.__setitem__("date", "yesterday"), "date"),
    (lambda d: d.__setitem__("schema", "flashviz.trace/3"), "schema"),
    (lambda d: d["peaks"]["bf16_matmul"].__setitem__("tflops", float("nan")), "peaks.bf16_matmul.tflops"),
]


@pytest.mark.parametrize(("change", "named"), BAD)
def test_schema_refuses_a_bad_or_inconsistent_run(change, named):
    doc = ladder_doc()
    check(doc)  # the good one passes
    with pytest.raises(LadderError) as e:
        check(json.loads(json.dumps(mutate(doc, change))))
    message = str(e.value)
    assert named in message and "\n" not in message


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('{"schema": "flashviz.ladder/1", "date": ', "not JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"schema": "flashviz.trace/1"}', "schema must be"),
        (None, "rungs[1].ms"),  # a string where the time goes
    ],
)
def test_cli_names_the_file_and_what_is_wrong_in_one_line(tmp_path, content, named):
    path = tmp_path / "broken.json"
    if content is None:
        content = json.dumps(mutate(ladder_doc(), lambda d: d["rungs"][1].__setitem__("ms", "x" * 500)))
    path.write_text(content)
    res = run_cli("ladder", "--from", path.name, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("flashviz: error: --from: broken.json: ") and named in lines[0]
    assert len(lines[0]) < 400  # a long bad value is cut


def test_cli_names_a_missing_file(tmp_path):
    res = run_cli("ladder", "--from", "nope.json", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "flashviz: error: --from: cannot read nope.json: No such file or directory; "
        "give a ladder JSON (bench/ladder_bench.py writes one)"
    )


def test_load_returns_the_validated_document(doc_file):
    doc, path = doc_file
    assert ladder.load(path) == doc
    assert ladder.load(str(path)) == doc


# ----------------------------------------------------------------------------------------------------------
# The recorded run that ships with the package
# ----------------------------------------------------------------------------------------------------------
def newest_full_result() -> Path | None:
    runs = sorted(p for p in RESULTS.glob("*.json") if not p.stem.endswith(("-quick", "-smoke")))
    return runs[-1] if runs else None


def test_the_shipped_run_is_the_newest_recorded_one():
    """bench/ladder_bench.py --install copies a run to both places; neither may fall behind the other."""
    shipped, recorded = ladder.shipped(), newest_full_result()
    assert (shipped == []) == (recorded is None), (
        f"shipped {[s.name for s in shipped]}, recorded {recorded}: run bench/ladder_bench.py --install"
    )
    if recorded is not None:
        assert shipped[-1].name == recorded.name
        assert shipped[-1].read_bytes() == recorded.read_bytes()
        check(json.loads(recorded.read_text()))
        assert ladder.load()["mode"] == "full"


# ----------------------------------------------------------------------------------------------------------
# The bench's models and sentences (CPU)
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    spec = importlib.util.spec_from_file_location("ladder_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_hbm_bytes_is_q_once_kv_per_block_of_q_o_and_l_once(bench):
    b, h, n, d = 2, 3, 1000, 64
    for br, bc, size in ((128, 64, 2), (32, 32, 4), (48, 80, 2)):
        tr = math.ceil(n / br)
        per_head = (n * d + 2 * tr * n * d + n * d) * size + n * 4  # Q, K and V Tr times, O; L in fp32
        assert bench.hbm_bytes({"batch": b, "heads": h, "n": n, "d": d}, br, bc, size) == b * h * per_head


def test_a_rung_that_fails_its_check_is_not_timed(bench, monkeypatch):
    import torch

    monkeypatch.setattr(bench, "DEVICE", "cpu")
    ref = torch.randn(1, 2, 16, 8, dtype=torch.float64)
    with pytest.raises(bench.CheckFailed):
        bench.checked(lambda: torch.full((1, 2, 16, 8), float("nan")), [], ref, 1e-4)  # unwritten
    with pytest.raises(bench.CheckFailed):
        bench.checked(lambda: (ref * 1.01).float(), [], ref, 1e-4)  # wrong by 1%
    assert bench.checked(lambda: ref.float(), [], ref, 1e-4) < 1e-6


def test_sentences_name_the_rung_compared_and_refuse_to_compare_with_a_missing_one(bench):
    rungs = [
        {"name": "triton-fp32-ieee", "label": "A", "ms": 40.0, "tiles": {"br": 32, "bc": 16, "warps": 4, "stages": 1},
         "mma": "none", "spill_bytes": 0, "hbm_bytes": 10, "candidates": [], "share_of_peak": 0.1, "peak": "fp32_ffma"},
        {"name": "triton-fp32-tf32", "label": "B", "ms": 10.0, "tiles": {"br": 32, "bc": 16, "warps": 4, "stages": 1},
         "mma": "mma.sync", "spill_bytes": 0, "hbm_bytes": 10, "share_of_peak": 0.1, "peak": "tf32_matmul"},
        {"name": "triton-bf16-tuned", "label": "C", "ms": 2.0, "tiles": {"br": 128, "bc": 64, "warps": 8, "stages": 3},
         "mma": "wgmma", "spill_bytes": 0, "hbm_bytes": 5, "share_of_peak": 0.5, "peak": "bf16_matmul"},
    ]  # fmt: skip
    bench.explain(rungs, {})
    assert "(Not compared: seed-best or seed was not measured.)" in rungs[0]["what_changed"]
    assert "only tl.dot's input_precision changed" in rungs[1]["what_changed"]
    assert "mma.sync in the compiled code" in rungs[1]["what_changed"]
    assert "4.0× faster than A (40 → 10 ms)" in rungs[1]["what_changed"]
    # C's own predecessors (bf16 at the same tiles, or with one stage) were not measured: no claim about stages
    assert "num_stages" not in rungs[2]["what_changed"]
    assert "Not compared: triton-bf16-tiles or triton-bf16 was not measured" in rungs[2]["what_changed"]


# runs a script as the GPU machine's image would: without pydantic, FastAPI, orjson (KINDS.md's package list)
WITHOUT_SERVER_PACKAGES = """
import runpy, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pydantic", "pydantic_core", "fastapi", "starlette", "orjson", "uvicorn"):
            raise ImportError("not installed here: " + name)
sys.meta_path.insert(0, Block())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("image", ["here", "gpu-image"])
def test_the_bench_runs_end_to_end_on_the_cpu_and_writes_a_valid_run(tmp_path, image):
    """--smoke: a tiny shape, the Triton rungs under the interpreter, rungs that need a GPU listed as not measured;
    also with the packages the GPU machine lacks blocked (the file is then checked here, as --install does)."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    wrapper = ["-c", WITHOUT_SERVER_PACKAGES] if image == "gpu-image" else []
    res = subprocess.run(
        [sys.executable, *wrapper, str(BENCH), "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
    )
    files = list(tmp_path.glob("*-smoke.json"))
    assert len(files) == 1, res.stdout[-2000:] + res.stderr[-2000:]
    doc = ladder.load(files[0])
    names = [r["name"] for r in doc["rungs"]]
    assert names[:3] == ["triton-fp32-ieee", "triton-fp32-tf32", "triton-bf16"], names
    assert "triton-bf16-tuned" in names
    errors = {r["name"]: r["max_rel_err"] for r in doc["rungs"]}
    assert errors["triton-fp32-ieee"] < 1e-5  # fp32 products
    assert 1e-4 < errors["triton-fp32-tf32"] < 1e-2  # operands cut to tf32
    assert "seed" in {s["name"] for s in doc["skipped"]}
    # no cuDNN on a CPU, and Gluon (the fa3 rungs) has no interpreter
    allowed = {"seed", "sdpa-cudnn", "fa3-ws", "fa3-pingpong", "fa3-overlap", "fa3-persistent"}
    assert {s["name"] for s in doc["skipped"]} <= allowed, doc["skipped"]
    assert doc["mode"] == "smoke" and doc["complete"] is False and res.returncode == 1
    assert (tmp_path / files[0].name.replace(".json", ".md")).read_text().startswith("# The ladder")
    shown = run_cli("ladder", "--from", str(files[0]))
    assert shown.returncode == 0 and "(smoke run)" in shown.stdout


# ----------------------------------------------------------------------------------------------------------
# The Triton kernel's private fp32 path, under the interpreter, against float64
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture
def interpreted():
    torch = pytest.importorskip("torch")
    if GPU:
        pytest.skip("a GPU is here: the interpreter test is for machines without one")
    pytest.importorskip("triton")
    from flashviz.algos.fa2_triton.launcher import launcher
    from flashviz.ops import fa2

    if not launcher().interpret:
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 could be set")
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"torch seed: {seed}")
    torch.manual_seed(seed)
    return fa2


def reference64(q, k, v, scale, causal):
    import torch

    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, -1) @ v.double()


@pytest.mark.parametrize(("n", "causal"), [(80, False), (77, False), (64, True)])
def test_fp32_ieee_is_float32_exact_and_tf32_is_tf32_close(interpreted, n, causal):
    import torch

    fa2 = interpreted
    q, k, v = (torch.randn(2, 2, n, 64) for _ in range(3))
    ref = reference64(q, k, v, 0.125, causal)
    errors = {}
    for precision in ("ieee", "tf32"):
        o, lse = fa2._forward_fp32(q, k, v, None, precision, causal=causal, scale=0.125)
        assert o.dtype == torch.float32 and o.shape == q.shape and torch.isfinite(lse).all()
        errors[precision] = ((o.double() - ref).abs().max() / ref.abs().max()).item()
    assert errors["ieee"] < 5e-6, errors  # fp32 rounding only
    assert 1e-4 < errors["tf32"] < 1e-2, errors  # tf32 keeps 10 mantissa bits: about 1e-3


def test_fp32_path_refuses_what_it_cannot_run(interpreted):
    import torch

    fa2 = interpreted
    q = torch.randn(1, 1, 16, 64)
    with pytest.raises(ValueError, match="precision must be one of ieee, tf32"):
        fa2._forward_fp32(q, q, q, None, "bf16x3")
    with pytest.raises(ValueError, match="q must be a float32"):
        fa2._forward_fp32(q.bfloat16(), q, q, None, "ieee")
    with pytest.raises(ValueError, match="must be bfloat16 or float16"):
        flashviz.attention(q, q, q)  # the public API still takes bf16/fp16 only
