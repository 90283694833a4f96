"""The GPU layer's parts that need no GPU: NVRTC source and compilation, launch table, the traffic and
32-byte-sector models, parsing of ncu and compute-sanitizer output recorded on the H200, and the CLI
without CuPy or a device."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from flashviz.algos import REGISTRY, get
from flashviz.algos import gpu_spec as spec
from flashviz.algos import gpu_specs as specs
from flashviz.cli.main import main
from flashviz.gpu import launch, ncu, nvrtc, profile, sanitize, sectors
from flashviz.model import kernels
from flashviz.model.config import Config

FIXTURES = Path(__file__).parent / "fixtures"


# ---- NVRTC: the source is the kernel file, and it compiles ----


def test_nvrtc_source_is_the_kernel_file_behind_a_line_directive():
    text = kernels.source(get("fa2").kernel)
    assert nvrtc.source(get("fa2").kernel) == '#line 1 "fa2_forward.cu"\n' + text
    assert "--use_fast_math" not in nvrtc.OPTIONS  # expf/logf stay IEEE, as NumPy's in the engine


@pytest.mark.skipif(nvrtc.find_libnvrtc() is None, reason="libnvrtc not found")
def test_nvrtc_compiles_any_instantiation_by_name_expression():
    exprs = ["fa2<4,4,4>", "fa2<17,3,5>", "fa2<64,64,64>", "fa2<256,16,128>"]
    ptx, lowered = nvrtc.compile_ptx(get("fa2").kernel, exprs)
    for expr in exprs:
        br, bc, d = re.fullmatch(r"fa2<(\d+),(\d+),(\d+)>", expr).groups()
        assert lowered[expr] == f"_Z3fa2ILi{br}ELi{bc}ELi{d}EEvPKfS1_S1_PfS2_ifi"
        assert f".entry {lowered[expr]}" in ptx
    assert ".local" not in ptx  # no array spilled to local memory


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_nvcc_sm90_build_has_no_spills(tmp_path):
    out = subprocess.run(
        [
            "nvcc",
            "-arch=sm_90",
            "-c",
            "-Xptxas",
            "-v",
            str(kernels.path(get("fa2").kernel)),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", out.stderr)
    assert frames and all(f == ("0", "0", "0") for f in frames), out.stderr


# ---- the launch table ----


def test_every_algorithm_has_a_spec_covering_its_tensors():
    # the ring has no single-kernel launch: on GPUs it is flashviz.ring_attention over torch.distributed (its gpu.py)
    assert set(REGISTRY) - set(specs()) == {"ring"} and get("ring").gpu is None
    for algo, s in specs().items():
        a = get(algo)
        assert set(a.inputs) | set(a.outputs) <= set(s.shapes), algo
        used = {name for k in s.kernels for name in k.tensors}
        assert used == set(s.shapes), algo  # every tensor is an argument of some launch, and no other


_SIGNATURE = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)\s*\{", re.S)


NVRTC = sorted(name for name, s in specs().items() if s.kind == "nvrtc")  # CUDA C++ (a Triton kernel compiles itself)


@pytest.mark.parametrize("algo", NVRTC)
def test_every_launch_matches_its_kernels_signature(algo):
    """Pointer and scalar arguments in the order and of the types the __global__ function declares."""
    s = spec(algo)
    cfg = Config(algo=algo, n=10, d=4, br=4, bc=4)
    for k in s.kernels:
        source = kernels.source(s.file_of(k))
        params = {name: [p.strip() for p in args.split(",")] for name, args in _SIGNATURE.findall(source)}
        declared = [re.sub(r"\s*\w+$", "", p).replace(" ", "") for p in params[k.template]]
        given = ["float*" if "const" not in d else "constfloat*" for d in declared[: len(k.tensors)]]
        assert declared[: len(k.tensors)] == given and all("*" in d for d in given), (k.template, declared)
        assert declared[len(k.tensors) :] == [t for t, _ in k.scalars(cfg)], (k.template, declared)
        assert s.smem_bytes(k, cfg) > 0


@pytest.mark.skipif(nvrtc.find_libnvrtc() is None, reason="libnvrtc not found")
@pytest.mark.parametrize("algo", NVRTC)
def test_every_launch_compiles_with_nvrtc(algo):
    s = spec(algo)
    cfg = Config(algo=algo, n=100, d=16, br=32, bc=16)
    by_file: dict[kernels.KernelFile, list[str]] = {}
    for k in s.kernels:
        by_file.setdefault(s.file_of(k), []).append(k.name_expression(cfg))
    for file, exprs in by_file.items():
        ptx, lowered = nvrtc.compile_ptx(file, exprs)
        assert all(f".entry {lowered[e]}" in ptx for e in exprs)


@pytest.mark.parametrize(("n", "d", "br", "bc"), [(8, 4, 4, 4), (100, 16, 32, 16), (1000, 64, 64, 64), (33, 3, 16, 8)])
def test_smem_macro_is_the_engines_sram(n, d, br, bc):
    cfg = Config(n=n, d=d, br=br, bc=bc)
    rec = get("fa2").engine.execute(cfg.replace(record=(0,)), {k: np.zeros((n, d), np.float32) for k in "QKV"})
    s = spec("fa2")
    assert s.smem_bytes(s.kernels[0], cfg) == rec.sram_footprint["bytes"]


def test_threads_cover_every_row_in_whole_warps():
    (k,) = spec("fa2").kernels
    assert k.threads(Config(br=4)) == 128
    assert k.threads(Config(n=300, br=130)) == 160
    assert k.threads(Config(br=4), threads=64) == 64
    assert k.name_expression(Config(n=10, d=4, br=4, bc=8)) == "fa2<4,8,4>"


@pytest.mark.parametrize(
    "cfg",
    [
        Config(n=8, d=4, br=4, bc=4),
        Config(n=10, d=4, br=4, bc=4),
        Config(n=100, d=16, br=32, bc=16),
        Config(n=30, d=3, br=8, bc=16, causal=True),
        Config(n=33, d=5, br=16, bc=4, causal=True),
    ],
)
def test_spans_are_the_engines_transfers(cfg):
    """The runs the sector model rounds are exactly the engine's HBM transfers, block by block."""
    from flashviz.tracing.build import make_trace

    trace = make_trace(cfg.replace(record=tuple(range(cfg.tr))))
    engine: dict[str, Counter] = {}
    for step in trace.steps:
        for t in step.transfers:
            width = t.cols[1] - t.cols[0]
            engine.setdefault(t.tensor, Counter())[(t.rows[0] * width, (t.rows[1] - t.rows[0]) * width)] += 1
    spans = spec("fa2").spans(cfg)
    assert set(spans) == set(engine)
    for name, (first, count) in spans.items():
        assert Counter(zip(first.tolist(), count.tolist(), strict=True)) == engine[name], name


