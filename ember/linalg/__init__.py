"""ember.linalg: torch.linalg on LAPACK (through NumPy/SciPy), batched over leading dims, differentiable.

Submodules each do one job: ``inverses`` (inv, pinv, matrix_rank), ``determinants``, ``solves`` (solve,
solve_triangular, lstsq), ``decompositions`` (cholesky, qr, svd, eigh), ``norms`` and ``products``;
``legacy`` holds torch's older top-level spellings (torch.det, torch.svd, ...).
"""
from __future__ import annotations

from typing import Callable

from ..tensor.tensor import Tensor
from ..tensor.views import diagonal as _diagonal
from . import legacy
from ._common import LinAlgError
from .decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from .determinants import det, slogdet
from .inverses import inv, matrix_rank, pinv
from .norms import matrix_norm, norm, vector_norm
from .products import cross, matmul, matrix_power, multi_dot, vecdot
from .solves import lstsq, solve, solve_triangular


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: ``torch.diagonal`` with defaults over the last two dims."""
    return _diagonal(A, offset, dim1, dim2)


__all__ = [
    "LinAlgError", "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
    "solve_triangular", "svd", "svdvals", "vecdot", "vector_norm",
]

# torch's top-level names for the lead to bind in the ``ember`` namespace
TORCH_FUNCTIONS: dict[str, Callable] = {
    "det": det, "logdet": legacy.logdet, "slogdet": legacy.slogdet, "inverse": inv, "cholesky": legacy.cholesky,
    "qr": legacy.qr, "svd": legacy.svd, "pinverse": legacy.pinverse, "matrix_power": matrix_power,
    "cross": legacy.cross,
}

# ``Tensor.<name>`` methods (each takes the tensor first)
TENSOR_METHODS: dict[str, Callable] = dict(TORCH_FUNCTIONS)
