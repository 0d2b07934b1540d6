"""The LDL^T factorization of symmetric matrices (LAPACK sytrf, Bunch-Kaufman pivoting) and solving with it:
torch.linalg.ldl_factor(_ex) and ldl_solve. As in torch they have no gradient: their results do not require grad.
ember has no complex dtypes, so ``hermitian=True`` is the same factorization as ``False`` (a real symmetric
matrix is Hermitian)."""
from __future__ import annotations

import numpy as np

from ..return_types import return_type
from ..tensor import dtypes
from ..tensor.tensor import Tensor
from ..tensor.out_arg import with_out
from . import _lapack
from ._common import check_b_and_A, check_matrix, check_pivots_shape, check_rhs, raise_first_failure
from ._host import through_host
from .solves import broadcast_pair
from ..tensor.arguments import tensor_args

linalg_ldl_factor = return_type("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _factor(op: str, A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    check_matrix(A, op, square=True, half_kernel="ldl_factor_kernel_cpu")
    return tuple(Tensor._make(v) for v in _lapack.sytrf(A._array))


def _zero_block(k: int) -> str:
    return (f"The factorization could not be completed because the block diagonal matrix D is singular: "
            f"D[{k - 1},{k - 1}] is zero.")


@tensor_args
@with_out
@through_host
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> linalg_ldl_factor_ex:
    """torch.linalg.ldl_factor_ex: ``A = L D L^T`` from A's lower triangle, packed as LAPACK's ``LD`` with its
    pivots, and sytrf's info per matrix (k > 0: D is singular); ``check_errors`` raises instead."""
    op = "torch.linalg.ldl_factor_ex"
    LD, pivots, info = _factor(op, A)
    if check_errors:
        raise_first_failure(op, info._array.reshape(-1), A.ndim > 2, _zero_block)
    return linalg_ldl_factor_ex(LD, pivots, info)


@tensor_args
@with_out
@through_host
def ldl_factor(A: Tensor, *, hermitian: bool = False) -> linalg_ldl_factor:
    """torch.linalg.ldl_factor: ``A = L D L^T`` (symmetric A, lower triangle read) as (LD, pivots); LinAlgError
    when D is singular."""
    op = "torch.linalg.ldl_factor"
    LD, pivots, info = _factor(op, A)
    raise_first_failure(op, info._array.reshape(-1), A.ndim > 2, _zero_block)
    return linalg_ldl_factor(LD, pivots)


@tensor_args
@with_out
@through_host
def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """torch.linalg.ldl_solve: ``X`` with ``A X = B`` from A's ldl_factor; batch dims broadcast."""
    op = "torch.linalg.ldl_solve"
    check_matrix(LD, op, square=True)
    check_rhs(op, B, IndexError)
    check_pivots_shape(op, LD, pivots)
    if pivots.dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"{op}: pivots should be a Tensor of scalar type torch.int32, got {pivots.dtype}")
    n = LD.shape[-1]
    if pivots.numel() and (np.abs(pivots._array).max() > n or (pivots._array == 0).any()):
        raise RuntimeError(f"{op}: pivots must all satisfy 1 <= |pivot| <= LD.size(-2) = {n}; pass the pivots "
                           "ldl_factor returns")
    check_b_and_A(op, B, LD)
    ld, b = broadcast_pair(LD, B, op)
    piv = np.broadcast_to(pivots._array.astype(np.int32), ld.shape[:-1])
    return Tensor._make(_lapack.sytrs(ld, piv, b))
