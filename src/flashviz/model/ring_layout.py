"""Where the sequence lives on a ring of P devices, and what each device computes at each step (pure; no torch).

The sequence of N tokens is cut into chunks of equal length. `contiguous`: P chunks, rank r holds chunk r.
`zigzag`: 2P chunks, rank r holds chunks r and 2P-1-r, so that under a causal mask every rank has one early and
one late chunk and does the same work. A rank keeps its Q rows for the whole run; at step s it holds the K/V
shard of rank (r - s) mod P, which came from rank r-1 and goes on to rank r+1 (rotation: after P-1 transfers
every rank has seen every shard).

Every (Q chunk, K chunk) pair is one `Block`: "full" (every key visible), "causal" (the same chunk: key <= query
inside it) or "skip" (every key after every query: nothing to compute). `calls` groups a step's blocks into as
few same-shape attention calls as the layout allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from flashviz.model.echo import cut

LAYOUTS = ("zigzag", "contiguous")
FULL, CAUSAL, SKIP = "full", "causal", "skip"


def check_layout(layout: object) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}; got {cut(str(layout))!r}")
    return str(layout)


def chunk_count(world: int, layout: str) -> int:
    """How many chunks the sequence is cut into: 2P (zigzag) or P (contiguous)."""
    return 2 * world if check_layout(layout) == "zigzag" else world


def chunks(rank: int, world: int, layout: str) -> tuple[int, ...]:
    """The global chunk indices rank `rank` holds, in the order its shard stores them (increasing)."""
    return (rank, 2 * world - 1 - rank) if check_layout(layout) == "zigzag" else (rank,)


def owner(rank: int, step: int, world: int) -> int:
    """Whose K/V shard rank `rank` holds at step `step`."""
    return (rank - step) % world


@dataclass(frozen=True)
class Block:
    """One (Q chunk, K chunk) pair at one step: `q` and `k` index the rank's own chunks and the held shard's
    chunks (0 or 1 under zigzag); `q_chunk` and `k_chunk` are the global chunk indices."""

    q: int
    k: int
    q_chunk: int
    k_chunk: int
    kind: str  # FULL, CAUSAL or SKIP


def blocks(rank: int, step: int, world: int, layout: str, causal: bool) -> list[Block]:
    """Every block of rank `rank` at step `step`, in (q, k) order."""
    mine, held = chunks(rank, world, layout), chunks(owner(rank, step, world), world, layout)
    out = []
    for a, qc in enumerate(mine):
        for b, kc in enumerate(held):
            kind = FULL if not causal or qc > kc else CAUSAL if qc == kc else SKIP
            out.append(Block(a, b, qc, kc, kind))
    return out


@dataclass(frozen=True)
class Call:
    """One attention call: Q chunks [q0, q1) of the rank's shard against chunks [k0, k1) of the held shard
    (q1 - q0 == k1 - k0, so that Q, K and V have one shape), causal or not."""

    q0: int
    q1: int
    k0: int
    k1: int
    causal: bool


def calls(step_blocks: list[Block], per_shard: int) -> list[Call]:
    """The step's blocks as attention calls: one call on the whole shard when every block is full, or when the
    blocks are the shard's own causal pattern (full below the diagonal, causal on it, skipped above: the
    chunks are stored in increasing order, so the shard's own causal mask is the global one); one call per
    computed block otherwise."""
    kinds = {(b.q, b.k): b.kind for b in step_blocks}
    whole = [(a, b) for a in range(per_shard) for b in range(per_shard)]
    if all(kinds[p] == FULL for p in whole):
        return [Call(0, per_shard, 0, per_shard, False)]
    diagonal = {p: FULL if p[0] > p[1] else CAUSAL if p[0] == p[1] else SKIP for p in whole}
    if kinds == diagonal:
        return [Call(0, per_shard, 0, per_shard, True)]
    return [Call(b.q, b.q + 1, b.k, b.k + 1, b.kind == CAUSAL) for b in step_blocks if b.kind != SKIP]


def block_flops(kind: str, rows: int, d: int) -> int:
    """Matmul FLOPs of one block of `rows` x `rows` (QK^T and PV, 2 each per multiply-add): 4 rows^2 D, the
    causal diagonal counting only its rows(rows+1)/2 visible pairs."""
    pairs = {FULL: rows * rows, CAUSAL: rows * (rows + 1) // 2, SKIP: 0}[kind]
    return 4 * pairs * d


def rank_flops(rank: int, world: int, layout: str, causal: bool, chunk_rows: int, d: int) -> int:
    """Forward matmul FLOPs one rank does over the whole ring, per head."""
    return sum(
        block_flops(b.kind, chunk_rows, d) for step in range(world) for b in blocks(rank, step, world, layout, causal)
    )
