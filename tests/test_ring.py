"""flashviz.ring_attention and its pure parts: the merge rule, the layout plan, the closed-form model of the ring and
the NumPy simulation of it.

The distributed tests spawn 2, 3 and 4 gloo processes (tests/ring_worker.py), one spawn per size running every
case, with the real kernels under Triton's interpreter on tiny shapes; each rank's outputs and gradients are put
back together (ring_unshard) and judged against float64 attention (attention_reference.judge: at most FACTOR
times the error of plain bf16 attention). Ragged shards are refused, on every rank, with one line.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.engine.ring_sim import simulate
from flashviz.hardware.ring_model import model
from flashviz.model import ring_layout
from flashviz.model.merge import merge, merge_all
from flashviz.model.reference import attention as reference_attention
from flashviz.model.ring_layout import CAUSAL, FULL, SKIP, block_flops, blocks, calls, chunk_count, chunks, rank_flops

torch = pytest.importorskip("torch")

from flashviz.ops.ring import ring_shard, ring_unshard  # noqa: E402


# ----------------------------------------------------------------------------------------------------------
# The merge rule
# ----------------------------------------------------------------------------------------------------------
def softmax_parts(S: np.ndarray, V: np.ndarray, cuts: list[int]):
    """(O, L) in fp32 of each shard of keys [cuts[i], cuts[i+1]); an empty shard is (0, -inf)."""
    parts = []
    for a, b in itertools.pairwise(cuts):
        if a == b:
            parts.append((np.zeros((S.shape[0], V.shape[1]), np.float32), np.full(S.shape[0], -np.inf, np.float32)))
            continue
        s = S[:, a:b].astype(np.float32)  # (rows, keys)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        l = p.sum(axis=1, keepdims=True)
        parts.append(((p @ V[a:b].astype(np.float32)) / l, (m + np.log(l))[:, 0]))
    return parts


@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 5),
    keys=st.integers(1, 40),
    d=st.integers(1, 8),
    spread=st.floats(0.1, 100.0),  # scores up to ~300: exp overflows fp32 without the shift by the max
    data=st.data(),
)
def test_merge_of_any_split_in_any_order_is_the_whole_softmax(seed, rows, keys, d, spread, data):
    """Keys cut into shards anywhere (empty shards too), the shards' (O, L) merged pairwise in any order (any tree):
    the whole softmax in float64, within fp32 rounding."""
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((rows, keys)) * spread  # (rows, keys) scores; large spreads test the rescaling
    V = rng.standard_normal((keys, d))
    cuts = sorted(data.draw(st.lists(st.integers(0, keys), max_size=6), label="cuts"))
    parts = softmax_parts(S, V, [0, *cuts, keys])
    while len(parts) > 1:  # merge a random neighbour-free pair: any order, any tree
        i, j = data.draw(st.lists(st.integers(0, len(parts) - 1), min_size=2, max_size=2, unique=True), label="pair")
        merged = merge(*parts[i], *parts[j])
        parts = [p for n, p in enumerate(parts) if n not in (i, j)] + [merged]
    o, lse = parts[0]
    m = S.max(axis=1, keepdims=True)
    P = np.exp(S - m)
    L = (m + np.log(P.sum(axis=1, keepdims=True)))[:, 0]
    O = (P / P.sum(axis=1, keepdims=True)) @ V
    assert o.dtype == np.float32 and lse.dtype == np.float32
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(lse, L, rtol=0, atol=64 * eps * (np.abs(L).max() + 1))
    np.testing.assert_allclose(o, O, rtol=0, atol=64 * eps * np.abs(V).max() * math.log2(keys + 1))


def test_merge_takes_torch_tensors_and_empty_shards():
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    S, V = rng.standard_normal((3, 10)), rng.standard_normal((10, 4))
    (oa, la), (ob, lb) = softmax_parts(S, V, [0, 4, 10])
    o_np, l_np = merge(oa, la, ob, lb)
    o_t, l_t = merge(*(torch.from_numpy(x) for x in (oa, la, ob, lb)))
    assert isinstance(o_t, torch.Tensor)
    np.testing.assert_allclose(o_t.numpy(), o_np, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(l_t.numpy(), l_np, rtol=1e-6, atol=1e-7)
    empty = (np.zeros_like(oa), np.full_like(la, -np.inf))
    o, lse = merge(*empty, oa, la)  # an empty shard changes nothing
    np.testing.assert_array_equal(o, oa)
    np.testing.assert_array_equal(lse, la)
    o, lse = merge(*empty, *empty)  # no key at all: O = 0, L = -inf, no NaN
    assert np.all(o == 0) and np.all(np.isneginf(lse))
    o, lse = merge_all([(oa, la), (ob, lb)])
    np.testing.assert_array_equal(o, o_np)
    with pytest.raises(ValueError, match="at least one"):
        merge_all([])


# ----------------------------------------------------------------------------------------------------------
# The layout plan
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ring_layout.LAYOUTS)
@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("causal", [False, True])
def test_every_block_of_the_sequence_is_met_once(layout, world, causal):
    """Across ranks and steps every (query chunk, key chunk) pair comes up exactly once, skipped exactly when every
    key is after every query; the calls cover exactly the computed blocks."""
    seen = {}
    for r in range(world):
        per = len(chunks(r, world, layout))
        for s in range(world):
            bs = blocks(r, s, world, layout, causal)
            for b in bs:
                assert (b.q_chunk, b.k_chunk) not in seen
                seen[b.q_chunk, b.k_chunk] = b.kind
            covered = {(a, k) for c in calls(bs, per) for a in range(c.q0, c.q1) for k in range(c.k0, c.k1)}
            assert covered >= {(b.q, b.k) for b in bs if b.kind != SKIP}
            assert all(c.q1 - c.q0 == c.k1 - c.k0 for c in calls(bs, per))  # q, k, v of one shape
            for c in calls(bs, per):  # nothing a skipped block would add: a call spans a skip only under its mask
                skipped = {(b.q, b.k) for b in bs if b.kind == SKIP}
                inside = {(a, k) for a in range(c.q0, c.q1) for k in range(c.k0, c.k1)}
                assert not (inside & skipped) or c.causal
    n = chunk_count(world, layout)
    assert len(seen) == n * n
    for (qc, kc), kind in seen.items():
        assert kind == (FULL if not causal or qc > kc else CAUSAL if qc == kc else SKIP)


@pytest.mark.parametrize("world", range(1, 9))
def test_zigzag_balances_causal_work_and_contiguous_does_not(world):
    """Per-rank forward FLOPs under the causal mask: equal within one chunk's block under zigzag (exactly equal, in
    fact); contiguous gives the last rank P-1 more blocks than the first. The ranks' sum is one device's count."""
    c, d = 8, 16
    one_chunk = block_flops(FULL, c, d)
    zig = [rank_flops(r, world, "zigzag", True, c, d) for r in range(world)]
    assert max(zig) - min(zig) <= one_chunk
    assert sum(zig) == block_flops(CAUSAL, 2 * world * c, d)
    contiguous = [rank_flops(r, world, "contiguous", True, 2 * c, d) for r in range(world)]
    assert sum(contiguous) == block_flops(CAUSAL, 2 * world * c, d)
    if world >= 2:
        assert max(contiguous) - min(contiguous) > one_chunk  # the test can fail: contiguous fails it


# ----------------------------------------------------------------------------------------------------------
# ring_shard, ring_unshard
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ring_layout.LAYOUTS)
@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("dim", [2, 1, -1])
def test_shard_and_unshard_are_inverse(layout, world, dim):
    x = torch.randn(2, 6 * world, 4 * world, 4 * world)
    n = x.shape[dim]
    shards = [ring_shard(x, r, world, layout, dim=dim) for r in range(world)]
    assert all(s.shape[dim] == n // world for s in shards)
    c = n // chunk_count(world, layout)
    for r, s in enumerate(shards):  # rank r holds its chunks, in order
        want = torch.cat([x.narrow(dim, i * c, c) for i in chunks(r, world, layout)], dim)
        assert torch.equal(s, want)
    assert torch.equal(ring_unshard(shards, layout, dim=dim), x)


BAD_SHARD = [
    (
        (torch.zeros(1, 1, 6, 4), 0, 4),
        {},
        r"has 6 tokens; layout zigzag on 4 ranks cuts it into 8 equal chunks.*refused",
    ),
    ((torch.zeros(1, 1, 6, 4), 0, 4), {"layout": "contiguous"}, r"must be a multiple of 4 \(ragged shards are refused"),
    ((torch.zeros(1, 1, 8, 4), 4, 4), {}, r"rank must be an integer in 0\.\.3; got 4"),
    ((torch.zeros(1, 1, 8, 4), 0, 0), {}, r"world must be an integer >= 1; got 0"),
    ((torch.zeros(1, 1, 8, 4), 0, 2), {"layout": "spiral"}, r"layout must be one of zigzag, contiguous; got 'spiral'"),
    ((torch.zeros(1, 1, 8, 4), 0, 2), {"dim": 4}, r"dim must be an integer in -4\.\.3; got 4"),
    (([1, 2], 0, 2), {}, r"x must be a torch.Tensor; got list"),
]


@pytest.mark.parametrize(("args", "kwargs", "message"), BAD_SHARD)
def test_ring_shard_refuses_bad_input_in_one_line(args, kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        ring_shard(*args, **kwargs)
    assert "\n" not in str(info.value)


def test_ring_unshard_refuses_ragged_shards():
    with pytest.raises(ValueError, match=r"shards must have one shape"):
        ring_unshard([torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 6, 2)])
    with pytest.raises(ValueError, match=r"non-empty list"):
        ring_unshard([])


def test_ring_attention_needs_an_initialised_group():
    import flashviz

    q = torch.randn(1, 1, 8, 32, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"needs torch.distributed initialised"):
        flashviz.ring_attention(q, q, q)
    x = torch.randn(1, 1, 8, 4)
    assert torch.equal(flashviz.ring_shard(x, 1, 2), ring_shard(x, 1, 2))
    assert torch.equal(flashviz.ring_unshard([ring_shard(x, r, 2) for r in range(2)]), x)


# ----------------------------------------------------------------------------------------------------------
# The closed form and the simulation
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("world", "layout", "causal"), [(1, "zigzag", False), (2, "zigzag", True),
                                                         (3, "contiguous", True), (4, "zigzag", False),
                                                         (4, "contiguous", False)])  # fmt: skip
def test_simulated_ring_is_float64_attention(rng, world, layout, causal):
    N, D = 8 * chunk_count(world, layout), 16
    Q, K, V = (rng.standard_normal((N, D)).astype(np.float32) for _ in range(3))
    run = simulate(Q, K, V, world, causal, layout, scale=0.3)
    O, L = reference_attention(Q, K, V, 0.3, causal)
    np.testing.assert_allclose(run.O, O, rtol=0, atol=2e-6)
    np.testing.assert_allclose(run.L, L, rtol=0, atol=2e-6)
    c = run.chunk
    for step in run.steps:
        for dev in step.devices:
            assert dev.holds == (dev.device - step.index) % world
            assert dev.k_chunks == chunks(dev.holds, world, layout)
            kinds = {(w.q_chunk, w.k_chunk): w.kind for w in dev.work}
            assert kinds == {(b.q_chunk, b.k_chunk): b.kind for b in blocks(dev.device, step.index, world, layout,
                                                                             causal)}  # fmt: skip
        # every device sends the shard it holds to the next one, except at the last step
        want = [] if step.index == world - 1 else [(r, (r + 1) % world, (r - step.index) % world) for r in range(world)]
        assert [(t.src, t.dst, t.owner) for t in step.transfers] == want
    for dev in range(world):  # carries only grow in L (each merge adds keys); the last ones are the result
        Ls = np.stack([s.devices[dev].L for s in run.steps])  # (P, n)
        assert np.all(np.diff(Ls, axis=0) >= -1e-6)
        mine = np.concatenate([np.arange(i * c, (i + 1) * c) for i in chunks(dev, world, layout)])
        np.testing.assert_array_equal(run.steps[-1].devices[dev].L, run.L[mine])


@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_simulated_bytes_are_the_closed_form(rng, world):
    N, D = 4 * chunk_count(world, "zigzag"), 8
    Q, K, V = (rng.standard_normal((N, D)).astype(np.float32) for _ in range(3))
    run = simulate(Q, K, V, world, True, "zigzag")
    doc = model(N, D, world, True, "zigzag", element_bytes=4)
    for r in range(world):
        assert run.sent_bytes(r) == doc["forward"]["sent_bytes"] == (world - 1) * 2 * (N // world) * D * 4
    assert [sum(t.bytes for t in s.transfers if t.src == 0) for s in run.steps] == [
        s["sent_bytes"] for s in doc["forward"]["steps"]
    ]


@pytest.mark.parametrize("layout", ring_layout.LAYOUTS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 6])
def test_closed_form_compute_is_the_plan(layout, causal, world):
    """ring_model's FLOPs per step (the busiest rank's) and per rank, in closed form, against the layout plan's
    blocks counted one by one."""
    from flashviz.hardware import ring_model

    c, d = 4, 16
    plan = [
        [sum(block_flops(b.kind, c, d) for b in blocks(r, s, world, layout, causal)) for r in range(world)]
        for s in range(world)
    ]
    assert ring_model.step_flops(world, layout, causal, c, d) == [max(row) for row in plan]
    assert ring_model.rank_flops(world, layout, causal, c, d) == [rank_flops(r, world, layout, causal, c, d)
                                                                  for r in range(world)]  # fmt: skip


def test_the_model_does_no_work_per_rank():
    """At the largest N and P `compare --ring` takes, the closed form answers at once (no loop over ranks)."""
    from helpers import bounded_work

    n = (2**31 - 1) // 2048 * 2048
    doc, _ = bounded_work(model, n, 4096, 1024, True, max_lines=200_000)
    assert doc["forward"]["sent_bytes"] == 1023 * 2 * (n // 1024) * 4096 * 2


def test_closed_form_bytes_and_overlap_condition():
    B, H, N, D, P = 2, 3, 1024, 64, 4
    doc = model(N, D, P, causal=True, batch=B, heads=H, element_bytes=2, tflops=500.0, link_gb_s=100.0)
    n = N // P
    assert doc["forward"]["sent_bytes"] == (P - 1) * 2 * B * H * n * D * 2
    assert doc["backward"]["sent_bytes"] == (P - 1) * (2 * B * H * n * D * 2 + 2 * B * H * n * D * 4)
    assert doc["forward"]["transfers"] == P - 1 and doc["backward"]["transfers"] == 2 * (P - 1)
    assert doc["rank_flops"] == [doc["rank_flops"][0]] * P
    assert sum(doc["rank_flops"]) == doc["one_device"]["flops_forward"]
    # at the tokens per rank it names, every forward transfer hides; a shard of 2 fewer tokens per chunk does not
    need = doc["forward"]["min_shard_for_overlap"]
    just = model(P * (need + need % 2), D, P, causal=True, tflops=500.0, link_gb_s=100.0)
    short = model(P * (need - 2 + need % 2), D, P, causal=True, tflops=500.0, link_gb_s=100.0)
    assert just["forward"]["hidden"] and not short["forward"]["hidden"]
    with pytest.raises(ValueError, match=r"N must be a multiple of 8"):
        model(100, D, P)


# ----------------------------------------------------------------------------------------------------------
# On 2, 3 and 4 gloo processes
# ----------------------------------------------------------------------------------------------------------
CHUNK, D = 8, 32  # rows per chunk, head dimension: tiny, for the interpreter
# Each size runs a few (layout, mask) cases, so that together they cover both layouts with and without the mask
# and both layouts under the mask at two sizes (the FLOPs test), without running all four at every size.
WORLD_CASES = {
    2: ["zigzag-full", "zigzag-causal", "contiguous-causal"],
    3: ["zigzag-causal", "contiguous-full"],
    4: ["zigzag-full", "zigzag-causal", "contiguous-causal"],
}


def _inputs(world: int, heads: int = 1, chunk: int = CHUNK, dl: bool = False) -> dict:
    n = 2 * world * chunk
    made = {k: torch.randn(1, heads, n, D, dtype=torch.bfloat16) for k in ("q", "k", "v", "do")}
    if dl:
        made["dl"] = torch.randn(1, heads, n, dtype=torch.float32)
    return made


def _plan(world: int) -> dict:
    inputs = {"main": _inputs(world, heads=2), "lse": _inputs(world, dl=True)}
    cases = [
        {"name": name, "layout": name.split("-")[0], "causal": name.endswith("causal"), "inputs": "main"}
        for name in WORLD_CASES[world]
    ]
    if world == 2:
        cases.append({"name": "dL", "layout": "zigzag", "causal": True, "inputs": "lse"})  # L differentiated too
    if world == 2:
        bigger = _inputs(1, heads=2, chunk=CHUNK + 1)  # rank 1's shard two tokens longer: ragged
        cases.append({"name": "ragged", "layout": "zigzag", "causal": True, "inputs": "main",
                      "override": {1: {"q": bigger["q"], "k": bigger["k"], "v": bigger["v"]}}})  # fmt: skip
        odd = torch.randn(1, 2, 2 * CHUNK + 1, D, dtype=torch.bfloat16)
        cases.append({"name": "odd", "layout": "zigzag", "causal": False, "inputs": "main",
                      "override": {0: {"q": odd, "k": odd, "v": odd}, 1: {"q": odd, "k": odd, "v": odd}}})  # fmt: skip
        wrong = torch.randn(1, 2, 2 * CHUNK, D, dtype=torch.float16)
        cases.append({"name": "dtype", "layout": "zigzag", "causal": False, "inputs": "main",
                      "override": {1: {"q": wrong, "k": wrong, "v": wrong}}})  # fmt: skip
        cases.append({"name": "refused", "layout": "zigzag", "causal": False, "inputs": "main",
                      "override": {1: {"q": wrong}}})  # fmt: skip
    if world == 4:  # two rings in one job: global ranks 1, 2, 3 as group ranks 0, 1, 2; rank 0 alone
        inputs["three"] = _inputs(3)
        cases.append({"name": "groups", "layout": "zigzag", "causal": True, "inputs": "three",
                      "group": [[0], [1, 2, 3]]})  # fmt: skip
    return {"inputs": inputs, "cases": cases}


def _spawn(world: int, where: Path) -> tuple[dict, list[dict]]:
    """Spawn `world` processes on fresh inputs; the plan and every rank's results."""
    import torch.multiprocessing as mp

    seed = int.from_bytes(os.urandom(4), "little")
    print(f"torch seed for {world} processes: {seed}")
    torch.manual_seed(seed)
    plan = _plan(world)
    torch.save(plan, where / "plan.pt")
    sys.path.insert(0, str(Path(__file__).parent))  # the children import ring_worker from here
    try:
        import ring_worker

        mp.spawn(ring_worker.run, args=(world, str(where)), nprocs=world, join=True)
    finally:
        sys.path.remove(str(Path(__file__).parent))
    return plan, [torch.load(where / f"rank{r}.pt") for r in range(world)]


