"""The optimizer updates' shared steps: the per-element helpers and the scalar preparation of both backends.

The CPU loops (``ember.kernels.cpu.optim_updates``) inline the element helpers
and the GPU element functions (``ember.kernels.cuda.optim_updates``) call their
device builds, so a step on either follows torch's single-tensor formulas the
same way; the preparation turns Python hyper-parameters into scalars of the
arrays' dtype ``t`` (a NumPy scalar type) in the order the kernels take them.
"""
from __future__ import annotations

from numba import njit

__all__ = ["effective_grad", "lerp", "moving_square_avg", "sign_factor", "lerp_args", "moment_args"]

inline = njit(inline="always")


@inline
def effective_grad(grad, param, sign, weight_decay):
    """The gradient times ``sign`` (-1 to maximize; exact) with the L2 penalty added."""
    g = grad * sign
    if weight_decay != 0:
        g = g + weight_decay * param
    return g


@inline
def lerp(start, end, coef, low):
    """torch.lerp's two-sided formula: ``start + w*(end-start)`` if ``low`` else ``end - (1-w)*(end-start)``.

    ``coef`` is ``w`` when low, else ``w - 1`` (so both are one fused expression).
    """
    return (start if low else end) + coef * (end - start)


@inline
def moving_square_avg(avg, g, beta, one_minus_beta):
    """The moving average of squared gradients, ``beta*avg + (1-beta)*g*g`` (torch's mul_/addcmul_ order)."""
    return avg * beta + one_minus_beta * g * g


def sign_factor(t, maximize: bool):
    """The gradient's sign factor in scalar type ``t``: -1 to maximize."""
    return t(-1 if maximize else 1)


def lerp_args(t, beta: float) -> tuple:
    """(coef, low) for a moving average ``lerp(avg, x, 1 - beta)`` in scalar type ``t`` (see ``lerp``)."""
    w = t(1 - beta)
    return (w, True) if w < 0.5 else (w - t(1), False)


def moment_args(t, lr: float, beta1: float, beta2: float, weight_decay: float, maximize: bool,
                 decoupled_weight_decay: bool) -> tuple:
    """The Adam-family loops' shared scalars: sign, L2 coefficient, decoupled decay factor, then the moments'."""
    l2, decay = (0.0, 1 - lr * weight_decay) if decoupled_weight_decay else (weight_decay, 1.0)
    return (sign_factor(t, maximize), t(l2), t(decay), *lerp_args(t, beta1), t(beta2), t(1 - beta2))
