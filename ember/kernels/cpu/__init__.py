"""The CPU backend: Numba ``njit`` kernels over NumPy arrays.

It implements the backend contract written down in ``ember.kernels.contract``
(elementwise, reductions, scans, products, sorting) and its kernel families
(``conv``, ``pooling``, ``softmax``, ... the nn and optimizer kernels, one
submodule each); its arrays are NumPy's, which serve the contract's array
surface. Definitions it shares with the GPU live in ``ember.kernels.common``.
``tests/test_backend_contract.py`` checks it against the whole contract.
"""
from . import activations, bias_activation, conv, dropout, embedding, losses, normalization, optim_updates, pooling, \
    recurrent, softmax
from .elementwise import binary, ternary, unary
from .indexing import scatter
from .products import matmul
from .reductions import arg_reduce, reduce
from .scans import scan, scan_indices
from .sorting import bincount, histc, kthvalue, mode, searchsorted, sort, topk

__all__ = ["activations", "bias_activation", "conv", "dropout", "embedding", "losses", "normalization",
           "optim_updates", "pooling", "recurrent", "softmax", "unary", "binary", "ternary", "reduce", "arg_reduce",
           "scan", "scan_indices", "matmul", "scatter", "sort", "topk", "kthvalue", "mode", "searchsorted", "bincount",
           "histc"]
