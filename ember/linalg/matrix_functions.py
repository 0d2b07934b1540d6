"""Functions of a matrix: ``matrix_exp`` (torch.linalg.matrix_exp, torch.matrix_exp, Tensor.matrix_exp).

The forward is SciPy's scaling-and-squaring Padé ``expm`` per matrix (batched), computed in float64 and
rounded to the input's dtype. The backward uses the block identity
``exp([[A^T, G], [0, A^T]]) = [[e^{A^T}, dL/dA], [0, e^{A^T}]]``: the gradient is the upper-right block of
``matrix_exp`` of a 2n x 2n matrix, so it is itself differentiable (gradients of gradients) through the same op.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ..autograd.function import Function
from ..tensor import dtypes
from ..tensor.joins import cat
from ..tensor.tensor import Tensor
from ._common import check_matrix
from ._host import through_host
from ..tensor.arguments import tensor_args


def _expm(a: np.ndarray) -> np.ndarray:
    if a.size == 0:
        return np.empty_like(a)
    return scipy.linalg.expm(a.astype(np.float64)).astype(a.dtype, copy=False)


class MatrixExp(Function):
    """``e^A`` of each square matrix in the last two dims."""

    @staticmethod
    def forward(ctx, A: Tensor):
        ctx.save_for_backward(A)
        return _expm(A._array)

    @staticmethod
    def backward(ctx, g: Tensor):
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        At = A.mT
        block = cat([cat([At, g], -1), cat([At.new_zeros(At.shape), At], -1)], -2)
        return matrix_exp(block)[..., :n, n:]


@tensor_args
@through_host
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix in ``A``'s last two dims (float16 and bfloat16 are computed in
    float64 and rounded back, where torch's CPU kernel loses the result)."""
    op = "linalg.matrix_exp"
    narrow = isinstance(A, Tensor) and A.dtype.compute is not A.dtype
    check_matrix(A.to(dtypes.float32) if narrow else A, op, square=True)
    return MatrixExp.apply(A)


TORCH_FUNCTIONS = {"matrix_exp": matrix_exp}
