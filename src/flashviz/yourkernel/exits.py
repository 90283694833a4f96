"""SystemExit and KeyboardInterrupt from the user's code. Importing the kernel's file or running the kernel may raise
them (`sys.exit(0)` at the end of a script, `raise KeyboardInterrupt`); that is the user's code failing, told in one
line like any exception of theirs, not flashviz ending with no output. A Ctrl-C from the terminal still stops
flashviz: while the user's code runs, a SIGINT is noted before Python's own handler raises its KeyboardInterrupt,
and that one goes on.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flashviz.model.echo import cut

EXITS = (SystemExit, KeyboardInterrupt)


class Watch:
    def __init__(self) -> None:
        self.signalled = False  # a SIGINT came while the user's code ran

    def users(self, exc: BaseException) -> bool:
        """Whether `exc` is the user's code exiting or interrupting itself (not a Ctrl-C from the terminal)."""
        return isinstance(exc, SystemExit) or (isinstance(exc, KeyboardInterrupt) and not self.signalled)


@contextmanager
def watched() -> Iterator[Watch]:
    """Run the user's code with SIGINT noted (in the main thread, where Python handles signals; elsewhere no signal
    raises there, and every KeyboardInterrupt is the code's own)."""
    watch = Watch()
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    if not callable(before):  # no Python handler (ignored, or the default action): no KeyboardInterrupt from SIGINT
        yield watch
        return

    def noted(signum: int, frame: Any) -> Any:
        watch.signalled = True
        return before(signum, frame)

    signal.signal(signal.SIGINT, noted)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, before)


def said(exc: BaseException, chars: int) -> str:
    """`raised RuntimeError: boom`, `raised SystemExit: 0`, `raised KeyboardInterrupt`: an exception in one line."""
    try:
        text = cut(" ".join(str(exc).split()), chars)
    except Exception:  # the user's exception class may fail to say itself
        text = ""
    return f"raised {type(exc).__name__}" + (f": {text}" if text else "")
