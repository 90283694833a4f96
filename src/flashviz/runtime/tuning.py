"""How flashviz.attention's launches stay tuned without stalling a training loop.

The autotuner times its candidate tiles once per *bucket* of shapes, not per exact length: a length is taken to the
next power of two (`bucket`), so a batch of 4,001 tokens after one of 4,096 launches at once with the choice made
for 4,096. What was chosen (each kernel's tiles, and the faster backward variant) is kept on disk as well
(`TuningCache`: one JSON file in the user's cache folder, `$FLASHVIZ_CACHE_DIR` or `$XDG_CACHE_HOME/flashviz`),
valid for one GPU, one Triton release and one version of the kernels' source: a fresh process on the same machine
starts tuned. `flashviz tune` (or `flashviz.tune`) fills it for a model's shapes before a job starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

VERSION = 1  # the file's layout; another is read as empty
LEAST = 16  # the smallest bucket: shorter lengths launch as their own tiles take them anyway


def bucket(n: int) -> int:
    """The bucket of a length: the next power of two, at least LEAST."""
    return max(LEAST, 1 << (max(int(n), 1) - 1).bit_length())


def text(key: Iterable[Hashable]) -> str:
    """A key as the file writes it: its parts' strings joined (a dtype by its name)."""
    return "|".join(str(part) for part in key)


def cache_dir() -> Path:
    """Where the file lives: $FLASHVIZ_CACHE_DIR, else $XDG_CACHE_HOME/flashviz, else ~/.cache/flashviz."""
    given = os.environ.get("FLASHVIZ_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "flashviz"


def identity(gpu: str, triton_version: str, sources: Iterable[str]) -> str:
    """What a tuned choice holds for: the GPU's name, Triton's version and a hash of the kernels' source."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.encode())
    return f"{gpu} | triton {triton_version} | kernels {digest.hexdigest()[:16]}"


class TuningCache:
    """The choices of one identity, read from and written to `path` (None: kept in memory only). A file of another
    VERSION, another identity, or one that cannot be read is started afresh; a write goes to a temporary file first
    and replaces the old one whole, so that two processes never leave half a file."""

    def __init__(self, path: Path | None, ident: str):
        self.path, self.ident = path, ident
        self.entries: dict[str, Any] = {}
        if path is not None:
            self.entries = self._read(path, ident)

    @staticmethod
    def _read(path: Path, ident: str) -> dict[str, Any]:
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("identity") != ident:
            return {}
        entries = doc.get("entries")
        return dict(entries) if isinstance(entries, dict) else {}

    def get(self, key: Iterable[Hashable]) -> Any:
        return self.entries.get(text(key))

    def put(self, key: Iterable[Hashable], value: Any) -> None:
        self.entries[text(key)] = value
        if self.path is None:
            return
        doc = {"version": VERSION, "identity": self.ident, "entries": self.entries}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=self.path.parent, suffix=".tmp", delete=False) as f:
                json.dump(doc, f, indent=0, sort_keys=True)
            os.replace(f.name, self.path)
        except OSError:  # a read-only home: the choices stay in this process
            self.path = None

    @classmethod
    def for_gpu(cls, gpu: str, triton_version: str, sources: Iterable[str]) -> TuningCache:
        ident = identity(gpu, triton_version, sources)
        name = hashlib.sha256(ident.encode()).hexdigest()[:12]
        off = os.environ.get("FLASHVIZ_TUNING_CACHE", "1") == "0"  # 0: tune in memory only
        return cls(None if off else cache_dir() / f"tuning-v{VERSION}-{name}.json", ident)
