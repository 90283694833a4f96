"""A bad value as an error line echoes it: cut to ECHO_MAX characters with an ellipsis, so that a 10,000-character
value stays a short line. The one place that cuts (tests/test_fields.py greps that no other module slices a shown
value); the web's copy is web/src/echo.ts."""

from __future__ import annotations

ECHO_MAX = 40  # characters of a bad value an error message echoes


def cut(text: str, limit: int = ECHO_MAX) -> str:
    """`text` when it has at most `limit` characters, else its first `limit - 1` and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: object) -> str:
    """A bad value as an error message echoes it: strings quoted (control characters escaped), anything cut to
    ECHO_MAX characters with an ellipsis; a string cut keeps its closing quote ('/a/long/path…')."""
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= ECHO_MAX else cut(text[:-1], ECHO_MAX - 1) + text[-1]
    try:
        text = str(value)
    except ValueError:  # an int past Python's 4300-digit limit on str()
        text = f"an integer of {value.bit_length()} bits" if isinstance(value, int) else type(value).__name__
    return cut(text)
