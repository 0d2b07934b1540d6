"""ember.linalg: torch.linalg on LAPACK (through NumPy/SciPy), batched over leading dims, differentiable.

Submodules each do one job: ``inverses`` (inv, pinv, matrix_rank, tensorinv), ``determinants``, ``solves``
(solve, solve_triangular, lstsq, tensorsolve), ``decompositions`` (cholesky, qr, svd, eigh), ``pivoted_lu`` (LU:
lu_factor, lu, lu_solve, lu_unpack), ``ldl`` (ldl_factor, ldl_solve), ``householder`` (geqrf, householder_product,
ormqr), ``cholesky_solves``, ``norms`` (with cond) and ``products`` (with vander); ``_lapack`` holds the batched
LAPACK calls. ``legacy`` holds torch's older top-level spellings (torch.det, torch.svd, torch.lu, ...) and
``removed`` the ones torch still exports but only to raise (torch.lstsq, torch.eig, ...).

ember has no complex dtypes yet, so linalg.eig and linalg.eigvals (complex results) are not here.
"""
from __future__ import annotations

from typing import Callable

from ..tensor.arguments import tensor_args as _tensor_args
from ..tensor.methods import bind_methods as _bind_methods
from ..tensor.tensor import Tensor
from ..tensor.views import diagonal as _diagonal
from . import legacy, norms, removed
from ._common import LinAlgError
from .cholesky_solves import cholesky_inverse, cholesky_solve
from .decompositions import cholesky, cholesky_ex, eigh, eigvalsh, qr, svd, svdvals
from .determinants import det, slogdet
from .householder import geqrf, householder_product, ormqr
from .inverses import inv, inv_ex, matrix_rank, pinv, tensorinv
from .ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .matrix_functions import matrix_exp
from .norms import cond, matrix_norm, norm, vector_norm
from .pivoted_lu import lu, lu_factor, lu_factor_ex, lu_solve
from .products import cross, matmul, matrix_power, multi_dot, vander, vecdot
from .solves import lstsq, solve, solve_ex, solve_triangular, tensorsolve


@_tensor_args
def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: ``torch.diagonal`` with defaults over the last two dims."""
    return _diagonal(A, offset, dim1, dim2)


__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh",
    "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor",
    "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
    "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv",
    "tensorsolve", "vander", "vecdot", "vector_norm",
]

# torch's top-level names for the lead to bind in the ``ember`` namespace
TORCH_FUNCTIONS: dict[str, Callable] = {
    "det": det, "logdet": legacy.logdet, "slogdet": legacy.slogdet, "inverse": inv, "cholesky": legacy.cholesky,
    "qr": legacy.qr, "svd": legacy.svd, "pinverse": legacy.pinverse, "matrix_power": matrix_power,
    "cross": legacy.cross, "matrix_exp": matrix_exp,
}

# ``Tensor.<name>`` methods (each takes the tensor first), bound by the tensor layer's ``bind_methods``
TENSOR_METHODS: dict[str, Callable] = {
    **TORCH_FUNCTIONS, "lu": legacy.lu_method, "lu_solve": legacy.lu_solve, "triangular_solve": legacy.triangular_solve,
    "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "geqrf": geqrf,
    "orgqr": householder_product, "ormqr": ormqr, "dist": norms.dist, **removed.TENSOR_METHODS,
}
_bind_methods(TENSOR_METHODS)
