"""The CPU backend: Numba ``njit`` kernels over NumPy arrays.

It implements the backend contract written down in ``ember.backend``
(``unary``, ``binary``, ``ternary``, ``reduce``, ``arg_reduce``, ``scan``,
``matmul``); ``tests/test_backend_contract.py`` checks names and signatures.
"""
from .elementwise import binary, ternary, unary
from .products import matmul
from .reductions import arg_reduce, reduce
from .scans import scan

__all__ = ["unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "matmul"]