# ---- the model and its 32-byte-sector rounding ----


@pytest.mark.parametrize(
    ("first", "count", "stride", "heads", "expected"),
    [
        ([0], [32], 0, 1, 128),  # one warp, 128 aligned bytes: 4 sectors
        ([1], [32], 0, 1, 160),  # shifted by one float: 5 sectors
        ([0, 4], [4, 4], 0, 1, 64),  # two 16-byte runs in one sector: counted once per warp access
        ([0], [40], 0, 1, 128 + 32),  # a warp of 32, then 8 floats in one sector
        ([0], [4], 4, 2, 64),  # head 1 starts 16 bytes in: still one sector each
        ([0], [8], 4, 2, 32 + 64),  # ... but 8 floats from 16 bytes in straddle two
    ],
)
def test_sector_bytes_by_hand(first, count, stride, heads, expected):
    assert sectors.sector_bytes(np.array(first), np.array(count), stride, heads) == expected


def test_model_is_the_traffic_model_times_heads_in_bytes():
    cfg = Config(n=1000, d=64, br=64, bc=64, causal=True)
    m = sectors.model(cfg, 6)
    t = get("fa2").traffic.count(1000, 64, 64, 64, causal=True)
    for name, x in t.items():
        assert m["tensors"][name]["read_bytes"] == 4 * 6 * x["read"]
        assert m["tensors"][name]["written_bytes"] == 4 * 6 * x["written"]
    assert m["load_bytes"] == 4 * 6 * sum(t[k]["read"] for k in "QKV")
    assert m["unique_input_bytes"] == 3 * 6 * 1000 * 64 * 4


