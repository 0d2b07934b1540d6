"""Pointwise functions of torch that ember composes from its kernel-backed elementwise ops.

Each is a few tensor ops, so it runs on every backend and its gradient (and the
gradient of that) comes from the ops it is made of. Only ``logaddexp`` and
``logaddexp2`` have kernels of their own (in ``elementwise``'s table): a
composition of exp and log would overflow.
"""
from __future__ import annotations

import math
from typing import Any

from ..autograd.function import Function
from . import dtypes, elementwise as ew
from .out_arg import with_out
from .tensor import Tensor
from .arguments import tensor_args


@tensor_args
@with_out(cast=True)
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))``, stable for inputs of any magnitude (floating inputs only)."""
    return ew.binary("logaddexp", input, other)


@tensor_args
@with_out(cast=True)
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)``, stable for inputs of any magnitude (floating inputs only)."""
    return ew.binary("logaddexp2", input, other)


def _as_double(x: Any) -> Any:
    return x.to(dtypes.float64) if isinstance(x, Tensor) else float(x)


@tensor_args
@with_out
def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed and returned in float64, whatever the operands' dtypes."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"float_power() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(exponent).__name__})")
    return ew.pow(_as_double(input), _as_double(exponent))


def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place ``float_power``: only a float64 tensor can hold its result."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {dtypes.SCALAR_TYPE_NAMES[self.dtype.name]} "
                           "but the operation's result requires dtype Double")
    return ew.inplace(self, "float_power", lambda s: float_power(s, exponent))


def _floating(name: str, input: Any) -> Tensor:
    """``input`` as a floating tensor (integers and bool become the default float dtype)."""
    return ew._as_float(ew._check_tensor(name, input))


@tensor_args
@with_out(cast=True)
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with ``eps``, ``p`` is clamped to [eps, 1 - eps] first (no gradient outside)."""
    p = _floating("logit", input)
    if eps is not None and eps >= 0:  # torch ignores a negative eps
        p = ew.clamp(p, eps, 1 - eps)
    return ew.div(p, ew.sub(1, p)).log()


@tensor_args
def logit_(self: Tensor, eps: float | None = None) -> Tensor:
    """In-place ``logit``."""
    return ew.inplace(self, "logit", lambda s: logit(s, eps))


@tensor_args
@with_out(cast=True)
def sinc(input: Tensor) -> Tensor:
    """The normalized sinc, ``sin(pi x) / (pi x)``, and 1 at 0 (with gradient 0 there, not NaN)."""
    x = _floating("sinc", input)
    zero = x == 0
    scaled = ew.mul(ew.where(zero, 1.0, x), math.pi)  # no 0/0 on the branch ``where`` drops, nor in its gradient
    return ew.where(zero, 1.0, ew.div(scaled.sin(), scaled))


@tensor_args
def sinc_(self: Tensor) -> Tensor:
    """In-place ``sinc``."""
    return ew.inplace(self, "sinc", sinc)


class Heaviside(Function):
    """The step function: 0 below zero, 1 above, ``values`` at zero. torch defines no derivative for it."""

    @staticmethod
    def forward(ctx, input: Tensor, values: Tensor) -> Tensor:
        return ew.where(input == 0, values, (input > 0).to(input.dtype))

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        raise RuntimeError("the derivative for 'heaviside' is not implemented.")


@tensor_args
@with_out
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step of ``input``, taking ``values`` (broadcast) where ``input`` is zero."""
    ew._check_tensor_operands("heaviside", input, values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return Heaviside.apply(input, values)


def heaviside_(self: Tensor, values: Tensor) -> Tensor:
    """In-place ``heaviside``."""
    return ew.inplace(self, "heaviside", lambda s: heaviside(s, values))


@tensor_args
@with_out(cast=True)
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other`` in the promoted dtype made floating (float16 scaled in float32, then rounded once)."""
    ew._check_tensor_operands("ldexp", input, other)
    result_dt = ew._float_of(dtypes.result_type_of((input, other)))
    wide = result_dt.compute
    return ew.mul(input.to(wide), ew.pow(2.0, other.to(wide))).to(result_dt)


@tensor_args
def ldexp_(self: Tensor, other: Tensor) -> Tensor:
    """In-place ``ldexp``."""
    return ew.inplace(self, "ldexp", lambda s: ldexp(s, other))


FUNCTIONS = {"logaddexp": logaddexp, "logaddexp2": logaddexp2, "float_power": float_power, "logit": logit,
             "logit_": logit_, "sinc": sinc, "sinc_": sinc_, "heaviside": heaviside, "ldexp": ldexp,
             "ldexp_": ldexp_}
TENSOR_METHODS = {"logaddexp": logaddexp, "logaddexp2": logaddexp2, "float_power": float_power,
                  "float_power_": float_power_, "logit": logit, "logit_": logit_, "sinc": sinc, "sinc_": sinc_,
                  "heaviside": heaviside, "heaviside_": heaviside_, "ldexp": ldexp, "ldexp_": ldexp_}
