"""Fused optimizer updates on the GPU: one grid-stride pass over a parameter, its gradient and its state.

Signatures, scalar preparation and per-element arithmetic are ``ember.kernels.cpu.optim_updates``'s:
the entry points build the same dtype scalars with the shared preparation (``ember.kernels.common.optim_updates``),
the element functions call device builds of its element helpers (``effective_grad``, ``lerp``,
``moving_square_avg``) and spell the rest with the same operand order, so a step on the device follows the CPU
(and torch) step for step.

Each rule is one element function (``ember.kernels.cuda.multi_tensor``), launched per parameter by the
entry points and over all parameters of a group at once by ``update_many`` (the optimizers' multi-tensor
path), so both paths run the same arithmetic and agree bit for bit.

Arrays are C-contiguous float32/float64 ``DeviceStorage``s of one dtype and the parameter's length (any
``offset``). An optional state buffer (momentum, AMSGrad's max, centered RMSprop's average) may be
``None`` or empty (a device array, or the CPU path's empty host placeholder) when unused; the kernel then
gets a flag and the parameter as a stand-in it never touches.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from numba import cuda

from ..common import optim_updates as shared
from ..common.optim_updates import lerp_args, moment_args, sign_factor
from .device_functions import device_function
from .launch import SIMULATOR
from .multi_tensor import element_kernels, launch_many, launch_one
from .storage import DeviceStorage

__all__ = [
    "sgd_update", "adam_update", "adamax_update", "nadam_update", "radam_update", "rmsprop_update",
    "adagrad_update", "adadelta_update", "update_many",
]

_grad = device_function(shared.effective_grad)
_lerp = device_function(shared.lerp)
_square_avg = device_function(shared.moving_square_avg)
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


# ----------------------------------------------------------------------------- element functions
@cuda.jit(device=True)
def _sgd(i, arrays, offsets, scalars):
    param, grad, buf = arrays
    op, og, ob = offsets
    has_buf, neg_lr, momentum, one_minus_dampening, weight_decay, sign, nesterov, first = scalars
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


@cuda.jit(device=True)
def _adam(i, arrays, offsets, scalars):
    param, grad, exp_avg, exp_avg_sq, max_sq = arrays
    op, og, om, ov, ox = offsets
    has_max, sign, weight_decay, decay, coef1, low1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step_size = scalars
    g, m, v = _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1, beta2,
                       one_minus_beta2)
    if has_max:
        top = max_sq[ox + i]
        if v > top or v != v:  # torch.maximum: NaN wins from either side
            max_sq[ox + i] = v
        else:
            v = top
    param[op + i] = param[op + i] * decay + neg_step_size * m / (_sqrt(v) / bc2_sqrt + eps)


@cuda.jit(device=True)
def _nadam(i, arrays, offsets, scalars):
    param, grad, exp_avg, exp_avg_sq = arrays
    op, og, om, ov = offsets
    (sign, weight_decay, decay, coef1, low1, beta2, one_minus_beta2, bias_correction2, eps, grad_coef,
     avg_coef) = scalars
    g, m, v = _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1, beta2,
                       one_minus_beta2)
    denom = _sqrt(v / bias_correction2) + eps
    p = param[op + i] * decay + grad_coef * g / denom
    param[op + i] = p + avg_coef * m / denom


@cuda.jit(device=True)
def _radam(i, arrays, offsets, scalars):
    param, grad, exp_avg, exp_avg_sq = arrays
    op, og, om, ov = offsets
    (sign, weight_decay, decay, coef1, low1, beta2, one_minus_beta2, bias_correction1, lr, bc2_sqrt, eps, rect,
     rectified) = scalars
    g, m, v = _moments(i, param, op, grad, og, exp_avg, om, exp_avg_sq, ov, sign, weight_decay, coef1, low1, beta2,
                       one_minus_beta2)
    u = m / bias_correction1 * lr
    if rectified:
        u = u * (bc2_sqrt / (_sqrt(v) + eps)) * rect
    param[op + i] = param[op + i] * decay - u


@cuda.jit(device=True)
def _adamax(i, arrays, offsets, scalars):
    param, grad, exp_avg, exp_inf = arrays
    op, og, om, oi = offsets
    sign, weight_decay, coef1, low1, beta2, eps, neg_clr = scalars
    g = _grad(grad[og + i], param[op + i], sign, weight_decay)
    m = _lerp(exp_avg[om + i], g, coef1, low1)
    exp_avg[om + i] = m
    a = exp_inf[oi + i] * beta2
    b = abs(g) + eps
    u = a if (a > b or a != a) else b
    exp_inf[oi + i] = u
    param[op + i] = param[op + i] + neg_clr * m / u


@cuda.jit(device=True)
def _rmsprop(i, arrays, offsets, scalars):
    param, grad, square_avg, buf, grad_avg = arrays
    op, og, osq, ob, oga = offsets
    has_buf, has_avg, sign, weight_decay, alpha, one_minus_alpha, coef, low, eps, momentum, neg_lr = scalars
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


@cuda.jit(device=True)
def _adagrad(i, arrays, offsets, scalars):
    param, grad, state_sum = arrays
    op, og, ost = offsets
    sign, weight_decay, eps, neg_clr = scalars
    g = _grad(grad[og + i], param[op + i], sign, weight_decay)
    s = state_sum[ost + i] + g * g
    state_sum[ost + i] = s
    param[op + i] = param[op + i] + neg_clr * g / (_sqrt(s) + eps)


@cuda.jit(device=True)
def _adadelta(i, arrays, offsets, scalars):
    param, grad, square_avg, acc_delta = arrays
    op, og, osq, oad = offsets
    sign, weight_decay, rho, one_minus_rho, eps, neg_lr = scalars
    g = _grad(grad[og + i], param[op + i], sign, weight_decay)
    sq = _square_avg(square_avg[osq + i], g, rho, one_minus_rho)
    square_avg[osq + i] = sq
    acc = acc_delta[oad + i]
    delta = _sqrt(acc + eps) / _sqrt(sq + eps) * g
    acc_delta[oad + i] = _square_avg(acc, delta, rho, one_minus_rho)
    param[op + i] = param[op + i] + neg_lr * delta


# ----------------------------------------------------------------------------- scalars (in the elements' order)
def _sgd_scalars(t, present, lr, momentum, dampening, weight_decay, nesterov, maximize, first) -> tuple:
    return (*present, t(-lr), t(momentum), t(1 - dampening), t(weight_decay), sign_factor(t, maximize),
            bool(nesterov), bool(first))


def _adam_scalars(t, present, lr, beta1, beta2, eps, weight_decay, step_size, bias_correction2_sqrt, maximize,
                  decoupled_weight_decay) -> tuple:
    return (*present, *moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
            t(bias_correction2_sqrt), t(eps), t(-step_size))


def _nadam_scalars(t, present, lr, beta1, beta2, eps, weight_decay, bias_correction2, grad_coef, avg_coef, maximize,
                   decoupled_weight_decay) -> tuple:
    return (*moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
            t(bias_correction2), t(eps), t(grad_coef), t(avg_coef))


def _radam_scalars(t, present, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2_sqrt, rect,
                   rectified, maximize, decoupled_weight_decay) -> tuple:
    return (*moment_args(t, lr, beta1, beta2, weight_decay, maximize, decoupled_weight_decay),
            t(bias_correction1), t(lr), t(bias_correction2_sqrt), t(eps), t(rect), bool(rectified))


def _adamax_scalars(t, present, beta1, beta2, eps, weight_decay, clr, maximize) -> tuple:
    return sign_factor(t, maximize), t(weight_decay), *lerp_args(t, beta1), t(beta2), t(eps), t(-clr)


def _rmsprop_scalars(t, present, lr, alpha, eps, weight_decay, momentum, maximize) -> tuple:
    return (*present, sign_factor(t, maximize), t(weight_decay), t(alpha), t(1 - alpha), *lerp_args(t, alpha),
            t(eps), t(momentum), t(-lr))


def _adagrad_scalars(t, present, clr, eps, weight_decay, maximize) -> tuple:
    return sign_factor(t, maximize), t(weight_decay), t(eps), t(-clr)


def _adadelta_scalars(t, present, lr, rho, eps, weight_decay, maximize) -> tuple:
    return sign_factor(t, maximize), t(weight_decay), t(rho), t(1 - rho), t(eps), t(-lr)


class _Rule(NamedTuple):
    """An update rule: its kernels, its scalars' preparation, and which arrays (by position) are optional."""

    one: Any
    many: Any
    scalars: Callable[..., tuple]
    optional: tuple[int, ...]


