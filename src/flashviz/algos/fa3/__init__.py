"""FlashAttention-3 on Hopper in Gluon (`kernel.py`): the kernels behind flashviz.attention(backend="fa3"), launched
by `flashviz.fa3_attention`. Not yet a viewer algorithm: this folder holds only the kernel, no record yet."""
