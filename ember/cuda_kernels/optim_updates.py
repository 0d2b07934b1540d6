"""Fused optimizer updates on the GPU: one grid-stride pass over a parameter, its gradient and its state.

Signatures, scalar preparation and per-element arithmetic are ``ember.cpu_kernels.optim_updates``'s:
the entry points build the same dtype scalars with the CPU module's helpers, the kernels call
device builds of its scalar helpers (``_grad``, ``_lerp``, ``_square_avg``) and spell the rest
with the same operand order, so a step on the device follows the CPU (and torch) step for step.

Arrays are 1-D C-contiguous float32/float64 ``DeviceStorage``s of one dtype and the parameter's
length (any ``offset``). An optional state buffer (momentum, AMSGrad's max, centered RMSprop's
average) may be ``None`` or empty (a device array, or the CPU path's empty host placeholder) when
unused; the kernel then gets a flag and a stand-in buffer it never touches.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..cpu_kernels import optim_updates as _cpu
from .launch import SIMULATOR, grid
from .storage import DeviceStorage

__all__ = [
    "sgd_update", "adam_update", "adamax_update", "nadam_update", "radam_update", "rmsprop_update",
    "adagrad_update", "adadelta_update",
]

_grad = cuda.jit(device=True)(_cpu._grad.py_func)
_lerp = cuda.jit(device=True)(_cpu._lerp.py_func)
_square_avg = cuda.jit(device=True)(_cpu._square_avg.py_func)
# math.sqrt is sqrtf for float32 on the device, as np.sqrt on the CPU; the simulator's math.sqrt would return a
# Python float, which NumPy's scalar rules then mix differently, so it uses np.sqrt (dtype-preserving) instead.
_sqrt = np.sqrt if SIMULATOR else math.sqrt


@cuda.jit(device=True)
def _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1, beta2,
             one_minus_beta2):
    """Adam's first stage at element ``i``: the gradient and both moving averages, stored in place; ``(g, m, v)``."""
    g = _grad(grad[og + i], param[op + i], sign, weight_decay)
    m = _lerp(exp_avg[om + i], g, coef1, low1)
    v = _square_avg(exp_avg_sq[ov + i], g, beta2, one_minus_beta2)
    exp_avg[om + i] = m
    exp_avg_sq[ov + i] = v
    return g, m, v


# ----------------------------------------------------------------------------- kernels
@cuda.jit
def _sgd(n, param, op, grad, og, buf, ob, has_buf, neg_lr, momentum, one_minus_dampening, weight_decay, sign,
         nesterov, first):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        d = _grad(grad[og + i], param[op + i], sign, weight_decay)
        if has_buf:
            if first:
                b = d
            else:
                b = buf[ob + i] * momentum + one_minus_dampening * d
            buf[ob + i] = b
            if nesterov:
                d = d + momentum * b
            else:
                d = b
        param[op + i] = param[op + i] + neg_lr * d


@cuda.jit
def _adam(n, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, max_sq, ox, has_max, sign, weight_decay, decay,
          coef1, low1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g, m, v = _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1,
                           beta2, one_minus_beta2)
        if has_max:
            top = max_sq[ox + i]
            if v > top or v != v:  # torch.maximum: NaN wins from either side
                max_sq[ox + i] = v
            else:
                v = top
        param[op + i] = param[op + i] * decay + neg_step_size * m / (_sqrt(v) / bc2_sqrt + eps)


@cuda.jit
def _nadam(n, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, decay, coef1, low1, beta2,
           one_minus_beta2, bias_correction2, eps, grad_coef, avg_coef):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g, m, v = _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1,
                           beta2, one_minus_beta2)
        denom = _sqrt(v / bias_correction2) + eps
        p = param[op + i] * decay + grad_coef * g / denom
        param[op + i] = p + avg_coef * m / denom


@cuda.jit
def _radam(n, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, decay, coef1, low1, beta2,
           one_minus_beta2, bias_correction1, lr, bc2_sqrt, eps, rect, rectified):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g, m, v = _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1,
                           beta2, one_minus_beta2)
        u = m / bias_correction1 * lr
        if rectified:
            u = u * (bc2_sqrt / (_sqrt(v) + eps)) * rect
        param[op + i] = param[op + i] * decay - u


@cuda.jit
def _adamax(n, param, op, grad, og, exp_avg, om, exp_inf, oi, sign, weight_decay, coef1, low1, beta2, eps,
            neg_clr):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g = _grad(grad[og + i], param[op + i], sign, weight_decay)
        m = _lerp(exp_avg[om + i], g, coef1, low1)
        exp_avg[om + i] = m
        a = exp_inf[oi + i] * beta2
        b = abs(g) + eps
        u = a if (a > b or a != a) else b
        exp_inf[oi + i] = u
        param[op + i] = param[op + i] + neg_clr * m / u


