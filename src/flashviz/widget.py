"""The notebook widget (`flashviz.show`): the one viewer, the page `flashviz export` writes, in a sandboxed iframe
inside an anywidget, for JupyterLab, Jupyter Notebook 7, VS Code and marimo. Everything is inside the widget's ESM
(script, styles, KaTeX's fonts: it works offline). A launch the page does not hold is asked of Python through the
widget's model (a custom message answered with the trace's JSON), where the engine runs: no server.

`config` (synced) is the launch on screen, `step` the step (an index into its steps); setting `config` from Python
shows that launch. `trace` is the Trace last computed here (or the document shown, for a trace file)."""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

try:
    import anywidget
    import traitlets
except ImportError as exc:  # the optional extra
    raise ImportError(f"flashviz.show needs anywidget: pip install 'flashviz[notebook]' ({exc})") from None

from .config import Config, ConfigError
from .page import PLACEHOLDER, Documents, template

if TYPE_CHECKING:
    from .trace import Trace

ORIGIN = "the notebook widget"

HOST = "widget_host.js"  # the host side, beside this file


@cache
def esm() -> str:
    from importlib import resources

    host = (resources.files("flashviz") / HOST).read_text()
    return host.replace("__PAGE__", json.dumps(template())).replace("__MARK__", json.dumps(PLACEHOLDER))


class Viewer(anywidget.AnyWidget):
    """The flashviz viewer in a notebook. Make one with `flashviz.show(...)`."""

    _esm = esm()
    _documents = traitlets.Unicode("").tag(sync=True)
    config = traitlets.Dict().tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    height = traitlets.Int(760).tag(sync=True)

    def __init__(self, documents: Documents, shown: Trace | dict[str, Any], **kwargs: Any) -> None:
        from .page import page_config

        config = shown.config if not isinstance(shown, dict) else shown["config"]
        super().__init__(_documents=documents.html(), config=page_config(config), **kwargs)
        self.trace: Trace | dict[str, Any] = shown
        self.on_msg(self._on_message)

    @classmethod
    def of_trace(cls, trace: Trace, height: int = 760) -> Viewer:
        return cls(_documents_of(trace.config, trace.to_json(compact=True)), trace, height=height)

    @classmethod
    def of_document(cls, doc: dict[str, Any], data: bytes, height: int = 760) -> Viewer:
        """A trace file's document, as read and checked (flashviz.tracefile)."""
        return cls(_documents_of(doc["config"], data), doc, height=height)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "ask":
            return
        reply = {"type": "answer", "view": content.get("view"), "id": content.get("id")}
        try:
            data = self._answer(content)
        except ConfigError as exc:
            self.send({**reply, "ok": False, "detail": f"{exc.field}: {exc.message}", "field": exc.field})
            return
        except Exception as exc:  # a bug: one line in the page, the details in the kernel's log
            import logging

            logging.getLogger("flashviz.widget").exception("flashviz widget: %s", exc)
            self.send({**reply, "ok": False, "detail": f"internal error ({type(exc).__name__}): {exc}"[:200]})
            return
        self.send({**reply, "ok": True}, [data])

    def _answer(self, content: dict[str, Any]) -> bytes:
        cfg = config_of(content.get("config"), content.get("block"))
        if content.get("kind") == "compare":
            from .compare_api import compare_document

            cfg = cfg.api_validated()
            doc = compare_document(n=cfg.n, d=cfg.d, br=cfg.br, bc=cfg.bc, causal=cfg.causal)
            return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
        from .tracer import make_trace

        made = make_trace(cfg.api_validated())  # the API's bounds: a launch the page can hold
        self.trace = made
        return made.to_json(compact=True)


def _documents_of(config: dict[str, Any], data: bytes) -> Documents:
    from .compare_api import limits_document

    return Documents(origin=ORIGIN, limits=limits_document(default=config["algo"]), traces=[(config, data)], host=True)


def config_of(params: Any, block: Any = None) -> Config:
    """A Config from the page's ConfigParams (web/src/state.ts); bad values are left for Config's messages."""
    from .algos import DEFAULT

    if not isinstance(params, dict):
        raise ConfigError("config", "must be an object with algo, n, d, br, bc, seed, scale, causal")
    keys = ("n", "d", "br", "bc", "seed")
    if block is not None and (isinstance(block, bool) or not isinstance(block, int)):
        raise ConfigError("block", "must be an integer, at least 0")
    sizes: dict[str, Any] = {k: params[k] for k in keys if k in params}
    return Config(
        algo=params.get("algo") or DEFAULT,
        **sizes,
        scale=params.get("scale"),
        causal=params.get("causal", False),
        record=None if block is None else (block,),
    )
