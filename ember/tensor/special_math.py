"""Special functions torch has at the top level: polygamma, mvlgamma, i0, igamma/igammac, and frexp.

Values that ember's kernels lack come from ``scipy.special`` (and NumPy's ``frexp``) on the host, computed in
float64 and rounded once to the input's dtype, then placed back on the input's device; digamma and trigamma
(``polygamma`` of order 0 and 1) run on ember's own kernels. Gradients are written in tensor ops, through these same
functions, so they differentiate again (hessians, gradgradcheck) wherever torch's do.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from scipy import special

from ..autograd.function import Function, name_node
from ..kernels.common.quiet import quietly
from ..return_types import return_type
from . import dtypes
from ._dispatch import broadcast_shapes
from .composite import ldexp
from .creation import arange
from .device import CPU, place
from .elementwise import FLOAT_ONLY, _check_tensor, _check_tensor_operands, _float_of, _types, inplace, unary, where
from .out_arg import with_out
from .tensor import Tensor
from .arguments import tensor_args

frexp_result = return_type("frexp", ["mantissa", "exponent"])


def _host(fn: Callable[..., Any], like: Tensor, *tensors: Tensor) -> Any:
    """``fn`` of the tensors' values as float64 host arrays, rounded to ``like``'s dtype, on ``like``'s device."""
    arrays = [place(t._array, CPU).astype(np.float64) for t in tensors]
    with np.errstate(all="ignore"):
        values = np.asarray(fn(*arrays))
    return place(quietly(values.astype, like._array.dtype), like.device)


def _as_float(name: str, x: Any) -> Tensor:
    """``x`` itself when floating, else in the default float dtype (torch's rule for these functions)."""
    return _check_tensor(name, x).to(_float_of(x.dtype))


# ------------------------------------------------------------------------------------------------ polygamma
class Polygamma(Function):
    """The ``n``-th derivative of digamma; its gradient is the next one."""

    @staticmethod
    def forward(ctx, x: Tensor, n: int):
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.n = n
        if n < 2:
            return unary("digamma" if n == 0 else "trigamma", x)
        # torch's series gives NaN at infinity for n >= 2 (scipy: a signed zero)
        return _host(lambda v: np.where(np.isinf(v), np.nan, special.polygamma(n, v)), x, x)

    @staticmethod
    def backward(ctx, g: Tensor):
        (x,) = ctx.saved_tensors
        return g * Polygamma.apply(x, ctx.n + 1), None


