"""flashviz: watch the FlashAttention-2 kernel run tile by tile, with real numbers."""

import sys
import types

__version__ = "0.1.0"


def attention(q, k, v, causal=False, scale=None, return_lse=False, backend="auto"):
    """FlashAttention, forward and backward: softmax(scale * q k^T) v for (B, H, N, D) tensors; backend "auto"
    (FlashAttention-3 in Gluon on Hopper where faster, else FlashAttention-2 in Triton), "fa3" or "fa2".

    Needs torch and Triton (pip install 'flashviz[triton]'); see flashviz.triton_attention.attention for the
    arguments. Imported on first call, so that `import flashviz` needs neither.
    """
    try:
        from .triton_attention import attention as _attention
    except ImportError as e:
        raise ImportError(f"flashviz.attention needs torch and Triton: pip install 'flashviz[triton]' ({e})") from None
    return _attention(q, k, v, causal=causal, scale=scale, return_lse=return_lse, backend=backend)


def trace(*args, **kwargs):
    """Run the engine on one launch and return its Trace: see flashviz.api.trace for the arguments
    (algo, n, d, br, bc, causal, seed, scale, inputs, block; or kernel=, your own Triton kernel). Imported on first
    call: `import flashviz` stays light."""
    from .api import trace as _trace

    return _trace(*args, **kwargs)


def show(*args, **kwargs):
    """The viewer as a notebook widget (anywidget): see flashviz.api.show. pip install 'flashviz[notebook]'."""
    from .api import show as _show

    return _show(*args, **kwargs)


class _TraceModule(types.ModuleType):
    """`flashviz.trace(...)` is the Python API's function while `flashviz.trace` is also the module of the Trace types:
    Python makes a package's attribute the submodule once it is imported, so that module answers the call too."""

    def __call__(self, *args, **kwargs):
        from .api import trace as _trace

        return _trace(*args, **kwargs)


class _Package(types.ModuleType):
    def __setattr__(self, name, value):
        # the import system sets flashviz.trace to the submodule when it loads it: keep it callable
        if name == "trace" and type(value) is types.ModuleType:
            value.__class__ = _TraceModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
