"""Inverses: the inverse of a square matrix, the pseudo-inverse, and the numerical rank (which shares the
pseudo-inverse's singular-value cutoff)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.function import Function
from ..tensor import dtypes
from ..tensor.tensor import Tensor
from ..tensor.out_arg import with_out
from . import _lapack
from ._common import check_matrix, check_tensor, linalg_inv_ex, raise_first_failure, scalar_or_array, singular_message
from ._host import through_host
from ..tensor.arguments import tensor_args


class Inv(Function):
    """``A^-1`` with getrf's info; the gradient ``-A^-T G A^-T`` reuses the (differentiable) output."""

    @staticmethod
    def forward(ctx, A: Tensor):
        inverse, info = _lapack.inverse(A._array)
        result = Tensor._make(inverse)
        if ctx.needs_input_grad:
            ctx.save_for_backward(result)
        return result, Tensor._make(info)

    @staticmethod
    def backward(ctx, g: Tensor, _: Any) -> Tensor:
        (Y,) = ctx.saved_tensors
        Yt = Y.mT
        return -(Yt @ g @ Yt)


@tensor_args
@with_out
@through_host
def inv_ex(A: Tensor, *, check_errors: bool = False) -> linalg_inv_ex:
    """torch.linalg.inv_ex: the inverses and LAPACK's info per matrix (k > 0: singular, its inverse inf/nan);
    ``check_errors`` raises LinAlgError instead."""
    check_matrix(A, "linalg.inv_ex", square=True)
    inverse, info = Inv.apply(A)
    if check_errors:
        raise_first_failure("linalg.inv_ex", info._array.reshape(-1), A.ndim > 2, singular_message)
    return linalg_inv_ex(inverse, info)


@tensor_args
@with_out
@through_host
def inv(A: Tensor) -> Tensor:
    """torch.linalg.inv: the inverse of each square matrix of a batch (LinAlgError when one is singular)."""
    check_matrix(A, "linalg.inv", square=True)
    inverse, info = Inv.apply(A)
    raise_first_failure("linalg.inv", info._array.reshape(-1), A.ndim > 2, singular_message)
    return inverse


@tensor_args
@with_out
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """torch.linalg.tensorinv: the inverse of ``A`` read as a matrix (the first ``ind`` dims as rows), shaped
    ``A.shape[ind:] + A.shape[:ind]`` so that ``tensordot(tensorinv(A), A, ind)`` is the identity."""
    check_tensor(A, "linalg.tensorinv")
    if isinstance(ind, bool) or not isinstance(ind, (int, np.integer)):
        raise TypeError(f"linalg_tensorinv(): argument 'ind' must be int, not {type(ind).__name__}")
    if ind <= 0:
        raise RuntimeError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"linalg.tensorinv: Expected prod(A.shape[ind:]) == prod(A.shape[:ind]), but got "
                           f"{math.prod(cols)} != {math.prod(rows)} (A of shape {list(A.shape)}, ind={ind})")
    return inv(A.reshape(math.prod(rows), math.prod(cols))).reshape(*cols, *rows)


# ----------------------------------------------------------------------------------------------- pseudo-inverse
def _cutoff(s_max: np.ndarray, shape: tuple[int, ...], dt: np.dtype, atol: Any, rtol: Any) -> np.ndarray:
    """torch's singular-value cutoff ``max(atol, rtol * s_max)``; rtol defaults to eps * max(m, n) unless atol > 0."""
    if rtol is None:
        rtol = np.finfo(dt).eps * max(shape[-2:]) if atol is None or np.all(scalar_or_array(atol, dt) <= 0) else 0.0
    atol = 0.0 if atol is None else atol
    return np.maximum(scalar_or_array(atol, dt), scalar_or_array(rtol, dt) * s_max)


def _spectrum(A: np.ndarray, hermitian: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U, s, Vh) with ``A = U diag(s) Vh``: an SVD, or for hermitian input an eigendecomposition with
    ``|lambda|`` as s and the signs folded into Vh."""
    if hermitian:
        lam, V = np.linalg.eigh(A)
        return V, np.abs(lam), (V * np.sign(lam)[..., None, :]).swapaxes(-1, -2)
    return np.linalg.svd(A, full_matrices=False)


def pinv_vjp(G: Tensor, P: Tensor, A: Tensor) -> Tensor:
    """The gradient wrt ``A`` of ``<G, pinv(A)>`` given ``P = pinv(A)`` (constant rank), in tensor ops."""
    Gt, Pt = G.mT, P.mT
    PPt, PtP = P @ Pt, Pt @ P
    return -(Pt @ G @ Pt) + (Gt @ PPt - A @ (P @ (Gt @ PPt))) + (PtP @ Gt - ((PtP @ Gt) @ P) @ A)


class Pinv(Function):
    """Moore-Penrose pseudo-inverse with torch's tolerances."""

    @staticmethod
    def forward(ctx, A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
        arr = A._array
        U, s, Vh = _spectrum(arr, hermitian)
        s_max = s.max(axis=-1, initial=0.0)
        keep = s > _cutoff(s_max, arr.shape, arr.dtype, atol, rtol)[..., None]
        with np.errstate(divide="ignore"):
            s_inv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(arr.dtype)
        result = Tensor._make((Vh.swapaxes(-1, -2) * s_inv[..., None, :]) @ U.swapaxes(-1, -2))
        if ctx.needs_input_grad:
            ctx.save_for_backward(A, result)
        return result

    @staticmethod
    def backward(ctx, g: Tensor):
        A, P = ctx.saved_tensors
        return pinv_vjp(g, P, A), None, None, None


def _check_pinv(A: Any) -> None:
    if not isinstance(A, Tensor) or A.ndim < 2 or A.dtype not in (dtypes.float32, dtypes.float64):
        what = f"{A.dtype.scalar_type_name}{{{list(A.shape)}}}" if isinstance(A, Tensor) else type(A).__name__
        raise RuntimeError(f"linalg.pinv({what}): expected a tensor with 2 or more dimensions of float, double, "
                           "cfloat or cdouble types")


@tensor_args
@with_out
@through_host
def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """torch.linalg.pinv: pseudo-inverse, singular values below ``max(atol, rtol * s_max)`` dropped."""
    _check_pinv(A)
    return Pinv.apply(A, atol, rtol, hermitian)


@tensor_args
@with_out(cast=True)
@through_host
def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """torch.linalg.matrix_rank: how many singular values exceed ``max(atol, rtol * s_max)`` (int64)."""
    if not isinstance(A, Tensor) or A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if A.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    arr = A._array
    s = np.abs(np.linalg.eigvalsh(arr)) if hermitian else np.linalg.svd(arr, compute_uv=False)
    cut = _cutoff(s.max(axis=-1, initial=0.0), arr.shape, arr.dtype, atol, rtol)
    return Tensor._make((s > cut[..., None]).sum(axis=-1).astype(np.int64))