def _rule(element: Any, width: int, scalars: Callable[..., tuple], optional: tuple[int, ...] = ()) -> _Rule:
    return _Rule(*element_kernels(element, width), scalars, optional)


_RULES = {
    "sgd_update": _rule(_sgd, 3, _sgd_scalars, (2,)),
    "adam_update": _rule(_adam, 5, _adam_scalars, (4,)),
    "nadam_update": _rule(_nadam, 4, _nadam_scalars),
    "radam_update": _rule(_radam, 4, _radam_scalars),
    "adamax_update": _rule(_adamax, 4, _adamax_scalars),
    "rmsprop_update": _rule(_rmsprop, 5, _rmsprop_scalars, (3, 4)),
    "adagrad_update": _rule(_adagrad, 3, _adagrad_scalars),
    "adadelta_update": _rule(_adadelta, 4, _adadelta_scalars),
}


# ----------------------------------------------------------------------------- launching
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


def _absent(s: Any) -> bool:
    return s is None or (s.size if isinstance(s, np.ndarray) else s.numel) == 0


def _stand_in(rule: _Rule, arrays: Sequence[Any]) -> tuple[list, tuple[bool, ...]]:
    """(the arrays with the parameter in place of each absent optional one, which optional ones are present)."""
    arrays = list(arrays)
    present = []
    for j in rule.optional:
        present.append(not _absent(arrays[j]))
        if not present[-1]:
            arrays[j] = arrays[0]
    return arrays, tuple(present)


