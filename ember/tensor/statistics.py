"""Statistics over observations: ``cov`` (with frequency and importance weights), ``corrcoef`` and ``histogram``.

Written in tensor ops (so ``cov`` and ``corrcoef`` differentiate, on any device), with torch's argument checks and
messages. ``histogram`` has no gradient, as in torch.
"""
from __future__ import annotations

import warnings
from typing import Any

from ..autograd.grad_mode import no_grad
from ..return_types import return_type
from . import dtypes
from .creation import linspace, zeros
from .matmul import mm
from .out_arg import with_out
from .sorting import searchsorted
from .tensor import Tensor
from .arguments import tensor_args

histogram_result = return_type("histogram", ["hist", "bin_edges"])


def _check_weights(weights: Tensor, name: str, observations: int, integral: bool) -> None:
    """torch's checks of ``cov``'s ``fweights`` (integral) or ``aweights`` (floating)."""
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{weights.ndim} dimensions")
    if weights.dtype.is_floating_point == integral or weights.dtype is dtypes.bool:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{weights.dtype.scalar_type_name} dtype")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {weights.numel()} != {observations}")
    if observations and bool((weights < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


@tensor_args
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in its columns), with
    ``correction`` (1: Bessel's), integer frequency weights and floating importance weights of the observations."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype is dtypes.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    observations = x.shape[1]
    weights = None
    if fweights is not None:
        _check_weights(fweights, "fweights", observations, True)
        weights = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", observations, False)
        weights = aweights if weights is None else weights * aweights
    dt = dtypes.result_type_of((x,) if aweights is None else (x, aweights))
    x = x.to(dt if dt.is_floating_point else dtypes.get_default_dtype())
    if weights is None:
        mean = x.mean(1, keepdim=True)
        norm: Any = observations - correction
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (weights * aweights).sum() / total
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    centred = x - mean
    weighted = centred if weights is None else centred * weights
    return (mm(centred, weighted.t()) / norm).squeeze()


@tensor_args
def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in ``input``'s rows (``cov`` normalised, clamped to
    [-1, 1])."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    spread = c.diagonal().sqrt()
    return (c / spread.unsqueeze(1) / spread.unsqueeze(0)).clamp(-1, 1)


def _number_text(value: float) -> str:
    return f"{value:g}"


def _bin_edges(input: Tensor, bins: Any, range: Any) -> Tensor:  # noqa: A002 - torch's name
    """The ``bins + 1`` edges of equal bins over ``range`` (the data's extent by default), or the edges given."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {bins.ndim} "
                               "dimensions in the bins tensor for dimension 0")
        if bins.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                               f"got input with dtype {dtypes.CPP_TYPE_NAMES[input.dtype.name]} and bins for "
                               f"dimension 0 with dtype {dtypes.CPP_TYPE_NAMES[bins.dtype.name]}")
        if bins.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins.numel() - 1} for dimension 0")
        return bins.clone()
    if int(bins) <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {int(bins)} for dimension 0")
    if range is not None:
        low, high = float(range[0]), float(range[1])
    elif input.numel():
        low, high = float(input.min()), float(input.max())
    else:
        low, high = 0.0, 1.0
    if low > high:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_number_text(low)} max "
                           f"{_number_text(high)} for dimension 0")
    if not all(abs(v) < float("inf") for v in (low, high)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{_number_text(low)}, {_number_text(high)}] is "
                           "not finite")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return linspace(low, high, int(bins) + 1, dtype=input.dtype, device=input.device)


@tensor_args
@with_out
def histogram(input: Tensor, bins: Any = 100, *, range: Any = None,  # noqa: A002 - torch's name
              weight: Tensor | None = None, density: bool = False) -> Any:
    """(hist, bin_edges): how many elements (or how much ``weight``) fall in each bin. ``bins`` is a count of equal
    bins over ``range`` (default: the data's min to max) or a 1-D tensor of increasing edges; the last bin includes
    its right edge and values outside the edges (and NaN) are not counted. With ``density`` the histogram is scaled
    to integrate to 1."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for \'{input.dtype.scalar_type_name}\'')
    if weight is not None:
        if weight.shape != input.shape:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"[{input.numel()}, 1] and weight with shape {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input("
                               f"{dtypes.CPP_TYPE_NAMES[input.dtype.name]}), and weight("
                               f"{dtypes.CPP_TYPE_NAMES[weight.dtype.name]})")
    with no_grad():
        edges = _bin_edges(input, bins, range)
        count = edges.shape[0] - 1
        values = input.reshape(-1)
        inside = (values >= edges[0]) & (values <= edges[-1])
        which = (searchsorted(edges, values, right=True) - 1).clamp(max=count - 1)[inside]
        amounts = (values.new_ones(values.shape) if weight is None else weight.reshape(-1))[inside]
        hist = zeros(count, dtype=input.dtype, device=input.device).index_add(0, which, amounts)
        if density:
            hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return histogram_result(hist, edges)


TENSOR_METHODS = {"cov": cov, "corrcoef": corrcoef, "histogram": histogram}

__all__ = ["cov", "corrcoef", "histogram"]
