"""A pydantic error in one line, as the file schemas say it (`flashviz.gpu.profile_schema`,
`flashviz.hardware.ladder_schema`): `kernels[0].measured.load_bytes: must be a number (got 'lots')`. Its own module,
importing no algorithm, so that the ladder's schema (read by an algorithm's picture, through
`flashviz.hardware.peaks`) does not import the registry through the profile's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flashviz.model.echo import cut


def describe(error: Mapping[str, Any]) -> str:
    """A pydantic error as `kernels[0].measured.load_bytes: must be a number (got 'lots')`."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.get("loc", ())).lstrip(".")
    where = where or "the profile"
    if error["type"] == "missing":
        return f"{where}: missing"
    if not error.get("loc"):  # the document as a whole: no value to echo
        return f"{where}: {' '.join(str(error.get('msg', 'invalid')).split()).removeprefix('Value error, ')}"
    message = " ".join(str(error.get("msg", "invalid")).split()).removeprefix("Value error, ")
    return f"{where}: {cut(message, 120)} (got {shown(error.get('input'))})"


def shown(value: Any) -> str:
    return cut(repr(value))


class RecordError(ValueError):
    """A recorded GPU run that ships in flashviz/data/ and is not what its schema says (unreadable, not JSON, a key
    missing or of the wrong type): one line naming the file and the key. The CLI prints it as one line, exit 2."""
