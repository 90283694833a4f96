"""flashviz.attention and its kin on torch: the FA2 Triton and FA3 Gluon launchers with autograd, the backend choice,
the torch reference, ring attention over torch.distributed."""
