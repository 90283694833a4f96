"""flashviz.integrations.transformers: attn_implementation="flashviz" in Hugging Face models, against the same
models (the same random weights) on transformers' "sdpa" and "eager" attention. Nothing is downloaded: tiny Llama
and Mistral (sliding window) configs, from_config, torch.manual_seed, bfloat16, head_dim 32; on the CPU the
kernels run in Triton's interpreter.

Tolerance, for the logits and for every parameter's gradient (each tensor X on its own): flashviz may be at most
FACTOR times as far from sdpa as eager is from sdpa, plus BF16 times the largest |X| (one rounding of bf16's 8 bits
of precision at the largest value); the same against eager. A mistake in the mask (a window off by one, causal
misaligned with the cache) moves logits by far more: each test also checks that its option changes the logits.
"""

from __future__ import annotations

import copy
import inspect

import pytest

torch = pytest.importorskip("torch")
base = pytest.importorskip("test_attention")  # sets TRITON_INTERPRET=1 without a GPU, before Triton is imported
pytest.importorskip("transformers", reason="transformers is not installed (pip install 'flashviz[transformers]')")
from transformers import AutoModelForCausalLM, DynamicCache, LlamaConfig, MistralConfig  # noqa: E402

import flashviz.integrations.transformers as fv_hf  # noqa: E402

DEVICE = base.DEVICE
kernels, seed = base.kernels, base.seed
FACTOR = 3.0
BF16 = 2.0**-8
IMPLEMENTATIONS = ("flashviz", "sdpa", "eager")
VOCAB, N = 101, 40


def with_cache(model, cache) -> dict:
    """The keyword arguments that pass `cache` to model's forward: `cache=` where the installed transformers names it
    so (5.25 on, where `past_key_values=` is deprecated), `past_key_values=` before."""
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return {name: cache, "use_cache": True}


def tiny(kind: str, **over):
    common = dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, max_position_embeddings=256)  # fmt: skip
    if kind == "llama":
        return LlamaConfig(**{**common, **over})
    return MistralConfig(**{**common, "sliding_window": 8, **over})


def models(cfg, weights_seed: int) -> dict:
    """One model per attention implementation, with the same random weights (and a config of its own each: a
    shared config would carry the last implementation set on it)."""
    fv_hf.register()
    built = {}
    for impl in IMPLEMENTATIONS:
        torch.manual_seed(weights_seed)
        model = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation=impl, dtype=torch.bfloat16)
        assert model.config._attn_implementation == impl
        built[impl] = model.to(DEVICE)
    return built


def limit(eager_vs_sdpa: float, scale: float) -> float:
    return FACTOR * eager_vs_sdpa + BF16 * scale


def distance(a, b) -> float:
    return (a.float() - b.float()).abs().max().item()


def assert_close(outs: dict, what: str) -> None:
    """outs: implementation -> tensor; flashviz against sdpa and against eager, within `limit`."""
    spread = distance(outs["eager"], outs["sdpa"])
    for other in ("sdpa", "eager"):
        error = distance(outs["flashviz"], outs[other])
        bound = limit(spread, outs[other].float().abs().max().item())
        assert error <= bound, f"{what}: flashviz vs {other} {error:.3g} > {bound:.3g} (eager vs sdpa {spread:.3g})"


def logits_and_grads(model, ids, labels, **kwargs):
    model.zero_grad(set_to_none=True)
    out = model(ids, labels=labels, **kwargs)
    out.loss.backward()
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return out.logits.detach(), grads


@pytest.mark.parametrize("kind", ["llama", "mistral"])
def test_logits_and_gradients_match_sdpa_and_eager(kernels, seed, kind):
    """A causal forward and backward of two sequences of 40 tokens: GQA (4 q heads, 2 K/V heads), Mistral's sliding
    window of 8 (a band narrower than the sequence)."""
    built = models(tiny(kind), seed)
    ids = torch.randint(0, VOCAB, (2, N), device=DEVICE)
    labels = torch.randint(0, VOCAB, (2, N), device=DEVICE)
    results = {impl: logits_and_grads(m, ids, labels) for impl, m in built.items()}
    assert_close({impl: r[0] for impl, r in results.items()}, "logits")
    names = results["sdpa"][1].keys()
    assert len(names) > 10 and names == results["flashviz"][1].keys()
    for name in names:
        assert_close({impl: r[1][name] for impl, r in results.items()}, f"grad {name}")
    if kind == "mistral":  # the window matters: without it the logits are far off
        wide = models(tiny(kind, sliding_window=None), seed)["sdpa"]
        with torch.no_grad():
            unbanded = wide(ids).logits
        assert distance(unbanded, results["sdpa"][0]) > 10 * distance(results["flashviz"][0], results["sdpa"][0])


