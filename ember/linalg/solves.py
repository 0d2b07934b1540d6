"""Linear systems: general (LU), triangular, and least squares, batched with broadcast batch dims."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import scipy.linalg

from ..autograd.function import Function
from ..tensor import dtypes
from ..tensor._dispatch import broadcast_shapes, sum_to_shape
from ..tensor.tensor import Tensor
from ..tensor.joins import tril, triu
from . import _lapack
from ._common import LinAlgError, check_matrix, check_rhs, check_same_dtype, check_tensor, linalg_lstsq, \
    linalg_solve_ex, raise_first_failure
from .inverses import Pinv, pinv_vjp
from ..tensor.out_arg import with_out
from ._host import through_host
from ..tensor.arguments import tensor_args


def broadcast_pair(A: Tensor, B: Tensor, op: str) -> tuple[np.ndarray, np.ndarray]:
    """``A`` (*, n, n) and ``B`` (*, ., k) as arrays with one broadcast batch shape."""
    batch = broadcast_shapes(A.shape[:-2], B.shape[:-2], op=op)
    return (np.broadcast_to(A._array, batch + A.shape[-2:]), np.broadcast_to(B._array, batch + B.shape[-2:]))


def check_system(op: str, A: Tensor, B: Tensor, left: bool) -> None:
    """torch's shape check of ``A X = B`` (``X A = B`` when not ``left``) for square ``A``."""
    rows, cols = B.shape[-2:]
    if (rows if left else cols) != A.shape[-1]:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {equation} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {rows}x{cols})")


# ------------------------------------------------------------------------------------------------------- solve
class Solve(Function):
    """``X = A^-1 B`` for matrix ``B`` (batch dims broadcast) with getrf's info; gradients ``A^-T G`` and
    ``-(A^-T G) X^T``."""

    @staticmethod
    def forward(ctx, A: Tensor, B: Tensor):
        _, b = broadcast_pair(A, B, "linalg.solve")
        x, info = _lapack.solve(A._array, b)
        result = Tensor._make(x)
        if ctx.needs_input_grad:
            ctx.b_shape = B.shape
            ctx.save_for_backward(A, result)
        return result, Tensor._make(info)

    @staticmethod
    def backward(ctx, g: Tensor, _: Any):
        A, X = ctx.saved_tensors
        gB = Solve.apply(A.mT, g)[0]
        gA = sum_to_shape(-(gB @ X.mT), A.shape) if ctx.needs_input_grad[0] else None
        return gA, sum_to_shape(gB, ctx.b_shape) if ctx.needs_input_grad[1] else None


def _solve(op: str, A: Tensor, B: Tensor, left: bool) -> tuple[Tensor, Tensor]:
    """linalg.solve's checks and (X, info); B may be a (batch of) vector(s)."""
    check_matrix(A, op, square=True, half_kernel="lu_cpu")
    check_tensor(B, op, "B")
    if B.ndim == 0:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    check_same_dtype(op, A, B)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    check_system(op, A, Bm, left)
    X, info = Solve.apply(A, Bm) if left else Solve.apply(A.mT, Bm.mT)
    X = X if left else X.mT
    return (X.squeeze(-1) if vector else X), info


def _solver_failed(k: int) -> str:
    return "The solver failed because the input matrix is singular."


@tensor_args
@with_out
@through_host
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """torch.linalg.solve: ``X`` with ``A X = B`` (or ``X A = B`` when ``left=False``); B may be a (batch of)
    vector(s)."""
    X, info = _solve("linalg.solve", A, B, left)
    raise_first_failure("torch.linalg.solve", info._array.reshape(-1), info.ndim > 0, _solver_failed)
    return X


@tensor_args
@with_out
@through_host
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> linalg_solve_ex:
    """torch.linalg.solve_ex: linalg.solve's result and getrf's info per matrix (k > 0: singular, the result
    inf/nan); ``check_errors`` raises LinAlgError instead."""
    X, info = _solve("linalg.solve_ex", A, B, left)
    if check_errors:
        raise_first_failure("torch.linalg.solve_ex", info._array.reshape(-1), info.ndim > 0, _solver_failed)
    return linalg_solve_ex(X, info)


