"""The CPU backend: Numba ``njit`` kernels over NumPy arrays.

It implements the backend contract written down in ``ember.backend``
(elementwise, reductions, scans, products, sorting) and its kernel families
(``conv``, ``pooling``, ``softmax``, ... the nn and optimizer kernels, one
submodule each); ``tests/test_backend_contract.py`` checks names and signatures.
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
           "optim_updates", "pooling", "recurrent", "softmax", "unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices", "matmul", "scatter", "sort", "topk",
           "kthvalue", "mode", "searchsorted", "bincount", "histc"]
