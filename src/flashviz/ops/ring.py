"""flashviz.ring_attention: attention over a sequence split across the ranks of a torch.distributed group.

Each rank keeps its shard of Q for the whole run; the K/V shards travel around the ring (rank r sends to r+1 and
receives from r-1, `batch_isend_irecv`), the transfer of the next shard posted before the compute on the one held,
so that the two overlap (on a GPU the transfers are issued from a stream of their own and the compute stream waits
for them only where it reads the received shard; on the CPU gloo's threads move them while the interpreter
computes). Each step's partial attention (O, L) comes from flashviz.attention and is merged into the rank's fp32
carries by the log-sum-exp rule (flashviz.model.merge). Causal attention uses the zigzag layout
(flashviz.model.ring_layout)
so that every rank does the same work.

Backward (a torch.autograd.Function): K/V go around the ring again; at each step the kernels' backward, given the
merged O and L (so that each block's P = exp(S - L) is already the final softmax), yields the block's dQ (kept)
and dK, dV for the shard held, which are added to a fp32 buffer that travels with it: after P-1 hops the buffer
reaches the shard's owner holding the sum of every other rank's dK, dV.

Ragged shards are refused: every rank must pass one shape (B, H, N/P, D), N/P even under zigzag; ring_shard
refuses a sequence whose length is not a multiple of the layout's chunk count. Pad the sequence instead.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist

from flashviz.algos.fa2_triton import launcher as fa2_launcher
from flashviz.model.merge import merge
from flashviz.model.ring_layout import LAYOUTS, blocks, calls, check_layout, chunk_count, chunks
from flashviz.ops import checks
from flashviz.runtime.tma import tma_ready


# ----------------------------------------------------------------------------------------------------------
# Layout of a whole tensor
# ----------------------------------------------------------------------------------------------------------
def _check_world(rank: object, world: object) -> tuple[int, int]:
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise ValueError(f"world must be an integer >= 1; got {checks._cut(repr(world))}")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world:
        raise ValueError(f"rank must be an integer in 0..{world - 1}; got {checks._cut(repr(rank))}")
    return rank, world


def _check_dim(x: torch.Tensor, dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim() <= dim < x.dim():
        raise ValueError(f"dim must be an integer in {-x.dim()}..{x.dim() - 1}; got {checks._cut(repr(dim))}")
    return dim % x.dim()


def ring_shard(x: torch.Tensor, rank: int, world: int, layout: str = "zigzag", dim: int = 2) -> torch.Tensor:
    """Rank `rank`'s shard of the whole tensor `x` (the sequence along `dim`) in `layout`, as ring_attention
    expects it: contiguous -- chunk `rank` of `world`; zigzag -- chunks `rank` and 2*world-1-rank of 2*world,
    concatenated. The length along `dim` must be a multiple of the chunk count (ragged shards are refused)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor; got {checks._cut(type(x).__name__)}")
    rank, world = _check_world(rank, world)
    layout = check_layout(layout)
    dim = _check_dim(x, dim)
    n, parts = x.shape[dim], chunk_count(world, layout)
    if n % parts:
        raise ValueError(
            f"the sequence (dim {dim}) has {n} tokens; layout {layout} on {world} ranks cuts it into {parts} equal "
            f"chunks, so it must be a multiple of {parts} (ragged shards are refused: pad the sequence)"
        )
    c = n // parts
    return torch.cat([x.narrow(dim, i * c, c) for i in chunks(rank, world, layout)], dim)


def ring_unshard(shards: list[torch.Tensor], layout: str = "zigzag", dim: int = 2) -> torch.Tensor:
    """The whole tensor from every rank's shard, in rank order (the inverse of ring_shard)."""
    if not isinstance(shards, (list, tuple)) or not shards or not all(isinstance(s, torch.Tensor) for s in shards):
        raise ValueError("shards must be a non-empty list of torch.Tensor, one per rank, in rank order")
    layout = check_layout(layout)
    dim = _check_dim(shards[0], dim)
    world = len(shards)
    if any(s.shape != shards[0].shape for s in shards):
        shapes = ", ".join(str(tuple(s.shape)) for s in shards[:4])
        raise ValueError(f"shards must have one shape; got {checks._cut(shapes, 80)}")
    per = len(chunks(0, world, layout))
    if shards[0].shape[dim] % per:
        raise ValueError(f"a {layout} shard holds {per} chunks: its length along dim {dim} must be a multiple of {per}")
    c = shards[0].shape[dim] // per
    pieces: dict[int, torch.Tensor] = {}
    for rank, s in enumerate(shards):
        for j, i in enumerate(chunks(rank, world, layout)):
            pieces[i] = s.narrow(dim, j * c, c)
    return torch.cat([pieces[i] for i in range(chunk_count(world, layout))], dim)


