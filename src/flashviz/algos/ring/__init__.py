"""Ring attention (issue 23): one forward spread over P devices. Each keeps its block of Q; the K/V shards travel
round the ring, each device running attention on the shard it holds while it passes it on, and merging each partial
(O, L) into its carries with the log-sum-exp rule. The code each step shows is flashviz.ring_attention's own loop
(flashviz/ops/ring.py); the engine runs it over P simulated devices."""

from __future__ import annotations

from flashviz.model.config import DEVICES, LIMITS, Config, ConfigError
from flashviz.model.ring_layout import chunk_count

from ..base import Algorithm, Idea
from . import engine, expect, flops, gpu, picture, traffic, words
from .record import KERNEL, KERNEL_NAME, NAME

IDEA = Idea(
    summary="the sequence split across P devices; K/V shards go round a ring; partials merged by log-sum-exp",
    body=(
        r"A sequence too long for one GPU is split across $P$ devices. Device $r$ keeps its rows of $Q$ for the "
        r"whole run; the shards of $K$ and $V$ travel round a ring: at step $s$ device $r$ holds the shard of device "
        r"$(r - s) \bmod P$, sends it on to device $r + 1$ and computes on it while it travels.",
        r"Each call returns a partial result normalised over the keys it saw, $O_b$, and their log-sum-exp $L_b$. "
        r"The device merges it into its carries $(O_i, L_i)$, which start at $(0, -\infty)$:",
        r"$$L' = \log\left(e^{L_i} + e^{L_b}\right),\qquad O_i \leftarrow e^{L_i - L'}\, O_i + e^{L_b - L'}\, O_b$$",
        r"This is the seed's rescaling of $m_i, \ell_i, O_i$ one level up (split-KV decoding's combine merges the "
        r"same way). After $P - 1$ transfers every device has seen every shard and holds its rows' exact attention.",
        r"Under a causal mask a contiguous layout leaves device 0 almost idle and device $P-1$ with all the work; "
        r"the zigzag layout gives device $r$ chunks $r$ and $2P-1-r$ of $2P$, one early and one late, so that every "
        r"device computes the same number of blocks.",
    ),
)


TILE_MAX = LIMITS["br"][1]  # Br = Bc = N/P: a device's shard is one block of the engine's largest
MAX_N = TILE_MAX * DEVICES[1]  # the longest sequence the most devices hold


def working_devices(n: int, layout: str) -> list[int]:
    """The ring sizes P that run N: N a multiple of the layout's chunks and N/P no larger than a block."""
    return [P for P in range(DEVICES[0], DEVICES[1] + 1) if n % chunk_count(P, layout) == 0 and n // P <= TILE_MAX]


def launch_check(cfg: Config) -> None:
    """Its launch: Br = Bc = N/P (device r is block r of Q and the shard it holds is one tile), N a multiple of the
    layout's chunks (2P zigzag, P contiguous), N/P even under zigzag. Each refusal names a launch that runs."""
    P, parts = cfg.devices, chunk_count(cfg.devices, cfg.layout)
    others = working_devices(cfg.n, cfg.layout)
    instead = f"; or devices = {others[0]} (br = bc = {cfg.n // others[0]})" if others else ""
    if cfg.n % parts:
        raise ConfigError(
            "n",
            f"must be a multiple of {parts} for {NAME} on {P} devices ({cfg.layout} cuts the sequence into {parts} "
            f"equal chunks; ragged shards are refused, as flashviz.ring_attention refuses them) (got {cfg.n})"
            + instead,
        )
    shard = cfg.n // P
    if shard > TILE_MAX:
        fits = f"devices = {others[0]} (br = bc = {cfg.n // others[0]})" if others else f"n <= {TILE_MAX * P}"
        raise ConfigError(
            "n",
            f"N/P = {cfg.n}/{P} = {shard} rows per device, more than a block of br = bc <= {TILE_MAX} holds, for "
            f"{NAME} (got {cfg.n}); use {fits}",
        )
    for field, value in (("br", cfg.br), ("bc", cfg.bc)):
        if value != shard:
            other = cfg.n // value if value and cfg.n % value == 0 else 0
            also = f", or devices = {other}" if other in others else ""
            raise ConfigError(
                field,
                f"must be N/P = {cfg.n}/{P} = {shard} for {NAME}: each device keeps one block of Q and holds one K/V "
                f"shard of N/P rows (got {value}); set br = bc = {shard}{also}",
            )


def ring_values(cfg: Config, recorded: tuple[int, ...]) -> int:
    """The numbers in a trace: the inputs and outputs, per recorded device and step its working set's snapshots, and
    the `devices` key's carries (every device's O and L after every merge)."""
    P, n, d = cfg.devices, cfg.br, cfg.d
    calls = traffic.steps(cfg.n, d, cfg.br, cfg.bc, cfg.causal, cfg.layout) - P * (2 + 2 * P)  # two per call
    per_device = (2 + 2 * P) * 2 * n * d + calls // P * (3 * n * d + 6 * n)
    return 4 * cfg.n * d + len(recorded) * per_device + (P + calls // 2) * (n * d + n)


ALGORITHM = Algorithm(
    name=NAME,
    title="Ring attention across P devices (forward)",
    short="ring",
    kernel=KERNEL,
    kernel_name=KERNEL_NAME,
    inputs=("Q", "K", "V"),
    outputs=("O", "L"),
    tensors={
        "Q": "input (the devices' shards, in the layout's order)",
        "K": "input (the devices' shards, in the layout's order)",
        "V": "input (the devices' shards, in the layout's order)",
        "O": "output (each device's rows, in the layout's order)",
        "L": "output (log-sum-exp, for the backward pass)",
    },
    causal=True,
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
    trace_values=ring_values,
    launch_check=launch_check,
    max_n=MAX_N,
    max_n_reason=f"runs Br = Bc = N/P <= {TILE_MAX} on at most {DEVICES[1]} devices",
    own_fields=frozenset({"devices", "layout"}),
    launch_rule="Br = Bc = N/P (--devices P, 2..8), N a multiple of 2P (zigzag) or P (contiguous); --layout",
    sram_note="a device's working set (its shard of Q, the K/V shard held, a partial and the carries), in its own "
    "memory",
    example={"n": 16, "d": 4, "br": 4, "bc": 4},
    example_why="N = 16 on the default P = 4 devices: zigzag cuts it into 8 chunks of 2 rows, two per device, so the "
    "ring's four steps, the chunks far apart and the causal blocks skipped all show",
    rival=False,
    closed_form_fields=lambda cfg: {"layout": cfg.layout},
)
