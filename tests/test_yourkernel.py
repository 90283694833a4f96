"""Your own kernel (issue 21, phase 1): flashviz traces Triton attention forwards it has never seen, under Triton's
interpreter, and holds them to float64 computed here, independently of flashviz.

The kernels are written for these tests (tests/fixtures/kernels/): a correct FA2 forward without step markers
(fa2_plain.py), one with the project's markers in the tutorial's style (fa2_marked.py: K as a (D, N) block, exp2, M in
units of log2), one whose names no convention knows (odd_names.py); the others are fa2_plain.py with one line
changed, each change written out below: acc not rescaled, the causal mask off by one, K loaded twice per tile, a
mask-less load of K on a ragged N, and the faults (an exception, a loop past the budget, no store to O). Each test
asserts the verdict, the first divergence where there is one, and the traffic against values computed here from the
inputs (fresh random ones). N = 40, D = 16, tiles of 16: three blocks of Q, the last one ragged, in about a second
of interpreter per run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import flashviz
from flashviz.model.config import ConfigError, shown

pytest.importorskip("triton")
pytest.importorskip("torch")

KERNELS = Path(__file__).parent / "fixtures" / "kernels"
PLAIN = KERNELS / "fa2_plain.py"
N, D, B = 40, 16, 16  # three blocks of Q (the last one of 8 rows), three tiles of K and V
META = {"BLOCK_M": B, "BLOCK_N": B}
TOL_O = 4e-3  # float16's tolerance for O (flashviz.yourkernel.carries.TOLERANCE), asserted on the kernel's O here


# -- independent float64 ---------------------------------------------------------------------------------------
def f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float64)


def attention(q, k, v, scale, causal=False):
    s = scale * q @ k.T  # (N, N)
    if causal:
        s[np.triu_indices(s.shape[0], 1)] = -np.inf
    m = s.max(1)
    p = np.exp(s - m[:, None])
    return (p @ v) / p.sum(1)[:, None], m + np.log(p.sum(1))


def blockwise_error(got, ref, floor=0.0):
    """max over blocks of max |got - ref| / max(floor, max |ref|) over the block's rows (the report's max-norm per
    block; floor 1 for L, a log)."""
    errs = []
    for r0 in range(0, ref.shape[0], B):
        g, r = got[r0 : r0 + B], ref[r0 : r0 + B]
        errs.append(np.abs(g - r).max() / max(floor, np.abs(r).max()))
    return max(errs)


def inputs(rng) -> dict[str, np.ndarray]:
    return {k: rng.standard_normal((N, D)).astype(np.float32) for k in "QKV"}


def variant(tmp_path: Path, old: str, new: str, name: str) -> Path:
    """fa2_plain.py with one planted change."""
    text = PLAIN.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / f"{name}.py"
    path.write_text(text.replace(old, new))
    return path


def line_of(path: Path, text: str) -> int:
    found = [k for k, line in enumerate(path.read_text().splitlines(), start=1) if text in line]
    assert len(found) == 1, text
    return found[0]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", "trace", *args], capture_output=True, text=True)


def traffic(doc) -> dict[str, dict]:
    return {t["tensor"]: t for t in doc["traffic"]["tensors"]}


def fa2_bytes(n: int, d: int, causal: bool = False) -> dict[str, tuple[int, int]]:
    """(read, written) bytes of FA2 at tiles of B: Q once, K and V once per block of Q (causal: up to its last
    row, in whole tiles), O once (fp16), L once (fp32)."""
    tr = -(-n // B)
    rows = sum(min(n, (min(n, (i + 1) * B) - 1) // B * B + B) for i in range(tr)) if causal else tr * n
    return {"Q": (2 * n * d, 0), "K": (2 * rows * d, 0), "V": (2 * rows * d, 0), "O": (0, 2 * n * d), "L": (0, 4 * n)}


def assert_fa2_traffic(doc, n=N, d=D, causal=False, heads=1, skip=()):
    for name, (read, written) in fa2_bytes(n, d, causal).items():
        row = traffic(doc)[name]
        assert (row["model_read_bytes"], row["model_written_bytes"]) == (heads * read, heads * written), name
        if name not in skip:
            assert (row["read_bytes"], row["written_bytes"]) == (heads * read, heads * written), name
            assert "as the FA2 model" in row["why"], row["why"]


# -- correct kernels ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_a_correct_kernel_without_markers(rng, causal):
    qkv = inputs(rng)
    trace = flashviz.trace(kernel=f"{PLAIN}:attn_fwd", inputs=qkv, causal=causal, meta=META)
    q, k, v = (f16(qkv[x]) for x in "QKV")
    O, L = attention(q, k, v, 1 / np.sqrt(D), causal)
    got = trace.arrays["O"][0]
    assert np.abs(got - O).max() / np.abs(O).max() < TOL_O  # the kernel is right, by this test's own float64
    assert trace.verdict == "correct", trace.message
    assert trace.message.startswith("correct: m_i, l_i, acc, O and L match float64")
    worst = trace.doc["worst"]
    assert worst["O"]["error"] == pytest.approx(blockwise_error(got, O), rel=1e-9)
    assert worst["L"]["error"] == pytest.approx(blockwise_error(trace.arrays["L"][0], L, floor=1.0), rel=1e-9)
    assert trace.doc["carries"]["names"] == {"m": "m_i", "l": "l_i", "acc": "acc"}
    assert (trace.doc["carries"]["m"], trace.doc["carries"]["L"]) == ("natural", "natural")
    assert_fa2_traffic(trace.doc, causal=causal)
    # steps from its loads and dots: K, Sij, the softmax, V, P·V per tile
    block0 = trace.doc["programs"][0]
    per_tile = ["load_kv", "scores", "online_softmax", "load_kv", "online_softmax"]
    tiles = 1 if causal else 3
    assert [s["op"] for s in block0["steps"]] == ["load_q", *per_tile * tiles, "write_back"]
    assert [s["tile"] for s in block0["steps"] if s["op"] == "scores"] == list(range(tiles))
    scores = block0["steps"][2]
    assert line_of(PLAIN, "s = tl.dot(q, k) * sm_scale") in scores["lines"]
    assert [dot["a"] + dot["b"] for dot in scores["dots"]] == [[B, D, D, B]]  # Qi (Br, D) @ Kj^T (D, Bc)
    assert (
        sum(x["bytes"] for s in block0["steps"] for x in s["loads"] if x["tensor"] == "K") == 2 * min(N, tiles * B) * D
    )


def test_a_correct_kernel_with_markers_through_the_cli(tmp_path, rng):
    """The tutorial's style (K as a (D, N) block, exp2, M in log2 units), two heads, steps from
    its `# step:` regions; through the CLI, with the inputs in an .npz."""
    marked = KERNELS / "fa2_marked.py"
    n = 48  # a multiple of BLOCK_N: the kernel does not mask K and V
    out = tmp_path / "trace.json"
    done = run_cli("--kernel", f"{marked}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--n", str(n), "--d", str(D),
                   "--heads", "2", "--seed", "7", "-o", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("correct: mi, li, Oi, O and L match float64")
    doc = json.loads(out.read_text())
    assert doc["launch"]["grid"] == [3, 2, 1]
    assert doc["carries"] == {
        "names": {"m": "mi", "l": "li", "acc": "Oi"},
        "m": "log2",
        "acc": "unnormalised",
        "L": "log2",
    }
    # the inputs as drawn from the seed (the same numbers as `flashviz trace --seed 7` for one head)
    r = np.random.default_rng(7)
    q, k, v = (f16(r.standard_normal((1, 2, n, D), dtype=np.float32)[0]) for _ in range(3))
    for h in range(2):
        O, _ = attention(q[h], k[h], v[h], 1 / np.sqrt(D))
        block = next(p for p in doc["programs"] if p["program"] == [0, h, 0])
        last = block["tiles"][-1]["values"]  # block 0's carries after its last tile: Oi / li is its O
        Oi, li = np.asarray(last["acc"]["kernel"]), np.asarray(last["l"]["kernel"])
        assert np.abs(Oi / li[:, None] - O[:B]).max() / np.abs(O[:B]).max() < TOL_O
    text = marked.read_text().splitlines()  # the load_kv region, found here by its comments
    begin = next(k for k, line in enumerate(text, start=1) if line.strip() == "# step: load_kv")
    region = list(
        range(begin + 1, next(k for k in range(begin + 1, len(text) + 1) if text[k - 1].strip() == "# end step"))
    )
    steps = doc["programs"][0]["steps"]
    assert [s["op"] for s in steps] == ["load_q", *["load_kv", "scores", "online_softmax"] * 3, "write_back"]
    assert set(region) <= set(steps[1]["lines"])
    assert_fa2_traffic(doc, n=n, heads=2)


def test_unusual_names_are_bound_by_bind(rng):
    kernel = f"{KERNELS / 'odd_names.py'}:my_attention"
    with pytest.raises(ConfigError, match=r"cannot fill parameter query of my_attention: give its value with --meta"):
        flashviz.trace(kernel=kernel, meta={"BR": 16, "BC": 16})
    qkv = inputs(rng)
    bind = "Q=query,K=key,V=value,O=out,L=lse,stride_qm=row_q,stride_km=row_k,stride_vm=row_v,stride_om=row_o," \
           "N=seq_len,scale=temperature,D=DIM"  # fmt: skip
    trace = flashviz.trace(kernel=kernel, inputs=qkv, meta={"BR": 16, "BC": 16}, bind=bind, grid=(3,),
                           carry=("run_max", "run_sum", "o_acc"))  # fmt: skip
    assert trace.verdict == "correct", trace.message
    assert trace.doc["roles"] == {"Q": "query", "K": "key", "V": "value", "O": "out", "L": "lse"}
    assert trace.doc["binding"]["row_k"] == {"value": D, "filled": "stride of K along N"}
    O, _ = attention(*(f16(qkv[x]) for x in "QKV"), 1 / np.sqrt(D))
    assert trace.doc["worst"]["O"]["error"] == pytest.approx(blockwise_error(trace.arrays["O"][0], O), rel=1e-9)
    assert_fa2_traffic(trace.doc)


# -- divergences -------------------------------------------------------------------------------------------------
def test_a_missing_rescale_is_found_where_the_max_first_moves(tmp_path, rng):
    path = variant(tmp_path, "        acc = acc * alpha[:, None]\n", "", "no_rescale")
    qkv = inputs(rng)
    q, k, v = (f16(qkv[x]) for x in "QKV")
    s = q[:B] @ k.T / np.sqrt(D)  # block 0's scores (16, N)
    tiles = [slice(j * B, min(N, (j + 1) * B)) for j in range(3)]
    running = np.maximum.accumulate(np.stack([s[:, t].max(1) for t in tiles]), axis=0)  # (3, 16) max after tile j
    j0 = next(j for j in range(1, 3) if np.any(running[j] > running[j - 1]))  # where alpha first differs from 1
    bug = sum(np.exp(s[:, tiles[t]] - running[t][:, None]) @ v[tiles[t]] for t in range(j0 + 1))
    true = sum(np.exp(s[:, tiles[t]] - running[j0][:, None]) @ v[tiles[t]] for t in range(j0 + 1))
    expected = np.abs(bug - true).max() / np.abs(true).max()

    trace = flashviz.trace(kernel=f"{path}:attn_fwd", inputs=qkv, meta=META)
    assert trace.verdict == "diverges"
    div = trace.divergence
    assert (div["where"], div["name"], div["right"]) == (f"block 0, tile {j0}", "acc", ["m_i", "l_i"])
    assert div["error"] == pytest.approx(expected, rel=0.05)  # the kernel's fp16 P against this float64
    assert (div["line"], div["statement"]) == (line_of(path, "acc += tl.dot("), "acc += tl.dot(p.to(v.dtype), v)")
    assert trace.message == (
        f"block 0, tile {j0}: acc diverges — {div_sci(div['error'])} against 4e-3 — after "
        "`acc += tl.dot(p.to(v.dtype), v)`; m_i and l_i are right, so the rescale by alpha is missing"
    )
    done = run_cli("--kernel", f"{path}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--n", str(N), "--d", str(D))
    assert done.returncode == 1 and done.stdout.startswith("block 0, tile ") and "rescale by alpha" in done.stdout


def div_sci(x: float) -> str:
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


def test_a_causal_mask_off_by_one(tmp_path, rng):
    path = variant(tmp_path, "(cols[None, :] <= offs_m[:, None])", "(cols[None, :] <= offs_m[:, None] + 1)", "mask")
    qkv = inputs(rng)
    q, k = f16(qkv["Q"]), f16(qkv["K"])
    s = q[:B] @ k[:B].T / np.sqrt(D)  # block 0, tile 0
    rows, keys = np.arange(B)[:, None], np.arange(B)[None, :]

    def state(visible):
        t = np.where(visible, s, -np.inf)
        m = t.max(1)
        return m, np.exp(t - m[:, None]).sum(1)

    (m_true, l_true), (m_bug, l_bug) = state(keys <= rows), state(keys <= rows + 1)
    err_m = np.abs(m_bug - m_true).max() / max(1, np.abs(m_true).max())
    err_l = np.abs(l_bug - l_true).max() / np.abs(l_true).max()
    name, expected = ("m_i", err_m) if err_m > 1e-4 else ("l_i", err_l)

    trace = flashviz.trace(kernel=f"{path}:attn_fwd", inputs=qkv, causal=True, meta=META)
    div = trace.divergence
    assert (trace.verdict, div["where"], div["name"]) == ("diverges", "block 0, tile 0", name)
    assert div["error"] == pytest.approx(expected, rel=1e-3)
    assert "keeps key <= row + 1, one key past the diagonal: the causal mask is off by one" in trace.message


def test_k_read_twice_per_tile_is_counted_and_explained(tmp_path, rng):
    load = "k = tl.load(k_ptrs, mask=cols[None, :] < N_CTX, other=0.0)"
    path = variant(tmp_path, f"        {load}\n", f"        {load}\n        {load}\n", "k_twice")
    trace = flashviz.trace(kernel=f"{path}:attn_fwd", inputs=inputs(rng), meta=META)
    assert trace.verdict == "correct", trace.message
    assert_fa2_traffic(trace.doc, skip=("K",))
    k = traffic(trace.doc)["K"]
    assert k["read_bytes"] == 2 * k["model_read_bytes"] == 2 * 2 * 3 * N * D  # two loads per tile, Tr = 3 passes
    first = line_of(PLAIN, load)
    assert k["why"] == f"K read 2× the FA2 model: your kernel loads K 2× per tile (lines {first}, {first + 1})"


# -- faults -------------------------------------------------------------------------------------------------------
def test_an_out_of_bounds_load_on_ragged_n(tmp_path, rng):
    path = variant(tmp_path, "k = tl.load(k_ptrs, mask=cols[None, :] < N_CTX, other=0.0)", "k = tl.load(k_ptrs)", "oob")
    line, loop = line_of(path, "k = tl.load(k_ptrs)"), line_of(path, "for start_n in range(")
    trace = flashviz.trace(kernel=f"{path}:attn_fwd", inputs=inputs(rng), meta=META)
    assert trace.verdict == "fault"
    fault = trace.fault
    # block 0 meets it first: its tile 2 holds keys 32..47 of N = 40; the mask-less rows 40..47 are 8 rows of 16
    assert (fault["kind"], fault["program"], fault["line"]) == ("out_of_bounds", [0, 0, 0], line)
    assert fault["message"] == (
        f"block 0 (program (0, 0, 0)), iteration 2 of the loop at line {loop}: line {line} `k = tl.load(k_ptrs)`: "
        f"loads {8 * D} elements out of bounds: past the end of K, from row {N} of its last head, which has N={N} rows"
    )
    two_heads = flashviz.trace(
        kernel=f"{path}:attn_fwd", heads=2, n=N, d=D, meta=META
    )  # head 0's overrun lands in head 1's rows
    assert f"loads K rows of head 1 (past row {N - 1}, the last of its own head 0)" in two_heads.message
    done = run_cli("--kernel", f"{path}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--n", str(N), "--d", str(D))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"flashviz: error: kernel: {fault['message']}"]


@pytest.mark.parametrize(
    ("old", "new", "kind", "what"),
    [
        ("s = tl.dot(q, k) * sm_scale", "s = tl.dot(q, v) * sm_scale", "raised", "raised UnboundLocalError"),
        ("range(0, end, BLOCK_N)", "range(0, end * 1000, BLOCK_N)", "budget", "passes the step budget of 8 loop"),
        ("    tl.store(o_ptrs, o.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)\n", "", "wrote_nothing",
         "the kernel wrote nothing: no program stored anything to O"),
    ],
    ids=["raises", "loops-too-long", "writes-nothing"],
)  # fmt: skip
def test_faults_are_one_line_naming_program_iteration_statement(tmp_path, rng, old, new, kind, what):
    path = variant(tmp_path, old, new, kind)
    trace = flashviz.trace(kernel=f"{path}:attn_fwd", inputs=inputs(rng), meta=META, budget=8)
    assert trace.verdict == "fault" and trace.fault["kind"] == kind
    assert what in trace.message and "\n" not in trace.message
    if kind == "raised":
        line = line_of(path, new.strip())
        assert trace.message.startswith(
            f"block 0 (program (0, 0, 0)), iteration 0 of the loop at line {line_of(path, 'for start_n')}: "
            f"line {line} `{new.strip()}`: raised UnboundLocalError"
        )
    elif kind == "budget":
        # block 0 reaches 8 iterations of a loop that would run 40000 / 16
        assert trace.fault["program"] == [0, 0, 0] and f"at iteration 8 of the loop at line {trace.fault['line']}" in (
            trace.message
        )
    else:
        assert trace.fault["program"] == [2, 0, 0]  # the last program, after which nothing was stored


# -- causes named by the float64 state a mistake leaves -----------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "where", "name", "cause"),
    [
        ("l_i = l_i * alpha + tl.sum(p, 1)", "l_i = l_i + tl.sum(p, 1)", "tile", "l_i",
         "m_i and acc are right, so the rescale of l_i by alpha is missing"),
        ("m_new = tl.maximum(m_i, tl.max(s, 1))", "m_new = tl.max(s, 1)", "tile", "m_i",
         "m_i forgets the tiles before: the running max with its old value is missing"),
        ("    o = acc / l_i[:, None]\n", "    o = acc\n", "write-back", "O",
         "so O equals the unnormalised accumulator: the division by l is missing"),
        ("m_i + tl.log(l_i)", "m_i", "write-back", "L", "so L equals the running max: log l is not added"),
    ],
    ids=["l-not-rescaled", "max-forgets", "no-division", "no-log-l"],
)  # fmt: skip
def test_causes(tmp_path, rng, old, new, where, name, cause):
    trace = flashviz.trace(kernel=f"{variant(tmp_path, old, new, name)}:attn_fwd", inputs=inputs(rng), meta=META)
    div = trace.divergence
    assert trace.verdict == "diverges" and div["name"] == name
    assert div["where"].startswith("block 0, ") and where in div["where"]
    assert cause in trace.message


# -- the front doors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kernel", "nope.py:f"], "flashviz: error: --kernel: 'nope.py' is not a file"),
        (["--kernel", f"{PLAIN}"], "flashviz: error: --kernel: must be FILE.py:FUNCTION"),
        (["--kernel", f"{PLAIN}:attn"], "flashviz: error: --kernel: "),
        (["--kernel", f"{PLAIN}:attn_fwd"], "cannot fill parameter BLOCK_M of attn_fwd: give its value with --meta "
         "BLOCK_M=VALUE"),
        (["--kernel", f"{PLAIN}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--bind", "Q=query"],
         "flashviz: error: --bind: attn_fwd has no parameter 'query'"),
        (["--kernel", f"{PLAIN}:attn_fwd", "--meta", "BLOCK_X=1"], "error: --meta: attn_fwd has no parameter"),
        (["--kernel", f"{PLAIN}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--grid", "0"], "flashviz: error: "
         "--grid: must be 1 to 3 integers in 1..65535"),
        (["--kernel", f"{PLAIN}:attn_fwd", "--br", "16"], "flashviz: error: --br: is not used with --kernel"),
        (["--grid", "4"], "flashviz: error: --grid: is only used with --kernel"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, message):
    done = run_cli(*args)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_kernel_decorated_without_the_interpreter_is_read_again(monkeypatch, rng):
    import importlib.util

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    spec = importlib.util.spec_from_file_location("plain_for_the_gpu", PLAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    trace = flashviz.trace(kernel=module.attn_fwd, inputs=inputs(rng), meta=META)
    assert trace.verdict == "correct", trace.message


def test_flashviz_serve_never_reaches_a_users_kernel():
    """Nothing of a user's kernel can run on a request: no module the server imports, directly or not, is one of
    flashviz.yourkernel, and outside that package only the CLI, `flashviz.trace(kernel=...)`, the notebook widget
    and the trace files' reader (for the document's conversion alone) import it. (The
    server takes only __version__ from the package itself, whose functions import the API when they are called.)"""
    from test_layering import GRAPH

    seen, todo = set(), [m for m in GRAPH if m == "flashviz.server.serve" or m.startswith("flashviz.server")]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(() if name == "flashviz" else GRAPH.get(name, ()))
    assert "flashviz.server.serve" in seen and "flashviz.server.gate" in seen
    assert not [m for m in seen if m.startswith("flashviz.yourkernel")]
    importers = {m for m, targets in GRAPH.items() if any(t.startswith("flashviz.yourkernel") for t in targets)}
    # trace_files makes a kernel trace document into the viewer's Trace (yourkernel.viewer: data, no user code);
    # cli/yourkernel.py is the CLI's command that runs it (as a user asked);
    # the notebook widget runs the kernel again on an edit, in the notebook's process, which runs the user's code
    outside = {m for m in importers if not m.startswith("flashviz.yourkernel")}
    assert outside == {
        "flashviz.api",
        "flashviz.cli.yourkernel",
        "flashviz.share.trace_files",
        "flashviz.share.widget",
    }


def test_the_examples(rng):
    """examples/: the correct kernel the README shows, and the same with its planted bug."""
    examples = Path(__file__).parents[1] / "examples"
    qkv = inputs(rng)
    right = flashviz.trace(kernel=f"{examples / 'my_attn.py'}:attn_fwd", inputs=qkv, causal=True, meta=META)
    assert right.verdict == "correct", right.message
    assert_fa2_traffic(right.doc, causal=True)
    wrong = flashviz.trace(kernel=f"{examples / 'my_attn_bug.py'}:attn_fwd", inputs=qkv, meta=META)
    assert wrong.divergence["name"] == "acc" and wrong.message.endswith(
        "m_i and l_i are right, so the rescale by alpha is missing"
    )


def test_the_readme_shows_what_the_cli_prints():
    readme = (Path(__file__).parents[1] / "README.md").read_text().splitlines()
    k = readme.index(
        "$ flashviz trace --kernel examples/my_attn_bug.py:attn_fwd --meta BLOCK_M=16,BLOCK_N=16 --n 40 --d 16"
    )
    examples = Path(__file__).parents[1] / "examples"
    trace = flashviz.trace(kernel=f"{examples / 'my_attn_bug.py'}:attn_fwd", n=40, d=16, meta=META)  # --seed 0
    assert readme[k + 1] == trace.message


@pytest.mark.parametrize(("dtype", "tolerance"), [("bfloat16", 2e-2), ("float32", 1e-2)])
def test_other_dtypes(rng, dtype, tolerance):
    """bf16 inputs, and float32 ones (whose dots Triton runs in tf32 by default)."""
    import torch

    qkv = inputs(rng)
    trace = flashviz.trace(kernel=f"{PLAIN}:attn_fwd", inputs=qkv, meta=META, dtype=dtype)
    q, k, v = (torch.from_numpy(qkv[x]).to(getattr(torch, dtype)).double().numpy() for x in "QKV")
    assert np.array_equal(trace.arrays["Q"][0], q)  # the inputs as the dtype holds them
    O, _ = attention(q, k, v, 1 / np.sqrt(D))
    error = blockwise_error(trace.arrays["O"][0], O)
    assert trace.verdict == "correct", trace.message
    assert trace.doc["worst"]["O"]["error"] == pytest.approx(error, rel=1e-9)
    assert error < tolerance and trace.doc["tolerance"]["O"] == tolerance


def test_flashvizs_own_triton_kernel_through_the_conventions(rng):
    """algos/fa2_triton/kernel.py as a user's file: its `# step:` regions, tensor descriptors, bf16, and a causal grid
    that runs the longest blocks first (program 0 is block Tr-1): blocks are named by the rows they load."""
    path = Path(flashviz.__file__).parent / "algos" / "fa2_triton" / "kernel.py"
    qkv = inputs(rng)
    meta = {"Br": B, "Bc": B, "qk_scale": 1.4426950408889634 / np.sqrt(D), "WARP_SPECIALIZE": False}
    trace = flashviz.trace(kernel=f"{path}:fa2_fwd", inputs=qkv, causal=True, dtype="bfloat16", meta=meta,
                           bind={"D": "Dv", "BLOCK_M": "Br"})  # fmt: skip
    assert trace.verdict == "correct", trace.message
    programs = {tuple(p["program"]): p for p in trace.doc["programs"]}
    assert [(programs[(x, 0, 0)]["block"], programs[(x, 0, 0)]["rows"]) for x in range(3)] == [
        (2, [32, 39, 8]), (1, [16, 31, 16]), (0, [0, 15, 16])
    ]  # fmt: skip
    assert [len(programs[(x, 0, 0)]["tiles"]) for x in range(3)] == [3, 2, 1]  # causal: block i streams i + 1 tiles
    assert [s["op"] for s in programs[(2, 0, 0)]["steps"]] == [
        "load_q", "load_kv", "scores", "online_softmax", "write_back"
    ]  # fmt: skip
    assert_fa2_traffic(trace.doc, causal=True, skip=("Q", "K", "V", "O", "L"))  # bf16, 2 bytes: as fp16
    for name in "QKVOL":
        row = traffic(trace.doc)[name]
        assert (row["read_bytes"], row["written_bytes"]) == (row["model_read_bytes"], row["model_written_bytes"])


# -- rows no program stored -------------------------------------------------------------------------------------
GRID_OF_ONE = (
    "O and L diverge: rows 16..39 were never stored (24 of N=40 rows): no program wrote them; the grid (1, 1, 1) "
    "has 1 program along X, where N=40 in blocks of 16 rows needs 3"
)


def test_rows_no_program_stores_are_a_divergence(tmp_path, rng):
    """A grid of one block: block 0 is right, and rows 16..39 of O and L stay as they were. That is no correct
    kernel; the traffic table says why Q, K and V were read less than the model (fewer blocks ran)."""
    trace = flashviz.trace(kernel=f"{PLAIN}:attn_fwd", inputs=inputs(rng), meta=META, grid=(1, 1))
    o, lse = trace.arrays["O"][0], trace.arrays["L"][0]
    assert np.isnan(o[B:]).all() and np.isnan(lse[B:]).all() and np.isfinite(o[:B]).all()  # what it left
    assert (trace.verdict, trace.message) == ("diverges", GRID_OF_ONE)
    div = trace.divergence
    assert (div["name"], div["program"], div["error"], div["message"]) == ("O", None, None, GRID_OF_ONE)
    why = {name: row["why"] for name, row in traffic(trace.doc).items()}
    assert why["Q"] == "Q read 0.4× the FA2 model: rows 16..39 of Q are never loaded (1 of its 3 blocks ran)"
    for name in "KV":
        assert why[name] == f"{name} read 0.333× the FA2 model: 1 of the 3 blocks of Q ran, each reading {name} once"
    assert why["O"] == why["L"].replace("L", "O") == "O written 0.4× the FA2 model: rows 16..39 are never stored"
    out = tmp_path / "t.json"
    done = run_cli("--kernel", f"{PLAIN}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--n", str(N), "--d", str(D),
                   "--grid", "1,1", "-o", str(out))  # fmt: skip
    assert done.returncode == 1 and done.stdout.splitlines()[0] == GRID_OF_ONE, done.stdout
    assert json.loads(out.read_text())["verdict"] == "diverges"


def test_a_head_no_program_stores(rng):
    trace = flashviz.trace(kernel=f"{PLAIN}:attn_fwd", n=N, d=D, heads=2, seed=int(rng.integers(2**31)), meta=META,
                           grid=(3, 1))  # fmt: skip
    assert np.isnan(trace.arrays["O"][1]).all() and np.isfinite(trace.arrays["O"][0]).all()
    assert trace.verdict == "diverges"
    assert trace.message == (
        "O and L diverge: rows 0..39 of head 1 were never stored (40 of N=40 rows; 1 of 2 heads): no program wrote "
        "them; the grid (3, 1, 1) has 1 program along Y, where Z·H = 2 heads need 2"
    )


@pytest.mark.parametrize(
    ("old", "new", "where", "cause"),
    [
        ("mask=offs_m[:, None] < N_CTX)", "mask=offs_m[:, None] < N_CTX - 1)", "block 2, write-back: O",
         "so row 39 of O was never stored"),
        ("    tl.store(M + off_hz * N_CTX + offs_m, m_i + tl.log(l_i), mask=offs_m < N_CTX)\n", "",
         "block 0, write-back: L", "so rows 0..15 of L were never stored (16 rows)"),
    ],
    ids=["last-row-of-O", "no-L"],
)  # fmt: skip
def test_rows_a_block_leaves_unstored_are_named(tmp_path, rng, old, new, where, cause):
    trace = flashviz.trace(kernel=f"{variant(tmp_path, old, new, 'unstored')}:attn_fwd", inputs=inputs(rng), meta=META)
    assert trace.verdict == "diverges"
    assert trace.message.startswith(where) and trace.message.endswith(cause), trace.message


# -- a user's file that exits -----------------------------------------------------------------------------------
KERNEL_ARGS = ("--meta", "BLOCK_M=16,BLOCK_N=16", "--n", str(N), "--d", str(D))


@pytest.mark.parametrize(
    ("code", "what"),
    [
        ("import sys\nsys.exit(0)\n", "raised SystemExit: 0"),
        ("import sys\nsys.exit('bye')\n", "raised SystemExit: bye"),
        ("raise SystemExit\n", "raised SystemExit"),
        ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt"),
        ("raise GeneratorExit\n", "raised GeneratorExit"),
        ("class Stop(BaseException):\n    pass\n\n\nraise Stop('stop')\n", "raised Stop: stop"),
    ],
    ids=["exit-0", "exit-text", "raise-SystemExit", "KeyboardInterrupt", "GeneratorExit", "own-BaseException"],
)
def test_a_file_that_exits_when_imported(tmp_path, code, what):
    path = tmp_path / "exits.py"
    path.write_text(code + PLAIN.read_text())
    done = run_cli("--kernel", f"{path}:attn_fwd", *KERNEL_ARGS)
    assert (done.returncode, done.stdout) == (2, "")
    [line] = done.stderr.splitlines()  # the long path is cut in the middle of the line
    assert line.startswith("flashviz: error: --kernel: importing '") and line.endswith(f" {what}"), line
    with pytest.raises(ConfigError) as error:  # from Python: an error, not an exit
        flashviz.trace(kernel=f"{path}:attn_fwd", meta=META)
    assert error.value.message == f"importing {shown(str(path))} {what}"


@pytest.mark.parametrize(
    ("stmt", "what"),
    [
        ("sys.exit(3)", "raised SystemExit: 3"),
        ("raise KeyboardInterrupt", "raised KeyboardInterrupt"),
        ("raise GeneratorExit", "raised GeneratorExit"),
    ],
    ids=["exit", "KeyboardInterrupt", "GeneratorExit"],
)
def test_a_kernel_that_exits_is_a_fault(tmp_path, stmt, what):
    text = PLAIN.read_text().replace("import triton\n", "import sys\n\nimport triton\n", 1)
    path = tmp_path / "exits_in_kernel.py"
    path.write_text(text.replace("        m_i = m_new\n", f"        m_i = m_new\n        {stmt}\n"))
    line, loop = line_of(path, stmt), line_of(path, "for start_n in range(")
    message = f"block 0 (program (0, 0, 0)), iteration 0 of the loop at line {loop}: line {line} `{stmt}`: {what}"
    done = run_cli("--kernel", f"{path}:attn_fwd", *KERNEL_ARGS)
    assert done.returncode == 1 and done.stdout.startswith(message), done.stdout
    assert done.stderr.splitlines() == [f"flashviz: error: kernel: {message}"]
    trace = flashviz.trace(kernel=f"{path}:attn_fwd", meta=META)
    assert (trace.verdict, trace.fault["kind"], trace.message) == ("fault", "raised", message)


def test_ctrl_c_still_stops_flashviz(tmp_path):
    """A KeyboardInterrupt the user's code raises is its failure; one from the terminal (SIGINT) stops flashviz as
    it stops any command. The file below waits forever when imported, after saying so in a file of its own. (The
    child's SIGINT is set to its default first: one started from a shell in the background inherits it ignored.)"""
    import os
    import signal
    import time

    ready = tmp_path / "importing"
    path = tmp_path / "waits.py"
    path.write_text(f"import pathlib, time\npathlib.Path({str(ready)!r}).touch()\nwhile True:\n    time.sleep(0.01)\n")
    proc = subprocess.Popen([sys.executable, "-m", "flashviz", "trace", "--kernel", f"{path}:attn_fwd"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    while not ready.exists() and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate()
    assert proc.returncode == 130 and err.strip() == "flashviz: aborted", (proc.returncode, err)


# -- carries that are not the kernel's ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("carry", "message"),
    [
        ("foo,bar,baz", "--carry: attn_fwd has no carry 'foo' (its loops carry m_i, l_i, acc)"),
        ("m=m_i,l=nope", "--carry: attn_fwd has no carry 'nope' (its loops carry m_i, l_i, acc)"),
        ("l_i,m_i,acc", "--carry: m=l_i holds the running sum, not the running max (the names go max, sum, "
         "accumulator; its loops carry m_i, l_i, acc)"),
        ("acc,l_i,m_i", "--carry: m=acc is a (16, 16) tensor at the end of a tile, where the running max is one "
         "value per row (the names go max, sum, accumulator; its loops carry m_i, l_i, acc)"),
        ("m_i,l_i,m_new", "--carry: acc=m_new is a (16,) tensor at the end of a tile, where the accumulator is D=16 "
         "values per row (the names go max, sum, accumulator; its loops carry m_i, l_i, acc)"),
        ("m_i,l_i,cols", "--carry: acc=cols is not a float tensor at the end of a tile (the names go max, sum, "
         "accumulator; its loops carry m_i, l_i, acc)"),
    ],
    ids=["unknown", "unknown-one", "m-and-l-swapped", "acc-as-m", "m-as-acc", "not-float"],
)  # fmt: skip
def test_carries_the_kernel_does_not_have_are_refused(carry, message):
    done = run_cli("--kernel", f"{PLAIN}:attn_fwd", *KERNEL_ARGS, "--carry", carry)
    assert (done.returncode, done.stdout) == (2, ""), done.stdout
    assert done.stderr.splitlines() == [f"flashviz: error: {message}"]


def test_carries_from_python_are_held_to_the_same_rule(rng):
    with pytest.raises(ConfigError, match=r"has no carry 'nope' \(its loops carry m_i, l_i, acc\)"):
        flashviz.trace(kernel=f"{PLAIN}:attn_fwd", meta=META, carry={"m": "m_i", "l": "nope"})
    with pytest.raises(ConfigError, match=r"m=l_i holds the running sum, not the running max"):
        flashviz.trace(kernel=f"{PLAIN}:attn_fwd", inputs=inputs(rng), meta=META, carry=("l_i", "m_i"))
    named = flashviz.trace(kernel=f"{PLAIN}:attn_fwd", inputs=inputs(rng), meta=META, carry=("m_i", "l_i", "acc"))
    assert named.verdict == "correct" and named.doc["carries"]["names"] == {"m": "m_i", "l": "l_i", "acc": "acc"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grid", "65535,2"], "--grid: at most 4,096 programs run under Triton's interpreter (about 50 ms each); "
         "got 65535 × 2 × 1 = 131,070"),
        (["--heads", "64", "--batch", "64"], "--grid: the default grid (cdiv(N, BLOCK_M), Z·H) = (3, 4096, 1) is "
         "12,288 programs, and at most 4,096 programs run under Triton's interpreter (about 50 ms each); give a "
         "smaller --n, "
         "--heads or --batch, a larger BLOCK_M, or --grid"),
    ],
    ids=["given", "default"],
)  # fmt: skip
def test_a_grid_too_large_to_interpret_is_refused(args, message):
    """A grid of more programs than the interpreter runs in minutes is bad input, not hours of waiting."""
    done = run_cli("--kernel", f"{PLAIN}:attn_fwd", *KERNEL_ARGS, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"flashviz: error: {message}"]


def test_programs_past_n_do_nothing_with_several_heads(rng):
    """A grid larger than N needs: the extra programs' loads of Q are masked off whole (with two heads their
    addresses fall in the next head's rows, inside Q), and they are no blocks of Q."""
    trace = flashviz.trace(kernel=f"{PLAIN}:attn_fwd", n=N, d=D, heads=2, seed=int(rng.integers(2**31)), meta=META,
                           grid=(5, 2))  # fmt: skip
    assert trace.verdict == "correct", trace.message
    assert sorted(p["program"] for p in trace.doc["programs"]) == [[x, h, 0] for x in range(3) for h in range(2)]
