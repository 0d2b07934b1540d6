"""LU factorization with partial pivoting (LAPACK getrf) and what uses it: torch.linalg.lu_factor(_ex), lu,
lu_solve and torch.lu_unpack. The packed ``LU`` is differentiable (its gradient is written in triangular solves,
so it differentiates again); the pivots are LAPACK's 1-based row interchanges, int32 as in torch."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from ..return_types import return_type
from ..tensor import dtypes
from ..tensor.joins import cat, tril, triu
from ..tensor.out_arg import with_out
from ..tensor.tensor import Tensor
from ._common import check_matrix, check_pivots_shape, check_rhs, check_same_dtype, check_tensor, constant, \
    raise_first_failure
from ._host import through_host
from ._lapack import getrf, permutation_matrix
from .solves import check_system, solve_triangular
from ..tensor.arguments import tensor_args

linalg_lu_factor = return_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = return_type("linalg_lu", ["P", "L", "U"])
lu_unpack_result = return_type("lu_unpack", ["P", "L", "U"])


def _check_pivots(op: str, LU: Tensor, pivots: Any) -> None:
    """torch's checks of the ``pivots`` that go with ``LU``: int32, LU's leading shape, values in 1..m."""
    check_pivots_shape(op, LU, pivots)
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError(f"{op}: pivots should be a Tensor of scalar type torch.int32, got {pivots.dtype}; pass "
                           "the pivots linalg.lu_factor returns")
    values = pivots._array
    if values.size and (values.min() < 1 or values.max() > LU.shape[-2]):
        raise RuntimeError(f"{op}: pivots must all be between 1 and LU.size(-2) = {LU.shape[-2]} inclusive; "
                           "pass the pivots linalg.lu_factor returns")


# ------------------------------------------------------------------------------------------------ lu_factor
def _triangles(LU: Tensor) -> tuple[Tensor, Tensor]:
    """The strictly lower (m, k) and the upper (k, n) parts of a packed ``LU`` (differentiable)."""
    k = min(LU.shape[-2:])
    return tril(LU, -1)[..., :, :k], triu(LU)[..., :k, :]


def _lu_factors(LU: Tensor) -> tuple[Tensor, Tensor]:
    """Unit-lower ``L`` (m, k) and upper ``U`` (k, n) of a packed ``LU`` (differentiable)."""
    lower, U = _triangles(LU)
    return lower + constant(np.eye(*lower.shape[-2:]), LU), U


def _lu_backward(LU: Tensor, P: Tensor, gL: Tensor, gU: Tensor) -> Tensor:
    """The gradient wrt ``A = P L U`` (packed in ``LU``) given those of ``L`` and ``U``, in tensor ops. A square
    ``A`` gives ``P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T``; a wide one adds U's extra columns, a tall one
    L's extra rows, each through the square block."""
    m, n = LU.shape[-2:]
    L, U = _lu_factors(LU)
    if m <= n:
        U1, gU1, U2, gU2 = U[..., :, :m], gU[..., :, :m], U[..., :, m:], gU[..., :, m:]
        phi = tril(L.mT @ gL - gU2 @ U2.mT, -1) + triu(gU1 @ U1.mT)
        square = solve_triangular(U1.mT, phi, upper=False, left=False)
        inner = cat([square, gU2], -1) if m < n else square
        return P @ solve_triangular(L.mT, inner, upper=True, unitriangular=True)
    L1, gL1, L2, gL2 = L[..., :n, :], gL[..., :n, :], L[..., n:, :], gL[..., n:, :]
    phi = tril(L1.mT @ gL1, -1) + triu(gU @ U.mT - L2.mT @ gL2)
    inner = cat([solve_triangular(L1.mT, phi, upper=True, unitriangular=True), gL2], -2)
    return P @ solve_triangular(U.mT, inner, upper=False, left=False)


class LUFactor(Function):
    """getrf: the packed ``LU``, the pivots and LAPACK's info; only ``LU`` carries a gradient."""

    @staticmethod
    def forward(ctx, A: Tensor):
        lu, pivots, info = getrf(A._array)
        LU = Tensor._make(lu)
        if ctx.needs_input_grad:
            ctx.P = permutation_matrix(pivots, lu.shape[-2], lu.dtype)
            ctx.save_for_backward(LU)
        return LU, Tensor._make(pivots), Tensor._make(info)

    @staticmethod
    def backward(ctx, gLU: Tensor, *_: Any) -> Tensor:
        (LU,) = ctx.saved_tensors
        return _lu_backward(LU, constant(ctx.P, LU), *_triangles(gLU))


