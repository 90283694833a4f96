"""Trace files (`flashviz trace -o t.json`): read one back and check it is a whole trace this flashviz can show,
before any view draws it. Every problem is one ConfigError naming the flag (or argument) and saying what is wrong
and which schema version is expected: another version, a truncated file, a file that is not a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flashviz.model.config import ConfigError, shown
from flashviz.model.regular_file import read_regular
from flashviz.tracing.trace import SCHEMA

KERNEL_SCHEMA = "flashviz.kernel-trace/1"  # flashviz.yourkernel.report.SCHEMA: shown through the same viewer

# The largest trace the CLI writes (N=16384, one block recorded) is a few hundred MB; a page holding more is no use.
MAX_FILE_BYTES = 512 * 2**20
# what every view reads first: a trace without these is not one this version wrote
REQUIRED = ("config", "kernel", "steps", "tensors", "buffers", "kernels", "picker", "phases", "blocks")
CONFIG_KEYS = ("algo", "n", "d", "br", "bc", "causal", "scale", "recorded_blocks")
EXPECTED = f"a trace file is one JSON document of schema {SCHEMA} (`flashviz trace -o FILE.json` writes one)"


def read_trace_file(path: str | Path, flag: str = "--trace") -> tuple[dict[str, Any], bytes]:
    """(the checked trace, made whole; its JSON bytes as the page reads them) from `path`; a ConfigError naming
    `flag` otherwise. A file's drawn inputs are drawn again and its deflated arrays inflated (flashviz.tracing.store)
    before the page gets it; a kernel trace is made into the viewer's Trace."""
    data = _read(Path(path), flag)
    doc, made = _checked(data, shown(str(path)), flag)
    return doc, data if made is None else made


def check_trace_bytes(data: bytes, where: str, flag: str) -> dict[str, Any]:
    """The checked trace of `data`, made whole (flashviz.tracing.store); a kernel trace (`flashviz trace --kernel -o`)
    is made into the viewer's Trace first (flashviz.yourkernel.viewer)."""
    return _checked(data, where, flag)[0]


def _checked(data: bytes, where: str, flag: str) -> tuple[dict[str, Any], bytes | None]:
    import orjson

    if not data.strip():
        raise ConfigError(flag, f"{where} is empty; {EXPECTED}")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        why = " ".join(str(exc).split())
        truncated = "unexpected end" in why.lower() or "eof" in why.lower()
        what = "is truncated (the JSON ends early)" if truncated else f"is not JSON ({shown(why)})"
        raise ConfigError(flag, f"{where} {what}; {EXPECTED}") from None
    made = None
    kernel = isinstance(doc, dict) and doc.get("schema") == KERNEL_SCHEMA
    if kernel:  # its verdict is judged here, from its outputs (flashviz.yourkernel.viewer)
        doc, made = _from_kernel(doc, where, flag)
    check_trace(doc, where, flag)
    from flashviz.tracing.codec import is_packed, restore

    if is_packed(doc):  # a trace file: its drawn inputs drawn again, its arrays inflated, as the page reads them
        restore(doc, where, flag)
        made = orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)
    if not kernel:
        from flashviz.tracing.file_verdict import verdict_problem  # the verdict the page shows is its arrays'

        wrong = verdict_problem(doc)
        if wrong is not None:
            raise ConfigError(flag, f"{where} is not a trace this flashviz can show: {wrong}")
    return doc, made


def _from_kernel(doc: dict[str, Any], where: str, flag: str) -> tuple[dict[str, Any], bytes]:
    from flashviz.yourkernel.viewer import trace_document

    try:
        return trace_document(doc)
    except ConfigError as exc:
        raise ConfigError(flag, f"{where}: {exc.message}") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ConfigError(
            flag,
            f"{where} is a kernel trace ({KERNEL_SCHEMA}) the viewer cannot read ({type(exc).__name__}: "
            f"{shown(str(exc))}); write it again with `flashviz trace --kernel FILE.py:FN -o FILE.json`",
        ) from None


def check_trace(doc: Any, where: str, flag: str) -> None:
    """A trace of this version with the parts every view reads, or a ConfigError saying what is wrong."""
    if not isinstance(doc, dict):
        raise ConfigError(flag, f"{where} is not a flashviz trace (a JSON {type(doc).__name__}); {EXPECTED}")
    schema = doc.get("schema")
    if not isinstance(schema, str) or not schema.startswith("flashviz.trace/"):
        found = "no schema key" if schema is None else f"schema {shown(schema)}"
        raise ConfigError(flag, f"{where} is not a flashviz trace ({found}); {EXPECTED}")
    if schema != SCHEMA:
        raise ConfigError(
            flag,
            f"{where} is a trace of schema {shown(schema)}; this flashviz reads {SCHEMA} only "
            "(make it again with this version's `flashviz trace -o FILE.json`)",
        )
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise ConfigError(flag, f"{where} lacks {', '.join(missing)}: not a whole {SCHEMA} trace; {EXPECTED}")
    config = doc["config"]
    if not isinstance(config, dict) or any(k not in config for k in CONFIG_KEYS):
        raise ConfigError(flag, f"{where}'s config lacks one of {', '.join(CONFIG_KEYS)}; {EXPECTED}")
    if not isinstance(doc["steps"], list) or not doc["steps"]:
        raise ConfigError(flag, f"{where} holds no steps; {EXPECTED}")
    # each compact array on its own first: its words (a shape, a dtype, its bytes) say more than the schema's
    # "must be an array" about the same object; nothing is inflated before its shape is held to the config
    check_compact(doc, where, flag, refs=False, inflate=False)
    from flashviz.tracing.file_arrays import arrays_problem  # the arrays' shapes against the config
    from flashviz.tracing.file_schema import launch_of, problem  # the config's values, the parts every view reads
    from flashviz.tracing.shape import reference_problem, shape_problem  # then what each view reads deeper

    wrong = problem(doc) or shape_problem(doc) or reference_problem(doc) or arrays_problem(doc, *launch_of(doc))
    if wrong is not None:
        raise ConfigError(flag, f"{where} is not a trace this flashviz can show: {wrong}")
    check_compact(doc, where, flag, own=False)  # the references, and the deflated arrays inflated to be judged


def check_compact(
    doc: dict[str, Any], where: str, flag: str, refs: bool = True, own: bool = True, inflate: bool = True
) -> None:
    """The compact arrays' dtypes, shapes, bytes and (`refs`) references (flashviz.tracing.codec)."""
    from flashviz.tracing.codec import check_arrays

    check_arrays(doc, where, flag, refs, own, inflate)


def _read(path: Path, flag: str) -> bytes:
    return read_regular(path, flag, shown(str(path)), MAX_FILE_BYTES, "a trace file", EXPECTED)
