"""The rest of ``torch.special``: Airy, Bessel (ordinary, modified, scaled, spherical), the normal distribution's
``ndtr``/``ndtri``/``log_ndtr``, the exponentially scaled ``i0e``/``i1e``, ``i1``, Hurwitz ``zeta`` and the
orthogonal polynomials.

Values come from ``scipy.special`` on the host (the polynomials, which scipy lacks at torch's conventions, from
ember's Numba kernels in ``special_functions_kernels``), in float64 rounded once to the result's dtype. The dtype
rules and the differentiability are torch's: integer and bool inputs give the default float dtype; the functions
ATen has no half-precision kernel for refuse float16/bfloat16 with its NotImplementedError; the functions torch
gives no derivative return tensors without a ``grad_fn``, and ``zeta`` refuses a gradient for its first argument.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from scipy import special

from ..autograd.function import Function
from . import dtypes
from ._dispatch import broadcast_shapes
from .arguments import tensor_args
from .creation import scalar_tensor
from .elementwise import _dtype_name, _float_of, where
from .out_arg import with_out
from .special_functions_kernels import KERNELS, polynomial
from .special_math import I1, _host
from .tensor import Tensor

_HALF_PRECISION = ("float16", "bfloat16")
_SQRT_2PI = math.sqrt(2 * math.pi)


def _result_dtype(name: str, promoted: dtypes.dtype, half_ok: bool) -> dtypes.dtype:
    """torch's result dtype of a special function of inputs promoting to ``promoted``, or its refusal."""
    result = _float_of(promoted)
    if promoted.is_complex or (not half_ok and result.name in _HALF_PRECISION):
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(promoted)}\'')
    return result


def _as_float(name: str, x: Any, half_ok: bool) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return x.to(_result_dtype(name, x.dtype, half_ok))


def _constant(values: np.ndarray) -> Tensor:
    """A result torch gives no derivative: a plain tensor, outside the graph."""
    return Tensor._make(values)


# ------------------------------------------------------------------------------ functions without a derivative
def _undifferentiable(name: str, values: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Tensor]:
    def fn(input: Tensor) -> Tensor:
        x = _as_float(name, input, half_ok=False)
        return _constant(_host(values, x, x))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"torch.special.{name}: elementwise, from scipy.special; torch gives it no derivative, so the "
                  "result is outside the graph (integer inputs give the default float dtype).")
    return tensor_args(with_out(cast=True)(fn))


def _airy_ai(x: np.ndarray) -> np.ndarray:
    """scipy's Ai, with ATen's 0 beyond x = 103.892 (where scipy's gives NaN; infinities stay NaN)."""
    return np.where(np.isfinite(x) & (x > 103.892), 0.0, special.airy(x)[0])


def _spherical_j0(x: np.ndarray) -> np.ndarray:
    return np.where(np.isinf(x), 0.0, special.spherical_jn(0, x))


_UNDIFFERENTIABLE = {
    "airy_ai": _airy_ai,
    "bessel_j0": special.j0, "bessel_j1": special.j1, "bessel_y0": special.y0, "bessel_y1": special.y1,
    "modified_bessel_i0": special.i0, "modified_bessel_i1": special.i1,
    "modified_bessel_k0": special.k0, "modified_bessel_k1": special.k1,
    "scaled_modified_bessel_k0": special.k0e, "scaled_modified_bessel_k1": special.k1e,
    "spherical_bessel_j0": _spherical_j0,
}
FUNCTIONS: dict[str, Callable[..., Tensor]] = {
    name: _undifferentiable(name, values) for name, values in _UNDIFFERENTIABLE.items()}


# ---------------------------------------------------------------------------------- differentiable unary ones
class _HostUnary(Function):
    """A unary function valued by scipy on the host, its ``derivative`` written in tensor ops (so it
    differentiates again); the ``values`` are of float64 arrays."""

    values: Callable[[np.ndarray], np.ndarray]
    saves_output = False

    @classmethod
    def forward(cls, ctx, x: Tensor):
        y = Tensor._make(_host(cls.values, x, x))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, y) if cls.saves_output else ctx.save_for_backward(x)
        return y

    @classmethod
    def backward(cls, ctx, g: Tensor):
        return g * cls.derivative(*ctx.saved_tensors)


class I0e(_HostUnary):
    """``exp(-|x|) i0(x)``; ``d/dx = i1e(x) - sgn(x) i0e(x)``."""

    values = staticmethod(special.i0e)

    @staticmethod
    def derivative(x: Tensor) -> Tensor:
        return I1e.apply(x) - x.sgn() * I0e.apply(x)