@pytest.fixture(scope="module")
def ring_runs(tmp_path_factory):
    """world -> (plan, results), each world spawned once, when a test first asks for it."""
    done: dict[int, tuple[dict, list[dict]]] = {}

    def get(world: int) -> tuple[dict, list[dict]]:
        if world not in done:
            done[world] = _spawn(world, tmp_path_factory.mktemp(f"ring{world}"))
        return done[world]

    return get


RUNS = [(w, name) for w in sorted(WORLD_CASES) for name in WORLD_CASES[w]] + [(2, "dL")]


def _case(plan: dict, name: str) -> dict:
    return next(c for c in plan["cases"] if c["name"] == name)


def _whole(results: list[dict], name: str, layout: str, ranks=None) -> dict:
    ranks = range(len(results)) if ranks is None else ranks
    got = [results[r][name] for r in ranks]
    got.sort(key=lambda g: g["rank"])
    return {k: ring_unshard([g["out"][k] for g in got], layout) for k in got[0]["out"]}


def _judge(ours: dict, inputs: dict, causal: bool, partials: int):
    """attention_reference.judge, with the rounding of the `partials` bf16 gradients the ring sums into each dK, dV
    on top (at P = 2 a causal zigzag run measured dV at 2.05x plain attention's error, over the bare 2x)."""
    from flashviz.ops.reference import judge

    q, k, v, do = (inputs[x] for x in ("q", "k", "v", "do"))
    return judge(ours, q, k, v, causal, D**-0.5, do, dl=inputs.get("dl"), partials=partials)