def _zero_pivot(k: int) -> str:
    return (f"U[{k},{k}] is zero, so lu_solve with this factorization would divide by zero; linalg.lu(A) and "
            "linalg.lu_factor_ex(A) factorize such a matrix without raising")


def _lu_factor(op: str, A: Tensor, pivot: bool, check_errors: bool) -> tuple[Tensor, Tensor, Tensor]:
    check_matrix(A, op, half_kernel="lu_cpu", kernel_checks_dtype=True)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    LU, pivots, info = LUFactor.apply(A)
    if check_errors:
        raise_first_failure(op, info._array.reshape(-1), A.ndim > 2, _zero_pivot, error=RuntimeError)
    return LU, pivots, info


@tensor_args
@with_out
@through_host
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> linalg_lu_factor_ex:
    """torch.linalg.lu_factor_ex: ``A = P L U`` packed as (LU, pivots) with LAPACK's ``info`` (k > 0 where
    ``U[k-1, k-1]`` is zero). ``pivot=False`` raises, as torch's CPU kernel does (it has no unpivoted LU)."""
    return linalg_lu_factor_ex(*_lu_factor("torch.linalg.lu_factor_ex", A, pivot, check_errors))


@tensor_args
@with_out
@through_host
def lu_factor(A: Tensor, *, pivot: bool = True) -> linalg_lu_factor:
    """torch.linalg.lu_factor: the packed LU factorization and pivots; a RuntimeError (not LinAlgError, as in
    torch) when some ``U`` has a zero on its diagonal, since lu_solve would divide by it."""
    return linalg_lu_factor(*_lu_factor("torch.linalg.lu_factor", A, pivot, True)[:2])


# ------------------------------------------------------------------------------------------------ unpack / lu
@tensor_args
@with_out
@through_host
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> lu_unpack_result:
    """torch.lu_unpack: ``(P, L, U)`` from lu_factor's output; a part not asked for is an empty tensor. L and U
    are differentiable."""
    op = "torch.lu_unpack"
    check_tensor(LU_data, op, "LU_data")
    if LU_data.ndim < 2:
        raise RuntimeError(f"{op}: Expected tensor with 2 or more dimensions. Got size: {list(LU_data.shape)} "
                           "instead")
    _check_pivots(op, LU_data, LU_pivots)
    empty = Tensor._make(np.empty(0, LU_data._array.dtype))
    P = empty
    if unpack_pivots:
        P = Tensor._make(permutation_matrix(LU_pivots._array, LU_data.shape[-2], LU_data._array.dtype))
    L, U = _lu_factors(LU_data) if unpack_data else (empty, empty)
    return lu_unpack_result(P, L, U)


@tensor_args
@with_out
@through_host
def lu(A: Tensor, *, pivot: bool = True) -> linalg_lu:
    """torch.linalg.lu: ``A = P L U`` with a permutation P, unit-lower L (m, k) and upper U (k, n); singular A is
    fine. Differentiable in L and U."""
    LU, pivots, _ = _lu_factor("torch.linalg.lu", A, pivot, False)
    return linalg_lu(*lu_unpack(LU, pivots))


# ------------------------------------------------------------------------------------------------- lu_solve
def _solve_left(LU: Tensor, P: Tensor, B: Tensor, adjoint: bool) -> Tensor:
    """``A^-1 B`` (``A^-T B`` when ``adjoint``) for ``A = P L U``: two triangular solves reading LU's triangles."""
    if adjoint:
        Y = solve_triangular(LU.mT, B, upper=False)
        return P @ solve_triangular(LU.mT, Y, upper=True, unitriangular=True)
    Y = solve_triangular(LU, P.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)


@tensor_args
@with_out
@through_host
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """torch.linalg.lu_solve: solve ``A X = B`` from A's LU factorization (``A^T X = B`` with ``adjoint``,
    ``X A = B`` / ``X A^T = B`` with ``left=False``); batch dims broadcast; differentiable in LU and B."""
    op = "torch.linalg.lu_solve"
    check_matrix(LU, op, square=True)
    check_rhs("linalg.lu_solve", B)
    check_same_dtype("linalg.lu_solve", LU, B)
    _check_pivots("linalg.lu_solve", LU, pivots)
    check_system("linalg.lu_solve", LU, B, left)
    P = constant(permutation_matrix(pivots._array, LU.shape[-1], LU._array.dtype), LU)
    if left:
        return _solve_left(LU, P, B, adjoint)
    return _solve_left(LU, P, B.mT, not adjoint).mT
