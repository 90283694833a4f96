"""flashviz.attention and attention_varlen as torch operators (flashviz.ops.library): torch.library's own checks of
the operators (opcheck: schema, fake implementation, autograd registration), the fake implementations' shapes and
dtypes, torch.compile(fullgraph=True) of functions calling them (forward and backward, no graph break, equal to eager
bit for bit: the same kernels run), a bad input refused at compile time in the operator's words, and on a GPU a
compiled transformers model and a CUDA graph's replay of a decode step.

On the CPU the kernels run under Triton's interpreter (small shapes); fresh random inputs every run.
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import flashviz  # noqa: E402
import test_attention as base  # noqa: E402  (sets TRITON_INTERPRET=1 without a GPU, before Triton is imported)
from flashviz.ops import library  # noqa: E402
from flashviz.ops.reference import judge  # noqa: E402

DEVICE, GPU = base.DEVICE, base.GPU
kernels, seed = base.kernels, base.seed
BF16 = torch.bfloat16
FORWARD, BACKWARD = torch.ops.flashviz.attention_forward, torch.ops.flashviz.attention_backward


def dense(B=1, Hq=4, Hkv=2, Nq=24, Nk=40, D=32, grad=False):
    q = torch.randn(B, Hq, Nq, D, dtype=BF16, device=DEVICE, requires_grad=grad)
    k, v = (torch.randn(B, Hkv, Nk, D, dtype=BF16, device=DEVICE, requires_grad=grad) for _ in range(2))
    return q, k, v


def packed(lq=(5, 17, 9), lk=(12, 9, 20), Hq=4, Hkv=2, D=32, grad=False):
    q = torch.randn(sum(lq), Hq, D, dtype=BF16, device=DEVICE, requires_grad=grad)
    k, v = (torch.randn(sum(lk), Hkv, D, dtype=BF16, device=DEVICE, requires_grad=grad) for _ in range(2))
    cu = [torch.tensor([0, *itertools.accumulate(x)], dtype=torch.int32, device=DEVICE) for x in (lq, lk)]
    return q, k, v, cu[0], cu[1], max(lq), max(lk)


# (window left, right, softcap) of the operator's calls
OPTIONS = [(-1, -1, 0.0), (7, -1, 0.0), (-1, -1, 4.0), (5, 3, 2.5)]


@pytest.mark.parametrize(("left", "right", "softcap"), OPTIONS)
@pytest.mark.parametrize("causal", [False, True])
def test_the_dense_operators_pass_torchs_checks(kernels, seed, left, right, softcap, causal):
    """torch.library.opcheck: the schema, the fake implementation against the real outputs (shapes, dtypes,
    strides), the autograd registration; forward, and backward on the forward's outputs."""
    q, k, v = dense()
    forward = (q, k, v, None, None, 0, 0, causal, 0.2, left, right, softcap, "fa2")
    torch.library.opcheck(FORWARD, forward)
    o, lse = FORWARD(*forward)
    do, dlse = torch.randn_like(o), torch.randn_like(lse)
    torch.library.opcheck(BACKWARD, (do, dlse, q, k, v, o, lse, None, None, 0, 0, causal, 0.2, left, right, softcap,
                                     "fa2"))  # fmt: skip


def test_the_packed_operators_pass_torchs_checks(kernels, seed):
    q, k, v, cq, ck, mq, mk = packed()
    forward = (q, k, v, cq, ck, mq, mk, True, 0.2, 6, -1, 3.0, "fa2")
    torch.library.opcheck(FORWARD, forward)
    o, lse = FORWARD(*forward)
    torch.library.opcheck(BACKWARD, (torch.randn_like(o), None, q, k, v, o, lse, cq, ck, mq, mk, True, 0.2, 6, -1,
                                     3.0, "fa2"))  # fmt: skip


def test_fake_tensors_give_every_outputs_shape_and_dtype(kernels):
    """Under FakeTensorMode (what torch.compile traces with) no kernel runs: O is q's shape and dtype, L float32
    (B, Hq, Nq) or, packed, (Hq, total_q); dQ, dK, dV are q's, k's and v's."""
    with FakeTensorMode() as mode:
        q = mode.from_tensor(torch.empty(2, 6, 33, 64, dtype=BF16, device=DEVICE))
        k = mode.from_tensor(torch.empty(2, 3, 50, 64, dtype=BF16, device=DEVICE))
        o, lse = FORWARD(q, k, k, None, None, 0, 0, True, 0.125, -1, -1, 0.0, "fa2")
        assert (tuple(o.shape), o.dtype, tuple(lse.shape), lse.dtype) == (
            (2, 6, 33, 64),
            BF16,
            (2, 6, 33),
            torch.float32,
        )
        dq, dk, dv = BACKWARD(o, None, q, k, k, o, lse, None, None, 0, 0, True, 0.125, -1, -1, 0.0, "fa2")
        assert [tuple(t.shape) for t in (dq, dk, dv)] == [(2, 6, 33, 64), (2, 3, 50, 64), (2, 3, 50, 64)]
        assert {t.dtype for t in (dq, dk, dv)} == {BF16}
        qp = mode.from_tensor(torch.empty(70, 4, 32, dtype=torch.float16, device=DEVICE))
        kp = mode.from_tensor(torch.empty(90, 2, 32, dtype=torch.float16, device=DEVICE))
        cu = mode.from_tensor(torch.zeros(4, dtype=torch.int32, device=DEVICE))
        o, lse = FORWARD(qp, kp, kp, cu, cu, 40, 50, False, 0.3, 8, 8, 1.0, "fa2")
        assert (tuple(o.shape), o.dtype, tuple(lse.shape)) == ((70, 4, 32), torch.float16, (4, 70))


