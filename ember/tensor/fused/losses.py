"""Loss ops on the fused loss kernels: class-index cross-entropy/NLL and CTC.

Cross-entropy and NLL over class indices run one kernel (log-softmax, gather
and weighting in one pass); the backward is another kernel wrapped in a
Function whose own backward is in tensor ops, so gradient penalties work. CTC
runs its alpha/beta recursions as kernels.
"""
from __future__ import annotations

import numpy as np

from ...autograd.function import Function, once_differentiable
from ...kernels.common.dtypes import NARROW_FLOATS
from .._dispatch import ascontiguous, backend, compute_dtype
from ..tensor import Tensor

__all__ = ["class_nll", "ctc", "log_softmax_by_logsumexp"]


def _compute_array(t: Tensor) -> np.ndarray:
    """``t``'s array, C-contiguous, in the dtype kernels compute in (float16 and bfloat16 widened to float32)."""
    arr = t._array
    if arr.dtype in NARROW_FLOATS:
        return arr.astype(np.float32)
    return ascontiguous(arr)


def log_softmax_by_logsumexp(x: Tensor, dim: int) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` in tensor ops (differentiable to any order)."""
    return x - x.logsumexp(dim, keepdim=True)


# ---- classification over class indices ---------------------------------------------------------------------------

class _ClassNLL(Function):
    """Reduced class-index cross-entropy (``from_logits``) or NLL of (N, C, S) input against (N, S) targets."""

    @staticmethod
    def forward(ctx, x: Tensor, target: np.ndarray, weight: np.ndarray, ignore_index: int, smoothing: float,
                from_logits: bool, reduction: str, out_shape: tuple) -> np.ndarray:
        arr = _compute_array(x)
        rows = (arr.shape[0], arr.shape[2])
        loss = np.empty(rows, arr.dtype, like=arr)
        lse = np.empty(rows, arr.dtype, like=arr)
        total = backend(arr).losses.class_nll_forward(arr, target, weight, ignore_index, smoothing, from_logits,
                                                        loss, lse)
        ctx.save_for_backward(x)
        ctx.spec = (target, weight, ignore_index, smoothing, from_logits, lse)
        ctx.reduction, ctx.total, ctx.rows = reduction, total, rows
        if reduction == "none":
            out = loss.reshape(out_shape)
        elif reduction == "sum":
            out = loss.sum(keepdims=True).reshape(())  # an array on every backend (NumPy's plain sum is a scalar)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                out = (loss.sum(dtype=np.float64, keepdims=True) / total).reshape(())
        return out.astype(x.dtype.np, copy=False)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        if ctx.reduction == "none":
            per_row = grad.reshape(ctx.rows)
        else:
            per_row = (grad / ctx.total if ctx.reduction == "mean" else grad).expand(ctx.rows)
        return (_ClassNLLGrad.apply(x, per_row, ctx.spec),) + (None,) * 7


class _ClassNLLGrad(Function):
    """The input gradient of ``_ClassNLL`` (a kernel); its own backward is in tensor ops (double backward)."""

    @staticmethod
    def forward(ctx, x: Tensor, per_row: Tensor, spec: tuple) -> np.ndarray:
        target, weight, ignore_index, smoothing, from_logits, lse = spec
        arr = _compute_array(x)
        grad = np.empty_like(arr)
        g = ascontiguous(per_row._array, dtype=arr.dtype)
        backend(arr).losses.class_nll_backward(arr, target, weight, lse, g, ignore_index, smoothing, from_logits,
                                                 grad)
        ctx.save_for_backward(x, per_row)
        ctx.spec = spec
        return grad.astype(x.dtype.np, copy=False)

    @staticmethod
    def backward(ctx, v: Tensor) -> tuple:
        x, per_row = ctx.saved_tensors
        target, weight, ignore_index, smoothing, from_logits, _ = ctx.spec
        n, c, s = x.shape
        valid = target != ignore_index
        # a[n, c, s]: the weight of -log p[c] in row (n, s)'s loss (see ember.kernels.cpu.losses).
        a = (smoothing / c) * weight[None, :, None] * valid[:, None, :]
        rows_n, rows_s = np.nonzero(valid)
        picked = target[rows_n, rows_s]
        a[rows_n, picked, rows_s] += (1.0 - smoothing) * weight[picked]
        coeff = Tensor._make(a.astype(x.dtype.np))
        grad_x = grad_rows = None
        if not from_logits:
            if ctx.needs_input_grad[1]:
                grad_rows = -(v * coeff).sum(1)
            return grad_x, grad_rows, None
        total = coeff.sum(1, keepdim=True)
        p = log_softmax_by_logsumexp(x, 1).exp()
        if ctx.needs_input_grad[1]:
            grad_rows = (v * (p * total - coeff)).sum(1)
        if ctx.needs_input_grad[0]:
            pv = p * v
            grad_x = (per_row.unsqueeze(1) * total) * (pv - p * pv.sum(1, keepdim=True))
        return grad_x, grad_rows, None


# ---- CTC ---------------------------------------------------------------------------------------------------------

class _CTC(Function):
    """Per-item CTC negative log-likelihood (N,) of (T, N, C) log-probabilities."""

    @staticmethod
    def forward(ctx, log_probs: Tensor, targets: np.ndarray, input_lengths: np.ndarray,
                target_lengths: np.ndarray, blank: int, zero_infinity: bool) -> np.ndarray:
        lp = ascontiguous(log_probs._array)
        steps, batch, _ = lp.shape
        log_alpha = np.empty((batch, steps, 2 * targets.shape[1] + 1), lp.dtype, like=lp)
        nll = np.empty(batch, lp.dtype, like=lp)
        backend(lp).losses.ctc_forward(lp, targets, input_lengths, target_lengths, blank, log_alpha, nll)
        ctx.save_for_backward(log_probs)
        ctx.state = (targets, input_lengths, target_lengths, blank, log_alpha, nll, zero_infinity)
        return nll

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor) -> tuple:
        (log_probs,) = ctx.saved_tensors
        targets, input_lengths, target_lengths, blank, log_alpha, nll, zero_infinity = ctx.state
        lp = ascontiguous(log_probs._array)
        out = np.empty_like(lp)
        g = ascontiguous(grad._array, dtype=lp.dtype)
        backend(lp).losses.ctc_backward(lp, targets, input_lengths, target_lengths, blank, log_alpha, nll, g,
                                          zero_infinity, out)
        return (Tensor._make(out),) + (None,) * 5


def class_nll(x: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, smoothing: float,
              from_logits: bool, reduction: str, out_shape: tuple) -> Tensor:
    """Class-index cross-entropy of logits (``from_logits``) or NLL of log-probabilities: (N, C, S) ``x`` against
    ``target``'s N * S class indices, ``weight`` per class (None: ones), ``reduction`` as torch's (``out_shape``:
    the shape of the unreduced loss). A target outside [0, C), other than ``ignore_index``, is an IndexError."""
    n, c, s = x.shape
    compute = compute_dtype(x.dtype).np
    w = np.ones(c, compute) if weight is None else ascontiguous(weight._array, dtype=compute)
    t = ascontiguous(target._array, dtype=np.int64).reshape(n, s)
    if t.size and (t.min() < 0 or t.max() >= c):
        bad = ((t < 0) | (t >= c)) & (t != ignore_index)
        if bad.any():
            raise IndexError(f"Target {t[bad][0]} is out of bounds.")
    return _ClassNLL.apply(x, t, w, ignore_index, smoothing, from_logits, reduction, out_shape)


def ctc(log_probs: Tensor, targets: np.ndarray, input_lengths: np.ndarray, target_lengths: np.ndarray, blank: int,
        zero_infinity: bool) -> Tensor:
    """Per-item CTC negative log-likelihood (N,) of (T, N, C) ``log_probs`` against padded (N, S) int64
    ``targets``, with int64 lengths (host arrays)."""
    return _CTC.apply(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