def _update(name: str, arrays: tuple, *hyper: Any) -> None:
    """Check ``arrays`` (param, grad, state...) and run ``name``'s update on them with one ``one`` launch."""
    rule = _RULES[name]
    arrays, present = _stand_in(rule, arrays)
    if _check(name, *arrays) == 0:
        return
    launch_one(rule.one, arrays, rule.scalars(arrays[0].dtype.type, present, *hyper))


def update_many(name: str, rows: Sequence[Sequence[DeviceStorage | None]], *hyper: Any) -> None:
    """The update of entry point ``name`` (e.g. ``"adam_update"``) on every row in one launch.

    A row holds that entry point's arrays (param, grad, state...); ``hyper`` its scalar arguments, shared by
    all rows. The caller has checked the rows (the optimizers' fast path): C-contiguous, one float32/float64
    dtype, each array of its parameter's shape, the same optional buffers present in every row.
    """
    rule = _RULES[name]
    filled = [_stand_in(rule, row) for row in rows]
    if filled:
        present = filled[0][1]
        launch_many(rule.many, [arrays for arrays, _ in filled],
                    rule.scalars(filled[0][0][0].dtype.type, present, *hyper))


# ----------------------------------------------------------------------------- entry points
def sgd_update(param: DeviceStorage, grad: DeviceStorage, momentum_buffer: DeviceStorage | None, lr: float,
               momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
               first: bool) -> None:
    """SGD with optional heavy-ball / Nesterov momentum; ``momentum_buffer`` None or empty when momentum is 0.

    ``first``: the buffer is uninitialised and takes the (decayed) gradient as is, like torch's clone.
    """
    _update("sgd_update", (param, grad, momentum_buffer), lr, momentum, dampening, weight_decay, nesterov, maximize,
            first)


