"""flashviz: watch the FlashAttention-2 kernel run tile by tile, with real numbers."""

__version__ = "0.1.0"
