"""Loss kernels: fused class-index cross-entropy / NLL, and CTC.

``class_nll_forward`` / ``class_nll_backward`` serve both ``cross_entropy`` with
class indices (``from_logits=True``: the log-softmax is computed in the same
pass as the gather and the weighting) and ``nll_loss`` (``from_logits=False``:
the input already holds log-probabilities). The input is seen as (N, C, S):
batch, classes, and the flattened extra dims of K-dimensional losses, so one
kernel serves (N, C) and (N, C, d1, ..., dk) without a transpose copy.

Per row (n, s) with target t (rows whose target is ``ignore_index`` give 0),
writing lp[c] for the log-probability of class c and eps for label smoothing:

    loss = (1 - eps) * w[t] * -lp[t] + eps / C * sum_c w[c] * -lp[c]

so the gradient of the row's loss with respect to lp[c] is ``-a[c]`` with
``a[c] = (1 - eps) * w[t] * [c == t] + eps / C * w[c]``; through the
log-softmax that becomes ``A * softmax[c] - a[c]`` with ``A = sum_c a[c]``.

``ctc_forward`` / ``ctc_backward`` are the alpha and beta recursions of
Connectionist Temporal Classification in log space, one batch item per
(parallel) work item.

Sums accumulate in float64; float16 callers widen to float32 first.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .jit import serial_and_parallel
from .parallelism import parallel_pays

inline = njit(inline="always")


# ---- cross-entropy / NLL over class indices ----------------------------------------------------------------------

@inline
def _class_row_forward(x, target, weight, ignore_index, smoothing, from_logits, weight_sum, row, loss, lse):
    """Loss of row ``row`` (n * S + s); returns the row's weight w[t] (0 when ignored)."""
    n_classes, inner = x.shape[1], x.shape[2]
    n, s = row // inner, row % inner
    t = target[n, s]
    if t == ignore_index:
        loss[n, s] = 0.0
        lse[n, s] = 0.0
        return 0.0
    log_norm = 0.0
    if from_logits:
        peak = -np.inf
        for c in range(n_classes):
            if x[n, c, s] > peak:
                peak = x[n, c, s]
        total = 0.0
        for c in range(n_classes):
            total += math.exp(x[n, c, s] - peak)
        log_norm = peak + math.log(total)
    wt = weight[t]
    value = (1.0 - smoothing) * wt * (log_norm - x[n, t, s])
    if smoothing > 0.0:
        dot = 0.0
        for c in range(n_classes):
            dot += weight[c] * x[n, c, s]
        value += smoothing / n_classes * (log_norm * weight_sum - dot)
    loss[n, s] = value
    lse[n, s] = log_norm
    return wt


def _class_forward(x, target, weight, ignore_index, smoothing, from_logits, loss, lse):
    weight_sum = 0.0
    for c in range(weight.size):
        weight_sum += weight[c]
    total = 0.0
    for row in prange(x.shape[0] * x.shape[2]):
        total += _class_row_forward(x, target, weight, ignore_index, smoothing, from_logits, weight_sum, row,
                                    loss, lse)
    return total


_class_forward_serial, _class_forward_parallel = serial_and_parallel(_class_forward, error_model="numpy")


@inline
def _class_row_backward(x, target, weight, lse, grad_row, ignore_index, smoothing, from_logits, weight_sum, row,
                        grad):
    n_classes, inner = x.shape[1], x.shape[2]
    n, s = row // inner, row % inner
    t = target[n, s]
    if t == ignore_index:
        for c in range(n_classes):
            grad[n, c, s] = 0.0
        return
    g = grad_row[n, s]
    share = smoothing / n_classes
    hit = (1.0 - smoothing) * weight[t]
    if from_logits:
        total = hit + share * weight_sum
        log_norm = lse[n, s]
        for c in range(n_classes):
            grad[n, c, s] = g * (total * math.exp(x[n, c, s] - log_norm) - share * weight[c])
    else:
        for c in range(n_classes):
            grad[n, c, s] = -g * share * weight[c]
    grad[n, t, s] -= g * hit


def _class_backward(x, target, weight, lse, grad_row, ignore_index, smoothing, from_logits, grad):
    weight_sum = 0.0
    for c in range(weight.size):
        weight_sum += weight[c]
    for row in prange(x.shape[0] * x.shape[2]):
        _class_row_backward(x, target, weight, lse, grad_row, ignore_index, smoothing, from_logits, weight_sum, row,
                            grad)


