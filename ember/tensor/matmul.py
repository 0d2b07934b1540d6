"""Matrix products: matmul and its special cases, one differentiable op underneath."""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from ..autograd.function import Function, name_node
from ..autograd.tangents import total_tangent
from ._dispatch import backend, broadcast_shapes, sum_to_shape
from . import autocast_policy
from .creation import zeros
from .tensor import Tensor
from .out_arg import with_out
from .arguments import tensor_args


def _check_tensors(name: str, a: Any, b: Any) -> None:
    for arg, label in ((a, "input"), (b, "other")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"{name}(): argument '{label}' must be Tensor, not {type(arg).__name__}")


def _check_pair(name: str, a: Any, b: Any) -> None:
    _check_tensors(name, a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {a.dtype.scalar_type_name.lower()} != "
            f"{b.dtype.scalar_type_name.lower()}"
        )


class MatMul(Function):
    """Batched product of operands with at least 2 dims, batch dims broadcast."""

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor):
        (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
        if k != k2:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})" if a.ndim == 2 and b.ndim == 2
                else f"Expected size for first two dimensions of batch2 tensor to be: [{b.shape[0] if b.ndim > 2 else 1}"
                     f", {k}] but got: [{b.shape[0] if b.ndim > 2 else 1}, {k2}]."
            )
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        count = math.prod(batch)
        a3 = np.broadcast_to(a._array, batch + (m, k)).reshape(count, m, k)
        b3 = np.broadcast_to(b._array, batch + (k, n)).reshape(count, k, n)
        out = np.empty((a3.shape[0], m, n), dtype=a._array.dtype, like=a3)
        backend(a, b).matmul(a3, b3, out)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
        return out.reshape(batch + (m, n))

    @staticmethod
    def backward(ctx, g: Tensor):
        a, b = ctx.saved_tensors
        ga = sum_to_shape(matmul(g, b.mT), a.shape) if ctx.needs_input_grad[0] else None
        gb = sum_to_shape(matmul(a.mT, g), b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb

    @classmethod
    def jvp_rule(cls, args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode, the product rule: ``ta @ b + a @ tb``."""
        (a, b), (ta, tb) = args, tangents
        return total_tangent([cls.apply(ta, b) if ta is not None else None,
                              cls.apply(a, tb) if tb is not None else None], outputs[0])


_FOLDED = MatMul.named("UnsafeViewBackward0")  # torch's matmul beyond 2-D ends in a view of its product


def _takes_bmm_path(a: Tensor, b: Tensor) -> bool:
    """Whether torch.matmul multiplies ``a`` and ``b`` with bmm rather than folding the larger operand into one
    matrix for mm/mv (torch's ``should_fold``: it folds when that needs no copy)."""
    if a.ndim <= 2 and b.ndim <= 2:
        return False
    a_larger = a.ndim >= b.ndim
    larger, smaller = (a, b) if a_larger else (b.mT, a)
    if smaller.ndim > 2:
        return True
    if smaller.requires_grad:
        return False  # folded, so that backward makes no large expanded gradient
    if a.ndim == 2:
        return True  # folding would transpose the result and copy it
    if larger.numel() == 0:
        return False
    shape, strides = larger.shape, larger.stride()
    return any(strides[i] != strides[i + 1] * shape[i + 1] for i in range(larger.ndim - 2))


def _matmul_shape(a: Tensor, b: Tensor) -> tuple[tuple[int, ...], int]:
    """The shape of ``a @ b`` and the length of the contracted dim (checked)."""
    a_shape = (1,) + a.shape if a.ndim == 1 else a.shape
    b_shape = b.shape + (1,) if b.ndim == 1 else b.shape
    (m, k), (k2, n) = a_shape[-2:], b_shape[-2:]
    if k != k2:
        raise RuntimeError(f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be multiplied ({k} != {k2})")
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    return batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ()), k


def _mixed_dtype_bmm(name: str, a: Tensor, b: Tensor, shape: tuple[int, ...], k: int) -> Tensor:
    """torch's bmm checks dtypes only when there is something to compute: an empty result or contraction gives
    zeros in ``b``'s dtype; otherwise the mismatch raises."""
    if math.prod(shape) and k:
        raise RuntimeError(f"{name}: expected scalar type {a.dtype.scalar_type_name} but found "
                           f"{b.dtype.scalar_type_name}")
    return zeros(shape, dtype=b.dtype, device=b.device)


@tensor_args
@with_out
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """torch.matmul: dot, matrix-vector, matrix-matrix or broadcast batched product by the operands' ranks."""
    if autocast_policy.ACTIVE and autocast_policy.covers("matmul", input):
        return autocast_policy.run("matmul", matmul, input, other)
    _check_tensors("matmul", input, other)
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {input.ndim}D and {other.ndim}D"
        )
    if input.dtype is not other.dtype:
        if not _takes_bmm_path(input, other):
            _check_pair("matmul", input, other)
        return _mixed_dtype_bmm("matmul", input, other, *_matmul_shape(input, other))
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    if input.ndim == 1:
        return MatMul.apply(input.unsqueeze(0), other).squeeze(-2)
    if other.ndim == 1:
        product = MatMul.apply(input, other.unsqueeze(-1)).squeeze(-1)
        return name_node(product, "MvBackward0") if input.ndim == 2 else product
    return (MatMul if input.ndim == 2 and other.ndim == 2 else _FOLDED).apply(input, other)


@tensor_args
@with_out
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices."""
    if autocast_policy.ACTIVE and autocast_policy.covers("mm", input):
        return autocast_policy.run("mm", mm, input, mat2)
    _check_pair("mm", input, mat2)
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"{'self' if input.ndim != 2 else 'mat2'} must be a matrix")
    return MatMul.apply(input, mat2)


@tensor_args
@with_out
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two batches of matrices of the same batch size."""
    if autocast_policy.ACTIVE and autocast_policy.covers("bmm", input):
        return autocast_policy.run("bmm", bmm, input, mat2)
    _check_tensors("bmm", input, mat2)
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch{1 if input.ndim != 3 else 2} must be a 3D tensor")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{input.shape[0]}, {input.shape[2]}] "
            f"but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    if input.dtype is not mat2.dtype:
        return _mixed_dtype_bmm("bmm", input, mat2, input.shape[:2] + mat2.shape[2:], input.shape[2])
    return MatMul.apply(input, mat2)


@tensor_args
@with_out
def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of the same length."""
    if autocast_policy.ACTIVE and autocast_policy.covers("dot", input):
        return autocast_policy.run("dot", dot, input, other)
    _check_pair("dot", input, other)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] to have the "
            "same number of elements, but got "
            f"{input.shape[0]} and {other.shape[0]} elements respectively"
        )
    return name_node(MatMul.apply(input.unsqueeze(0), other.unsqueeze(-1)).reshape(()), "DotBackward0")


@tensor_args
@with_out
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector."""
    if autocast_policy.ACTIVE and autocast_policy.covers("mv", input):
        return autocast_policy.run("mv", mv, input, vec)
    _check_pair("mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec.ndim}, {input.ndim}, {vec.ndim}")
    return matmul(input, vec)


@tensor_args
@with_out(cast=True)
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError("outer: expected 1D tensors")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


def rounded_once(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``fn(input, m1, m2, *, beta, alpha)``, a ``beta * input + alpha * product`` op, computed in float32 for three
    float16 (or bfloat16) tensors and rounded once at the end, as torch's BLAS kernels are (the product is not
    rounded before the sum)."""
    @functools.wraps(fn)
    def run(input: Tensor, m1: Tensor, m2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        dt = getattr(m2, "dtype", None)
        if dt is not None and dt.compute is not dt and getattr(input, "dtype", None) is dt \
                and getattr(m1, "dtype", None) is dt:
            wide = dt.compute
            return fn(input.to(wide), m1.to(wide), m2.to(wide), beta=beta, alpha=alpha).to(dt)
        return fn(input, m1, m2, beta=beta, alpha=alpha)
    return run


@tensor_args
@with_out
@rounded_once
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("addmm", mat1):
        return autocast_policy.run("addmm", addmm, input, mat1, mat2, beta=beta, alpha=alpha)
    _check_tensors("addmm", mat1, mat2)
    if isinstance(input, Tensor) and input.dtype is not mat2.dtype:
        raise RuntimeError(f"addmm: self and mat2 must have the same dtype, but got {input.dtype.scalar_type_name} and "
                           f"{mat2.dtype.scalar_type_name}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"addmm: mat1 and mat2 must have the same dtype, but got {mat1.dtype.scalar_type_name} and "
                           f"{mat2.dtype.scalar_type_name}")
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return name_node(product + (input if beta == 1 else input * beta), "AddmmBackward0")
