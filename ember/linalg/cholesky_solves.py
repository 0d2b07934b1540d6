"""Solving and inverting with a Cholesky factor: torch.cholesky_solve and torch.cholesky_inverse.

The gradient wrt the factor is torch's: that of ``A = L L^T`` (``U^T U``) treated as a full matrix, not
restricted to its triangle (so, as in torch, gradcheck it through ``tril``/``triu`` of the factor)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from ..tensor._dispatch import sum_to_shape
from ..tensor.out_arg import with_out
from ..tensor.tensor import Tensor
from ._common import check_b_and_A, check_matrix, check_tensor, constant, raise_first_failure, singular_message
from ._host import through_host
from .solves import broadcast_pair, triangular_solve_array
from ..tensor.arguments import tensor_args


class CholeskySolve(Function):
    """``X = (L L^T)^-1 B`` (``(U^T U)^-1 B`` when ``upper``) by two triangular solves."""

    @staticmethod
    def forward(ctx, B: Tensor, factor: Tensor, upper: bool) -> Tensor:
        f, b = broadcast_pair(factor, B, "cholesky_solve")
        first, second = (f.swapaxes(-1, -2), f) if upper else (f, f.swapaxes(-1, -2))
        y = triangular_solve_array(first, b, upper=False, unit=False)
        result = Tensor._make(triangular_solve_array(second, y, upper=True, unit=False))
        if ctx.needs_input_grad:
            ctx.upper, ctx.shapes = upper, (B.shape, factor.shape)
            ctx.save_for_backward(factor, result)
        return result

    @staticmethod
    def backward(ctx, g: Tensor):
        factor, X = ctx.saved_tensors
        gB = CholeskySolve.apply(g, factor, ctx.upper)
        g_factor = None
        if ctx.needs_input_grad[1]:
            M = gB @ X.mT
            sym = M + M.mT
            g_factor = sum_to_shape(-(factor @ sym) if ctx.upper else -(sym @ factor), ctx.shapes[1])
        return sum_to_shape(gB, ctx.shapes[0]) if ctx.needs_input_grad[0] else None, g_factor, None


def _check_factor(op: str, factor: Any, kernel: str) -> None:
    check_matrix(factor, op, square=True, half_kernel=kernel, kernel_checks_dtype=True)


@tensor_args
@with_out
@through_host
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky_solve: ``X`` with ``A X = B`` given A's Cholesky factor (lower ``L``, or upper when
    ``upper``); batch dims broadcast."""
    op = "cholesky_solve"
    check_tensor(B, op, "input")
    _check_factor(op, L, "cholesky_solve_cpu")
    if B.ndim < 2:
        raise RuntimeError(f"{op}: b should have at least 2 dimensions, but has {B.ndim} dimensions instead")
    check_b_and_A(op, B, L)
    return CholeskySolve.apply(B, L, upper)


@tensor_args
@with_out
@through_host
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky_inverse: ``(L L^T)^-1`` (``(U^T U)^-1`` when ``upper``) from a Cholesky factor;
    LinAlgError when the factor has a zero on its diagonal."""
    op = "cholesky_inverse"
    _check_factor(op, L, "cholesky_inverse_out_cpu")
    diagonal = np.diagonal(L._array, axis1=-2, axis2=-1).reshape((-1, L.shape[-1]))
    zero = diagonal == 0
    info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0)
    raise_first_failure(op, info, L.ndim > 2, singular_message)
    identity = constant(np.broadcast_to(np.eye(L.shape[-1]), L.shape), L)
    return CholeskySolve.apply(identity, L, upper)