_class_backward_serial, _class_backward_parallel = serial_and_parallel(_class_backward, error_model="numpy")


def class_nll_forward(x: np.ndarray, target: np.ndarray, weight: np.ndarray, ignore_index: int, smoothing: float,
                      from_logits: bool, loss: np.ndarray, lse: np.ndarray) -> float:
    """Per-row losses of (N, C, S) ``x`` against (N, S) int64 ``target``; returns the summed weight w[t].

    ``x`` and ``weight`` (C,) share a float dtype (float32/float64), all
    arrays are C-contiguous and every target is ``ignore_index`` or in
    ``[0, C)``. Fills ``loss`` and ``lse`` (N, S) of ``x``'s dtype; ``lse`` is
    each row's log-sum-exp (0 when ``from_logits`` is False), kept for the
    backward pass.
    """
    work = x.size
    kernel = _class_forward_parallel if parallel_pays(work) else _class_forward_serial
    return float(kernel(x, target, weight, ignore_index, smoothing, from_logits, loss, lse))


def class_nll_backward(x: np.ndarray, target: np.ndarray, weight: np.ndarray, lse: np.ndarray,
                       grad_row: np.ndarray, ignore_index: int, smoothing: float, from_logits: bool,
                       grad: np.ndarray) -> None:
    """Fill (N, C, S) ``grad`` with d(sum_rows grad_row * loss)/dx for the forward of ``class_nll_forward``."""
    kernel = _class_backward_parallel if parallel_pays(x.size) else _class_backward_serial
    kernel(x, target, weight, lse, grad_row, ignore_index, smoothing, from_logits, grad)


# ---- CTC ---------------------------------------------------------------------------------------------------------

