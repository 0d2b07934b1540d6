"""Fused activation ops (GELU, SiLU, Mish, the ELU family, leaky ReLU, hardtanh, softplus, hardswish,
hardsigmoid, logsigmoid) on the activation kernels: one kernel forward and one backward.

The backward is itself a Function whose own backward is written in tensor ops
(``_SECOND``: f'', from the activations' declarations in ``ember.opcodes``), so second derivatives work.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...autograd.function import Function, must_apply
from ...opcodes import ACTIVATION_OPS
from .. import dtypes
from .._dispatch import backend, compute_dtype, flat_views
from ..tensor import Tensor

__all__ = ["activation"]


def _run_activation(kind: str, name: str, arrays: list[np.ndarray], params: tuple, rdt: dtypes.dtype) -> np.ndarray:
    cdt = compute_dtype(rdt).np
    flats, out, out_flat = flat_views(arrays, cdt)
    if out.size:
        kernels = backend(out).activations
        run = kernels.activation_forward if kind == "forward" else kernels.activation_backward
        run(name, *flats, out_flat, params)
    return out if cdt == rdt.np else out.astype(rdt.np)


class _Activation(Function):
    """``f(x)`` by the fused kernel ``name`` with parameters ``params``."""

    @staticmethod
    def forward(ctx, x: Tensor, name: str, params: tuple) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.activation, ctx.params = name, params
        return _run_activation("forward", name, [x._array], params, x.dtype)

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        (x,) = ctx.saved_tensors
        return _ActivationGrad.apply(x, g, ctx.activation, ctx.params), None, None

    @staticmethod
    def jvp_rule(args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: the fused backward ``g * f'(x)`` at ``g = t``."""
        x, name, params = args
        return _ActivationGrad.apply(x, tangents[0], name, params)


class _ActivationGrad(Function):
    """``g * f'(x)`` by the fused kernel; its own gradient is in tensor ops (``_SECOND``)."""

    @staticmethod
    def forward(ctx, x: Tensor, g: Tensor, name: str, params: tuple) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, g)
            ctx.activation, ctx.params = name, params
        garr = g._array if g.dtype is x.dtype else g._array.astype(x.dtype.np)
        return _run_activation("backward", name, [x._array, np.broadcast_to(garr, x.shape)], params, x.dtype)

    @staticmethod
    def backward(ctx, gg: Tensor) -> tuple:
        x, g = ctx.saved_tensors
        need_x, need_g = ctx.needs_input_grad[:2]
        gx = gg * g * _SECOND[ctx.activation](x, *ctx.params) if need_x else None
        gg_g = _ActivationGrad.apply(x, gg, ctx.activation, ctx.params) if need_g else None
        return gx, gg_g, None, None


# f''(x) in tensor ops, for the gradient of a fused backward: the declarations' ``second``.
_SECOND: dict[str, Callable[..., Tensor]] = {a.name: a.second for a in ACTIVATION_OPS if a.second is not None}


def activation(x: Tensor, name: str, params: tuple = ()) -> Tensor:
    """``f(x)`` for the fused activation ``name`` with its kernel parameters ``params`` (``x`` floating)."""
    if must_apply(x):
        return _Activation.apply(x, name, params)
    return Tensor._make(_run_activation("forward", name, [x._array], params, x.dtype))
