"""The page with its documents inside: the one viewer (the build's single-file output, `static/single/`: one script,
one stylesheet with KaTeX's fonts as data: URLs) made into one HTML file, and the documents it shows inlined as
`<script type="application/json">` elements that `web/src/source.ts` reads. `flashviz export` writes it to disk,
the notebook widget puts it in an iframe, `flashviz view` serves the server's page with a trace file's documents.
Its Content-Security-Policy allows nothing from outside: no request leaves the file."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

DATA_ID = "flashviz-data"  # web/src/source.ts: the index of the documents
LADDER_ID = "flashviz-ladder"  # the recorded ladder run, when one ships (GET /api/ladder's document)
PLACEHOLDER = "<!--flashviz-documents-->"  # where the documents go: before </body>
NO_BUNDLE = (
    "the viewer is not built (no {path}): build it from a source checkout with "
    "`npm ci --prefix web && npm run build --prefix web`, or reinstall flashviz, which builds it"
)


class NoBundle(RuntimeError):
    """The single-file build of the viewer is missing."""


@dataclass
class Documents:
    """What a page holds: traces (their JSON, as written), comparisons, the limits, who wrote it."""

    origin: str  # said when a launch is not held: "flashviz export"
    limits: dict[str, Any]
    traces: list[tuple[dict[str, Any], bytes]] = field(default_factory=list)  # (trace's config, its JSON)
    compares: list[tuple[dict[str, Any], bytes]] = field(default_factory=list)  # (n, d, br, bc, causal; JSON)
    host: bool = False  # a host (the widget) answers launches the page does not hold
    server: bool = False  # the server that served the page answers them (flashviz view)
    file: str | None = None  # the trace file shown (flashviz view t.json), named when the page leaves it
    # the recorded ladder run that ships with flashviz (its JSON), or None when none ships: the page's last section
    ladder: bytes | None = field(default_factory=lambda: shipped_ladder())

    def html(self) -> str:
        """The documents as elements: an index, then one element per trace and comparison."""
        return "\n".join(text for _, text in self.elements())

    def elements(self) -> list[tuple[str, str]]:
        """The elements of `html()`, each with what it holds: "index", "trace K", "compare K", "ladder"."""
        index = {
            "limits": self.limits,
            "origin": self.origin,
            "host": self.host,
            "server": self.server,
            "traces": [
                {
                    "id": f"flashviz-trace-{k}",
                    "config": page_config(cfg),
                    "recorded": list(cfg["recorded_blocks"]),
                    "blocks": cfg.get("tr", 0),
                    "inputs": cfg.get("inputs", "random"),  # "file": not the seed's; said when the page leaves it
                }
                for k, (cfg, _) in enumerate(self.traces)
            ],
            "compares": [{"id": f"flashviz-compare-{k}", **key} for k, (key, _) in enumerate(self.compares)],
            "ladder": None if self.ladder is None else LADDER_ID,
            "file": self.file,
        }
        parts = [("index", element(DATA_ID, json.dumps(index, separators=(",", ":")).encode()))]
        parts += [(f"trace {k}", element(f"flashviz-trace-{k}", data)) for k, (_, data) in enumerate(self.traces)]
        parts += [(f"compare {k}", element(f"flashviz-compare-{k}", data)) for k, (_, data) in enumerate(self.compares)]
        if self.ladder is not None:
            parts.append(("ladder", element(LADDER_ID, self.ladder)))
        return parts


def shipped_ladder() -> bytes | None:
    """The ladder run that ships with flashviz, as /api/ladder serves it, or None when none ships (or it is broken:
    the page then says there is none, as it does behind a server answering 404)."""
    from flashviz.hardware.ladder import LadderError, load

    try:
        return json.dumps(load(), separators=(",", ":")).encode()
    except LadderError:
        return None


def page_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """A trace's config as the page's form holds it (web/src/launch.ts ConfigParams): the scale null when it is the
    default 1/sqrt(D), the seed 0 when nothing was drawn (inputs from a file)."""
    scale = cfg.get("scale")
    default = 1.0 / math.sqrt(cfg["d"])
    if scale is None or abs(float(scale) - default) <= 1e-12 * default:
        scale = None
    return {
        "algo": cfg["algo"],
        "n": cfg["n"],
        "d": cfg["d"],
        "br": cfg["br"],
        "bc": cfg["bc"],
        "seed": cfg.get("seed") or 0,
        "scale": scale,
        "causal": bool(cfg["causal"]),
    }


def element(id_: str, data: bytes) -> str:
    """A JSON document inside a script element: `<` written as \\u003c (JSON's own escape, the same string), so
    that no `</script>` or `<!--` in a value can end the element early."""
    text = data.decode().replace("<", "\\u003c")
    return f'<script type="application/json" id="{id_}">{text}</script>'


def bundle_dir() -> Path:
    from importlib import resources

    return Path(str(resources.files("flashviz") / "viewer" / "static" / "single"))


@cache
def template() -> str:
    """The single-file page with its script and stylesheet inside, a CSP allowing nothing external, and
    PLACEHOLDER where the documents go."""
    root = bundle_dir()
    index = root / "index.html"
    if not index.is_file():
        raise NoBundle(NO_BUNDLE.format(path=index))
    html = index.read_text()
    script_tag = re.search(r'<script type="module" crossorigin src="\./(assets/[^"]+\.js)"></script>', html)
    style_tag = re.search(r'<link rel="stylesheet" crossorigin href="\./(assets/[^"]+\.css)">', html)
    if not script_tag or not style_tag:
        raise NoBundle(NO_BUNDLE.format(path=f"{index}'s script and stylesheet"))
    script = (root / script_tag[1]).read_text()
    style = (root / style_tag[1]).read_text()
    # a script element ends at the first "</script" whatever the JS means; the bundle has none (checked, not assumed)
    if re.search(r"</script|<!--", script, re.IGNORECASE) or re.search(r"</style", style, re.IGNORECASE):
        raise NoBundle(NO_BUNDLE.format(path="a bundle that can be inlined (it holds </script or <!--)"))
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = "; ".join(
        (
            "default-src 'none'",
            f"script-src 'sha256-{digest}'",
            "style-src 'unsafe-inline'",  # KaTeX's and CodeMirror's inline styles
            "font-src data:",
            "img-src data: blob:",
            "connect-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        )
    )
    html = html.replace(style_tag[0], f"<style>{style}</style>")
    html = html.replace(script_tag[0], f'<script type="module">{script}</script>')
    html = html.replace(
        '<meta charset="utf-8" />',
        f'<meta charset="utf-8" />\n    <meta http-equiv="Content-Security-Policy" content="{csp}" />',
    )
    return html.replace("</body>", f"{PLACEHOLDER}\n</body>", 1)


def standalone(docs: Documents) -> str:
    """One HTML file: the viewer and `docs`, opened from disk with no network."""
    return template().replace(PLACEHOLDER, docs.html(), 1)


def sizes(docs: Documents) -> list[tuple[str, int]]:
    """The bytes of each part of `standalone(docs)`, each measured on its own (UTF-8, as written): "viewer" (the
    template: script, stylesheet with its fonts, markup), then each of `docs.elements()` by its name, the newlines
    between the elements counted with the index. They add up to the file's length exactly."""
    parts = [(what, len(text.encode())) for what, text in docs.elements()]
    viewer = len(template().encode()) - len(PLACEHOLDER.encode())
    index = [(what, size + (len(parts) - 1 if what == "index" else 0)) for what, size in parts]
    return [("viewer", viewer), *index]