@pytest.mark.parametrize("kind", ["llama", "mistral"])
def test_decode_with_a_kv_cache(kernels, seed, kind):
    """Prefill 30 tokens into a DynamicCache, then 10 more queries against the 40 keys (Nq < Nk: causal aligned to
    the bottom-right), then one (decode)."""
    built = models(tiny(kind), seed)
    ids = torch.randint(0, VOCAB, (1, N + 1), device=DEVICE)
    steps = {}
    with torch.no_grad():
        for impl, model in built.items():
            cache = DynamicCache(config=model.config)
            model(ids[:, :30], **with_cache(model, cache))
            chunk = model(ids[:, 30:N], **with_cache(model, cache)).logits
            last = model(ids[:, N:], **with_cache(model, cache)).logits
            steps[impl] = (chunk, last)
        full = built["sdpa"](ids).logits
    assert_close({impl: s[0] for impl, s in steps.items()}, "logits of 10 queries against a cache of 30")
    assert_close({impl: s[1] for impl, s in steps.items()}, "logits of one query against a cache of 40")
    assert distance(steps["flashviz"][1], full[:, N:]) <= limit(distance(steps["eager"][1], full[:, N:]),
                                                                full.float().abs().max().item())  # fmt: skip


def test_packed_sequences_by_position_ids(kernels, seed):
    """Three sequences packed in one row (position_ids restart at 0, as DataCollatorWithFlattening makes them) on
    flashviz, against each sequence run on its own on sdpa and eager: no token attends across a boundary. (Here
    transformers' own sdpa and eager attend across the boundaries of such a row: they are run per sequence.)
    The gradients are those of sum(logits * W), W random: a loss of every token on its own."""
    built = models(tiny("mistral"), seed)
    lengths = (17, 5, 18)
    starts = (0, 17, 22)
    ids = torch.randint(0, VOCAB, (1, sum(lengths)), device=DEVICE)
    position_ids = torch.cat([torch.arange(n, device=DEVICE) for n in lengths])[None]
    weights = torch.randn(1, sum(lengths), VOCAB, device=DEVICE)

    def run(model, packed: bool):
        model.zero_grad(set_to_none=True)
        if packed:
            logits = model(ids, position_ids=position_ids).logits
        else:
            logits = torch.cat([model(ids[:, a : a + n]).logits for a, n in zip(starts, lengths, strict=True)], 1)
        (logits.float() * weights).sum().backward()
        return logits.detach(), {name: p.grad.detach().clone() for name, p in model.named_parameters()}

    results = {impl: run(m, packed=impl == "flashviz") for impl, m in built.items()}
    assert_close({impl: r[0] for impl, r in results.items()}, "packed logits")
    for name in results["sdpa"][1]:
        assert_close({impl: r[1][name] for impl, r in results.items()}, f"packed grad {name}")
    cu = torch.tensor([0, 17, 22, 40], dtype=torch.int32, device=DEVICE)
    with torch.no_grad():  # FlashAttention's keyword arguments for the same packing: the same kernels' results
        given = built["flashviz"](ids, position_ids=position_ids, cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=18,
                                  max_length_k=18).logits  # fmt: skip
        assert torch.equal(given, results["flashviz"][0])
        joined = built["flashviz"](ids).logits  # joined (no position_ids), the later sequences would read the first
    assert distance(joined, results["sdpa"][0]) > 10 * distance(results["flashviz"][0], results["sdpa"][0])


def left_and_right_padded(n: int = 12):
    """Two rows of n: row 0 right-padded (its last 3 are padding), row 1 left-padded (its first 4); their position_ids
    count each row's tokens from 0, as generate() makes them."""
    mask = torch.ones(2, n, dtype=torch.long, device=DEVICE)
    mask[0, -3:] = 0
    mask[1, :4] = 0
    position_ids = (mask.cumsum(1) - 1).clamp(min=0)
    return mask, position_ids


@pytest.mark.parametrize("kind", ["llama", "mistral"])
def test_a_padded_batch_matches_each_sequence_alone(kernels, seed, kind):
    """A padded batch (transformers' 2-d padding mask) on flashviz, against each row's tokens run alone on sdpa and
    eager: the logits at every token and every parameter's gradient of sum(logits * W) over the tokens (padding's
    rows are left out of the loss; flashviz writes zeros there). Mistral's window of 8 counts tokens, not padding."""
    built = models(tiny(kind), seed)
    mask, position_ids = left_and_right_padded()
    ids = torch.randint(0, VOCAB, mask.shape, device=DEVICE)
    weights = torch.randn(*mask.shape, VOCAB, device=DEVICE) * mask[..., None]
    rows = [torch.nonzero(mask[b]).flatten() for b in range(2)]

    def run(model, padded: bool):
        model.zero_grad(set_to_none=True)
        if padded:
            logits = model(ids, attention_mask=mask, position_ids=position_ids).logits
            tokens = [logits[b, r] for b, r in enumerate(rows)]
        else:
            tokens = [model(ids[b : b + 1, r]).logits[0] for b, r in enumerate(rows)]
        sum((t.float() * weights[b, r]).sum() for b, (t, r) in enumerate(zip(tokens, rows, strict=True))).backward()
        return torch.cat(tokens).detach(), {name: p.grad.detach().clone() for name, p in model.named_parameters()}

    results = {impl: run(m, padded=impl == "flashviz") for impl, m in built.items()}
    assert_close({impl: r[0] for impl, r in results.items()}, "padded logits")
    for name in results["sdpa"][1]:
        assert_close({impl: r[1][name] for impl, r in results.items()}, f"padded grad {name}")
    with torch.no_grad():  # the mask matters: with the padding read as tokens, the logits are far off
        unmasked = built["flashviz"](ids, position_ids=position_ids).logits
    unmasked = torch.cat([unmasked[b, r] for b, r in enumerate(rows)])
    assert distance(unmasked, results["sdpa"][0]) > 10 * distance(results["flashviz"][0], results["sdpa"][0])


