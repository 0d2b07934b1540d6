"""Factorizations: Cholesky, QR, SVD and the symmetric eigendecomposition, with gradients written in
tensor ops (so they differentiate again)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor.tensor import Tensor
from ..tensor.joins import diag_embed, tril
from . import _lapack
from ._common import check_matrix, constant, eye, linalg_cholesky_ex, linalg_eigh, linalg_qr, linalg_svd, \
    off_diagonal_reciprocal, raise_first_failure
from .solves import solve_triangular
from ..tensor.out_arg import with_out
from ._host import through_host
from ..tensor.arguments import tensor_args


def _needs_grad(A: Tensor) -> bool:
    return is_grad_enabled() and A.requires_grad


# ---------------------------------------------------------------------------------------------------- Cholesky
class Cholesky(Function):
    """Lower Cholesky factor (reads the lower triangle) with potrf's info; gradient ``L^-T Phi(L^T G) L^-1``,
    symmetric."""

    @staticmethod
    def forward(ctx, A: Tensor):
        L, info = _lapack.potrf(A._array)
        result = Tensor._make(L)
        if ctx.needs_input_grad:
            ctx.save_for_backward(result)
        return result, Tensor._make(info)

    @staticmethod
    def backward(ctx, g: Tensor, _: Any) -> Tensor:
        (L,) = ctx.saved_tensors
        inner = tril(L.mT @ g)
        inner = 0.5 * (inner + tril(inner, -1).mT)
        left = solve_triangular(L.mT, inner, upper=True)
        return solve_triangular(L, left, upper=False, left=False)


def _not_positive_definite(k: int) -> str:
    return ("The factorization could not be completed because the input is not positive-definite (the leading "
            f"minor of order {k} is not positive-definite).")


def _cholesky(op: str, A: Tensor, upper: bool, check_errors: bool) -> tuple[Tensor, Tensor]:
    check_matrix(A, op, square=True, half_kernel="cholesky_cpu")
    L, info = Cholesky.apply(A)
    if check_errors:
        raise_first_failure(op, info._array.reshape(-1), A.ndim > 2, _not_positive_definite)
    return (L.mT.contiguous() if upper else L), info


@tensor_args
@with_out
@through_host
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """torch.linalg.cholesky: ``L`` with ``A = L L^T`` (``U = L^T`` when ``upper``); LinAlgError when ``A``
    is not positive-definite."""
    return _cholesky("linalg.cholesky", A, upper, True)[0]


@tensor_args
@with_out
@through_host
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> linalg_cholesky_ex:
    """torch.linalg.cholesky_ex: the Cholesky factor and potrf's info per matrix (k > 0: the leading minor of
    order k is not positive-definite, the factor only partial); ``check_errors`` raises LinAlgError instead."""
    return linalg_cholesky_ex(*_cholesky("linalg.cholesky_ex", A, upper, check_errors))


# ---------------------------------------------------------------------------------------------------------- QR
def _qr_vjp(Q: Tensor, R: Tensor, gQ: Tensor, gR: Tensor) -> Tensor:
    """Gradient of a reduced QR with square R (m >= n): ``(gQ + Q copyltu(M)) R^-T``, ``M = R gR^T - gQ^T Q``."""
    M = R @ gR.mT - gQ.mT @ Q
    lower = tril(M, -1)
    sym = lower + lower.mT + M * eye(M.shape[-1], M)
    return solve_triangular(R, (gQ + Q @ sym).mT, upper=True).mT


class QR(Function):
    """Householder QR (LAPACK geqrf/orgqr)."""

    @staticmethod
    def forward(ctx, A: Tensor, mode: str):
        arr = A._array
        if mode == "r":
            Q, R = np.empty(0, arr.dtype), np.linalg.qr(arr, mode="r")
        else:
            Q, R = np.linalg.qr(arr, mode=mode)
        Q, R = Tensor._make(np.asarray(Q, arr.dtype)), Tensor._make(np.asarray(R, arr.dtype))
        if ctx.needs_input_grad:
            ctx.mode = mode
            ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ: Tensor, gR: Tensor):
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_vjp(Q, R, gQ, gR), None
        # A = Q [R1 | R2]: the first m columns are a square QR, the rest is Q R2
        R1, R2, gR1, gR2 = R[..., :, :m], R[..., :, m:], gR[..., :, :m], gR[..., :, m:]
        Y = Q @ R2
        gX = _qr_vjp(Q, R1, gQ + Y @ gR2.mT, gR1)
        return _concat_last(gX, Q @ gR2), None


def _concat_last(a: Tensor, b: Tensor) -> Tensor:
    """Join two tensors along the last dim with products by constant selection matrices (differentiable)."""
    p, q = a.shape[-1], b.shape[-1]
    to_front = np.eye(p, p + q)
    to_back = np.eye(q, p + q, p)
    return a @ constant(to_front, a) + b @ constant(to_back, b)


@tensor_args
@with_out
@through_host
def qr(A: Tensor, mode: str = "reduced") -> linalg_qr:
    """torch.linalg.qr: ``A = Q R`` with orthonormal Q and upper-triangular R; mode 'reduced', 'complete' or 'r'
    (Q empty)."""
    check_matrix(A, "linalg.qr", half_kernel="geqrf_cpu")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return linalg_qr(*QR.apply(A, mode))


# --------------------------------------------------------------------------------------------------------- SVD
class SVD(Function):
    """``A = U diag(S) Vh`` (LAPACK gesdd); gradients assume distinct nonzero singular values."""

    @staticmethod
    def forward(ctx, A: Tensor, full_matrices: bool):
        U, S, Vh = (Tensor._make(np.asarray(v, A._array.dtype))
                    for v in np.linalg.svd(A._array, full_matrices=full_matrices))
        ctx.set_materialize_grads(False)
        if ctx.needs_input_grad:
            ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU: Tensor | None, gS: Tensor | None, gVh: Tensor | None):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        m, n = U.shape[-2], Vh.shape[-1]
        U, Vh = U[..., :, :k], Vh[..., :k, :]           # extra full_matrices vectors are arbitrary: ignored
        row, col = S.unsqueeze(-2), S.unsqueeze(-1)
        inner = diag_embed(gS) if gS is not None else None
        if gU is not None or gVh is not None:
            F = off_diagonal_reciprocal(row * row - col * col)     # 1 / (s_j^2 - s_i^2)
            terms = []
            if gU is not None:
                gU = gU[..., :, :k]
                UtgU = U.mT @ gU
                terms.append((F * (UtgU - UtgU.mT)) * row)
            if gVh is not None:
                gVh = gVh[..., :k, :]
                VtgV = Vh @ gVh.mT
                terms.append(col * (F * (VtgV - VtgV.mT)))
            for term in terms:
                inner = term if inner is None else inner + term
        gA = U @ inner @ Vh
        if gU is not None and m > k:
            gA = gA + ((gU - U @ (U.mT @ gU)) / row) @ Vh
        if gVh is not None and n > k:
            gA = gA + U @ ((gVh - (gVh @ Vh.mT) @ Vh) / col)
        return gA, None


@tensor_args
@with_out
@through_host
def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> linalg_svd:
    """torch.linalg.svd: ``A = U diag(S) Vh`` with S descending; ``full_matrices=False`` gives the reduced
    factors."""
    check_matrix(A, "linalg.svd", half_kernel="linalg_svd_cpu")
    return linalg_svd(*SVD.apply(A, full_matrices))


@tensor_args
@with_out
@through_host
def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """torch.linalg.svdvals: singular values, descending (vectors are only computed when a gradient needs
    them)."""
    check_matrix(A, "linalg.svd", half_kernel="linalg_svd_cpu")
    if _needs_grad(A):
        return SVD.apply(A, False)[1]
    return Tensor._make(np.asarray(np.linalg.svd(A._array, compute_uv=False), A._array.dtype))


# -------------------------------------------------------------------------------------------- eigh / eigvalsh
class Eigh(Function):
    """Symmetric eigendecomposition (reads the ``UPLO`` triangle); gradients assume distinct eigenvalues."""

    @staticmethod
    def forward(ctx, A: Tensor, UPLO: str):
        w, V = np.linalg.eigh(A._array, UPLO=UPLO)
        w, V = Tensor._make(np.asarray(w, A._array.dtype)), Tensor._make(np.asarray(V, A._array.dtype))
        ctx.set_materialize_grads(False)
        if ctx.needs_input_grad:
            ctx.save_for_backward(w, V)
        return w, V

    @staticmethod
    def backward(ctx, gw: Tensor | None, gV: Tensor | None):
        w, V = ctx.saved_tensors
        inner = diag_embed(gw) if gw is not None else None
        if gV is not None:
            VtgV = V.mT @ gV
            term = off_diagonal_reciprocal(w.unsqueeze(-2) - w.unsqueeze(-1)) * (0.5 * (VtgV - VtgV.mT))
            inner = term if inner is None else inner + term
        return V @ inner @ V.mT, None


def _check_uplo(UPLO: str) -> None:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@tensor_args
@with_out
@through_host
def eigh(A: Tensor, UPLO: str = "L") -> linalg_eigh:
    """torch.linalg.eigh: ascending eigenvalues and orthonormal eigenvectors of symmetric matrices, from the
    ``UPLO`` triangle."""
    check_matrix(A, "linalg.eigh", square=True, half_kernel="linalg_eigh_cpu", kernel_checks_dtype=True)
    _check_uplo(UPLO)
    return linalg_eigh(*Eigh.apply(A, UPLO.upper()))


@tensor_args
@with_out
@through_host
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """torch.linalg.eigvalsh: ascending eigenvalues of symmetric matrices (vectors only when a gradient needs
    them)."""
    check_matrix(A, "linalg.eigh", square=True, half_kernel="linalg_eigh_cpu", kernel_checks_dtype=True)
    _check_uplo(UPLO)
    if _needs_grad(A):
        return Eigh.apply(A, UPLO.upper())[0]
    return Tensor._make(np.asarray(np.linalg.eigvalsh(A._array, UPLO=UPLO.upper()), A._array.dtype))