def _partials(world: int, layout: str) -> int:
    """How many bf16 gradients of one K/V element a ring of `world` sums: one per hop and chunk held."""
    return world * len(chunks(0, world, layout))


@pytest.mark.parametrize(("world", "case"), RUNS)
def test_forward_and_backward_match_float64(ring_runs, world, case):
    plan, results = ring_runs(world)
    spec = _case(plan, case)
    verdict = _judge(
        _whole(results, case, spec["layout"]),
        plan["inputs"][spec["inputs"]],
        spec["causal"],
        _partials(world, spec["layout"]),
    )
    assert verdict.ok, verdict.failures()


def test_two_rings_in_one_job_use_their_groups(ring_runs):
    """On 4 processes, global ranks 1, 2, 3 form a ring of three (group ranks 0, 1, 2) and rank 0 a ring of one."""
    plan, results = ring_runs(4)
    inputs = plan["inputs"]["three"]
    assert [results[r]["groups"]["world"] for r in range(4)] == [1, 3, 3, 3]
    verdict = _judge(_whole(results, "groups", "zigzag", ranks=[1, 2, 3]), inputs, True, _partials(3, "zigzag"))
    assert verdict.ok, verdict.failures()
    # rank 0, alone, ran the whole ring of one on its shard: group rank 0 of 1 holds the whole sequence
    verdict = _judge(dict(results[0]["groups"]["out"]), inputs, True, _partials(1, "zigzag"))
    assert verdict.ok, verdict.failures()
    assert results[0]["groups"]["forward_batches"] == []