def _compiled_equals_eager(fn, inputs, grads):
    """fn compiled whole (fullgraph: a graph break is an error) against fn run eagerly: outputs and gradients equal
    bit for bit (the operators run the same kernels)."""
    compiled = torch.compile(fn, fullgraph=True)
    eager_out, compiled_out = fn(*inputs), compiled(*inputs)
    assert torch.equal(eager_out, compiled_out)
    do = torch.randn_like(eager_out)
    eager_grads = torch.autograd.grad(eager_out, grads, do)
    compiled_grads = torch.autograd.grad(compiled_out, grads, do)
    for a, b in zip(eager_grads, compiled_grads, strict=True):
        assert torch.equal(a, b)
    return eager_out, eager_grads, do


def test_torch_compile_traces_attention_forward_and_backward(kernels, seed):
    """A block's attention with grouped-query heads, a KV cache longer than the queries, a window and softcap,
    between two linear maps (what a model does), compiled with fullgraph=True, and its result against float64."""
    q, k, v = dense(grad=True)
    w = torch.randn(32, 32, dtype=BF16, device=DEVICE) / 6

    def block(q, k, v):
        o = flashviz.attention(q @ w, k, v, causal=True, window=(16, -1), softcap=8.0)
        return o @ w.T

    _compiled_equals_eager(block, (q, k, v), (q, k, v))
    o, lse = flashviz.attention(q @ w, k, v, causal=True, window=(16, -1), softcap=8.0, return_lse=True)
    q0 = (q @ w).detach()
    assert judge({"O": o, "L": lse}, q0, k.detach(), v.detach(), True, 32**-0.5, torch.randn_like(o),
                 window=(16, -1), softcap=8.0).ok  # fmt: skip


def test_torch_compile_traces_attention_varlen(kernels, seed):
    q, k, v, cq, ck, mq, mk = packed(grad=True)

    def packed_attention(q, k, v):
        return flashviz.attention_varlen(q, k, v, cq, ck, mq, mk, causal=True, window=(6, -1)) * 2

    _compiled_equals_eager(packed_attention, (q, k, v), (q, k, v))


def test_a_bad_input_is_refused_at_compile_time_in_the_operators_words(kernels):
    """Under torch.compile the tensors are checked by the fake implementation: the same one-line ValueError, raised
    while the function is traced (torch wraps it: its message is in the chain)."""
    q = torch.randn(1, 2, 8, 32, device=DEVICE)  # float32: the kernels take bf16 or fp16

    @torch.compile(fullgraph=True)
    def f(q):
        return flashviz.attention(q, q, q)

    with pytest.raises(Exception) as info:
        f(q)
    chain, exc = [], info.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    assert any("q must be bfloat16 or float16; got torch.float32" in text for text in chain), chain


def test_an_inference_call_skips_the_dispatcher(kernels, monkeypatch):
    """Without a gradient (decode, inference) a call goes straight to the kernels (host time is a decode step's
    cost); with one, through the operator whose autograd gives the gradients."""
    seen = []
    monkeypatch.setattr(library, "attention_forward", lambda *a: seen.append(a) or library.run_forward(*a))
    q, k, v = dense()
    with torch.no_grad():
        flashviz.attention(q, k, v)
    assert seen == []
    flashviz.attention(q.requires_grad_(), k, v)
    assert len(seen) == 1


# ---------------------------------------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
def test_gpu_cuda_graph_replays_a_decode_step(seed):
    """A decode step (one query against a cache) captured in a CUDA graph after a warm-up call (which tunes), then
    replayed on new queries: O equals the eager call's."""
    B, Hq, Hkv, Nk, D = 2, 16, 4, 4099, 128
    q = torch.randn(B, Hq, 1, D, dtype=BF16, device="cuda")
    k, v = (torch.randn(B, Hkv, Nk, D, dtype=BF16, device="cuda") for _ in range(2))
    with torch.no_grad():
        flashviz.attention(q, k, v, causal=True)  # tunes outside the capture
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            flashviz.attention(q, k, v, causal=True)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = flashviz.attention(q, k, v, causal=True)
        for _ in range(3):
            q.copy_(torch.randn_like(q))
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(out, flashviz.attention(q, k, v, causal=True))


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
def test_gpu_compiled_llama_matches_eager(seed):
    """A small Llama on attn_implementation="flashviz", compiled (torch.compile's default: the model's own code may
    break the graph; the attention operators do not, as the CPU tests hold with fullgraph=True): its logits and every
    gradient equal the eager model's within bf16 rounding (the compiled graph fuses the other ops)."""
    transformers = pytest.importorskip("transformers")
    from flashviz.integrations import transformers as integration

    integration.register()
    config = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=512,
                                      attn_implementation=integration.NAME)  # fmt: skip
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16)
    ids = torch.randint(0, 512, (2, 300), device="cuda")
    eager = model(ids).logits
    eager_grads = torch.autograd.grad(eager.float().square().mean(), list(model.parameters()))
    compiled = torch.compile(model)
    logits = compiled(ids).logits
    grads = torch.autograd.grad(logits.float().square().mean(), list(model.parameters()))
    assert (logits.float() - eager.float()).abs().max().item() <= 0.05 * eager.float().abs().max().item()
    for a, b in zip(grads, eager_grads, strict=True):
        assert (a.float() - b.float()).abs().max().item() <= 0.05 * b.float().abs().max().item() + 1e-6
