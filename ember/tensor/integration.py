"""The trapezoidal rule along one dim: ``trapezoid`` (and its older name ``trapz``) and ``cumulative_trapezoid``,
over sample points ``x`` or a constant spacing ``dx``. Written in tensor ops, so they differentiate."""
from __future__ import annotations

from typing import Any

from . import dtypes
from .tensor import Tensor, _wrap_dim
from .arguments import tensor_args


def _dim_of(name: str, y: Tensor, dim: int) -> int:
    if not isinstance(y, Tensor):
        raise TypeError(f"{name}(): argument 'y' (position 1) must be Tensor, not {type(y).__name__}")
    if y.dtype is dtypes.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, y.ndim, name)


def _spacing(name: str, y: Tensor, x: Any, dx: Any, d: int) -> Any:
    """The widths of the intervals along ``d``: ``diff(x)`` (a 1-D ``x`` laid along ``d``) or the number ``dx``."""
    if x is None:
        return 1 if dx is None else dx
    if dx is not None:
        raise TypeError(f"{name}(): takes either x or dx, not both")
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'x' (position 2) must be Tensor, not {type(x).__name__}")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        return x.diff().reshape((-1,) + (1,) * (y.ndim - d - 1))
    return x.diff(dim=d - y.ndim)


def _float_zeros(y: Tensor, shape: tuple[int, ...]) -> Tensor:
    dt = y.dtype if y.dtype.is_floating_point else dtypes.get_default_dtype()
    return y.new_zeros(shape, dtype=dt)


def _interval_sums(y: Tensor, d: int) -> Tensor:
    """``y[i] + y[i + 1]`` along ``d``."""
    n = y.shape[d]
    return y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)


@tensor_args
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, at sample points ``x`` or spacing ``dx``
    (default 1). Integer ``y`` gives a float result; an empty dim integrates to 0."""
    d = _dim_of("trapezoid", y, dim)
    spacing = _spacing("trapezoid", y, x, dx, d)
    if y.shape[d] == 0:
        return _float_zeros(y, y.shape[:d] + y.shape[d + 1:])
    if not isinstance(spacing, Tensor):  # a constant spacing: the sum with half-weight ends
        ends = y.select(d, 0) + y.select(d, -1)
        return (y.sum(d) - ends * 0.5) * spacing
    return (spacing * _interval_sums(y, d)).sum(d) / 2


@tensor_args
def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """torch's older name of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


@tensor_args
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of ``y`` along ``dim`` (one value per interval: ``dim`` shrinks by one)."""
    d = _dim_of("cumulative_trapezoid", y, dim)
    spacing = _spacing("cumulative_trapezoid", y, x, dx, d)
    if y.shape[d] == 0:
        return _float_zeros(y, y.shape)
    return (spacing * _interval_sums(y, d) / 2).cumsum(d)


__all__ = ["trapezoid", "trapz", "cumulative_trapezoid"]