def test_sector_model_is_the_model_when_every_run_is_sector_aligned():
    m = sectors.model(Config(n=4096, d=64, br=32, bc=32), 2)
    assert (m["sector_load_bytes"], m["sector_store_bytes"]) == (m["load_bytes"], m["store_bytes"])
    seed = sectors.model(Config(), 1)  # L of a block is 16 bytes: each warp's store costs a whole sector
    assert seed["sector_bytes"]["L"] == 64 and seed["tensors"]["L"]["written_bytes"] == 32


# ---- Nsight Compute output recorded on the H200 ----

NCU = {  # fixture -> (config, heads, kernels profiled, of which counted, load verdict, store verdict)
    "ncu_fa2_n8_d4_b4.txt": (Config(), 1, ["fa2"], 1, "exact", "sector-rounded"),
    "ncu_fa2_n100_d16_br32_bc16_h3.txt": (Config(n=100, d=16, br=32, bc=16), 3, ["fa2"], 1, "exact", "sector-rounded"),
    "ncu_fa2_n4096_d64_b32.txt": (Config(n=4096, d=64, br=32, bc=32), 1, ["fa2"], 1, "exact", "exact"),
    "ncu_standard_n1024_d64_b32_h2.txt": (
        Config(algo="standard", n=1024, d=64, br=32, bc=32),
        2,
        ["standard_scores", "standard_softmax", "standard_pv"],
        3,
        "exact",
        "exact",
    ),
    "ncu_fa2-backward_n1024_d64_b32_h2.txt": (  # the forward runs first and is not counted; dQ takes atomics
        Config(algo="fa2-backward", n=1024, d=64, br=32, bc=32),
        2,
        ["fa2", "fa2_bwd_preprocess", "fa2_bwd"],
        2,
        "exact",
        "exact",
    ),
}


@pytest.mark.parametrize("fixture", sorted(NCU))
def test_recorded_ncu_output_parses_and_meets_the_model(fixture):
    cfg, heads, templates, n_counted, load, store = NCU[fixture]
    kernels = ncu.parse_ncu_csv((FIXTURES / fixture).read_text())
    assert [ncu.template_of(k["name"]) for k in kernels] == templates
    for k in kernels:
        assert set(ncu.METRICS.values()) <= set(k["metrics"])
    if cfg.algo == "fa2":
        assert kernels[0]["name"].startswith(f"void fa2<{cfg.br}, {cfg.bc}, {cfg.d}>")
        assert kernels[0]["grid"] == f"({cfg.tr}, {heads}, 1)"
    listed, measured = profile.tally(cfg.algo, kernels)
    assert sum(k["counted"] for k in listed) == n_counted
    assert {"l2_read_sectors_from_l1", "time_ns", "reduction_bytes", "atomic_bytes"} <= set(measured)
    assert measured["time_ns"] > 0
    m = sectors.model(cfg, heads)
    c = profile.compare(m, measured)
    assert (c["load"]["verdict"], c["store"]["verdict"]) == (load, store)
    assert c["ok"]
    assert (c["atomic_bytes"] > 0) == (cfg.algo == "fa2-backward")
    caches = c["caches"]
    assert caches["caught_bytes"] == measured["load_bytes"] - measured["dram_read_bytes"]
    assert caches["l1_caught_bytes"] + caches["l2_caught_bytes"] == caches["caught_bytes"]
    assert caches["l2_read_bytes_from_l1"] == 32 * measured["l2_read_sectors_from_l1"]
    lines = profile.summary(m, c, measured, cfg.algo)
    assert any("exactly" in line for line in lines)


def test_ncu_csv_units_and_thousands_separators():
    text = "\n".join(
        [
            "==PROF== Connected to process 1",
            '"ID","Process ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"',
            '"0","1","void fa2<4, 4, 4>(...)","(128, 1, 1)","(2, 1, 1)","dram__bytes_read.sum","Kbyte","10.75"',
            '"0","1","void fa2<4, 4, 4>(...)","(128, 1, 1)","(2, 1, 1)","l1tex__t_bytes.sum","byte","1,234,567"',
            '"0","1","void fa2<4, 4, 4>(...)","(128, 1, 1)","(2, 1, 1)","gpu__time_duration.sum","usecond","2.5"',
            '"0","1","void fa2<4, 4, 4>(...)","(128, 1, 1)","(2, 1, 1)","odd.sum","","n/a"',
        ]
    )
    (k,) = ncu.parse_ncu_csv(text)
    assert k["metrics"] == {
        "dram__bytes_read.sum": 10750.0,
        "l1tex__t_bytes.sum": 1234567.0,
        "gpu__time_duration.sum": 2500.0,
    }
    assert ncu.parse_ncu_csv("==ERROR== no kernels were profiled") == []