# ----------------------------------------------------------------------------------------------------------
# The ring
# ----------------------------------------------------------------------------------------------------------
class Ring:
    """One rank's place in the group: its neighbours, and the stream its transfers are issued from (on a GPU)."""

    def __init__(self, group: Any, device: torch.device):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        self.next = (self.rank + 1) % self.world
        self.prev = (self.rank - 1) % self.world
        self.stream = torch.cuda.Stream(device=device) if device.type == "cuda" else None

    def start(self, sends: list[torch.Tensor], recvs: list[torch.Tensor]) -> list:
        """Post `sends` to the next rank and `recvs` from the previous one, in one batch; return the requests."""
        ops = [dist.P2POp(dist.isend, t, group=self.group, group_peer=self.next) for t in sends]
        ops += [dist.P2POp(dist.irecv, t, group=self.group, group_peer=self.prev) for t in recvs]
        if not ops:
            return []
        if self.stream is None:
            return dist.batch_isend_irecv(ops)
        self.stream.wait_stream(torch.cuda.current_stream())  # what is sent has been written
        with torch.cuda.stream(self.stream):
            return dist.batch_isend_irecv(ops)

    def wait(self, requests: list) -> None:
        """Block (CPU) or make the compute stream wait (GPU) until the posted transfers are done."""
        for r in requests:
            r.wait()
        if self.stream is not None and requests:
            torch.cuda.current_stream().wait_stream(self.stream)


# ----------------------------------------------------------------------------------------------------------
# Local compute: flashviz.attention's kernels on one block
# ----------------------------------------------------------------------------------------------------------
def _local_forward(q, k, v, causal: bool, scale: float):
    """(O, L) of q against one K/V block: flashviz.attention, keyword arguments only."""
    from flashviz.ops.attention import attention

    return attention(q=q, k=k, v=v, causal=causal, scale=scale, return_lse=True)


def _local_backward(q, k, v, o, lse, do, dlse, causal: bool, scale: float):
    """dQ, dK, dV of one block given the merged O and L of q's rows (and their incoming gradients): the kernels'
    own backward, which recomputes P = exp(S - L) -- with the merged L, the block's share of the final softmax."""
    run = fa2_launcher.launcher()
    q, k, v, o, do = (tma_ready(t) for t in (q, k, v, o, do))
    return run.backward(q, k, v, o, lse, do, dlse, causal, scale)


def _rows(t: torch.Tensor, call_q0: int, call_q1: int, c: int) -> torch.Tensor:
    return t[:, :, call_q0 * c : call_q1 * c]


def _forward(ring: Ring, q, k, v, causal: bool, scale: float, layout: str):
    """The merged (O, L) of this rank's Q rows, fp32, (B, H, n, D) and (B, H, n). The `# step:` regions are what
    the viewer's ring steps show (algos/ring: its engine runs this loop over P simulated devices); comments only."""
    B, H, n, D = q.shape
    per = len(chunks(ring.rank, ring.world, layout))
    c = n // per  # rows per chunk
    # step: init
    o = torch.zeros((B, H, n, D), dtype=torch.float32, device=q.device)
    lse = torch.full((B, H, n), -math.inf, dtype=torch.float32, device=q.device)
    kv = torch.stack((k, v))  # (2, B, H, n, D): the shard held, one buffer per transfer
    # end step
    for step in range(ring.world):
        # step: send
        last = step == ring.world - 1
        incoming = None if last else torch.empty_like(kv)
        requests = ring.start([] if last else [kv], [] if incoming is None else [incoming])
        # end step
        for call in calls(blocks(ring.rank, step, ring.world, layout, causal), per):
            # step: attend
            qs = _rows(q, call.q0, call.q1, c)  # (B, H, rows, D)
            ks, vs = _rows(kv[0], call.k0, call.k1, c), _rows(kv[1], call.k0, call.k1, c)
            o_b, lse_b = _local_forward(qs, ks, vs, call.causal, scale)
            # end step
            # step: merge
            rows = slice(call.q0 * c, call.q1 * c)
            o[:, :, rows], lse[:, :, rows] = merge(o[:, :, rows], lse[:, :, rows], o_b.float(), lse_b)
            # end step
        # step: wait
        ring.wait(requests)
        if incoming is not None:
            kv = incoming
        # end step
    # step: finish
    return o, lse
    # end step


