"""The CPU backend: Numba ``njit`` kernels over NumPy arrays.

The backend contract (every backend exports these names with these
signatures; arrays in, results written into ``out``):

- ``unary(code, x, out)``, ``binary(code, a, b, out)``, ``ternary(code, a, b, c, out)``:
  elementwise ops of ``ember.opcodes`` with broadcasting to ``out.shape``;
- ``reduce(code, x, dims, out)``: a reduction into ``out`` of keepdim shape;
- ``arg_reduce(code, x, dim, values, indices)``: max/min with their indices along one dim;
- ``scan(code, x, dim, out)``: cumulative ops along one dim;
- ``matmul(a, b, out)``: batched (B, M, K) @ (B, K, N) products.
"""
from .elementwise import binary, ternary, unary
from .matmul import matmul
from .reduce import arg_reduce, reduce
from .scan import scan

__all__ = ["unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "matmul"]