def test_a_left_padded_batch_decodes_with_a_kv_cache(kernels, seed):
    """generate()'s shape of decoding: a left-padded prefill into a DynamicCache, then one query per row against the
    cache with the mask grown by one (Nq < Nk, padding inside the keys), against each row alone on sdpa."""
    built = models(tiny("llama"), seed)
    mask = torch.ones(2, 9, dtype=torch.long, device=DEVICE)
    mask[1, :3] = 0
    ids = torch.randint(0, VOCAB, (2, 9), device=DEVICE)
    with torch.no_grad():
        model = built["flashviz"]
        cache = DynamicCache(config=model.config)
        position_ids = (mask[:, :8].cumsum(1) - 1).clamp(min=0)
        model(ids[:, :8], attention_mask=mask[:, :8], position_ids=position_ids, **with_cache(model, cache))
        last = model(ids[:, 8:], attention_mask=mask, position_ids=position_ids[:, -1:] + 1,
                     **with_cache(model, cache)).logits[:, -1]  # fmt: skip
        alone = {impl: torch.stack([built[impl](ids[b : b + 1, mask[b] != 0]).logits[0, -1] for b in range(2)])
                 for impl in ("sdpa", "eager")}  # fmt: skip
    assert_close({"flashviz": last, **alone}, "the decoded row's logits against a padded cache")


def test_custom_masks_and_dropout_are_refused(kernels, seed):
    """A mask that is no (B, Nk) padding mask (a custom 4-d mask, a static cache's shorter mask) is one line; so is
    dropout while training."""
    built = models(tiny("llama", attention_dropout=0.1), seed)
    model = built["flashviz"].eval()  # from_config builds in training mode
    q, k = torch.randn(2, 4, 12, 32, device=DEVICE), torch.randn(2, 2, 12, 32, device=DEVICE)
    for mask in (torch.ones(2, 1, 12, 12, device=DEVICE), torch.ones(2, 10, device=DEVICE)):
        with pytest.raises(ValueError, match=r"attention_mask must be None or a padding mask \(B, Nk\)") as e:
            fv_hf.attention_forward(model.model.layers[0].self_attn, q, k, k, mask)
        assert "\n" not in str(e.value) and str(tuple(mask.shape)) in str(e.value)
    ids = torch.randint(0, VOCAB, (2, 12), device=DEVICE)
    with torch.no_grad():  # a mask of ones is no padding: it runs
        assert model(ids, attention_mask=torch.ones_like(ids)).logits.shape == (2, 12, VOCAB)
    model.train()
    with pytest.raises(ValueError, match=r"dropout must be 0 with attn_implementation='flashviz' .*; got 0\.1") as e:
        model(ids)
    assert "\n" not in str(e.value)


def test_register_twice_and_the_name():
    fv_hf.register()
    fv_hf.register()
    from transformers import AttentionInterface

    assert AttentionInterface._global_mapping["flashviz"] is fv_hf.attention_forward


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind", ["llama", "mistral"])
def test_gpu_models_of_realistic_width(monkeypatch, seed, kind):
    """On the GPU: 4 layers of a 1B-class model (hidden 2048, 16 q heads and 4 K/V heads of D=128; Mistral's window
    512), two sequences of 2048 tokens, logits and every parameter's gradient against sdpa and eager."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    over = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4, num_attention_heads=16,
                num_key_value_heads=4, head_dim=128, max_position_embeddings=4096)  # fmt: skip
    if kind == "mistral":
        over["sliding_window"] = 512
    built = models(tiny(kind, **over), seed)
    ids = torch.randint(0, VOCAB, (2, 2048), device="cuda")
    labels = torch.randint(0, VOCAB, (2, 2048), device="cuda")
    results = {impl: logits_and_grads(m, ids, labels) for impl, m in built.items()}
    assert_close({impl: r[0] for impl, r in results.items()}, "logits")
    for name in results["sdpa"][1]:
        assert_close({impl: r[1][name] for impl, r in results.items()}, f"grad {name}")