@tensor_args
@with_out
def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """torch.linalg.tensorsolve: ``X`` with ``tensordot(A, X, X.ndim) = B``, ``X`` of shape ``A.shape[B.ndim:]``
    (after moving ``dims`` of A to the end): a linear solve of A read as a square matrix."""
    check_tensor(A, "linalg.tensorsolve")
    check_tensor(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = tuple(dims)
        A = A.movedim(dims, tuple(range(A.ndim - len(dims), A.ndim)))
    shape = A.shape[B.ndim:]
    n = math.prod(shape)
    if n != B.numel() or n * n != A.numel():
        raise RuntimeError(f"linalg.tensorsolve: Expected prod(A.shape[B.ndim:]) == prod(B.shape) and A to hold a "
                           f"square matrix of that size, but got {n} != {B.numel()} (A of shape {list(A.shape)}, B of "
                           f"shape {list(B.shape)})")
    return solve(A.reshape(n, n), B.reshape(n)).reshape(shape)


# ------------------------------------------------------------------------------------------ triangular solve
def triangular_solve_array(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """Batched triangular solve; a zero pivot gives inf/nan as in torch (BLAS trsm), not an error."""
    if b.size == 0:
        return np.empty(b.shape, a.dtype)
    try:
        return scipy.linalg.solve_triangular(a, b, lower=not upper, unit_diagonal=unit, check_finite=False)
    except np.linalg.LinAlgError:
        flat_a, flat_b = a.reshape((-1,) + a.shape[-2:]), b.reshape((-1,) + b.shape[-2:])
        trsm = scipy.linalg.get_blas_funcs("trsm", (flat_a, flat_b))
        with np.errstate(all="ignore"):
            out = [trsm(1.0, m, rhs, lower=int(not upper), diag=int(unit)) for m, rhs in zip(flat_a, flat_b)]
        return np.stack(out).reshape(b.shape)


class SolveTriangular(Function):
    """``X = A^-1 B`` for triangular ``A`` (only its triangle is read); gradient of ``A`` is that triangle of
    ``-(A^-T G) X^T``."""

    @staticmethod
    def forward(ctx, A: Tensor, B: Tensor, upper: bool, unitriangular: bool) -> Tensor:
        a, b = broadcast_pair(A, B, "linalg.solve_triangular")
        result = Tensor._make(np.asarray(triangular_solve_array(a, b, upper, unitriangular), dtype=a.dtype))
        if ctx.needs_input_grad:
            ctx.upper, ctx.unit, ctx.b_shape = upper, unitriangular, B.shape
            ctx.save_for_backward(A, result)
        return result

    @staticmethod
    def backward(ctx, g: Tensor):
        A, X = ctx.saved_tensors
        gB = SolveTriangular.apply(A.mT, g, not ctx.upper, ctx.unit)
        gA = None
        if ctx.needs_input_grad[0]:
            full = -(gB @ X.mT)
            gA = sum_to_shape(triu(full, int(ctx.unit)) if ctx.upper else tril(full, -int(ctx.unit)), A.shape)
        return gA, (sum_to_shape(gB, ctx.b_shape) if ctx.needs_input_grad[1] else None), None, None


@tensor_args
@with_out
@through_host
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """torch.linalg.solve_triangular: solve with a triangular ``A`` by substitution (no factorization)."""
    op = "linalg.solve_triangular"
    check_matrix(A, op, square=True)
    check_rhs(op, B)
    check_same_dtype(op, A, B)
    check_system(op, A, B, left)
    if left:
        return SolveTriangular.apply(A, B, upper, unitriangular)
    return SolveTriangular.apply(A.mT, B.mT, not upper, unitriangular).mT


# -------------------------------------------------------------------------------------------- least squares
LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_one(a: np.ndarray, b: np.ndarray, rcond: float, driver: str) -> tuple[np.ndarray, int, np.ndarray]:
    """(solution, rank, singular values) of one system by the named LAPACK driver."""
    m, n = a.shape
    if driver == "gels":
        gels = scipy.linalg.get_lapack_funcs("gels", (a, b))
        rhs = np.zeros((max(m, n), b.shape[1]), dtype=a.dtype)
        rhs[:m] = b
        _, x, info = gels(a, rhs)
        if info > 0:
            raise LinAlgError("torch.linalg.lstsq: The least squares solution could not be computed because the "
                              "input matrix does not have full rank (error code: {info}).".format(info=info))
        return x[:n], n, np.empty(0, a.dtype)
    x, _, rank, sv = scipy.linalg.lstsq(a, b, cond=rcond, lapack_driver=driver, check_finite=False)
    return x, int(rank), (np.empty(0, a.dtype) if sv is None else sv)


class Lstsq(Function):
    """Least-squares solution of ``A X = B``; the gradient (full rank) is that of ``pinv(A) @ B``."""

    @staticmethod
    def forward(ctx, A: Tensor, B: Tensor, rcond: float, driver: str):
        a, b = broadcast_pair(A, B, "linalg.lstsq")
        (m, n), k = a.shape[-2:], b.shape[-1]
        batch = a.shape[:-2]
        fa, fb = a.reshape((-1, m, n)), b.reshape((-1, m, k))
        x = np.zeros((fa.shape[0], n, k), dtype=a.dtype)
        ranks = np.zeros(fa.shape[0], dtype=np.int64)
        svals = np.zeros((fa.shape[0], min(m, n) if driver in ("gelsd", "gelss") else 0), dtype=a.dtype)
        if m and n:
            for i in range(fa.shape[0]):
                x[i], ranks[i], sv = _lstsq_one(fa[i], fb[i], rcond, driver)
                svals[i, :sv.size] = sv
        full_rank = driver == "gels" or bool(np.all(ranks == n))
        if driver != "gelsy" and m > n and full_rank:
            residuals = np.square(fa @ x - fb).sum(axis=-2).reshape(batch + (k,))
        else:
            residuals = np.empty(0, dtype=a.dtype)
        rank = ranks.reshape(batch) if driver != "gels" else np.empty(0, dtype=np.int64)
        svals = svals.reshape(batch + svals.shape[-1:]) if driver in ("gelsd", "gelss") else np.empty(0, a.dtype)
        outputs = tuple(Tensor._make(v) for v in (x.reshape(batch + (n, k)), residuals, rank, svals))
        ctx.mark_non_differentiable(*outputs[1:])
        if ctx.needs_input_grad:
            ctx.b_shape = B.shape
            ctx.save_for_backward(A, B)
        return outputs

    @staticmethod
    def backward(ctx, gX: Tensor, *_: Tensor):
        A, B = ctx.saved_tensors
        P = Pinv.apply(A, None, None, False)
        gA = sum_to_shape(pinv_vjp(gX @ B.mT, P, A), A.shape) if ctx.needs_input_grad[0] else None
        gB = sum_to_shape(P.mT @ gX, ctx.b_shape) if ctx.needs_input_grad[1] else None
        return gA, gB, None, None


@tensor_args
@with_out
@through_host
def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> linalg_lstsq:
    """torch.linalg.lstsq: least-squares solutions (CPU default driver 'gelsy'), with residuals, rank and
    singular values where the driver computes them."""
    check_tensor(A, "linalg.lstsq")
    check_tensor(B, "linalg.lstsq", "B")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if A.dtype not in (dtypes.float32, dtypes.float64) or B.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.dtype is not B.dtype:
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {A.dtype.scalar_type_name} and other's dtype {B.dtype.scalar_type_name}")
    driver = "gelsy" if driver is None else driver
    if driver not in LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if rcond is None:
        rcond = float(np.finfo(A._array.dtype).eps) * max(A.shape[-2:])
    X, residuals, rank, svals = Lstsq.apply(A, Bm, rcond, driver)
    return linalg_lstsq(X.squeeze(-1) if vector else X, residuals, rank, svals)
