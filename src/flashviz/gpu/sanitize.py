"""The kernel under compute-sanitizer: memcheck, racecheck, synccheck and initcheck, each a clean run or not.

Each tool runs `python -m flashviz gpu run ... --check` (the same launch, checked against the engine
and float64), and its report is read for "ERROR SUMMARY: N errors" (racecheck: "RACECHECK SUMMARY:
N hazards displayed (E errors, W warnings)"). The child allocates with plain cudaMalloc, not CuPy's
memory pool (FLASHVIZ_NO_POOL=1): memcheck only sees an access past an allocation, and a pool hands
out pieces of larger ones, so a write just past a tensor would land inside the pool's block unseen.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
from typing import Any

from flashviz.model.config import Config, ConfigError, shown

from ..algos import get
from . import device, launch
from .run import config_dict

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

_ERRORS = re.compile(r"ERROR SUMMARY:\s*([\d,]+)\s+errors?")
_HAZARDS = re.compile(
    r"RACECHECK SUMMARY:\s*([\d,]+)\s+hazards? displayed\s*\(([\d,]+)\s+errors?,\s*([\d,]+)\s+warnings?"
)


def command(tool: str, program: list[str], sanitizer: str = "compute-sanitizer") -> list[str]:
    # every hazard, not the first few; the error exit code tells a failed run from a clean one
    return [sanitizer, "--tool", tool, "--print-limit", "1000", "--error-exitcode", "99", *program]


def parse(output: str) -> dict[str, Any]:
    """Read compute-sanitizer's summary line: errors (None when there is none), and for racecheck, whose
    summary counts hazards instead, the hazards displayed and their errors and warnings."""
    out: dict[str, Any] = {"errors": None}
    if m := _HAZARDS.search(output):  # racecheck ends with this line instead of an ERROR SUMMARY
        out["hazards"] = {
            "displayed": int(m[1].replace(",", "")),
            "errors": int(m[2].replace(",", "")),
            "warnings": int(m[3].replace(",", "")),
        }
        out["errors"] = out["hazards"]["errors"]
    if m := _ERRORS.search(output):
        out["errors"] = int(m[1].replace(",", ""))
    summary = [line.strip("= ").strip() for line in output.splitlines() if "SUMMARY" in line]
    out["summary"] = summary
    return out


def sanitize(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    threads: int | None = None,
    inputs_path: str | None = None,
    tools: tuple[str, ...] = TOOLS,
    sanitizer: str = "compute-sanitizer",
    check: bool = True,
    timeout: float = 900,
) -> dict[str, Any]:
    """Run each tool on one launch; return {config, runs: [{tool, command, returncode, errors, ok, output}], ok}."""
    cfg = get(cfg.algo).validated(cfg)
    path = shutil.which(sanitizer)
    if path is None:
        raise ConfigError("--sanitizer", f"{shown(sanitizer)} not found (it comes with the CUDA toolkit)")
    facts = device.device_info()
    launched = launch.prepare(
        cfg, heads * batch, threads
    ).describe()  # compile once here, so the child hits CuPy's cache
    program = launch.launcher(cfg, heads, batch, threads, inputs_path, check=check)
    runs = []
    for tool in tools:
        cmd = command(tool, program, path)
        env = {**os.environ, "FLASHVIZ_NO_POOL": "1"}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        output = proc.stdout + proc.stderr
        parsed = parse(output)
        clean = parsed["errors"] == 0 and parsed.get("hazards", {}).get("displayed", 0) == 0
        runs.append(
            {
                "tool": tool,
                "command": cmd,
                "returncode": proc.returncode,
                **parsed,
                # the program's own check (GPU vs engine vs float64) must pass under the tool as well
                "ok": clean and proc.returncode == 0,
                "output": output[-20000:],
            }
        )
    return {
        "schema": "flashviz.sanitize/1",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "config": {**config_dict(cfg), "heads": heads, "batch": batch},
        "launch": launched,
        "device": facts,
        "runs": runs,
        "ok": all(r["ok"] for r in runs),
    }