def test_pipe_metrics_keep_only_what_ncu_lists_and_read_percentages(tmp_path):
    gmma = ncu.PIPE_METRICS["tensor_gmma_active_pct"]
    stall = ncu.PIPE_METRICS["stall_long_scoreboard"]
    row = '"0","1","fa3_fwd","(416, 1, 1)","(132, 1, 1)","{}","{}","{}"'
    csv_text = "\n".join(
        [
            '"ID","Process ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"',
            row.format(gmma, "%", "61.25"),
            row.format(stall, "", "3.5"),
        ]
    )
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --query-metrics ]; then\n'
        f"  echo 'Device GH100'; echo '{gmma.split('.')[0]}  Counter  cycles'; echo '{stall.split('.')[0]}  Ratio'\n"
        f"else cat <<'CSV'\n{csv_text}\nCSV\nfi\n"
    )
    fake.chmod(0o755)
    doc = ncu.run_pipe(["python", "x.py"], str(fake), "fa3_fwd")
    assert doc["error"] is None and set(doc["asked"]) == {"tensor_gmma_active_pct", "stall_long_scoreboard"}
    assert "tensor_hmma_active_pct" in doc["not_listed"]
    assert doc["kernels"] == [
        {"name": "fa3_fwd", "metrics": {"tensor_gmma_active_pct": 61.25, "stall_long_scoreboard": 3.5}}
    ]
    (line,) = profile.pipe_summary(doc)
    assert "tensor_gmma_active_pct 61.2%" in line and "long_scoreboard 3.50" in line
    fake.write_text("#!/bin/sh\necho '==ERROR== no kernels were profiled'\n")
    doc = ncu.run_pipe(["python", "x.py"], str(fake), "fa3_fwd")
    assert doc["error"] and doc["kernels"] == [] and profile.pipe_summary(doc)[0].startswith("pipe metrics not")


def test_a_count_off_the_model_is_a_mismatch():
    m = sectors.model(Config(n=64, d=64, br=32, bc=32), 1)
    measured = {"load_bytes": m["load_bytes"] + 32, "store_bytes": m["store_bytes"], "dram_read_bytes": 0.0}
    measured["dram_write_bytes"] = 0.0
    c = profile.compare(m, measured)
    assert c["load"]["verdict"] == "mismatch" and not c["ok"]


def test_ncu_leaves_the_clocks_alone():
    cmd = ncu.ncu_command(["python", "x.py"], list(ncu.METRICS.values()), "ncu", "fa2")
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[-2:] == ["python", "x.py"]


# ---- compute-sanitizer output recorded on the H200 ----


@pytest.mark.parametrize("tool", sanitize.TOOLS)
def test_recorded_clean_sanitizer_runs(tool):
    parsed = sanitize.parse((FIXTURES / f"sanitizer_{tool}_fa2_n10_h2.txt").read_text())
    assert parsed["errors"] == 0
    if tool == "racecheck":
        assert parsed["hazards"] == {"displayed": 0, "errors": 0, "warnings": 0}


def test_recorded_planted_bugs_are_reported():
    race = sanitize.parse((FIXTURES / "sanitizer_racecheck_planted.txt").read_text())
    assert race["errors"] >= 1 and race["hazards"]["displayed"] >= 1
    oob = sanitize.parse((FIXTURES / "sanitizer_memcheck_planted.txt").read_text())
    assert oob["errors"] >= 1
    # the same write past a 64-float buffer taken from CuPy's memory pool lands inside the pool's larger
    # allocation, and memcheck sees nothing: why sanitized runs allocate with plain cudaMalloc
    hidden = sanitize.parse((FIXTURES / "sanitizer_memcheck_planted_in_pool.txt").read_text())
    assert hidden["errors"] == 0


def test_no_summary_is_not_clean():
    assert sanitize.parse("========= COMPUTE-SANITIZER\nSegmentation fault")["errors"] is None


# ---- the CLI without a GPU ----


