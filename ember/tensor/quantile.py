"""``quantile`` and ``nanquantile``: order statistics interpolated between the two nearest sorted elements.

Written in Tensor ops (sort, gather, lerp), so gradients flow to the elements the result was taken from.
"""
from __future__ import annotations

import numbers
from typing import Any

from . import autocast_policy, elementwise as ew
from .creation import full_like, tensor
from .out_arg import with_out
from .tensor import Tensor, _wrap_dim
from .arguments import tensor_args

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_values(name: str, input: Tensor, q: Any) -> Tensor:
    """``q`` as a 1-D tensor of ``input``'s dtype, after torch's checks on ``input`` and ``q``."""
    if input.dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        return q.detach().reshape(-1).to(input.device)
    if not isinstance(q, numbers.Real):
        raise TypeError(f"{name}(): argument 'q' must be float or Tensor, not {type(q).__name__}")
    if not 0 <= q <= 1:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    return tensor([float(q)], dtype=input.dtype, device=input.device)


def _ranks(sorted_values: Tensor, q: Tensor, ignore_nan: bool) -> Tensor:
    """The fractional sorted position of each quantile in each slice (last dim): ``q * (count - 1)``, where count
    skips NaN for ``nanquantile``. A slice whose answer is NaN (any NaN for ``quantile``, all NaN for
    ``nanquantile``) points at its last element, which is NaN (sort puts NaN last)."""
    n = sorted_values.shape[-1]
    nan = ew.isnan(sorted_values)
    if ignore_nan:
        count = ew.logical_not(nan).sum(-1, keepdim=True)
        ranks = q * (count - 1)
        return ranks.masked_fill(ranks < 0, n - 1)
    ranks = (q * (n - 1)).expand(*sorted_values.shape[:-1], q.numel())
    return ranks.masked_fill(nan.any(-1, keepdim=True), n - 1)


def _interpolate(sorted_values: Tensor, ranks: Tensor, interpolation: str) -> Tensor:
    """The sorted values at ``ranks`` (last dim), rounded or interpolated as ``interpolation`` says."""
    pick = {"lower": ranks.floor, "higher": ranks.ceil, "nearest": ranks.round}.get(interpolation)
    if pick is not None:
        return sorted_values.gather(-1, pick().long())
    below = ranks.floor()
    weights = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
    low = sorted_values.gather(-1, below.long())
    high = sorted_values.gather(-1, ranks.ceil().long())
    return ew.lerp(low, high, weights)


def _quantile(name: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    qs = _quantile_values(name, input, q)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    d = None if dim is None else _wrap_dim(dim, input.ndim, name)
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    x = input.reshape(-1) if d is None or input.ndim == 0 else input.movedim(d, -1)
    sorted_values = x.sort(dim=-1).values
    result = _interpolate(sorted_values, _ranks(sorted_values, qs, ignore_nan), interpolation).movedim(-1, 0)
    if keepdim:
        kept = [1] * input.ndim if d is None else list(input.shape[:d]) + [1] + list(input.shape[d + 1:])
        result = result.reshape(qs.numel(), *kept[:input.ndim])
    scalar_q = not isinstance(q, Tensor) or q.ndim == 0
    return result[0] if scalar_q else result


@tensor_args
@with_out
def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a float or a 1-D tensor of them in [0, 1]) of ``input`` along ``dim`` (of all
    elements when None); a slice holding NaN gives NaN. A 1-D ``q`` puts its dimension first."""
    if autocast_policy.ACTIVE and autocast_policy.covers("quantile", input):
        return autocast_policy.run("quantile", quantile, input, q, dim, keepdim, interpolation=interpolation)
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@tensor_args
@with_out
def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN: each slice's quantiles among its non-NaN elements (NaN when all are NaN)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("nanquantile", input):
        return autocast_policy.run("nanquantile", nanquantile, input, q, dim, keepdim, interpolation=interpolation)
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


TENSOR_METHODS = {"quantile": quantile, "nanquantile": nanquantile}
