#!/usr/bin/env python3
"""flashviz[triton] resolves beside each torch release it supports: pip's resolver is asked for the package's
requirements and its `triton` extra's (read from pyproject.toml) with torch pinned to each release, and installs
nothing (--dry-run; wheels' metadata only). The machine's pip configuration is set aside (PIP_CONFIG_FILE=os.devnull):
a constraint there that caps torch would make the question another one. Prints the torch and Triton each resolves
to; exits 1 where one does not resolve.

    python .ci/resolve_torch.py [2.11.0 2.15.0 ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
TORCH = ("2.11.0", "2.12.0", "2.13.0", "2.14.0", "2.15.0")  # the releases the README's install section names


def requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"]["triton"]
    return [r for r in [*project["dependencies"], *extra] if not r.startswith("flashviz")]


def resolve(torch_version: str, reqs: list[str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
             str(report), *reqs, f"torch=={torch_version}"],
            env={**os.environ, "PIP_CONFIG_FILE": os.devnull}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if run.returncode:
            tail = [line for line in run.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
            raise SystemExit(f"torch {torch_version}: flashviz[triton] does not resolve: {' '.join(tail[-3:])}")
        picked = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"]: i["metadata"]["version"] for i in picked}


def main() -> int:
    reqs = requirements()
    print(f"resolving {' '.join(reqs)} with each torch")
    for version in sys.argv[1:] or TORCH:
        got = resolve(version, reqs)
        print(f"torch {got['torch']}: triton {got.get('triton', '(none)')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