@cuda.jit
def _rmsprop(n, param, op, grad, og, square_avg, osq, buf, ob, has_buf, grad_avg, oga, has_avg, sign, weight_decay,
             alpha, one_minus_alpha, coef, low, eps, momentum, neg_lr):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g = _grad(grad[og + i], param[op + i], sign, weight_decay)
        sq = _square_avg(square_avg[osq + i], g, alpha, one_minus_alpha)
        square_avg[osq + i] = sq
        if has_avg:
            ga = _lerp(grad_avg[oga + i], g, coef, low)
            grad_avg[oga + i] = ga
            avg = _sqrt(sq - ga * ga) + eps
        else:
            avg = _sqrt(sq) + eps
        if has_buf:
            b = buf[ob + i] * momentum + g / avg
            buf[ob + i] = b
            param[op + i] = param[op + i] + neg_lr * b
        else:
            param[op + i] = param[op + i] + neg_lr * g / avg


@cuda.jit
def _adagrad(n, param, op, grad, og, state_sum, ost, sign, weight_decay, eps, neg_clr):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g = _grad(grad[og + i], param[op + i], sign, weight_decay)
        s = state_sum[ost + i] + g * g
        state_sum[ost + i] = s
        param[op + i] = param[op + i] + neg_clr * g / (_sqrt(s) + eps)


@cuda.jit
def _adadelta(n, param, op, grad, og, square_avg, osq, acc_delta, oad, sign, weight_decay, rho, one_minus_rho, eps,
              neg_lr):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        g = _grad(grad[og + i], param[op + i], sign, weight_decay)
        sq = _square_avg(square_avg[osq + i], g, rho, one_minus_rho)
        square_avg[osq + i] = sq
        acc = acc_delta[oad + i]
        delta = _sqrt(acc + eps) / _sqrt(sq + eps) * g
        acc_delta[oad + i] = _square_avg(acc, delta, rho, one_minus_rho)
        param[op + i] = param[op + i] + neg_lr * delta


# ----------------------------------------------------------------------------- entry points
def _check(name: str, param: DeviceStorage, *arrays: DeviceStorage) -> int:
    """The element count, after checking every array is contiguous in its buffer with ``param``'s length and
    float dtype."""
    if param.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name}: expected float32 or float64 arrays, got {param.dtype}")
    n = param.numel
    for s in (param, *arrays):
        if s.dtype != param.dtype:
            raise TypeError(f"{name}: arrays must share the parameter's dtype {param.dtype}, got {s.dtype}")
        if s.numel != n or not s.is_contiguous or s.offset < 0 or s.offset + n > s.buffer.size:
            raise ValueError(f"{name}: expected a contiguous storage of {n} elements, got {s}")
    return n


def _split(param: DeviceStorage, *optional: DeviceStorage | None) -> tuple[list, list]:
    """(present buffers, kernel arguments ``buffer, offset, present`` per optional buffer); an absent one
    (None or empty) passes ``param``'s buffer, which the kernel then never touches."""
    present, args = [], []
    for s in optional:
        if s is None or (s.size if isinstance(s, np.ndarray) else s.numel) == 0:
            args += [param.buffer, 0, False]
        else:
            present.append(s)
            args += [s.buffer, s.offset, True]
    return present, args


def _pairs(*arrays: DeviceStorage) -> list:
    return [v for s in arrays for v in (s.buffer, s.offset)]


def sgd_update(param: DeviceStorage, grad: DeviceStorage, momentum_buffer: DeviceStorage | None, lr: float,
               momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
               first: bool) -> None:
    """SGD with optional heavy-ball / Nesterov momentum; ``momentum_buffer`` None or empty when momentum is 0.

    ``first``: the buffer is uninitialised and takes the (decayed) gradient as is, like torch's clone.
    """
    present, opt = _split(param, momentum_buffer)
    n = _check("sgd_update", param, grad, *present)
    if n == 0:
        return
    t = param.dtype.type
    _sgd[grid(n)](n, *_pairs(param, grad), *opt, t(-lr), t(momentum), t(1 - dampening), t(weight_decay),
                  _cpu._sign(t, maximize), bool(nesterov), bool(first))


