"""The README's quoted outputs are what the commands print today.

Every fenced block of README.md holds commands as `$ flashviz ...` lines, each followed by the lines it prints. Each
such command that quotes output is run here through the real entry point (`python -m flashviz`, a subprocess) in a
fresh folder holding the README's `examples/`, at a fixed terminal width (rich draws its tables to it), and its
output must be the quoted lines, all of them, in order; a line "…" in a quote stands for lines left out.
Commands whose output cannot be quoted exactly are not
here: a command that prints nothing (`flashviz view` serves until stopped) and the ring demo under torchrun (its
times vary).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COLUMNS = "120"  # the width the README's tables are drawn at
MORE = "…"  # a quote's last line alone: the output goes on past the quoted lines
FENCE = re.compile(r"^```")


def quoted() -> list[tuple[str, list[str]]]:
    """(command, its quoted output lines) for every `$ flashviz` line of a fenced block that quotes output."""
    out: list[tuple[str, list[str]]] = []
    inside = False
    current: tuple[str, list[str]] | None = None
    for line in README.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            if current:
                out.append(current)
            inside, current = not inside, None
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            if current:
                out.append(current)
            current = (line[2:], []) if line.startswith("$ flashviz ") else None
        elif current is not None:
            current[1].append(line)
    return [(cmd, lines) for cmd, lines in out if lines]


CASES = quoted()


def test_the_readme_quotes_these_commands():
    """The parser finds the README's quoted commands (a README that lost them fails here, not silently)."""
    commands = [cmd.split()[1] for cmd, _ in CASES]
    assert {"export", "trace", "compare"} <= set(commands), commands


@pytest.mark.parametrize(("command", "lines"), CASES, ids=[c for c, _ in CASES])
def test_a_quoted_command_prints_what_the_readme_says(tmp_path, command, lines):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for earlier, _ in CASES:  # a command that reads a file an earlier one writes (export --trace t.json)
        if earlier == command:
            break
        if " -o " in earlier and earlier.split(" -o ")[1].split()[0] in command:
            subprocess.run(_argv(earlier), cwd=tmp_path, env=_env(), capture_output=True, check=False)
    run = subprocess.run(_argv(command), cwd=tmp_path, env=_env(), capture_output=True, text=True, check=False)
    printed = [p.rstrip() for p in (run.stdout + run.stderr).rstrip("\n").splitlines()]
    assert matches(printed, [q.rstrip() for q in lines]), f"$ {command}\n" + "\n".join(printed)


def matches(printed: list[str], quote: list[str]) -> bool:
    """The quote's runs of lines, split at its "…" lines, found in `printed` in order: the first at its start, the
    last at its end, each "…" standing for at least one line."""
    runs: list[list[str]] = [[]]
    for line in quote:
        if line.strip() == MORE:
            runs.append([])
        else:
            runs[-1].append(line)
    if len(runs) == 1:
        return printed == runs[0]
    first, last = runs[0], runs[-1]
    lo, hi = len(first), len(printed) - len(last)
    if printed[:lo] != first or printed[hi:] != last:
        return False
    for run in runs[1:-1]:
        lo += 1  # the "…" before it
        found = next((i for i in range(lo, hi - len(run) + 1) if printed[i : i + len(run)] == run), None)
        if found is None:
            return False
        lo = found + len(run)
    return hi - lo >= 1  # the last "…"


def test_the_matcher():
    out = ["a", "b", "c", "d"]
    assert matches(out, ["a", "b", "c", "d"]) and matches(out, ["a", MORE]) and matches(out, ["a", MORE, "d"])
    assert matches(out, ["a", MORE, "c", MORE]) and matches(out, [MORE, "d"])
    assert not matches(out, ["a", "b"]) and not matches(out, ["a", "b", "c", "d", MORE])
    assert not matches(out, ["b", MORE]) and not matches(out, ["a", MORE, "b", "c", "d"]) and not matches(out, ["x"])


def _argv(command: str) -> list[str]:
    return [sys.executable, "-m", "flashviz", *shlex.split(command)[1:]]


def _env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": COLUMNS, "NO_COLOR": "1", "TERM": "dumb"}