class I1e(_HostUnary):
    """``exp(-|x|) i1(x)``; ``d/dx = i0e(x) - i1e(x) (sgn(x) + 1/x)``, 1/2 at 0."""

    values = staticmethod(special.i1e)

    @staticmethod
    def derivative(x: Tensor) -> Tensor:
        return where(x == 0, 0.5, I0e.apply(x) - I1e.apply(x) * (x.sgn() + x.reciprocal()))


class Ndtr(_HostUnary):
    """The standard normal CDF; its derivative is the density."""

    values = staticmethod(special.ndtr)

    @staticmethod
    def derivative(x: Tensor) -> Tensor:
        return (x * x * -0.5).exp() / _SQRT_2PI


class Ndtri(_HostUnary):
    """The standard normal quantile; ``d/dp = sqrt(2 pi) exp(ndtri(p)^2 / 2)``."""

    values = staticmethod(special.ndtri)
    saves_output = True

    @staticmethod
    def derivative(x: Tensor, y: Tensor) -> Tensor:
        return (y * y * 0.5).exp() * _SQRT_2PI


class LogNdtr(_HostUnary):
    """``log(ndtr(x))``, accurate in both tails; ``d/dx = exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi)``."""

    values = staticmethod(special.log_ndtr)
    saves_output = True

    @staticmethod
    def derivative(x: Tensor, y: Tensor) -> Tensor:
        return (-(y + x * x * 0.5)).exp() / _SQRT_2PI


def _differentiable(name: str, cls: type, half_ok: bool, doc: str) -> Callable[..., Tensor]:
    def fn(input: Tensor) -> Tensor:
        return cls.apply(_as_float(name, input, half_ok))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " (integer inputs give the default float dtype)."
    return tensor_args(with_out(cast=True)(fn))


FUNCTIONS.update({
    "i0e": _differentiable("i0e", I0e, True, "The exponentially scaled modified Bessel function i0"),
    "i1": _differentiable("i1", I1, True, "The modified Bessel function of the first kind of order 1"),
    "i1e": _differentiable("i1e", I1e, True, "The exponentially scaled modified Bessel function i1"),
    "ndtr": _differentiable("ndtr", Ndtr, True, "The standard normal distribution's CDF"),
    "ndtri": _differentiable("ndtri", Ndtri, False, "The inverse of the standard normal CDF"),
    "log_ndtr": _differentiable("log_ndtr", LogNdtr, False, "The log of the standard normal CDF"),
})


# --------------------------------------------------------------------------------------- two-argument ones
def _operands(name: str, input: Any, other: Any, second: str) -> tuple[Tensor, Tensor, dtypes.dtype]:
    """Both operands as tensors of torch's result dtype (a Python number joins as a wrapped scalar), broadcast."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected one of: (Tensor input, "
                        f"Tensor {second}) or (Number input, Tensor {second}) or (Tensor input, Number {second})")
    like = input if isinstance(input, Tensor) else other
    for position, (arg, x) in enumerate((("input", input), (second, other)), start=1):
        if not isinstance(x, (Tensor, int, float, bool)) or isinstance(x, complex):
            raise TypeError(f"special_{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(x).__name__}")
    result = _result_dtype(name, dtypes.result_type_of((input, other)), half_ok=False)
    a, b = (v.to(result) if isinstance(v, Tensor) else scalar_tensor(v, dtype=result, device=like.device)
            for v in (input, other))
    shape = broadcast_shapes(a.shape, b.shape, op=name)
    return a.expand(shape), b.expand(shape), result


def _polynomial(name: str) -> Callable[..., Tensor]:
    def fn(input: Any, n: Any) -> Tensor:
        x, degree, _ = _operands(name, input, n, "n")
        return _constant(_host(lambda a, b: polynomial(name, a, b), x, x, degree))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"torch.special.{name}(input, n): the polynomial of degree ``n`` (truncated to an integer; 0 "
                  "for a negative one) at ``input``, broadcast; torch gives it no derivative.")
    return with_out(cast=True)(fn)


FUNCTIONS.update({name: _polynomial(name) for name in KERNELS})


class Zeta(Function):
    """The Hurwitz zeta function ``sum_k (k + q)^-x``; torch differentiates it in ``q`` only:
    ``d/dq zeta(x, q) = -x zeta(x + 1, q)``."""

    @staticmethod
    def forward(ctx, x: Tensor, q: Tensor):
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, q)
        return Tensor._make(_host(special.zeta, x, x, q))

    @staticmethod
    def backward(ctx, g: Tensor):
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        return None, g * -x * Zeta.apply(x + 1, q)


@with_out(cast=True)
def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function ``zeta(input, other)``, broadcast (differentiable in ``other`` only, as torch)."""
    x, q, _ = _operands("zeta", input, other, "other")
    return Zeta.apply(x, q)


FUNCTIONS["zeta"] = zeta

__all__ = sorted(FUNCTIONS)