@pytest.mark.parametrize("command", ["run", "profile", "sanitize"])
def test_without_cupy_one_line_names_the_extra(command, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    assert main(["gpu", command, "--n", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["flashviz: error: GPU: CuPy is not installed; pip install 'flashviz[gpu]'"]


@pytest.mark.parametrize(
    ("args", "flag"),
    [(["--heads", "0"], "--heads"), (["--threads", "2000"], "--threads"), (["--n", "0"], "--n")],
)
def test_bad_flags_fail_before_any_gpu_work(args, flag, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert main(["gpu", "run", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


@pytest.mark.parametrize("first", ["flashviz.cli.main", "flashviz.cli.gpu"])
def test_the_gpu_group_imports_no_gpu_library(first):
    code = (
        f"import sys, importlib; importlib.import_module({first!r}); import flashviz.cli.main as c; "
        "assert 'gpu' in c.cli.commands; "
        "print(sorted(m for m in ('cupy', 'torch', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_profiled_launch_is_the_same_launch():
    """The child that ncu and compute-sanitizer run parses back to the same settings."""
    from flashviz.cli.gpu import group

    cfg = Config(n=100, d=16, br=32, bc=16, seed=9, scale=0.25, causal=True)
    args = launch.launcher(cfg, heads=3, batch=2, threads=64)
    assert args[1:5] == ["-m", "flashviz", "gpu", "run"]
    ctx = group().commands["run"].make_context("run", args[5:])
    p = ctx.params
    assert (p["n"], p["d"], p["br"], p["bc"], p["seed"], p["scale"], p["causal"]) == (100, 16, 32, 16, 9, 0.25, True)
    assert (p["heads"], p["batch"], p["threads"], p["check"], p["quiet"]) == (3, 2, 64, False, True)


# ---- exit codes through the real entry point, with a CPU stand-in for the GPU (issue 8, item 1) ----

# Loaded at start-up by every Python process whose path holds it (the CLI and the children that ncu and
# compute-sanitizer launch): with FLASHVIZ_FAKE_GPU set, the GPU's part of flashviz.gpu (device, launch) is
# replaced by the engine itself, so everything after the launch (the check, the report, the exit code) runs for real.
# FLASHVIZ_FAKE_GPU=disagree adds 1 to the first output's first element: a GPU whose result is wrong.
FAKE_GPU = """
import os
if os.environ.get("FLASHVIZ_FAKE_GPU"):
    import numpy as np
    from flashviz.algos import get
    from flashviz.gpu import check, device
    from flashviz.gpu import launch as launching

    def launch(cfg, inputs, threads=None):
        algo = get(cfg.algo)
        lead = inputs[algo.inputs[0]].shape[:-2]
        flat = {k: np.asarray(v).reshape(-1, cfg.n, cfg.d) for k, v in inputs.items()}
        heads = [check.engine_outputs(cfg, {k: v[g] for k, v in flat.items()}) for g in range(int(np.prod(lead)))]
        out = {k: np.stack([h[k] for h in heads]).reshape(*lead, *heads[0][k].shape) for k in algo.outputs}
        if os.environ["FLASHVIZ_FAKE_GPU"] == "disagree":
            out[algo.outputs[0]].flat[0] += 1.0
        return out, {**Prepared().describe(), "heads": int(np.prod(lead)), "time_ms": 0.0}

    class Prepared:
        def describe(self):
            return {"kernel": "cpu", "file": "-", "grid": [1, 1, 1], "block": [1, 1, 1], "smem_bytes": 0,
                    "registers": 0, "local_bytes": 0}

    device.require_gpu = lambda: None
    device.device_info = lambda: {"name": "CPU stand-in", "compute_capability": "0.0"}
    launching.prepare = lambda cfg, heads=1, threads=None: Prepared()
    launching.launch = launch
"""

# compute-sanitizer's stand-in: runs the program, prints a clean summary, exits with the program's code
# (what the real one does when it finds nothing: --error-exitcode only applies to errors it finds)
FAKE_SANITIZER = """
import subprocess, sys
args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
program = args[args.index("--error-exitcode") + 2:]
proc = subprocess.run(program)
if tool == "racecheck":
    print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)")
else:
    print("========= ERROR SUMMARY: 0 errors")
sys.exit(proc.returncode)
"""

# Nsight Compute's stand-in: prints the output recorded on the H200 for the seed's example; FAKE_NCU_LOAD
# replaces the measured global-load bytes (640 there) to play a kernel that moves more than the model says
FAKE_NCU = """
import os, sys
if "--version" in sys.argv:
    print("Version 0.0 (stand-in)")
    sys.exit(0)
text = open(os.environ["FAKE_NCU_FIXTURE"]).read()
load = os.environ.get("FAKE_NCU_LOAD")
if load:
    text = text.replace('op_ld.sum","byte","640"', 'op_ld.sum","byte","' + load + '"')
print(text)
"""


@pytest.fixture
def fake_gpu(tmp_path):
    """(environment, tool directory): the stand-ins above on the path of every Python process started."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAKE_GPU)
    for name, text in (("sanitizer", FAKE_SANITIZER), ("ncu", FAKE_NCU)):
        tool = tmp_path / name
        tool.write_text(f"#!{sys.executable}\n{text}")
        tool.chmod(0o755)
    src = Path(__file__).resolve().parents[1] / "src"
    env = {
        **__import__("os").environ,
        "PYTHONPATH": f"{site}:{src}",
        "FAKE_NCU_FIXTURE": str(FIXTURES / "ncu_fa2_n8_d4_b4.txt"),
    }
    return env, tmp_path


def flashviz_gpu(env, *args):
    return subprocess.run([sys.executable, "-m", "flashviz", "gpu", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("verdict", ["agree", "disagree"])
def test_gpu_run_exit_code_is_the_verdict(verdict, fake_gpu):
    env, _ = fake_gpu
    env["FLASHVIZ_FAKE_GPU"] = verdict
    out = flashviz_gpu(env, "run", "--n", "10", "--heads", "2")
    assert "Traceback" not in out.stderr, out.stderr
    assert out.stdout.strip().splitlines()[-1] == (
        "agrees with the engine and float64" if verdict == "agree" else "DISAGREES"
    )
    assert out.returncode == (0 if verdict == "agree" else 1), out.stdout
    quiet = flashviz_gpu(env, "run", "--n", "10", "--quiet")
    assert quiet.stdout == "" and quiet.returncode == (0 if verdict == "agree" else 1)


@pytest.mark.parametrize("verdict", ["agree", "disagree"])
def test_gpu_sanitize_fails_when_the_checked_run_disagrees(verdict, fake_gpu, tmp_path):
    """The sanitizer finds nothing, but the launch under it disagrees with the engine: not clean."""
    env, tools = fake_gpu
    env["FLASHVIZ_FAKE_GPU"] = verdict
    report = tmp_path / "sanitize.json"
    out = flashviz_gpu(env, "sanitize", "--n", "10", "--sanitizer", str(tools / "sanitizer"), "-o", str(report))
    assert "Traceback" not in out.stderr, out.stderr
    runs = json.loads(report.read_text())["runs"]
    assert [r["tool"] for r in runs] == list(sanitize.TOOLS) and all(r["errors"] == 0 for r in runs)
    assert all(r["returncode"] == (0 if verdict == "agree" else 1) for r in runs)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4 and all(("clean" if verdict == "agree" else "FAILED") in line for line in lines)
    assert out.returncode == (0 if verdict == "agree" else 1)


@pytest.mark.parametrize("load", [None, "672"])
def test_gpu_profile_exit_code_is_the_verdict(load, fake_gpu):
    """The recorded counters meet the model (exit 0); 32 bytes more of loads than the model is a mismatch (exit 1)."""
    env, tools = fake_gpu
    env["FLASHVIZ_FAKE_GPU"] = "agree"
    if load:
        env["FAKE_NCU_LOAD"] = load
    out = flashviz_gpu(env, "profile", "--ncu", str(tools / "ncu"))
    assert "Traceback" not in out.stderr, out.stderr
    assert ("differs from the model" in out.stdout) == bool(load), out.stdout
    assert out.returncode == (1 if load else 0)


def test_gpu_profile_when_ncu_measures_nothing_is_one_line(fake_gpu, tmp_path):
    """ncu that profiles no kernel (e.g. no permission for the counters): one line naming --ncu, not a traceback."""
    env, _ = fake_gpu
    env["FLASHVIZ_FAKE_GPU"] = "agree"
    ncu = tmp_path / "ncu-denied"
    ncu.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission'\nexit 1\n")
    ncu.chmod(0o755)
    out = flashviz_gpu(env, "profile", "--ncu", str(ncu))
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("flashviz: error: --ncu: ncu measured no") and "ERR_NVGPUCTRPERM" in lines[0]
