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

from flashviz.algos import BASELINE  # a user's kernel is drawn in its picture (flashviz.yourkernel.viewer)
from flashviz.model import fields
from flashviz.model.config import Config, ConfigError
from flashviz.model.echo import cut
from flashviz.share.page import PLACEHOLDER, Documents, template

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm
    from flashviz.tracing.trace import Trace
    from flashviz.yourkernel.report import KernelTrace

ORIGIN = "the notebook widget"

HOST = "share/widget_host.js"  # the host side, beside this file


@cache
def esm() -> str:
    from importlib import resources

    host = (resources.files("flashviz") / HOST).read_text()
    return host.replace("__PAGE__", json.dumps(template())).replace("__MARK__", json.dumps(PLACEHOLDER))


class Launch(traitlets.Any):
    """The `config` trait: any value reaches Viewer._check_config (None too), which refuses all but a launch in one
    line (traitlets' Dict would refuse a list in its own many-line words)."""

    allow_none = False
    info_text = "a launch: a dict of algo, n, d, br, bc, seed, scale, causal"


class Viewer(anywidget.AnyWidget):
    """The flashviz viewer in a notebook. Make one with `flashviz.show(...)`."""

    _esm = esm()
    _documents = traitlets.Unicode("").tag(sync=True)
    config = Launch({}).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    height = traitlets.Int(760).tag(sync=True)

    def __init__(self, documents: Documents, shown: Trace | dict[str, Any], **kwargs: Any) -> None:
        from flashviz.share.page import page_config

        config = shown.config if not isinstance(shown, dict) else shown["config"]
        # the launch beyond the page's form (the ring's devices and layout): kept for every launch checked or asked here
        self._beyond = beyond_form(config)
        super().__init__(_documents=documents.html(), config=page_config(config), **kwargs)
        self.trace: Trace | dict[str, Any] = shown
        self.kernel_trace: KernelTrace | None = None  # a user's kernel (of_kernel): its verdict, divergence, traffic
        self._kernel: dict[str, Any] | None = None  # flashviz.trace's arguments that ran it, to run it again
        self.on_msg(self._on_message)

    @traitlets.validate("height")
    def _check_height(self, proposal: dict[str, Any]) -> int:
        from flashviz.share.launch_args import height_of

        return height_of(proposal["value"])  # a ConfigError (a ValueError) naming height, as flashviz.show says it

    @traitlets.validate("config")
    def _check_config(self, proposal: dict[str, Any]) -> dict[str, Any]:
        """A launch set here (from Python, or by the page showing one) is checked as flashviz.trace checks its
        arguments: `w.config = {'n': -1}` is a ConfigError naming n, and the launch on screen stays; `{'n': 16}` is
        that launch with flashviz.trace's defaults for the rest."""
        value = proposal["value"]
        _, cfg = config_of(value, beyond=self._beyond)
        # every field of the page's ConfigParams, in its order, as plain JSON values (np.int64(16) is 16): the page
        # opens a launch it is given whole; "" (the default algorithm, as the page may write it) stays ""
        full = {k: getattr(cfg, k) for k in CONFIG_KEYS}
        if value.get("algo") == "":
            full["algo"] = ""
        return full

    @classmethod
    def of_trace(cls, trace: Trace, height: int = 760) -> Viewer:
        return cls(_documents_of(trace.config, trace.to_json(compact=True)), trace, height=height)

    @classmethod
    def of_document(cls, doc: dict[str, Any], data: bytes, height: int = 760) -> Viewer:
        """A trace file's document, as read and checked (flashviz.share.trace_files)."""
        return cls(_documents_of(doc["config"], data), doc, height=height)

    @classmethod
    def of_kernel(cls, made: KernelTrace, options: dict[str, Any] | None, height: int = 760) -> Viewer:
        """A user's kernel (`flashviz.show(kernel=attn_fwd, ...)`): its viewer Trace; with `options` (the arguments
        of flashviz.trace that ran it), a launch edited in the page runs the kernel again, here."""
        shown = made.viewer_trace()
        w = cls(_documents_of(shown.config, shown.to_json(compact=True)), shown, height=height)
        w.kernel_trace, w._kernel = made, None if options is None else dict(options)
        return w

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

            logging.getLogger("flashviz.share.widget").exception("flashviz widget: %s", exc)
            self.send({**reply, "ok": False, "detail": cut(f"internal error ({type(exc).__name__}): {exc}", 200)})
            return
        self.send({**reply, "ok": True}, [data])

    def _answer(self, content: dict[str, Any]) -> bytes:
        # the one lookup (the Algorithm goes down from here) and the API's bounds (a launch the page can hold), in
        # its words: as the server's page says them
        algo, cfg = config_of(content.get("config"), content.get("block"), api=True, beyond=self._beyond)
        if self.kernel_trace is not None and content.get("kind") != "compare" and algo.name == BASELINE:
            return self._rerun(cfg)
        if content.get("kind") == "compare":
            from flashviz.reports.compare_api import compare_document

            doc = compare_document(n=cfg.n, d=cfg.d, br=cfg.br, bc=cfg.bc, causal=cfg.causal)
            return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
        from flashviz.tracing.build import trace_of

        made = trace_of(algo, cfg)
        self.trace = made
        return made.to_json(compact=True)

    def _rerun(self, cfg: Config) -> bytes:
        """The user's kernel again at the page's launch: N, D, the seed, the scale, causal, and the tiles as the
        kernel's BLOCK_M, BLOCK_N (here, in the notebook's process, which runs the user's code already)."""
        from flashviz.yourkernel import trace_kernel

        if self._kernel is None:
            raise ConfigError(
                "kernel", "this widget shows a KernelTrace: flashviz.show(kernel=..., ...) runs it again on an edit"
            )
        assert self.kernel_trace is not None
        options = dict(self._kernel)
        meta = dict(_meta(options.get("meta")))
        params = self.kernel_trace.doc["binding"]
        now = self.kernel_trace.doc["traffic"]
        for flag, name, value, held in (("br", "BLOCK_M", cfg.br, now["br"]), ("bc", "BLOCK_N", cfg.bc, now["bc"])):
            if value == held:
                continue
            if name not in params:
                raise ConfigError(flag, f"this kernel has no {name}: give its tiles with flashviz.show(meta=...)")
            meta[name] = value
        options.update(n=cfg.n, d=cfg.d, seed=cfg.seed, scale=cfg.scale, causal=cfg.causal, meta=meta)
        made = trace_kernel(**options)
        shown = made.viewer_trace()
        self.kernel_trace, self._kernel, self.trace = made, options, shown
        return shown.to_json(compact=True)


