"""Whatever the user's code raises, BaseExceptions included. Importing the kernel's file or running the kernel may raise
SystemExit (`sys.exit(0)` at the end of a script), KeyboardInterrupt, GeneratorExit or a BaseException of its own;
that is the user's code failing, told in one line like any exception of theirs, not flashviz ending with no output
or a traceback. A Ctrl-C from the terminal still stops flashviz: while the user's code runs, a SIGINT is noted before
Python's own handler raises its KeyboardInterrupt, and that one goes on.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flashviz.model.echo import cut


class Watch:
    def __init__(self) -> None:
        self.signalled = False  # a SIGINT came while the user's code ran

    def users(self, exc: BaseException) -> bool:
        """Whether `exc`, raised while the user's code ran, is that code's failure (not a Ctrl-C from the terminal)."""
        return not (isinstance(exc, KeyboardInterrupt) and self.signalled)


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