def adam_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_avg_sq: DeviceStorage,
                max_exp_avg_sq: DeviceStorage | None, lr: float, beta1: float, beta2: float, eps: float,
                weight_decay: float, step_size: float, bias_correction2_sqrt: float, maximize: bool,
                decoupled_weight_decay: bool) -> None:
    """Adam / AdamW (``decoupled_weight_decay``); AMSGrad when ``max_exp_avg_sq`` is given (not None or empty).

    ``step_size = lr / (1 - beta1**t)``, ``bias_correction2_sqrt = sqrt(1 - beta2**t)``.
    """
    _update("adam_update", (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq), lr, beta1, beta2, eps, weight_decay,
            step_size, bias_correction2_sqrt, maximize, decoupled_weight_decay)


def nadam_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_avg_sq: DeviceStorage,
                 lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, bias_correction2: float,
                 grad_coef: float, avg_coef: float, maximize: bool, decoupled_weight_decay: bool) -> None:
    """NAdam: ``param += grad_coef * g/denom`` then ``param += avg_coef * m/denom`` (torch's two updates)."""
    _update("nadam_update", (param, grad, exp_avg, exp_avg_sq), lr, beta1, beta2, eps, weight_decay,
            bias_correction2, grad_coef, avg_coef, maximize, decoupled_weight_decay)


def radam_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_avg_sq: DeviceStorage,
                 lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, bias_correction1: float,
                 bias_correction2_sqrt: float, rect: float, rectified: bool, maximize: bool,
                 decoupled_weight_decay: bool) -> None:
    """RAdam; the adaptive term (times ``rect``) is applied only when ``rectified`` (rho_t > 5)."""
    _update("radam_update", (param, grad, exp_avg, exp_avg_sq), lr, beta1, beta2, eps, weight_decay, bias_correction1,
            bias_correction2_sqrt, rect, rectified, maximize, decoupled_weight_decay)


def adamax_update(param: DeviceStorage, grad: DeviceStorage, exp_avg: DeviceStorage, exp_inf: DeviceStorage,
                  beta1: float, beta2: float, eps: float, weight_decay: float, clr: float, maximize: bool) -> None:
    """Adamax; ``clr = lr / (1 - beta1**t)``."""
    _update("adamax_update", (param, grad, exp_avg, exp_inf), beta1, beta2, eps, weight_decay, clr, maximize)


def rmsprop_update(param: DeviceStorage, grad: DeviceStorage, square_avg: DeviceStorage,
                   momentum_buffer: DeviceStorage | None, grad_avg: DeviceStorage | None, lr: float, alpha: float,
                   eps: float, weight_decay: float, momentum: float, maximize: bool) -> None:
    """RMSprop; with momentum when ``momentum_buffer`` is given, centered when ``grad_avg`` is (not None or empty)."""
    _update("rmsprop_update", (param, grad, square_avg, momentum_buffer, grad_avg), lr, alpha, eps, weight_decay,
            momentum, maximize)


def adagrad_update(param: DeviceStorage, grad: DeviceStorage, state_sum: DeviceStorage, clr: float, eps: float,
                   weight_decay: float, maximize: bool) -> None:
    """Adagrad; ``clr = lr / (1 + (t - 1) * lr_decay)``."""
    _update("adagrad_update", (param, grad, state_sum), clr, eps, weight_decay, maximize)


def adadelta_update(param: DeviceStorage, grad: DeviceStorage, square_avg: DeviceStorage, acc_delta: DeviceStorage,
                    lr: float, rho: float, eps: float, weight_decay: float, maximize: bool) -> None:
    """Adadelta."""
    _update("adadelta_update", (param, grad, square_avg, acc_delta), lr, rho, eps, weight_decay, maximize)
