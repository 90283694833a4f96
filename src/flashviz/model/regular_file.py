"""The one guard every file flag reads through (--trace, TRACE.json, --profile, ladder --from): a regular file of
bounded size, opened without waiting (a FIFO is refused by its type, not waited on), read at most `limit` + 1
bytes (a file that grows while read is refused too). Every problem is one ConfigError naming the flag."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from flashviz.model.config import ConfigError, shown


def kind(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def why_not(path: str | Path, exc: OSError | ValueError) -> str:
    """Why `path` could not be opened, in words: the system's reason, and for a symlink to nothing, that it is one."""
    reason = getattr(exc, "strerror", None) or str(exc)
    if isinstance(exc, FileNotFoundError) and os.path.islink(path):
        return f"{reason} (a symlink to {shown(os.readlink(path))}, which does not exist)"
    return reason


def read_regular(path: str | Path, flag: str, where: str, limit: int, what: str, hint: str = "") -> bytes:
    """The bytes of the regular file at `path` (at most `limit` of them), or a ConfigError naming `flag`. `where` is
    the path as messages show it, `what` what such a file is ("a trace file"), `hint` what to give instead."""
    tail = f"; {hint}" if hint else ""
    if str(path) == "":
        raise ConfigError(flag, f"must name a file (got ''){tail}")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below, by its type)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:
        raise ConfigError(flag, f"cannot read {where}: {why_not(path, exc)}{tail}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a directory with its own exception
            raise ConfigError(flag, f"{where} is not a regular file ({kind(info.st_mode)}){tail}")
        if info.st_size > limit:
            size = f"{info.st_size:,} bytes"
            raise ConfigError(flag, f"{where} is {size}, more than {what} holds ({limit:,} at most){tail}")
        with os.fdopen(fd, "rb") as f:
            fd = -1  # closed by f
            try:
                data = f.read(limit + 1)
            except OSError as exc:
                raise ConfigError(flag, f"cannot read {where}: {exc.strerror}{tail}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:  # it grew while read
        raise ConfigError(flag, f"{where} holds more than {limit:,} bytes, more than {what} holds{tail}")
    return data
