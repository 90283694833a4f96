"""The CLI's stdout: a closed, full or broken stdout is one error line and exit code 1, not a traceback.

While the CLI runs, `guarded_stdout` puts a `GuardedStdout` in place of sys.stdout, so that every write to
it (the commands' results, click's help and version text, rich's tables) that fails raises OutputError;
`flush_stdout` runs after the command, since a full disk (`> /dev/full`) only shows when the buffer is
flushed. Commands whose whole output goes to stdout call `require_stdout` before any work.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

CLOSED = "stdout is closed; nothing can be printed"


class OutputError(Exception):
    """stdout cannot take the result: the CLI prints `flashviz: error: stdout: <message>` and exits with 1."""


class GuardedStdout:
    """sys.stdout as seen by the CLI: its writes and flushes raise OutputError when they fail. With no stdout
    (None: the caller closed it, `flashviz count >&-`) every write raises, where click would print nothing."""

    def __init__(self, stream: TextIO | None):
        self._stream = stream
        self.error: OutputError | None = None  # once a write failed, every later one fails the same way

    @property
    def missing(self) -> bool:
        return self._stream is None or bool(getattr(self._stream, "closed", False))

    def write(self, data: Any) -> int:
        if self._stream is None or self.missing:
            raise OutputError(CLOSED)
        return int(self._guard(self._stream.write, data))

    def flush(self) -> None:
        if self._stream is not None and not self.missing:
            self._guard(self._stream.flush)

    def _guard(self, method, *args) -> Any:
        # click probes a stream with write(b"") and write("") and swallows what they raise, and the probe can be the
        # write that meets the full disk: the failure is kept, so that the next write raises it again
        if self.error is not None:
            raise self.error
        try:
            return method(*args)
        except OSError as exc:
            self.error = _failed(exc)
            raise self.error from None

    @property
    def buffer(self) -> Any:
        raw = getattr(self._stream, "buffer", None)
        return None if raw is None else _GuardedBuffer(raw, self)

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno ... of the real stream
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _GuardedBuffer:
    """The binary buffer under a guarded stdout (the trace's JSON is written as bytes)."""

    def __init__(self, raw: Any, text: GuardedStdout):
        self._raw, self._text = raw, text

    def write(self, data: bytes) -> int:
        return self._text._guard(self._raw.write, data)

    def flush(self) -> None:
        self._text._guard(self._raw.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """sys.stdout guarded for the duration (restored after, so that tests capturing it see their own)."""
    real = sys.stdout
    guard = GuardedStdout(real)
    sys.stdout = guard
    try:
        yield
    finally:
        if sys.stdout is guard:
            sys.stdout = real


def require_stdout() -> TextIO:
    """sys.stdout, or OutputError when there is none to print to."""
    stream = sys.stdout
    if stream is None or getattr(stream, "closed", False) or getattr(stream, "missing", False):
        raise OutputError(CLOSED)
    return stream


@contextmanager
def to_stdout() -> Iterator[TextIO]:
    """Write to stdout inside the block; it is flushed at the end, and any failure is an OutputError."""
    stream = require_stdout()
    try:
        yield stream
        stream.flush()
    except OSError as exc:  # an unguarded stdout (the command called without `main`)
        raise _failed(exc) from None


def print_line(text: str) -> None:
    """One line to stdout."""
    with to_stdout() as out:
        out.write(text + "\n")


def print_bytes(*chunks: bytes) -> None:
    """Bytes to stdout as they are (JSON, already encoded), chunk after chunk (no copy of a large one)."""
    with to_stdout() as out:
        buffer = getattr(out, "buffer", None)
        if buffer is not None:
            out.flush()  # anything written as text before goes first
        for data in chunks:
            if buffer is None:
                out.write(data.decode())
            else:
                buffer.write(data)
        if buffer is not None:
            buffer.flush()


def flush_stdout() -> None:
    """Flush stdout, if there is one: output still buffered fails here rather than at interpreter exit."""
    stream = sys.stdout
    if stream is None or getattr(stream, "closed", False):
        return
    try:
        stream.flush()
    except OSError as exc:
        raise _failed(exc) from None


def silence_stdout() -> None:
    """After an OutputError: what stdout's buffer still holds would fail again when the interpreter flushes it on
    exit ("Exception ignored ... OSError", exit code 120); point its descriptor at /dev/null instead."""
    stream = sys.__stdout__
    if stream is None:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no stdout, or no descriptor (a captured stream)
        pass


def _failed(exc: OSError) -> OutputError:
    return OutputError(f"cannot write the output ({exc.strerror or type(exc).__name__})")