def _meta(value: Any) -> dict[str, Any]:
    """meta= as flashviz.trace took it (a dict, or NAME=VALUE,... already checked when the kernel first ran)."""
    if value is None:
        return {}
    if isinstance(value, str):
        return dict(item.strip().split("=", 1) for item in value.split(","))
    return dict(value)


def _documents_of(config: dict[str, Any], data: bytes) -> Documents:
    from flashviz.reports.compare_api import limits_document

    return Documents(origin=ORIGIN, limits=limits_document(default=config["algo"]), traces=[(config, data)], host=True)


# the page's ConfigParams (web/src/launch.ts): the launch fields at "api" but the block, which the page picks
CONFIG_KEYS = tuple(f.name for f in fields.at("api") if f.kind != "pick")


def beyond_form(config: dict[str, Any]) -> dict[str, Any]:
    """The launch fields a trace's config holds beyond N, D, Br, Bc, ... (`config.launch`: the ring's devices and
    layout), as flashviz.trace takes them, with the algorithm they are its (`algo`)."""
    more = config.get("launch")
    if not isinstance(more, dict):
        return {}
    return {"algo": config["algo"], **{k: v for k, v in more.items() if k in fields.BY_NAME and k != "block"}}


def config_of(
    params: Any, block: Any = None, api: bool = False, beyond: dict[str, Any] | None = None
) -> tuple[Algorithm, Config]:
    """The Algorithm and a checked Config from the page's ConfigParams (flashviz.share.launch_args.launch, as
    flashviz.trace checks its arguments); keys left out take flashviz.trace's defaults, but, for the algorithm of
    `beyond` (beyond_form: the trace shown), those `beyond` holds (a ring trace's devices and layout). A ConfigError
    names what is wrong."""
    from flashviz.algos import DEFAULT
    from flashviz.share.launch_args import launch

    if not isinstance(params, dict):
        raise ConfigError("config", f"must be an object with {', '.join(CONFIG_KEYS)}")
    unknown = [k for k in params if k not in CONFIG_KEYS]
    if unknown:
        raise ConfigError("config", f"unknown key {shown_key(unknown[0])}; accepted: {', '.join(CONFIG_KEYS)}")
    algo = params.get("algo")
    algo = DEFAULT if algo is None or (isinstance(algo, str) and not algo) else algo
    kept = beyond if beyond and beyond["algo"] == algo else {}
    return launch({**kept, **params, "algo": algo, "block": block}, api=api)


def shown_key(key: Any) -> str:
    from flashviz.model.config import shown

    return shown(key)
