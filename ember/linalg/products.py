"""Products: matrix powers, chained products in the cheapest order, cross and dot products of vectors.
All are compositions of differentiable ops (matmul, inv, elementwise, sums)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..tensor import autocast_policy, dtypes
from ..tensor.dtypes import float16, float32, int64
from ..tensor.joins import cat
from ..tensor.matmul import matmul
from ..tensor.tensor import Tensor, _wrap_dim
from ._common import check_tensor
from .inverses import inv
from ..tensor.out_arg import with_out
from ..tensor.arguments import tensor_args

@tensor_args
@with_out
def matrix_power(A: Tensor, n: int) -> Tensor:
    """torch.linalg.matrix_power: ``A^n`` by repeated squaring; ``n = 0`` gives identities, ``n < 0`` powers of
    the inverse."""
    check_tensor(A, "linalg.matrix_power")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        return Tensor._make(np.ascontiguousarray(np.broadcast_to(np.eye(A.shape[-1], dtype=A._array.dtype),
                                                                 A.shape)))
    base, n = (inv(A), -int(n)) if n < 0 else (A, int(n))
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result.clone() if result is A else result


def _chain_order(dims: list[int]) -> list[list[int]]:
    """Split points of the cheapest parenthesisation of a chain with matrix sizes ``dims`` (classic DP)."""
    count = len(dims) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k) for k in range(i, j))
    return split


def _multiply(mats: Sequence[Tensor], split: list[list[int]], i: int, j: int) -> Tensor:
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_multiply(mats, split, i, k), _multiply(mats, split, k + 1, j))


@tensor_args
@with_out
def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """torch.linalg.multi_dot: the product of a chain of matrices (first/last may be vectors), multiplied in the
    order that costs the fewest flops."""
    if autocast_policy.ACTIVE and autocast_policy.covers("multi_dot", tensors):
        return autocast_policy.run("multi_dot", multi_dot, tensors)
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        check_tensor(t, "multi_dot", f"tensors[{i}]")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    for i, t in enumerate(tensors):
        if t.dtype is not first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{first.dtype.scalar_type_name.lower()} and tensor {i} "
                               f"{t.dtype.scalar_type_name.lower()}")
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(-1) if last.ndim == 1 else last]
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    result = _multiply(mats, _chain_order(dims), 0, len(mats) - 1)
    if last.ndim == 1:
        result = result.squeeze(-1)
    if first.ndim == 1:
        result = result.squeeze(0)
    return result


@tensor_args
@with_out
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """torch.linalg.cross: the cross product of 3-vectors along ``dim`` (other dims broadcast)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("cross", input):
        return autocast_policy.run("cross", cross, input, other, dim=dim)
    check_tensor(input, "linalg.cross", "input")
    check_tensor(other, "linalg.cross", "other")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_type_name} but found "
                           f"{other.dtype.scalar_type_name}")
    d = _wrap_dim(dim, input.ndim, "linalg.cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    # component j is a[j+1] * b[j+2] - a[j+2] * b[j+1] (indices mod 3): each reads only its own two products, so a
    # NaN or inf elsewhere in the vectors stays out of it, as in torch
    a1, a2 = input.roll(-1, d), input.roll(-2, d)     # x.roll(-k, d)[j] = x[(j + k) % 3]
    b1, b2 = other.roll(-1, d), other.roll(-2, d)
    if input.dtype is float32:
        # torch's kernel fuses the first product into the subtraction (one rounding, no overflow inside): in float64
        # that product is exact, so one rounding of the float64 difference gives torch's float32 result. float64
        # has no wider dtype here: it rounds the product too (an ulp off torch, or NaN where torch's sum overflows).
        return (a1.double() * b2.double() - (a2 * b1).double()).float()
    return a1 * b2 - a2 * b1


@tensor_args
@with_out
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """torch.linalg.vecdot: the dot product of vectors along ``dim``, other dims broadcast."""
    if autocast_policy.ACTIVE and autocast_policy.covers("vecdot", x):
        return autocast_policy.run("vecdot", vecdot, x, y, dim=dim)
    check_tensor(x, "linalg.vecdot", "x")
    check_tensor(y, "linalg.vecdot", "y")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.scalar_type_name}")
    return (x * y).sum(dim)


def powers(x: Tensor, N: int) -> Tensor:
    """``x**0 .. x**(N-1)`` along a new last dim (integer and bool ``x`` as int64), by a cumulative product, so
    the gradient is right at 0 too."""
    if not x.dtype.is_floating_point:
        x = x.to(int64)
    if N == 0:
        return x.new_zeros((*x.shape, 0))
    return cat([x.new_ones((*x.shape, 1)), x.unsqueeze(-1).expand(*x.shape, N - 1)], -1).cumprod(-1)


def check_vander_size(op: str, N: Any) -> None:
    """``N`` is an int (not a bool), as torch's binding requires."""
    if N is not None and (isinstance(N, bool) or not isinstance(N, (int, np.integer))):
        raise TypeError(f"{op}(): argument 'N' must be int, not {type(N).__name__}")


@tensor_args
def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """torch.linalg.vander: the Vandermonde matrix ``x_i**j`` for j < N (default ``x.size(-1)``, at least 2),
    batched over x's leading dims; differentiable."""
    check_tensor(x, "linalg.vander", "x")
    if x.dtype in (dtypes.bool, float16, dtypes.bfloat16):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{x.dtype.scalar_type_name}")
    check_vander_size("linalg_vander", N)
    x = x.reshape(1) if x.ndim == 0 else x
    N = x.shape[-1] if N is None else int(N)
    if N <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1. Got N={N}")
    return powers(x, N)
