"""Hatchling build hook: build the web viewer (web/ -> src/flashviz/viewer/static/) during every wheel and
editable build, so `pip install .` and `pip install -e .` need no manual npm step.

Set FLASHVIZ_SKIP_WEB_BUILD=1 to install without building (the server then answers 503 at `/`).
The bundle is git-ignored; pyproject's wheel `artifacts` puts it in the wheel all the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = Path("src/flashviz/viewer/static")


class WebBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        root = Path(self.root)
        web = root / "web"
        if os.environ.get("FLASHVIZ_SKIP_WEB_BUILD") == "1":
            note("FLASHVIZ_SKIP_WEB_BUILD=1: not building the web viewer")
            return
        if not (web / "package.json").is_file() or not (web / "index.html").is_file():
            note(f"no web viewer sources in {web} (package.json and index.html): not building the viewer")
            return
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(
                "flashviz: building the web viewer needs Node.js and npm, and `npm` is not on PATH. "
                "Install them (e.g. `apt-get install nodejs npm`, or from nodejs.org), "
                "or set FLASHVIZ_SKIP_WEB_BUILD=1 to install without the viewer."
            )
        if needs_install(web):
            try:
                run([npm, "ci", "--no-audit", "--no-fund"], web)
            except RuntimeError:
                # npm ci refuses a lock that lacks an optional platform package the registry does not serve
                # (e.g. vite's Windows-only helper); npm install keeps the lock's versions and skips it.
                note("npm ci failed; trying npm install, which keeps the versions in package-lock.json")
                run([npm, "install", "--no-audit", "--no-fund"], web)
        run([npm, "run", "build"], web)
        for page in ("index.html", "single/index.html"):  # the server's page; the one-file page (export, widget)
            if not (root / BUNDLE / page).is_file():
                raise RuntimeError(f"flashviz: `npm run build` in {web} did not write {BUNDLE}/{page}")
        note(f"built the web viewer into {BUNDLE}")


def needs_install(web: Path) -> bool:
    """`npm ci` when node_modules is missing or older than package-lock.json."""
    installed = web / "node_modules" / ".package-lock.json"  # npm writes it on every install
    lock = web / "package-lock.json"
    if not installed.is_file():
        return True
    return lock.is_file() and lock.stat().st_mtime > installed.stat().st_mtime


def run(cmd: list[str], cwd: Path) -> None:
    note(f"running `npm {' '.join(cmd[1:])}` in {cwd}")
    try:
        subprocess.run(cmd, cwd=cwd, check=True)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(
            f"flashviz: `npm {' '.join(cmd[1:])}` in {cwd} failed (exit code {exc.returncode}, output above); "
            "fix it, or set FLASHVIZ_SKIP_WEB_BUILD=1 to install without the viewer"
        ) from None


def note(message: str) -> None:
    print(f"flashviz build: {message}", flush=True)