def _backward(ring: Ring, q, k, v, o, lse, do, dlse, causal: bool, scale: float, layout: str):
    """dQ, dK, dV (fp32) of this rank's shards. The dK, dV buffer for a shard starts at the rank that holds it at
    step 1, is sent on at the start of each later step (its transfer under that step's compute) and, after the
    last step, reaches the owner; the owner's own share (step 0) waits for it at home."""
    B, H, n, D = q.shape
    per = len(chunks(ring.rank, ring.world, layout))
    c = n // per
    dq = torch.zeros((B, H, n, D), dtype=torch.float32, device=q.device)
    kv = torch.stack((k, v))  # (2, B, H, n, D)
    own: torch.Tensor | None = None  # this rank's share of its own dK, dV: (2, B, H, n, D) fp32
    travelling: torch.Tensor | None = None  # the dK, dV buffer of the shard held at the previous step, to send on
    for step in range(ring.world):
        sends: list[torch.Tensor] = []
        recvs: list[torch.Tensor] = []
        incoming_kv = incoming_dkv = None
        if step < ring.world - 1:
            incoming_kv = torch.empty_like(kv)
            sends.append(kv)
            recvs.append(incoming_kv)
        if step >= 2:
            assert travelling is not None  # made at step 1
            incoming_dkv = torch.empty_like(travelling)
            sends.append(travelling)
            recvs.append(incoming_dkv)
        requests = ring.start(sends, recvs)
        share = torch.zeros((2, B, H, n, D), dtype=torch.float32, device=q.device)  # dK, dV of the shard held
        for call in calls(blocks(ring.rank, step, ring.world, layout, causal), per):
            rows, cols = slice(call.q0 * c, call.q1 * c), slice(call.k0 * c, call.k1 * c)
            dq_b, dk_b, dv_b = _local_backward(
                q[:, :, rows], kv[0][:, :, cols], kv[1][:, :, cols], o[:, :, rows],
                lse[:, :, rows].contiguous(), do[:, :, rows],
                None if dlse is None else dlse[:, :, rows].contiguous(), call.causal, scale,
            )  # fmt: skip
            dq[:, :, rows] += dq_b.float()
            share[0][:, :, cols] += dk_b.float()
            share[1][:, :, cols] += dv_b.float()
        ring.wait(requests)
        if step == 0:
            own = share
        else:
            travelling = share if incoming_dkv is None else incoming_dkv.add_(share)
        if incoming_kv is not None:
            kv = incoming_kv
    assert own is not None
    if travelling is not None:  # world > 1: the last hop brings this rank's shard home
        home = torch.empty_like(travelling)
        ring.wait(ring.start([travelling], [home]))
        own += home
    return dq, own[0], own[1]


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, ring, causal, scale, layout):
        o32, lse = _forward(ring, q, k, v, causal, scale, layout)
        o = o32.to(q.dtype)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.ring, ctx.causal, ctx.scale, ctx.layout = ring, causal, scale, layout
        ctx.set_materialize_grads(False)
        return o, lse

    @staticmethod
    def backward(ctx, do, dlse):
        q, k, v, o, lse = ctx.saved_tensors
        do = torch.zeros_like(o) if do is None else do
        dlse = None if dlse is None else dlse.contiguous()
        dq, dk, dv = _backward(ctx.ring, q, k, v, o, lse, do, dlse, ctx.causal, ctx.scale, ctx.layout)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None, None


# ----------------------------------------------------------------------------------------------------------
# Checks: the same verdict on every rank, so that no rank waits on a peer that has stopped
# ----------------------------------------------------------------------------------------------------------
def _local_problem(q, k, v, causal, scale, layout, return_lse) -> str | None:
    try:
        checks.check_inputs(q, k, v, causal, scale)
        if not isinstance(return_lse, bool):
            raise ValueError(f"return_lse must be True or False; got {checks._cut(repr(return_lse))}")
        check_layout(layout)
    except ValueError as exc:
        return str(exc)
    if layout == "zigzag" and q.shape[2] % 2:
        return (
            f"a zigzag shard holds two chunks of equal length: its N must be even; got N = {q.shape[2]} "
            "(ragged shards are refused: pad the sequence to a multiple of 2P)"
        )
    return None


