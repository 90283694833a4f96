"""The launches fa3's forward kernel runs (`launcher.py`): one program per Br = 128 rows of Q, two
consumer warpgroups of 64 rows each (kernel.py's NUM_WG, WG_ROWS), tiles of Bc = 128 keys, D of 64 or 128, and a
ring of STAGES shared-memory buffers for Kj, Vj per D (launcher.FWD_CONFIGS: D=128 2 stages, D=64 3; the
tests hold these equal to the launcher's, which imports torch). Ping-pong and intra-warpgroup overlap are on in
every launch the viewer walks (the engine follows `_fwd_tiles_overlapped`)."""

from __future__ import annotations

from flashviz.model.config import Config, ConfigError

BR = 128  # launcher.BR = NUM_WG * WG_ROWS
WG_ROWS = 64  # kernel.py's WG_ROWS: rows of Qi per consumer warpgroup (one wgmma's M)
NUM_WG = 2  # kernel.py's NUM_WG
BC = {64: 128, 128: 128}  # launcher.FWD_CONFIGS[d].Bc
STAGES = {64: 3, 128: 2}  # launcher.FWD_CONFIGS[d].stages
SUPPORTED_D = (64, 128)  # launcher.SUPPORTED_D
BYTES = 2  # bf16
RULE = "Br = 128 (two consumer warpgroups of 64 rows), Bc = 128, D one of 64, 128, scale > 0"


def stages(d: int) -> int:
    return STAGES[d]


def shared_bytes(d: int) -> int:
    """The kernel's shared memory for its tiles: Qi's two halves, O's two staging halves, and STAGES slots of Kj
    and Vj, in bf16 (the launcher's comment: D=128 196 KB with 2 stages, D=64 131 KB with 3; mbarriers aside)."""
    return BYTES * (2 * BR * d + STAGES[d] * 2 * BC[d] * d)


def check(cfg: Config) -> None:
    """The launches fa3_fwd runs: ConfigError naming the flag otherwise."""
    if cfg.d not in SUPPORTED_D:
        raise ConfigError("d", f"must be one of 64, 128 for fa3, the head dimensions its kernel runs (got {cfg.d})")
    if cfg.br != BR:
        raise ConfigError("br", f"must be 128 for fa3: two consumer warpgroups of 64 rows each (got {cfg.br})")
    if cfg.bc != BC[cfg.d]:
        raise ConfigError("bc", f"must be {BC[cfg.d]} for fa3 at D={cfg.d}, its kernel's tile of keys (got {cfg.bc})")
    if cfg.softmax_scale <= 0:
        raise ConfigError("scale", f"must be > 0 for fa3: its kernel takes the max before scaling (got {cfg.scale})")
