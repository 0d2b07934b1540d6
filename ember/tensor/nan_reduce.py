"""Reductions that skip NaN (``nansum``, ``nanmean``): the plain reductions over NaN replaced by zero."""
from __future__ import annotations

from typing import Any

from ..autograd.function import Function
from . import elementwise as ew, reduce as red
from .tensor import Tensor
from .out_arg import with_out
from .arguments import tensor_args


class ZeroNans(Function):
    """NaN replaced by 0. The gradient is torch's ``g * ~isnan(x)``: a product, so an infinite ``g`` at a NaN
    position gives NaN there (as torch's does), where a ``where`` would give 0."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        kept = ew.logical_not(ew.isnan(x))
        ctx.kept = kept
        return ew.where(kept, x, 0)

    @staticmethod
    def backward(ctx, g: Tensor) -> Tensor:
        return g * ctx.kept


def _zero_nans(input: Tensor) -> Tensor:
    return ZeroNans.apply(input) if input.dtype.is_floating_point else input


@tensor_args
@with_out(dtype_from_out=True)
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (all when None) counting NaN as zero; integers sum in int64, as ``sum``."""
    return red.sum(_zero_nans(input), dim, keepdim, dtype=dtype)


@tensor_args
@with_out(dtype_from_out=True)
def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim`` of the elements that are not NaN (NaN where every element is); floating inputs only."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype.scalar_type_name}")
    count = ew.logical_not(ew.isnan(input)).sum(dim, keepdim)
    return ew.div(nansum(input, dim, keepdim, dtype=dtype), count)


TENSOR_METHODS = {"nansum": nansum, "nanmean": nanmean}
