"""Flash-Decoding (split-KV) forward: FA2's loop with the K/V sequence cut into S chunks, each run by its own block
(grid Tr x S x B*H) that writes a partial Oi and L = mi + log li to HBM, then a combine kernel that merges the S
partials with the log-sum-exp rule (flashviz.model.merge). The split buys blocks when N of queries is small."""

from __future__ import annotations

from flashviz.model.config import Config, ConfigError

from ..base import Algorithm, Idea
from . import decoding, engine, expect, flops, gpu, picture, traffic, words
from .record import CHUNK, KERNEL, NAME, splits

IDEA = Idea(
    summary="FA2 over chunks of the keys in parallel, partials merged by log-sum-exp",
    body=(
        r"FA2 gives each block of queries one CUDA block, which streams all $T_c$ tiles of $K, V$. When there are "
        r"few queries (decoding: $N_q = 1$) that is one block per head, and most of the GPU's SMs sit idle.",
        rf"Flash-Decoding cuts the tiles into $S = \lceil T_c / {CHUNK} \rceil$ chunks. Block $(i, s)$ runs FA2's "
        r"loop over chunk $s$ only and writes a partial result, normalised over its own keys: $O^{(s)}_i = O_i / "
        r"\ell_i$ and $L^{(s)}_i = m_i + \log \ell_i$.",
        r"$$L = \log \textstyle\sum_s e^{L^{(s)}},\qquad O = \textstyle\sum_s e^{L^{(s)} - L}\, O^{(s)}$$",
        r"A second kernel merges the $S$ partials of each row with this log-sum-exp rule, two at a time (the rule is "
        r"associative; ring attention merges across GPUs the same way). The partials cost $2 S N (D + 1)$ extra "
        r"numbers through HBM; in return the grid has $T_r \times S \times B H$ blocks.",
    ),
)


def split_values(cfg: Config, recorded: tuple[int, ...]) -> int:
    """The numbers in a trace: inputs, outputs and partials, and per recorded block of Q the split blocks' tiles
    (Kj Vj, Sij twice, Oi and PV, the carries) and the combine's merges (Oc, Os, weights)."""
    s = splits(cfg.n, cfg.bc)
    per_tile = 2 * cfg.bc * cfg.d + 2 * cfg.br * cfg.bc + 2 * cfg.br * cfg.d + 24 * cfg.br
    per_merge = 2 * cfg.br * cfg.d + 12 * cfg.br
    return (4 + 2 * s) * cfg.n * cfg.d + len(recorded) * (cfg.tc * per_tile + s * per_merge)


def no_causal(cfg: Config) -> None:
    if cfg.causal:
        raise ConfigError("causal", f"is not supported by {NAME} (the decoding split keeps no causal mask); drop it")


ALGORITHM = Algorithm(
    name=NAME,
    title="Flash-Decoding (split-KV) forward",
    short="split-KV",
    kernel=KERNEL,
    kernel_name="fa2_splitkv",
    inputs=("Q", "K", "V"),
    outputs=("O", "L"),
    tensors={
        "Q": "input",
        "K": "input",
        "V": "input",
        "Opart": "intermediate (the S chunks' partial outputs, S x N x D)",
        "Lpart": "intermediate (the S chunks' log-sum-exps, S x N)",
        "O": "output",
        "L": "output (log-sum-exp, for the backward pass)",
    },
    causal=False,
    direction="forward",
    grid="Tr",
    idea=IDEA,
    engine=engine,
    traffic=traffic,
    expect=expect,
    picture=picture,
    words=words,
    flops=flops,
    gpu=gpu.SPEC,
    trace_values=split_values,
    launch_check=no_causal,
    launch_rule="no --causal; S = ceil(Tc / 2) chunks of K/V",
    reread="mostly K and V, which every block of Q re-reads, and Q, which every chunk re-reads",
    compare_table=decoding.table,
    example={"n": 16, "d": 4, "br": 4, "bc": 4},
    example_why="N = 16 with Bc = 4 gives Tc = 4 tiles, so S = 2 chunks of 2 tiles: the split and the merge both show",
)
