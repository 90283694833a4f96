"""The tiles kernel.py's launches run (`launcher.py`): `Tiles`, one launch configuration; the autotuner's candidates
per padded head dimension for the forward, the backward's dkdv and dq kernels and the fused backward; the fixed small
tiles under Triton's interpreter; the backward's variants. The split-KV forward's tiles are `split_kv.split_tiles`.
Plain values: no torch or Triton needed to read them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tiles:
    """One launch configuration. Forward and dq: Br rows of Q per program, tiles of Bc keys. dkdv: Bc rows
    of K and V per program, blocks of Br queries. maxnreg caps registers per thread (two programs per SM)."""

    Br: int
    Bc: int
    num_warps: int = 4
    num_stages: int = 2
    maxnreg: int | None = None
    warp_specialize: bool = False

    def kwargs(self) -> dict:
        kw = {"Br": self.Br, "Bc": self.Bc, "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.maxnreg:
            kw["maxnreg"] = self.maxnreg
        return kw


# Candidates per padded head dimension, autotuned per (N, D, causal, dtype); a handful each, so that the first
# call at a new shape costs seconds, not minutes. Causal needs Br % Bc == 0 (forward, dq) and Bc % Br == 0
# (dkdv): the diagonal stage steps through whole tiles. Compiled for sm_90 without a GPU first
# (bench/attention_compile_check.py): tiles that spilled registers or overflowed shared memory were left out;
# Hopper warp specialisation (tl.range(warp_specialize=True)) compiled to the same code as without it, so no
# candidate asks for it. NOTES.md in bench/results/attention has the numbers.
FWD_TILES = {
    32: [Tiles(128, 64, 4, 3), Tiles(128, 128, 8, 3), Tiles(64, 64, 4, 3)],
    64: [
        Tiles(128, 64, 4, 3),
        Tiles(128, 64, 8, 3),
        Tiles(128, 64, 8, 4),
        Tiles(128, 64, 8, 5),
        Tiles(128, 128, 8, 3),
        Tiles(128, 128, 8, 4),
    ],
    128: [
        Tiles(128, 128, 8, 3),  # 225 KB of shared memory: the deepest pipeline 128x128 tiles allow
        Tiles(128, 64, 8, 3),
        Tiles(128, 64, 8, 4),
        Tiles(128, 64, 8, 5),
        Tiles(128, 64, 8, 2, maxnreg=128),  # 96 KB of shared memory, 128 registers: two programs per SM
        Tiles(256, 64, 16, 3, maxnreg=128),  # four warpgroups share each Kj, Vj; 128 registers, no spills
        Tiles(256, 64, 16, 4, maxnreg=128),
    ],
    256: [Tiles(64, 64, 4, 2), Tiles(128, 64, 8, 2), Tiles(64, 32, 4, 3)],
}
DKDV_TILES = {
    32: [Tiles(32, 128, 4, 3), Tiles(64, 128, 8, 3), Tiles(64, 64, 4, 3)],
    64: [Tiles(64, 128, 8, 3), Tiles(32, 128, 4, 3), Tiles(64, 64, 4, 3)],
    128: [Tiles(64, 128, 8, 2), Tiles(32, 128, 8, 3), Tiles(64, 64, 4, 2), Tiles(32, 64, 4, 3)],
    256: [Tiles(32, 64, 4, 2), Tiles(64, 64, 8, 2)],
}
DQ_TILES = {
    32: [Tiles(128, 64, 4, 3), Tiles(64, 64, 4, 3)],
    64: [Tiles(128, 64, 8, 3), Tiles(128, 64, 4, 3), Tiles(64, 64, 4, 3)],
    128: [Tiles(128, 64, 8, 2), Tiles(128, 64, 8, 3), Tiles(64, 64, 4, 3), Tiles(64, 64, 4, 2)],
    256: [Tiles(64, 64, 4, 2), Tiles(64, 32, 4, 2)],
}
# Under the interpreter: small tiles, several per block, so that every loop stage runs on small N.
INTERPRET_TILES = {"fwd": Tiles(32, 16), "dkdv": Tiles(16, 32), "dq": Tiles(32, 16), "split": Tiles(16, 16)}

# dQ by TMA reductions from the dkdv loop; by a second kernel; by the same kernels in one launch
BWD_VARIANTS = ("atomic", "two_kernels", "fused")
# fused: (dkdv Br, Bc), (dq Br, Bc), warps, stages -- one launch, so one warps/stages for both halves
FUSED_TILES = {
    32: [((64, 64), (64, 64), 4, 3)],
    64: [((32, 128), (128, 64), 4, 3), ((64, 64), (64, 64), 4, 3), ((64, 128), (128, 64), 8, 3)],
    128: [((64, 64), (64, 64), 4, 2), ((64, 128), (128, 64), 8, 2)],
    256: [((32, 64), (64, 64), 4, 2)],
}
