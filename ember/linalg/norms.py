"""Norms: vector p-norms (the reduction in ember.tensor.reduce), matrix norms built from sums, extremes and
singular values, and torch.linalg.norm's dispatch between them."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..autograd.function import Function
from ..tensor import autocast_policy, dtypes
from ..tensor.elementwise import where
from ..tensor.reduce import amax, amin, norm as _p_norm
from ..tensor.tensor import Tensor, _wrap_dim
from ._common import check_tensor
from .decompositions import svdvals
from .inverses import inv_ex
from ..tensor.out_arg import with_out
from ..tensor.arguments import tensor_args

MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _reduced_dims(x: Tensor, dim: Any) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(x.ndim))
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(_wrap_dim(d, x.ndim, "linalg.vector_norm") for d in dims) if x.ndim else ()


@tensor_args
@with_out
def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """torch.linalg.vector_norm: the p-norm over ``dim`` (all dims when None), for any real ``ord``."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("vector_norm", x):
        return autocast_policy.run("vector_norm", vector_norm, x, ord, dim, keepdim)
    check_tensor(x, "linalg.vector_norm", "input")
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.scalar_type_name}")
    if (ord < 0 or ord == math.inf) and any(x.shape[d] == 0 for d in _reduced_dims(x, dim)):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty tensor because the "
                           "operation does not have an identity")
    return _p_norm(x, ord, dim, keepdim, dtype)


def _matrix_dims(A: Tensor, dim: Any) -> tuple[int, int]:
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dims)}")
    d0, d1 = (_wrap_dim(d, A.ndim, "linalg.matrix_norm") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    return d0, d1


def _restore(result: Tensor, dims: tuple[int, int], keepdim: bool) -> Tensor:
    """Put back the two reduced dims as size 1 when ``keepdim``."""
    if keepdim:
        for d in sorted(dims):
            result = result.unsqueeze(d)
    return result


@tensor_args
@with_out
def matrix_norm(A: Tensor, ord: str | float = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """torch.linalg.matrix_norm: Frobenius, nuclear, spectral (2, -2), max/min column sum (1, -1) or row sum
    (inf, -inf) norms over the two dims ``dim``."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("matrix_norm", A):
        return autocast_policy.run("matrix_norm", matrix_norm, A, ord, dim, keepdim)
    check_tensor(A, "linalg.matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.scalar_type_name}")
    d0, d1 = _matrix_dims(A, dim)
    if ord not in MATRIX_ORDS or isinstance(ord, bool):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(dtypes.to_dtype(dtype))
    if ord == "fro" or A.numel() == 0:
        return _p_norm(A, 2, (d0, d1), keepdim)              # every order of an empty matrix is 0, as in torch
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        value = s.sum(-1) if ord == "nuc" else (amax if ord == 2 else amin)(s, -1)
        return _restore(value, (d0, d1), keepdim)
    summed, picked = (d0, d1) if ord in (1, -1) else (d1, d0)
    extreme = amax if ord > 0 else amin
    value = extreme(A.abs().sum(summed, keepdim=True), picked, keepdim=True)
    return value if keepdim else value.squeeze((d0, d1))


@tensor_args
@with_out
def norm(A: Tensor, ord: str | float | None = None, dim: int | Sequence[int] | None = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """torch.linalg.norm: a vector norm over one dim (or of the flattened input), a matrix norm over two."""
    check_tensor(A, "linalg.norm")
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if dim is not None:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")


@tensor_args
@with_out
def cond(A: Tensor, p: str | float | None = None) -> Tensor:
    """torch.linalg.cond: the condition number ``||A|| ||A^-1||`` in the ``p`` norm; for ``p`` None/2/-2 the ratio
    of extreme singular values (any shape), else square A only and inf where A is singular. Differentiable."""
    check_tensor(A, "linalg.cond")
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if isinstance(p, Tensor):
        p = p.item()
    if p not in (None, *MATRIX_ORDS):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p in (None, 2, -2):
        s = svdvals(A)
        if A.numel() == 0:
            return s.new_zeros(A.shape[:-2])
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.numel() == 0:
        return matrix_norm(A, p)
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(inverse, p)
    return where(info > 0, math.inf, value)


@tensor_args
def dist(input: Tensor, other: Tensor, p: Any = 2) -> Tensor:
    """torch.dist: the p-norm of ``input - other`` (broadcast) over all its elements, for any real ``p`` (0 counts
    the nonzero differences, +-inf takes the largest/smallest). Differentiable; at p=0 the gradient is 0 (torch's
    backward raises there)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("dist", input):
        return autocast_policy.run("dist", dist, input, other, p)
    check_tensor(input, "dist", "input")
    check_tensor(other, "dist", "other")
    if isinstance(p, Tensor):
        p = p.item()
    diff = input - other
    if not diff.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{diff.dtype.scalar_type_name} instead.")
    return NonzeroCount.apply(diff) if p == 0 else _p_norm(diff, p)


class NonzeroCount(Function):
    """The number of nonzero elements (the 0-"norm"), in the input's dtype; its gradient is 0 everywhere."""

    @staticmethod
    def forward(ctx, x: Tensor):
        ctx.shape = x.shape
        return (x != 0).to(x.dtype).sum()._array

    @staticmethod
    def backward(ctx, g: Tensor):
        return g.new_zeros(ctx.shape)

