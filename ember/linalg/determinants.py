"""Determinants: det and slogdet, with gradients that stay differentiable (through inv, or the SVD at a
singular matrix)."""
from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..tensor.tensor import Tensor
from ._common import check_matrix, eye, linalg_slogdet
from .inverses import inv
from ..tensor.out_arg import with_out
from ._host import through_host
from ..tensor.arguments import tensor_args
from .decompositions import svd


def _cofactor(A: Tensor) -> Tensor:
    """The cofactor matrix (transposed adjugate) through the SVD: defined for singular ``A`` too."""
    U, S, Vh = svd(A)
    identity = eye(S.shape[-1], S)
    others = (S.unsqueeze(-2) * (1 - identity) + identity).prod(-1)   # prod_{j != i} s_j
    sign = det(U) * det(Vh)
    return (U * (others * sign.unsqueeze(-1)).unsqueeze(-2)) @ Vh


class Det(Function):
    """det(A) by LU; gradient ``g det(A) A^-T``, or the SVD cofactor matrix when some ``A`` is singular."""

    @staticmethod
    def forward(ctx, A: Tensor) -> Tensor:
        result = Tensor._make(np.asarray(np.linalg.det(A._array)))
        if ctx.needs_input_grad:
            ctx.save_for_backward(A, result)
        return result

    @staticmethod
    def backward(ctx, g: Tensor) -> Tensor:
        A, d = ctx.saved_tensors
        if np.all(d._array != 0):
            return (g * d).unsqueeze(-1).unsqueeze(-1) * inv(A).mT
        return g.unsqueeze(-1).unsqueeze(-1) * _cofactor(A)


@tensor_args
@with_out
@through_host
def det(A: Tensor) -> Tensor:
    """torch.linalg.det: determinant of each square matrix of a batch."""
    check_matrix(A, "linalg.det", square=True, half_kernel="lu_cpu")
    return Det.apply(A)


class Slogdet(Function):
    """(sign, log|det|) by LU; only log|det| carries a gradient: ``g A^-T``."""

    @staticmethod
    def forward(ctx, A: Tensor) -> tuple[Tensor, Tensor]:
        sign, logabsdet = np.linalg.slogdet(A._array)
        sign, logabsdet = Tensor._make(np.asarray(sign)), Tensor._make(np.asarray(logabsdet))
        ctx.mark_non_differentiable(sign)
        if ctx.needs_input_grad:
            ctx.save_for_backward(A)
        return sign, logabsdet

    @staticmethod
    def backward(ctx, g_sign: Tensor, g_logabsdet: Tensor) -> Tensor:
        (A,) = ctx.saved_tensors
        return g_logabsdet.unsqueeze(-1).unsqueeze(-1) * inv(A).mT


@tensor_args
@with_out
@through_host
def slogdet(A: Tensor) -> linalg_slogdet:
    """torch.linalg.slogdet: sign and log of the absolute determinant, stable where det under/overflows."""
    check_matrix(A, "linalg.slogdet", square=True)
    return linalg_slogdet(*Slogdet.apply(A))