def adam_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_avg_sq: DeviceStorage,
                max_exp_avg_sq: DeviceStorage | None, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, step_size: float, bias_correction2_sqrt: float, maximize: bool,
                decoupled_weight_decay: bool) -> None:
    """Adam / AdamW (``decoupled_weight_decay``); AMSGrad when ``max_exp_avg_sq`` is given (not None or empty).

    ``step_size = lr / (1 - beta1**t)``, ``bias_correction2_sqrt = sqrt(1 - beta2**t)``.
    """
    present, opt = _split(param, max_exp_avg_sq)
    n = _check("adam_update", param, grad, exp_avg, exp_avg_sq, *present)
    if n == 0:
        return
    t = param.dtype.type
    _adam[grid(n)](n, *_pairs(param, grad, exp_avg, exp_avg_sq), *opt,
                   *_cpu._moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
                   t(bias_correction2_sqrt), t(eps), t(-step_size))


def nadam_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_avg_sq: DeviceStorage,
                 lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, bias_correction2: float,
                 grad_coef: float, avg_coef: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    """NAdam: ``param += grad_coef * g/denom`` then ``param += avg_coef * m/denom`` (torch's two updates)."""
    n = _check("nadam_update", param, grad, exp_avg, exp_avg_sq)
    if n == 0:
        return
    t = param.dtype.type
    _nadam[grid(n)](n, *_pairs(param, grad, exp_avg, exp_avg_sq),
                    *_cpu._moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
                    t(bias_correction2), t(eps), t(grad_coef), t(avg_coef))


def radam_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_avg_sq: DeviceStorage,
                 lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, bias_correction1: float,
                 bias_correction2_sqrt: float, rect: float, rectified: bool, maximize: bool,
                 decoupled_weight_decay: bool) -> None:
    """RAdam; the adaptive term (times ``rect``) is applied only when ``rectified`` (rho_t > 5)."""
    n = _check("radam_update", param, grad, exp_avg, exp_avg_sq)
    if n == 0:
        return
    t = param.dtype.type
    _radam[grid(n)](n, *_pairs(param, grad, exp_avg, exp_avg_sq),
                    *_cpu._moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
                    t(bias_correction1), t(lr), t(bias_correction2_sqrt), t(eps), t(rect), bool(rectified))


def adamax_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_inf: DeviceStorage,
                  beta1: float, beta2: float, eps: float, weight_decay: float, clr: float, maximize: bool) -> None:
    """Adamax; ``clr = lr / (1 - beta1**t)``."""
    n = _check("adamax_update", param, grad, exp_avg, exp_inf)
    if n == 0:
        return
    t = param.dtype.type
    _adamax[grid(n)](n, *_pairs(param, grad, exp_avg, exp_inf), _cpu._sign(t, maximize), t(weight_decay),
                     *_cpu._lerp_args(t, beta1), t(beta2), t(eps), t(-clr))


def rmsprop_update(param: DeviceStorage, grad: DeviceStorage, square_avg: DeviceStorage,
                   momentum_buffer: DeviceStorage | None, grad_avg: DeviceStorage | None, lr: float, alpha: float,
                   eps: float, weight_decay: float, momentum: float, maximize: bool) -> None:
    """RMSprop; with momentum when ``momentum_buffer`` is given, centered when ``grad_avg`` is (not None or empty)."""
    present, opt = _split(param, momentum_buffer, grad_avg)
    n = _check("rmsprop_update", param, grad, square_avg, *present)
    if n == 0:
        return
    t = param.dtype.type
    _rmsprop[grid(n)](n, *_pairs(param, grad, square_avg), *opt, _cpu._sign(t, maximize), t(weight_decay),
                      t(alpha), t(1 - alpha), *_cpu._lerp_args(t, alpha), t(eps), t(momentum), t(-lr))


def adagrad_update(param: DeviceStorage, grad: DeviceStorage, state_sum: DeviceStorage, clr: float, eps: float,
                   weight_decay: float, maximize: bool) -> None:
    """Adagrad; ``clr = lr / (1 + (t - 1) * lr_decay)``."""
    n = _check("adagrad_update", param, grad, state_sum)
    if n == 0:
        return
    t = param.dtype.type
    _adagrad[grid(n)](n, *_pairs(param, grad, state_sum), _cpu._sign(t, maximize), t(weight_decay), t(eps), t(-clr))


def adadelta_update(param: DeviceStorage, grad: DeviceStorage, square_avg: DeviceStorage, acc_delta: DeviceStorage,
                    lr: float, rho: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """Adadelta."""
    n = _check("adadelta_update", param, grad, square_avg, acc_delta)
    if n == 0:
        return
    t = param.dtype.type
    _adadelta[grid(n)](n, *_pairs(param, grad, square_avg, acc_delta), _cpu._sign(t, maximize), t(weight_decay),
                       t(rho), t(1 - rho), t(eps), t(-lr))