@pytest.mark.parametrize(("world", "case"), RUNS)
def test_bytes_sent_are_the_closed_form(ring_runs, world, case):
    """Bytes counted by wrapping batch_isend_irecv, each batch and in all, against flashviz.hardware.ring_model."""
    plan, results = ring_runs(world)
    spec = _case(plan, case)
    q = plan["inputs"][spec["inputs"]]["q"]
    B, H, N, d = q.shape
    doc = model(N, d, world, spec["causal"], spec["layout"], batch=B, heads=H, element_bytes=q.element_size())
    forward = [s["sent_bytes"] for s in doc["forward"]["steps"] if s["sent_bytes"]]
    backward = [s["sent_bytes"] for s in doc["backward"]["steps"] if s["sent_bytes"]] + [
        doc["backward"]["tail"]["sent_bytes"]
    ]
    for r in range(world):
        assert results[r][case]["forward_batches"] == forward
        assert results[r][case]["backward_batches"] == backward
    assert sum(forward) == doc["forward"]["sent_bytes"] == (world - 1) * 2 * B * H * (N // world) * d * 2


@pytest.mark.parametrize(
    "world", [w for w, names in WORLD_CASES.items() if {"zigzag-causal", "contiguous-causal"} <= set(names)]
)
def test_zigzag_ranks_compute_the_same(ring_runs, world):
    """FLOPs of the local calls each rank really made (the kernel calls counted in the worker): equal across ranks
    under zigzag, equal to the plan's count; under contiguous the last rank does more than one chunk's more."""
    plan, results = ring_runs(world)
    q = plan["inputs"]["main"]["q"]
    H, N = q.shape[1], q.shape[2]

    def flops(calls):
        return sum(4 * H * d * (nq * nk if not causal else nq * (nq + 1) // 2) for nq, nk, d, causal in calls)

    zig = [flops(results[r]["zigzag-causal"]["calls"]) for r in range(world)]
    c = N // (2 * world)
    assert max(zig) - min(zig) <= H * block_flops(FULL, c, D)
    assert zig == [H * rank_flops(r, world, "zigzag", True, c, D) for r in range(world)]
    contiguous = [flops(results[r]["contiguous-causal"]["calls"]) for r in range(world)]
    assert contiguous == [H * rank_flops(r, world, "contiguous", True, 2 * c, D) for r in range(world)]
    assert max(contiguous) - min(contiguous) > H * block_flops(FULL, c, D)


@pytest.mark.parametrize(
    ("case", "messages"),
    [
        ("ragged", [r"every rank must pass one shape \(B, H, N/P, D\): rank 0 has \(1, 2, 16, 32\), rank 1 has "
                    r"\(1, 2, 18, 32\) \(ragged shards are refused", r"rank 1 has \(1, 2, 18, 32\), rank 0 has"]),
        ("odd", [r"its N must be even; got N = 17 \(ragged shards are refused"] * 2),
        ("dtype", [r"every rank must pass one dtype: rank 0 has torch.bfloat16, rank 1 has torch.float16",
                   r"every rank must pass one dtype: rank 1 has torch.float16, rank 0 has torch.bfloat16"]),
        ("refused", [r"rank 1 of the group refused its inputs \(its error says why\); every rank stops",
                     r"q, k and v must have one dtype"]),
    ],
)  # fmt: skip
def test_refused_on_every_rank_in_one_line(ring_runs, case, messages):
    """On 2 processes: ragged shards (one rank's longer, or an odd zigzag shard), mixed dtypes, one rank's bad
    input: each rank raises one line, and none hangs waiting for a peer that stopped."""
    import re

    _, results = ring_runs(2)
    for r, message in enumerate(messages):
        error = results[r][case].get("error")
        assert error is not None and re.search(message, error), error
        assert "\n" not in error
