"""Fused optimizer updates: one pass over a parameter, its gradient and its state buffers.

``optimizer.step()`` runs every training step, so each update rule is one loop
that reads every buffer once and writes the parameter and state in place,
instead of the chain of five to ten whole-array ops the textbook formula
suggests. The arithmetic follows PyTorch's single-tensor implementations step
by step (where ``eps`` is added, the ``lerp`` form of the moving average, the
order of the two NAdam updates), so trajectories match torch's.

Contract of every entry point: the arrays are 1-D, C-contiguous, of one dtype
(float32 or float64; the caller computes float16 in float32), all of the
parameter's length except optional buffers, which may be empty when unused.
Hyper-parameters are Python floats and flags are bools. The entry points turn
them into scalars of the arrays' dtype (and precompute ``1 - beta`` and the
like, with ``ember.kernels.common.optim_updates``, as the GPU does), so the
loops run in that precision, as torch's do: float32 loops
vectorise, and each kernel has exactly two signatures. Scalar work that does not
depend on the element (bias corrections, step sizes) is done by the caller.

The loops are serial on purpose: they are memory-bound and vectorised (Adam
runs at ~0.7 ns per float32 element), and a ``prange`` version measured slower
here (a blocked ``prange`` does not vectorise; a flat one crashed with optional
buffers), so a parallel variant would only add compile time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..common.optim_updates import effective_grad, lerp, lerp_args, moment_args, moving_square_avg, sign_factor

__all__ = [
    "sgd_update", "adam_update", "adamax_update", "nadam_update", "radam_update", "rmsprop_update",
    "adagrad_update", "adadelta_update",
]

inline = njit(inline="always")
kernel = njit(cache=True, nogil=True, error_model="numpy")


@inline
def _moments(i, param, grad, exp_avg, exp_avg_sq, sign, weight_decay, coef1, low1, beta2, one_minus_beta2):
    """Adam's first stage at element ``i``: the gradient and both moving averages, stored in place; ``(g, m, v)``.

    Inlined into each Adam-family loop, so the loops still vectorise (measured: no cost over writing it out).
    """
    g = effective_grad(grad[i], param[i], sign, weight_decay)
    m = lerp(exp_avg[i], g, coef1, low1)
    v = moving_square_avg(exp_avg_sq[i], g, beta2, one_minus_beta2)
    exp_avg[i] = m
    exp_avg_sq[i] = v
    return g, m, v


# ----------------------------------------------------------------------------- kernels
@kernel
def _sgd(param, grad, buf, neg_lr, momentum, one_minus_dampening, weight_decay, sign, nesterov, first):
    for i in range(param.size):
        d = effective_grad(grad[i], param[i], sign, weight_decay)
        if buf.size != 0:
            if first:
                buf[i] = d
            else:
                buf[i] = buf[i] * momentum + one_minus_dampening * d
            if nesterov:
                d = d + momentum * buf[i]
            else:
                d = buf[i]
        param[i] = param[i] + neg_lr * d


@kernel
def _adam(param, grad, exp_avg, exp_avg_sq, max_sq, sign, weight_decay, decay, coef1, low1, beta2,
          one_minus_beta2, bc2_sqrt, eps, neg_step_size):
    for i in range(param.size):
        g, m, v = _moments(i, param, grad, exp_avg, exp_avg_sq, sign, weight_decay, coef1, low1, beta2, one_minus_beta2)
        if max_sq.size != 0:
            if v > max_sq[i] or v != v:  # torch.maximum: NaN wins from either side
                max_sq[i] = v
            v = max_sq[i]
        param[i] = param[i] * decay + neg_step_size * m / (np.sqrt(v) / bc2_sqrt + eps)


@kernel
def _nadam(param, grad, exp_avg, exp_avg_sq, sign, weight_decay, decay, coef1, low1, beta2, one_minus_beta2,
           bias_correction2, eps, grad_coef, avg_coef):
    for i in range(param.size):
        g, m, v = _moments(i, param, grad, exp_avg, exp_avg_sq, sign, weight_decay, coef1, low1, beta2, one_minus_beta2)
        denom = np.sqrt(v / bias_correction2) + eps
        p = param[i] * decay + grad_coef * g / denom
        param[i] = p + avg_coef * m / denom


@kernel
def _radam(param, grad, exp_avg, exp_avg_sq, sign, weight_decay, decay, coef1, low1, beta2, one_minus_beta2,
           bias_correction1, lr, bc2_sqrt, eps, rect, rectified):
    for i in range(param.size):
        g, m, v = _moments(i, param, grad, exp_avg, exp_avg_sq, sign, weight_decay, coef1, low1, beta2, one_minus_beta2)
        u = m / bias_correction1 * lr
        if rectified:
            u = u * (bc2_sqrt / (np.sqrt(v) + eps)) * rect
        param[i] = param[i] * decay - u


@kernel
def _adamax(param, grad, exp_avg, exp_inf, sign, weight_decay, coef1, low1, beta2, eps, neg_clr):
    for i in range(param.size):
        g = effective_grad(grad[i], param[i], sign, weight_decay)
        m = lerp(exp_avg[i], g, coef1, low1)
        exp_avg[i] = m
        a = exp_inf[i] * beta2
        b = np.abs(g) + eps
        u = a if (a > b or a != a) else b
        exp_inf[i] = u
        param[i] = param[i] + neg_clr * m / u


@kernel
def _rmsprop(param, grad, square_avg, buf, grad_avg, sign, weight_decay, alpha, one_minus_alpha, coef, low,
             eps, momentum, neg_lr):
    for i in range(param.size):
        g = effective_grad(grad[i], param[i], sign, weight_decay)
        sq = moving_square_avg(square_avg[i], g, alpha, one_minus_alpha)
        square_avg[i] = sq
        if grad_avg.size != 0:
            ga = lerp(grad_avg[i], g, coef, low)
            grad_avg[i] = ga
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if buf.size != 0:
            b = buf[i] * momentum + g / avg
            buf[i] = b
            param[i] = param[i] + neg_lr * b
        else:
            param[i] = param[i] + neg_lr * g / avg


@kernel
def _adagrad(param, grad, state_sum, sign, weight_decay, eps, neg_clr):
    for i in range(param.size):
        g = effective_grad(grad[i], param[i], sign, weight_decay)
        s = state_sum[i] + g * g
        state_sum[i] = s
        param[i] = param[i] + neg_clr * g / (np.sqrt(s) + eps)


@kernel
def _adadelta(param, grad, square_avg, acc_delta, sign, weight_decay, rho, one_minus_rho, eps, neg_lr):
    for i in range(param.size):
        g = effective_grad(grad[i], param[i], sign, weight_decay)
        sq = moving_square_avg(square_avg[i], g, rho, one_minus_rho)
        square_avg[i] = sq
        delta = np.sqrt(acc_delta[i] + eps) / np.sqrt(sq + eps) * g
        acc_delta[i] = moving_square_avg(acc_delta[i], delta, rho, one_minus_rho)
        param[i] = param[i] + neg_lr * delta


# ----------------------------------------------------------------------------- entry points
def sgd_update(param, grad, momentum_buffer, lr: float, momentum: float, dampening: float, weight_decay: float,
               nesterov: bool, maximize: bool, first: bool) -> None:
    """SGD with optional heavy-ball / Nesterov momentum; ``momentum_buffer`` empty when momentum is 0.

    ``first``: the buffer is uninitialised and takes the (decayed) gradient as is, like torch's clone.
    """
    t = param.dtype.type
    _sgd(param, grad, momentum_buffer, t(-lr), t(momentum), t(1 - dampening), t(weight_decay),
         sign_factor(t, maximize), nesterov, first)


def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, step_size: float, bias_correction2_sqrt: float, maximize: bool,
                decoupled_weight_decay: bool) -> None:
    """Adam / AdamW (``decoupled_weight_decay``); AMSGrad when ``max_exp_avg_sq`` is non-empty.

    ``step_size = lr / (1 - beta1**t)``, ``bias_correction2_sqrt = sqrt(1 - beta2**t)``.
    """
    t = param.dtype.type
    _adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq,
          *moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
          t(bias_correction2_sqrt), t(eps), t(-step_size))


def nadam_update(param, grad, exp_avg, exp_avg_sq, lr: float, beta1: float, beta2: float, eps: float,
                 weight_decay: float, bias_correction2: float, grad_coef: float, avg_coef: float, maximize: bool,
                 decoupled_weight_decay: bool) -> None:
    """NAdam: ``param += grad_coef * g/denom`` then ``param += avg_coef * m/denom`` (torch's two updates)."""
    t = param.dtype.type
    _nadam(param, grad, exp_avg, exp_avg_sq, *moment_args(t, lr, beta1, beta2, weight_decay, maximize,
                                                            decoupled_weight_decay),
           t(bias_correction2), t(eps), t(grad_coef), t(avg_coef))


def radam_update(param, grad, exp_avg, exp_avg_sq, lr: float, beta1: float, beta2: float, eps: float,
                 weight_decay: float, bias_correction1: float, bias_correction2_sqrt: float, rect: float,
                 rectified: bool, maximize: bool, decoupled_weight_decay: bool) -> None:
    """RAdam; the adaptive term (times ``rect``) is applied only when ``rectified`` (rho_t > 5)."""
    t = param.dtype.type
    _radam(param, grad, exp_avg, exp_avg_sq, *moment_args(t, lr, beta1, beta2, weight_decay, maximize,
                                                            decoupled_weight_decay),
           t(bias_correction1), t(lr), t(bias_correction2_sqrt), t(eps), t(rect), rectified)


def adamax_update(param, grad, exp_avg, exp_inf, beta1: float, beta2: float, eps: float, weight_decay: float,
                  clr: float, maximize: bool) -> None:
    """Adamax; ``clr = lr / (1 - beta1**t)``."""
    t = param.dtype.type
    _adamax(param, grad, exp_avg, exp_inf, sign_factor(t, maximize), t(weight_decay), *lerp_args(t, beta1),
            t(beta2), t(eps), t(-clr))


def rmsprop_update(param, grad, square_avg, momentum_buffer, grad_avg, lr: float, alpha: float, eps: float,
                   weight_decay: float, momentum: float, maximize: bool) -> None:
    """RMSprop; with momentum when ``momentum_buffer`` is non-empty, centered when ``grad_avg`` is."""
    t = param.dtype.type
    _rmsprop(param, grad, square_avg, momentum_buffer, grad_avg, sign_factor(t, maximize), t(weight_decay),
             t(alpha), t(1 - alpha), *lerp_args(t, alpha), t(eps), t(momentum), t(-lr))


def adagrad_update(param, grad, state_sum, clr: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """Adagrad; ``clr = lr / (1 + (t - 1) * lr_decay)``."""
    t = param.dtype.type
    _adagrad(param, grad, state_sum, sign_factor(t, maximize), t(weight_decay), t(eps), t(-clr))


def adadelta_update(param, grad, square_avg, acc_delta, lr: float, rho: float, eps: float, weight_decay: float,
                    maximize: bool) -> None:
    """Adadelta."""
    t = param.dtype.type
    _adadelta(param, grad, square_avg, acc_delta, sign_factor(t, maximize), t(weight_decay), t(rho), t(1 - rho),
              t(eps), t(-lr))
