"""FlashAttention-2 in Triton, forward and backward, on tensor cores: the kernel behind `flashviz.attention`
(`kernel.py`; its host side, tile choice and autograd are in `flashviz.triton_attention`).

Not a registered algorithm of the viewer yet: it has no executor, traffic model or narrative (issue 12 adds
them), so `flashviz.algos.FOLDERS` does not list it.
"""