@inline
def _log_add(a, b):
    """log(exp(a) + exp(b)) without overflow; exact when either side is -inf."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@inline
def _label(targets, b, s, blank):
    """Class of state ``s`` of the blank-extended label sequence (blank, l1, blank, l2, ..., blank)."""
    if s % 2 == 0:
        return blank
    return targets[b, s // 2]


@inline
def _can_skip(targets, b, s, blank):
    """Whether state ``s`` may be reached from ``s - 2`` (a label differing from the previous label)."""
    return s >= 2 and s % 2 == 1 and targets[b, s // 2] != targets[b, s // 2 - 1]


@inline
def _ctc_alpha(log_probs, targets, input_lengths, target_lengths, blank, b, log_alpha, nll):
    steps, states = input_lengths[b], 2 * target_lengths[b] + 1
    for t in range(log_alpha.shape[1]):
        for s in range(log_alpha.shape[2]):
            log_alpha[b, t, s] = -np.inf
    if steps == 0:
        nll[b] = 0.0 if states == 1 else np.inf
        return
    log_alpha[b, 0, 0] = log_probs[0, b, blank]
    if states > 1:
        log_alpha[b, 0, 1] = log_probs[0, b, targets[b, 0]]
    for t in range(1, steps):
        for s in range(states):
            acc = log_alpha[b, t - 1, s]
            if s >= 1:
                acc = _log_add(acc, log_alpha[b, t - 1, s - 1])
            if _can_skip(targets, b, s, blank):
                acc = _log_add(acc, log_alpha[b, t - 1, s - 2])
            if acc != -np.inf:
                acc += log_probs[t, b, _label(targets, b, s, blank)]
            log_alpha[b, t, s] = acc
    end = log_alpha[b, steps - 1, states - 1]
    if states > 1:
        end = _log_add(end, log_alpha[b, steps - 1, states - 2])
    nll[b] = -end


def _ctc_forward(log_probs, targets, input_lengths, target_lengths, blank, log_alpha, nll):
    for b in prange(log_probs.shape[1]):
        _ctc_alpha(log_probs, targets, input_lengths, target_lengths, blank, b, log_alpha, nll)


_ctc_forward_serial, _ctc_forward_parallel = serial_and_parallel(_ctc_forward, error_model="numpy")


@inline
def _ctc_grad(log_probs, targets, input_lengths, target_lengths, blank, log_alpha, nll, grad_out, zero_infinity, b,
              grad):
    max_steps, n_classes = log_probs.shape[0], log_probs.shape[2]
    steps, states = input_lengths[b], 2 * target_lengths[b] + 1
    loss, g = nll[b], grad_out[b]
    for t in range(max_steps):
        for c in range(n_classes):
            grad[t, b, c] = 0.0
    if steps == 0 or (zero_infinity and loss == np.inf):
        return
    beta = np.full((2, states), -np.inf)  # rows t % 2: only the next step's beta is needed
    pair = np.empty(n_classes)            # log of sum over states of class c of alpha * beta at step t
    for t in range(steps - 1, -1, -1):
        now = t % 2
        for s in range(states):
            if t == steps - 1:
                acc = 0.0 if s >= states - 2 else -np.inf
            else:
                nxt = 1 - now
                acc = beta[nxt, s]
                if s + 1 < states:
                    acc = _log_add(acc, beta[nxt, s + 1])
                if s + 2 < states and _can_skip(targets, b, s + 2, blank):
                    acc = _log_add(acc, beta[nxt, s + 2])
            if acc != -np.inf:
                acc += log_probs[t, b, _label(targets, b, s, blank)]
            beta[now, s] = acc
        for c in range(n_classes):
            pair[c] = -np.inf
        for s in range(states):
            c = _label(targets, b, s, blank)
            pair[c] = _log_add(pair[c], log_alpha[b, t, s] + beta[now, s])
        for c in range(n_classes):
            lp = log_probs[t, b, c]
            grad[t, b, c] = (math.exp(lp) - math.exp(pair[c] + loss - lp)) * g


def _ctc_backward(log_probs, targets, input_lengths, target_lengths, blank, log_alpha, nll, grad_out, zero_infinity,
                  grad):
    for b in prange(log_probs.shape[1]):
        _ctc_grad(log_probs, targets, input_lengths, target_lengths, blank, log_alpha, nll, grad_out, zero_infinity,
                  b, grad)


_ctc_backward_serial, _ctc_backward_parallel = serial_and_parallel(_ctc_backward, error_model="numpy")


def _ctc_parallel(log_probs: np.ndarray, targets: np.ndarray) -> bool:
    return log_probs.shape[1] > 1 and parallel_pays(log_probs.shape[0] * log_probs.shape[1] * targets.shape[1] * 2)


def ctc_forward(log_probs: np.ndarray, targets: np.ndarray, input_lengths: np.ndarray, target_lengths: np.ndarray,
                blank: int, log_alpha: np.ndarray, nll: np.ndarray) -> None:
    """Negative log-likelihood of each batch item under CTC, with the alphas kept for ``ctc_backward``.

    ``log_probs`` (T, N, C) float32/float64; ``targets`` (N, L) int64 padded
    labels in ``[0, C)``; ``input_lengths`` (N,) in ``[0, T]`` and
    ``target_lengths`` (N,) in ``[0, L]``, int64; ``blank`` in ``[0, C)``.
    Fills ``log_alpha`` (N, T, 2L + 1) and ``nll`` (N,), of ``log_probs``'s dtype.
    """
    kernel = _ctc_forward_parallel if _ctc_parallel(log_probs, targets) else _ctc_forward_serial
    kernel(log_probs, targets, input_lengths, target_lengths, blank, log_alpha, nll)


def ctc_backward(log_probs: np.ndarray, targets: np.ndarray, input_lengths: np.ndarray, target_lengths: np.ndarray,
                 blank: int, log_alpha: np.ndarray, nll: np.ndarray, grad_out: np.ndarray, zero_infinity: bool,
                 grad: np.ndarray) -> None:
    """Fill (T, N, C) ``grad`` with ``grad_out[n] * (exp(log_probs) - posterior)`` as torch's CTC backward does.

    Like torch, the result is the gradient with respect to the logits under a
    log-softmax (it sums to zero over classes), which is also what reaches the
    logits through ``log_softmax``'s backward. Steps past an item's input
    length get 0, as do items with infinite loss when ``zero_infinity``.
    """
    kernel = _ctc_backward_parallel if _ctc_parallel(log_probs, targets) else _ctc_backward_serial
    kernel(log_probs, targets, input_lengths, target_lengths, blank, log_alpha, nll, grad_out, zero_infinity, grad)


__all__ = ["class_nll_forward", "class_nll_backward", "ctc_forward", "ctc_backward"]
