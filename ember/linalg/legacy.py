"""torch's older top-level spellings (torch.det, torch.svd, torch.qr, ...) over the torch.linalg ops, with their
own argument conventions and return types."""
from __future__ import annotations

import os
import sys
import warnings
from typing import Sequence

import numpy as np

from ..return_types import return_type
from ..tensor._dispatch import broadcast_shapes
from ..tensor.tensor import Tensor
from ._common import check_b_and_A, check_matrix, check_tensor
from .decompositions import cholesky as _cholesky, qr as _qr, svd as _svd, svdvals
from .determinants import slogdet as _slogdet
from .inverses import pinv
from .norms import matrix_norm, vector_norm
from .pivoted_lu import lu_factor_ex, lu_solve as _lu_solve
from .products import check_vander_size, cross as _cross, powers
from .solves import solve_triangular
from ..tensor.out_arg import with_out
from ..tensor.arguments import tensor_args

slogdet_result = return_type("slogdet", ["sign", "logabsdet"])
qr_result = return_type("qr", ["Q", "R"])
svd_result = return_type("svd", ["U", "S", "V"])
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # frames in ember/ are not callers
lu_with_info = return_type("_lu_with_info", ["LU", "pivots", "info"])
triangular_solve_result = return_type("triangular_solve", ["solution", "cloned_coefficient"])


@tensor_args
@with_out
def slogdet(input: Tensor) -> slogdet_result:
    """torch.slogdet: (sign, log|det|) as ``torch.return_types.slogdet``."""
    return slogdet_result(*_slogdet(input))


@tensor_args
def logdet(input: Tensor) -> Tensor:
    """torch.logdet: log of the determinant: nan for a negative determinant, -inf for a singular matrix."""
    sign, logabsdet = _slogdet(input)
    return logabsdet + sign.log()


@tensor_args
@with_out
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in torch for linalg.cholesky): the Cholesky factor."""
    return _cholesky(input, upper=upper)


@tensor_args
@with_out
def qr(input: Tensor, some: bool = True) -> qr_result:
    """torch.qr: reduced (``some``) or complete QR, as ``torch.return_types.qr``."""
    return qr_result(*_qr(input, "reduced" if some else "complete"))


@tensor_args
@with_out
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> svd_result:
    """torch.svd: ``input = U diag(S) V^T`` (V, not Vh); without ``compute_uv``, U and V are zero matrices."""
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = input.shape[:-2]
        dt = input._array.dtype
        return svd_result(Tensor._make(np.zeros(batch + (m, m), dt)), svdvals(input),
                          Tensor._make(np.zeros(batch + (n, n), dt)))
    U, S, Vh = _svd(input, full_matrices=not some)
    return svd_result(U, S, Vh.mT)


@tensor_args
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: pseudo-inverse with singular values below ``rcond * s_max`` dropped."""
    return pinv(input, rtol=rcond)


@tensor_args
@with_out
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: cross product along ``dim``; without ``dim``, the first dim of size 3 (deprecated in torch)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, n in enumerate(input.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim=dim)


def _deprecated(name: str, replacement: str) -> None:
    """torch's deprecation warning, attributed to the first caller outside ember (the wrappers between differ
    for ``ember.lu`` and ``Tensor.lu``)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"torch.{name} is deprecated: use {replacement} instead (torch plans to remove torch.{name})",
                  UserWarning, stacklevel=level)


@tensor_args
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, *, out: tuple | None = None) -> tuple:
    """torch.lu (deprecated): ``(LU, pivots)`` as linalg.lu_factor gives them, and LAPACK's info as a third
    element (``torch.return_types._lu_with_info``) with ``get_infos``; a singular A is not an error. As in torch,
    ``out`` tensors of any dtype are resized and receive the results by ``copy_`` (cast, and in the graph)."""
    _deprecated("lu", "torch.linalg.lu_factor (torch.linalg.lu_factor_ex for get_infos=True)")
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    result = lu_with_info(LU, pivots, info) if get_infos else (LU, pivots)
    if out is None:
        return result
    if not isinstance(out, (tuple, list)) or len(out) != len(result) or not all(isinstance(o, Tensor) for o in out):
        raise TypeError(f"lu(): argument 'out' must be a tuple of {len(result)} Tensors")
    written = tuple(o.resize_(r.shape).copy_(r) for r, o in zip(result, out))
    return lu_with_info(*written) if get_infos else written


def lu_method(self: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:
    """Tensor.lu: torch.lu of this tensor (torch's method takes no ``out``)."""
    return lu(self, pivot, get_infos)


@tensor_args
@with_out
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """torch.lu_solve (deprecated): linalg.lu_solve with the right-hand side first."""
    _deprecated("lu_solve", "torch.linalg.lu_solve")
    return _lu_solve(LU_data, LU_pivots, b)


@tensor_args
@with_out
def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> triangular_solve_result:
    """torch.triangular_solve (deprecated): ``op(A) X = b`` for triangular A (``A^T`` when ``transpose``), with a
    copy of A broadcast to the batch shape as ``cloned_coefficient``."""
    _deprecated("triangular_solve", "torch.linalg.solve_triangular")
    op = "triangular_solve"
    check_tensor(b, op, "input")
    if b.ndim < 2:
        raise RuntimeError(f"torch.{op}: Expected b to have at least 2 dimensions, but it has {b.ndim} dimensions "
                           "instead")
    check_matrix(A, op, square=True, half_kernel="triangular_solve_cpu", kernel_checks_dtype=True)
    check_b_and_A(op, b, A)
    batch = broadcast_shapes(b.shape[:-2], A.shape[:-2], op=op)
    solution = solve_triangular(A.mT if transpose else A, b, upper=upper != transpose, unitriangular=unitriangular)
    return triangular_solve_result(solution, A.expand(*batch, *A.shape[-2:]).clone())


@tensor_args
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """torch.vander: the Vandermonde matrix of a vector, powers decreasing left to right unless ``increasing``
    (N columns, default ``len(x)``); integer and bool input give int64."""
    check_tensor(x, "vander", "x")
    if x.ndim != 1:
        raise RuntimeError(f"vander: x must be a one-dimensional tensor, but got {x.ndim} dimensions")
    check_vander_size("vander", N)
    N = x.shape[0] if N is None else int(N)
    if N < 0:
        raise RuntimeError(f"vander: N must be non-negative, but got N={N}")
    result = powers(x, N)
    return result if increasing else result.flip(-1)


@tensor_args
@with_out
def nuclear_norm(input: Tensor, dim: Sequence[int] | bool | None = None, keepdim: bool = False) -> Tensor:
    """torch.nuclear_norm (deprecated): linalg.matrix_norm(input, 'nuc') over ``dim`` (default the last two);
    ``nuclear_norm(input, keepdim)`` is the other overload."""
    _deprecated("nuclear_norm", "torch.linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


@tensor_args
@with_out
def frobenius_norm(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """torch.frobenius_norm (deprecated): the 2-norm over one or two dims ``dim``."""
    _deprecated("frobenius_norm", "torch.linalg.vector_norm(A, 2, dim, keepdim)")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"frobenius_norm: Expected at most 2 dimensions, but got {len(dims)} dimensions instead")
    return vector_norm(input, 2, dims, keepdim)