def _agree(group: Any, rank: int, world: int, q, problem: str | None, causal, scale, layout) -> None:
    """All-gather every rank's shape, dtype, flags and verdict; raise one line on every rank if any is refused or
    the ranks disagree (ragged shards, dtypes, causal, scale, layout)."""
    backend = str(dist.get_backend(group))  # "gloo", "nccl" or "cpu:gloo,cuda:nccl"
    device = torch.device("cpu") if "gloo" in backend else torch.device("cuda", torch.cuda.current_device())
    fine = problem is None
    shape = list(q.shape) if fine else [0, 0, 0, 0]
    dtype = checks.SUPPORTED_DTYPES.index(q.dtype) if fine else -1
    resolved = (1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)) if fine else 0.0
    layout_i = LAYOUTS.index(layout) if fine else -1
    mine = torch.tensor([*shape, dtype, float(causal is True), resolved, layout_i, float(not fine)],
                        dtype=torch.float64, device=device)  # fmt: skip
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine, group=group)
    rows = [t.tolist() for t in every]
    if problem is not None:
        raise ValueError(problem)
    refused = [r for r, row in enumerate(rows) if row[-1]]
    if refused:
        raise ValueError(f"rank {refused[0]} of the group refused its inputs (its error says why); every rank stops")
    for name, at in (("shape (B, H, N/P, D)", slice(0, 4)), ("dtype", slice(4, 5)), ("causal", slice(5, 6)),
                     ("scale", slice(6, 7)), ("layout", slice(7, 8))):  # fmt: skip
        values = [tuple(row[at]) for row in rows]
        if len(set(values)) > 1:
            other = next(r for r, x in enumerate(values) if x != values[rank])
            shown = {
                "dtype": lambda x: str(checks.SUPPORTED_DTYPES[int(x[0])]),
                "layout": lambda x: LAYOUTS[int(x[0])],
                "causal": lambda x: str(bool(x[0])),
            }.get(name, lambda x: str(tuple(int(a) for a in x)) if len(x) > 1 else f"{x[0]:g}")
            raise ValueError(
                f"every rank must pass one {name}: rank {rank} has {shown(values[rank])}, rank {other} has "
                f"{shown(values[other])}" + (" (ragged shards are refused: pad the sequence)" if at.start == 0 else "")
            )


def ring_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    group: Any = None,
    causal: bool = False,
    scale: float | None = None,
    layout: str = "zigzag",
    return_lse: bool = False,
):
    """Softmax attention over a sequence split across the ranks of `group`, K/V shards passed around the ring.

    q, k, v: this rank's shards, (B, H, N/P, D), bfloat16 or float16, as flashviz.attention takes them (CUDA
        tensors with NCCL; CPU tensors with gloo under TRITON_INTERPRET=1), cut by `ring_shard(x, rank, P,
        layout)`; every rank passes one shape (ragged shards are refused).
    group: the torch.distributed process group (None: the default group); P is its size, ranks are its ranks.
    causal: query token t attends to key tokens <= t of the whole sequence.
    scale: multiplies the scores; None means 1/sqrt(D).
    layout: "zigzag" (rank r holds chunks r and 2P-1-r of 2P: causal work balanced) or "contiguous" (chunk r
        of P). Must match how the shards were cut.
    return_lse: also return L = log(sum_c exp(scale * q_t . k_c)) over the whole sequence, (B, H, N/P) float32.

    Returns this rank's shard of O, (B, H, N/P, D) in the input dtype, or (O, L). Differentiable in q, k, v
    (through O and L); every rank of the group must call it, and its backward, together.
    """
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError("ring_attention needs torch.distributed initialised: call init_process_group first")
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise ValueError("ring_attention: this process is not a member of `group`")
    problem = _local_problem(q, k, v, causal, scale, layout, return_lse)
    _agree(group, rank, world, q, problem, causal, scale, layout)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    ring = Ring(group, q.device)
    o, lse = _RingAttention.apply(q, k, v, ring, causal, scale, layout)
    return (o, lse) if return_lse else o
