"""flashviz.attention and its kin on torch: the checks of their arguments, the backend choice, the torch operators with
their autograd (around the launchers of algos/fa2_triton/ and algos/fa3/), the torch reference, ring attention over
torch.distributed."""