@tensor_args
@with_out(cast=True)
def polygamma(n: int, input: Tensor) -> Tensor:
    """``d^n/dx^n digamma(x)`` for an integer order ``n >= 0`` (integer inputs give the default float dtype)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return Polygamma.apply(_as_float("polygamma", input), int(n))


@tensor_args
@with_out(cast=True)
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_i lgamma(x - i / 2)`` for i in 0..p-1."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _as_float("mvlgamma", input)
    offsets = arange(p, dtype=x.dtype, device=x.device) * -0.5
    terms = (x.unsqueeze(-1) + offsets).lgamma().sum(-1)
    return name_node(terms + p * (p - 1) / 4 * math.log(math.pi), "MvlgammaBackward0")


# ------------------------------------------------------------------------------------------------ Bessel
class _Bessel(Function):
    """A modified Bessel function of the first kind (``values``, scipy's, on the host) and its ``derivative``."""

    values: Callable[[np.ndarray], np.ndarray]

    @classmethod
    def forward(cls, ctx, x: Tensor):
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
        return _host(cls.values, x, x)

    @classmethod
    def backward(cls, ctx, g: Tensor):
        (x,) = ctx.saved_tensors
        return g * cls.derivative(x)


class I0(_Bessel):
    """Order 0; its derivative is ``i1``."""

    values = staticmethod(special.i0)

    @staticmethod
    def derivative(x: Tensor) -> Tensor:
        return I1.apply(x)


class I1(_Bessel):
    """Order 1 (the gradient of ``i0``): ``i1'(x) = i0(x) - i1(x) / x``, and 1/2 at 0."""

    values = staticmethod(special.i1)

    @staticmethod
    def derivative(x: Tensor) -> Tensor:
        return where(x == 0, 0.5, I0.apply(x) - I1.apply(x) / x)


@tensor_args
@with_out(cast=True)
def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0 (integer inputs give the default float dtype)."""
    return I0.apply(_as_float("i0", input))


# ------------------------------------------------------------------------------------------- incomplete gamma
class _IncompleteGamma(Function):
    """The regularized lower (``upper=False``) or upper incomplete gamma function of (a, x); only ``x`` has a
    gradient, as in torch."""

    upper = False

    @classmethod
    def forward(cls, ctx, a: Tensor, x: Tensor):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, x)
        return _host(special.gammaincc if cls.upper else special.gammainc, a, a, x)

    @classmethod
    def backward(cls, ctx, g: Tensor):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{cls.__name__.lower()}: input' is not implemented.")
        density = ((a - 1) * x.log() - x - a.lgamma()).exp()  # d/dx of the lower function
        return None, g * (-density if cls.upper else density)


class Igamma(_IncompleteGamma):
    """The regularized lower incomplete gamma function P(a, x)."""


class Igammac(_IncompleteGamma):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""

    upper = True


def _incomplete_gamma(cls: type, input: Tensor, other: Tensor) -> Tensor:
    name = cls.__name__.lower()
    _check_tensor_operands(name, input, other)
    _, dt = _types(name, FLOAT_ONLY, dtypes.result_type_of((input, other)))
    shape = broadcast_shapes(input.shape, other.shape, op=name)
    return cls.apply(input.to(dt).expand(shape), other.to(dt).expand(shape))


@tensor_args
@with_out(cast=True)
def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other), with broadcasting (floating inputs)."""
    return _incomplete_gamma(Igamma, input, other)


@tensor_args
@with_out(cast=True)
def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other)."""
    return _incomplete_gamma(Igammac, input, other)


# ------------------------------------------------------------------------------------------------ frexp
class Frexp(Function):
    """``input = mantissa * 2 ** exponent`` with |mantissa| in [0.5, 1) (0, inf and NaN keep exponent 0)."""

    @staticmethod
    def forward(ctx, x: Tensor):
        host = place(x._array, CPU)
        mantissa, exponent = np.frexp(host)
        exponent = Tensor._make(place(exponent.astype(np.int32), x.device))
        ctx.mark_non_differentiable(exponent)
        if ctx.needs_input_grad:
            ctx.save_for_backward(exponent)
        return Tensor._make(place(mantissa, x.device)), exponent

    @staticmethod
    def backward(ctx, g: Tensor, _g_exponent: Any):
        (exponent,) = ctx.saved_tensors
        return ldexp(g, -exponent)


@tensor_args
@with_out
def frexp(input: Tensor) -> Any:
    """(mantissa, exponent): ``input = mantissa * 2 ** exponent``, exponent int32 (floating inputs only)."""
    if not _check_tensor("frexp", input).dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return frexp_result(*Frexp.apply(input))


def _in_place(name: str, fn: Callable[..., Tensor], self_first: bool = True) -> Callable[..., Tensor]:
    """The in-place method ``name_`` of ``fn`` (``self`` is ``fn``'s first tensor, after ``n`` for polygamma)."""
    def method(self: Tensor, *args: Any) -> Tensor:
        return inplace(self, name, lambda s: fn(s, *args) if self_first else fn(*args, s))

    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``."
    return method


i0_ = tensor_args(_in_place("i0", i0))
FUNCTIONS = {"polygamma": polygamma, "mvlgamma": mvlgamma, "i0": i0, "i0_": i0_, "igamma": igamma,
             "igammac": igammac, "frexp": frexp}
TENSOR_METHODS = {
    "polygamma": lambda self, n: polygamma(n, self), "polygamma_": _in_place("polygamma", polygamma, False),
    "mvlgamma": mvlgamma, "mvlgamma_": _in_place("mvlgamma", mvlgamma), "i0": i0, "i0_": i0_, "igamma": igamma,
    "igamma_": _in_place("igamma", igamma), "igammac": igammac, "igammac_": _in_place("igammac", igammac),
    "frexp": frexp,
}

__all__ = list(FUNCTIONS)
