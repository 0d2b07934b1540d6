"""Differentiable ops over the fused layer kernels (convolution, pooling, normalization, losses, activations, ...).

``ember.nn.functional`` parses and checks torch's arguments, then calls these ops; they take the kernel family of
the operands' backend (``backend(x).pooling``, ``ember.tensor._dispatch``), lay the arrays out as the kernels take
them and record the graph node. One module per kernel family.
"""

