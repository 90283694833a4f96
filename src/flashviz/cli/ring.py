"""`flashviz compare --ring P`: the option and its document (flashviz.hardware.ring_model's closed form of the ring of
flashviz.ring_attention, zigzag layout, on P ranks, at the compare's N and D), kept apart from the compare command
so that its edit there stays one option and three lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from flashviz.cli.options import Bounded
from flashviz.model.config import ConfigError

if TYPE_CHECKING:
    from rich.table import Table

RING_KEY = "ring"  # the option's name and its document's key in `compare --json` (ring_model's; not the algorithm)
RING_LIMITS = (1, 1024)  # the model lists every step of the ring: a few thousand entries at most

ring_option = click.option(
    "--ring",
    RING_KEY,
    type=Bounded(*RING_LIMITS),
    default=None,
    metavar="P",
    help="also print ring attention on P ranks in closed form (zigzag layout; N a multiple of 2P)",
)


def ring_doc(n: int, d: int, world: int, causal: bool) -> dict[str, Any]:
    """The model of the ring (flashviz.hardware.ring_model.model) with the compare's N and D; a bad P is --ring's
    error."""
    from flashviz.hardware.ring_model import model

    if n % (2 * world):
        raise ConfigError(
            "--ring", f"N = {n} must be a multiple of 2P = {2 * world} (the zigzag layout cuts it into 2P equal chunks)"
        )
    return model(n, d, world, causal=causal, layout="zigzag")


def render_ring(doc: dict[str, Any]) -> Table:
    from flashviz.hardware.ring_model import render

    return render(doc)
