"""Stopping engine work whose requester has gone: the server runs a trace under `run(gone, ...)`, and the
engine's Recorder calls `check()` at every step, so a run stops between (block, tile) steps once `gone` is set."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_GONE: ContextVar[threading.Event | None] = ContextVar("flashviz_gone", default=None)


class Cancelled(Exception):
    """The requester went away: the run stopped between two steps."""


def check() -> None:
    """Raise Cancelled when the run in this context was asked to stop (a no-op outside `run`)."""
    gone = _GONE.get()
    if gone is not None and gone.is_set():
        raise Cancelled


def run(gone: threading.Event, fn: Callable[..., T], *args) -> T:
    """fn(*args), stopping with Cancelled at the engine's next step once `gone` is set (also before it starts)."""
    token = _GONE.set(gone)
    try:
        check()
        return fn(*args)
    finally:
        _GONE.reset(token)
