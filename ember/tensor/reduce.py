"""Reductions and scans over dims, with torch's dtypes, named-tuple results and gradients."""
from __future__ import annotations

import builtins
import warnings
from typing import Any

import numpy as np

from .. import opcodes as op
from ..return_types import return_type
from ..autograd.function import Function, name_node
from ..autograd.tangents import linear_jvp
from . import autocast_policy, dtypes
from ..kernels.common.dtypes import computable
from ._dispatch import backend
from .tensor import Tensor, _wrap_dim
from .out_arg import with_out
from .arguments import tensor_args
from .elementwise import binary, where
from .creation import arange
from .joins import cat, flip

max_result = return_type("max", ["values", "indices"])
min_result = return_type("min", ["values", "indices"])
median_result = return_type("median", ["values", "indices"])
nanmedian_result = return_type("nanmedian", ["values", "indices"])
aminmax_result = return_type("aminmax", ["min", "max"])
cummax_result = return_type("cummax", ["values", "indices"])
cummin_result = return_type("cummin", ["values", "indices"])

_ALL_DIMS = object()  # prod's default: torch refuses an explicit ``dim=None``


def reduce_dims(x: Tensor, dim: Any, op_name: str) -> tuple[int, ...]:
    """Normalise ``dim`` (None, int, or a sequence) to sorted non-negative dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(x.ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    wrapped = tuple(_wrap_dim(d, x.ndim, op_name) for d in dims)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"dim {wrapped[0]} appears multiple times in the list of dims")
    return tuple(sorted(set(wrapped))) if x.ndim else ()


def _keep_shape(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _final_shape(shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    return _keep_shape(shape, dims) if keepdim else tuple(n for i, n in enumerate(shape) if i not in dims)


def _reduce_array(code: int, x: Tensor, dims: tuple[int, ...], keepdim: bool, out_dt: dtypes.dtype) -> np.ndarray:
    arr = computable(x._array)
    store = out_dt.compute
    out = np.empty(_keep_shape(arr.shape, dims), dtype=store.np, like=arr)
    backend(x).reduce(code, arr, dims, out)
    out = out.reshape(_final_shape(arr.shape, dims, keepdim))
    if store is out_dt:
        return out
    with np.errstate(over="ignore"):  # a float16 result past 65504 is inf, silently as in torch
        return out.astype(out_dt.np)


def _expand_back(g: Tensor, shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back over the reduced dims (a view, no copy)."""
    if not keepdim:
        g = g.reshape(_keep_shape(shape, dims))
    return g.expand(shape)


class Sum(Function):
    """Sum over dims; integer and bool inputs give int64 as in torch."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x, dims, keepdim, out_dt):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return _reduce_array(op.R_SUM, x, dims, keepdim, out_dt)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.shape, ctx.dims, ctx.keepdim), None, None, None


_SUM_OVER_DIMS = Sum.named("SumBackward1")  # torch's sum over given dims (sum.dim_IntList)


def _sum_dtype(x: Tensor, dtype: Any) -> dtypes.dtype:
    if dtype is not None:
        return dtypes.to_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point else dtypes.int64


@tensor_args
@with_out(dtype_from_out=True)
def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum of elements over ``dim`` (all when None)."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("sum", input):
        return autocast_policy.run("sum", sum, input, dim, keepdim)
    dims = reduce_dims(input, dim, "sum")
    out_dt = _sum_dtype(input, dtype)
    if dtype is not None and out_dt is not input.dtype:
        input = input.to(out_dt)
    return (Sum if dim is None else _SUM_OVER_DIMS).apply(input, dims, keepdim, out_dt)


@tensor_args
@with_out(dtype_from_out=True)
def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Arithmetic mean over ``dim``; floating dtypes only, as in torch."""
    out_dt = dtypes.to_dtype(dtype) if dtype is not None else input.dtype
    if not out_dt.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {out_dt.scalar_type_name}"
        )
    dims = reduce_dims(input, dim, "mean")
    count = int(np.prod([input.shape[d] for d in dims])) if dims else 1
    acc_dt = out_dt.compute  # torch computes a float16 mean in float32 and rounds once at the end
    total = sum(input if acc_dt is input.dtype else input.to(acc_dt), dims, keepdim)
    result = total / count if count else total * float("nan")
    return name_node(result.to(out_dt), "MeanBackward0" if dim is None else "MeanBackward1")


class _ReductionSavingOutput(Function):
    """A reduction whose gradient needs its input and its result."""

    @staticmethod
    def forward(ctx, x, code, dims, keepdim, out_dt):
        result = Tensor._make(_reduce_array(code, x, dims, keepdim, out_dt))
        if ctx.needs_input_grad:
            ctx.dims, ctx.keepdim = dims, keepdim
            ctx.save_for_backward(x, result)
        return result


class Prod(_ReductionSavingOutput):
    """Product over dims, with the exact gradient also when inputs contain zeros."""

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        dims, keepdim = ctx.dims, ctx.keepdim
        g = _expand_back(g, x.shape, dims, keepdim)
        y = _expand_back(y, x.shape, dims, keepdim)
        is_zero = x == 0
        zeros = _expand_back(is_zero.sum(dims, keepdim=True), x.shape, dims, True)
        others = Prod.apply(where(is_zero, 1.0, x), op.R_PROD, dims, True, x.dtype)
        others = _expand_back(others, x.shape, dims, True)
        grad = where(zeros == 0, y / where(is_zero, 1.0, x), where(is_zero & (zeros == 1), others, 0.0))
        return g * grad, None, None, None, None


@tensor_args
@with_out(dtype_from_out=True)
def prod(input: Tensor, dim: Any = _ALL_DIMS, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of elements over one dim (or all, when ``dim`` is not given)."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("prod", input):
        return autocast_policy.run("prod", prod, input, dim, keepdim)
    if dim is not _ALL_DIMS and not hasattr(dim, "__index__"):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    dims = reduce_dims(input, None if dim is _ALL_DIMS else dim, "prod")
    out_dt = _sum_dtype(input, dtype)
    if out_dt is not input.dtype:
        input = input.to(out_dt)
    return Prod.apply(input, op.R_PROD, dims, keepdim, out_dt)


class Extreme(_ReductionSavingOutput):
    """amax/amin over dims; ties share the gradient evenly, as torch does."""

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        y = _expand_back(y, x.shape, ctx.dims, ctx.keepdim)
        mask = (x == y) | (x.isnan() & y.isnan())
        share = mask / _expand_back(mask.sum(ctx.dims, keepdim=True), x.shape, ctx.dims, True)
        return _expand_back(g, x.shape, ctx.dims, ctx.keepdim) * share, None, None, None, None


_AMINMAX = Extreme.named("AminmaxBackward0")  # both halves of aminmax


def _check_nonempty(x: Tensor, dims: tuple[int, ...], name: str) -> None:
    if x.numel() == 0 and (not dims or builtins.any(x.shape[d] == 0 for d in dims)):
        if not dims or len(dims) == x.ndim:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                "dim with the 'dim' parameter."
            )
        raise IndexError(f"{name}(): Expected reduction dim {dims[0]} to have non-zero size.")


@tensor_args
@with_out
def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Maximum over dims (NaN propagates)."""
    dims = reduce_dims(input, dim, "amax")
    _check_nonempty(input, dims, "amax")
    return Extreme.apply(input, op.R_MAX, dims, keepdim, input.dtype)


@tensor_args
@with_out
def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Minimum over dims (NaN propagates)."""
    dims = reduce_dims(input, dim, "amin")
    _check_nonempty(input, dims, "amin")
    return Extreme.apply(input, op.R_MIN, dims, keepdim, input.dtype)


@tensor_args
@with_out
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """(min, max) of all elements, or along ``dim``, in one call (NaN propagates)."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        dims = tuple(range(input.ndim))
    else:
        d = _wrap_dim(dim, input.ndim, "aminmax")
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,) if input.ndim else ()
    low = _AMINMAX.apply(input, op.R_MIN, dims, keepdim, input.dtype)
    high = _AMINMAX.apply(input, op.R_MAX, dims, keepdim, input.dtype)
    return aminmax_result(low, high)


class ArgExtreme(Function):
    """max/min along one dim returning (values, indices); the gradient goes to the chosen index."""

    @staticmethod
    def forward(ctx, x, code, dim, keepdim):
        arr = computable(x._array)
        keep = _keep_shape(arr.shape, (dim,))
        values = np.empty(keep, dtype=arr.dtype, like=arr)
        indices = np.empty(keep, dtype=np.int64, like=arr)
        backend(x).arg_reduce(code, arr, dim, values, indices)
        final = _final_shape(arr.shape, (dim,), keepdim)
        values = Tensor._make(values.reshape(final).astype(x._array.dtype, copy=False))
        indices = Tensor._make(indices.reshape(final))
        ctx.mark_non_differentiable(indices)
        if ctx.needs_input_grad:
            ctx.dim, ctx.keepdim, ctx.shape = dim, keepdim, x.shape
            ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        (indices,) = ctx.saved_tensors
        return scatter_to_index(g, indices, ctx.dim, ctx.keepdim, ctx.shape), None, None, None


def scatter_to_index(g: Tensor, indices: Tensor, dim: int, keepdim: bool, shape: tuple[int, ...]) -> Tensor:
    """Place ``g`` at ``indices`` along ``dim`` of zeros of ``shape`` (differentiable in ``g``)."""
    if not keepdim and len(shape):
        g, indices = g.unsqueeze(dim), indices.unsqueeze(dim)
    if not len(shape):
        return g
    along_dim = tuple(shape[dim] if i == dim else 1 for i in range(len(shape)))
    positions = arange(shape[dim], device=g.device).reshape(along_dim)
    return g * (positions == indices)


def _arg_extreme(input: Tensor, code: int, dim: Any, keepdim: bool, name: str):
    d = _wrap_dim(dim, input.ndim, name)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return ArgExtreme.apply(input, code, d, keepdim)


@tensor_args
@with_out(cast=True)
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001 - torch's name
    """The largest element, or (values, indices) along ``dim``; with a tensor, the elementwise maximum."""
    if isinstance(dim, Tensor):
        return binary("maximum", input, dim)
    if dim is None:
        _check_nonempty(input, (), "max")
        return amax(input)
    return max_result(*_arg_extreme(input, op.A_MAX, dim, keepdim, "max"))


@tensor_args
@with_out(cast=True)
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001 - torch's name
    """The smallest element, or (values, indices) along ``dim``; with a tensor, the elementwise minimum."""
    if isinstance(dim, Tensor):
        return binary("minimum", input, dim)
    if dim is None:
        _check_nonempty(input, (), "min")
        return amin(input)
    return min_result(*_arg_extreme(input, op.A_MIN, dim, keepdim, "min"))


def _check_flat_nonempty(input: Tensor, name: str) -> None:
    """torch's argmax/argmin of an empty tensor without a dim is an IndexError (max/min's is a RuntimeError)."""
    if input.numel() == 0:
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")


def _check_not_bool(input: Tensor, name: str) -> None:
    """torch has no argmax/argmin kernel for bool (max/min of bool exist)."""
    if input.dtype is dtypes.bool:
        raise RuntimeError(f"{name}(): does not support bool input")


@tensor_args
@with_out
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum (in the flattened tensor when ``dim`` is None)."""
    _check_not_bool(input, "argmax")
    if dim is None:
        _check_flat_nonempty(input, "argmax")
        flat_index = _arg_extreme(input.reshape(-1), op.A_MAX, 0, False, "argmax")[1]
        return flat_index.reshape((1,) * input.ndim) if keepdim else flat_index
    return _arg_extreme(input, op.A_MAX, dim, keepdim, "argmax")[1]


@tensor_args
@with_out
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum (in the flattened tensor when ``dim`` is None)."""
    _check_not_bool(input, "argmin")
    if dim is None:
        _check_flat_nonempty(input, "argmin")
        flat_index = _arg_extreme(input.reshape(-1), op.A_MIN, 0, False, "argmin")[1]
        return flat_index.reshape((1,) * input.ndim) if keepdim else flat_index
    return _arg_extreme(input, op.A_MIN, dim, keepdim, "argmin")[1]


def _logical(code: int, input: Tensor, dim: Any, keepdim: bool, name: str, out_dt: dtypes.dtype) -> Tensor:
    dims = reduce_dims(input, dim, name)
    return Tensor._make(_reduce_array(code, input, dims, keepdim, out_dt))


@tensor_args
@with_out
def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element is nonzero (bool result; uint8 stays uint8 as in torch)."""
    return _logical(op.R_ALL, input, dim, keepdim, "all", dtypes.uint8 if input.dtype is dtypes.uint8 else dtypes.bool)


@tensor_args
@with_out
def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether some element is nonzero."""
    return _logical(op.R_ANY, input, dim, keepdim, "any", dtypes.uint8 if input.dtype is dtypes.uint8 else dtypes.bool)


@tensor_args
def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """Number of nonzero elements (int64)."""
    return _logical(op.R_COUNT_NONZERO, input, dim, False, "count_nonzero", dtypes.int64)


def _float_input(input: Tensor, name: str) -> None:
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}(): input dtype should be either floating point or complex dtypes. "
                           f"Got {input.dtype.scalar_type_name} instead.")


def _variance(input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool, correction: Any, name: str) -> Tensor:
    """Variance accumulated in float64, as torch's CPU kernels do: a constant input gives exactly 0, and float32 values
    near 1e20 (whose squares overflow float32) still give a finite std; the caller rounds once at the end."""
    _float_input(input, name)
    input = input.to(dtypes.float64)
    if isinstance(dim, bool) and unbiased is None:
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = reduce_dims(input, dim, "var")
    count = int(np.prod([input.shape[d] for d in dims])) if dims else 1
    centered = input - mean(input, dims, keepdim=True)
    total = (centered * centered).sum(dims, keepdim=keepdim)
    denominator = count - correction
    if denominator <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return total / (denominator if denominator > 0 else 0)


def _round_to(result: Tensor, dt: dtypes.dtype) -> Tensor:
    """The float64 statistic in the input's dtype; past that dtype's range it is inf, silently as in torch."""
    with np.errstate(over="ignore"):
        return result.to(dt)


@tensor_args
@with_out(cast=True)
def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Variance over dims with Bessel's correction by default (``correction=1``)."""
    return _round_to(_variance(input, dim, unbiased, keepdim, correction, "var"), input.dtype)


@tensor_args
@with_out(cast=True)
def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Standard deviation: the square root of ``var``."""
    return _round_to(_variance(input, dim, unbiased, keepdim, correction, "std").sqrt(), input.dtype)


@tensor_args
def var_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """(var, mean) in one call."""
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


@tensor_args
def std_mean(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """(std, mean) in one call."""
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def _norm_backward_operands(ctx, g: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """A norm's saved input, and its result and incoming gradient broadcast back to the input's shape."""
    x, y = ctx.saved_tensors
    return x, _expand_back(y, x.shape, ctx.dims, ctx.keepdim), _expand_back(g, x.shape, ctx.dims, ctx.keepdim)

class Norm2(Function):
    """The Euclidean norm; its gradient is 0 (not NaN) at the zero vector, as in torch.

    The squares add up in float64 and the root is taken there, so float32 and float16 inputs cannot overflow or
    underflow on the way (torch's float32 norm of 3e37s is inf; this one is the true value)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        sumsq = _reduce_array(op.R_SUMSQ, x, dims, keepdim, dtypes.float64)
        result = Tensor._make(np.sqrt(sumsq).astype(x.dtype.np))
        if ctx.needs_input_grad:
            ctx.dims, ctx.keepdim = dims, keepdim
            ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, g):
        x, y, g = _norm_backward_operands(ctx, g)
        return g * x / where(y == 0, 1.0, y) * (y != 0), None, None


class PNorm(Function):
    """``sum(|x| ** p) ** (1 / p)`` for the p without a shortcut; its gradient is 0 where the norm is 0, as in torch
    (the chain of pows would give 0 * inf = NaN there)."""

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        result = x.abs().pow(p).sum(dims, keepdim).pow(1.0 / p)
        if ctx.needs_input_grad:
            ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
            ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, g):
        x, y, g = _norm_backward_operands(ctx, g)
        power = ctx.p - 1
        scale = x.abs().pow(power)
        if power < 0:  # p < 1: 0 ** (p - 1) is inf at a zero element, whose gradient is 0 (as torch)
            scale = where(x == 0, 0.0, scale)
        grad = g * x.sign() * scale / where(y == 0, 1.0, y).pow(power)
        return where(y == 0, 0.0, grad), None, None, None


@tensor_args
@with_out
def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Vector p-norm over dims (``"fro"`` and 2 are the Euclidean norm)."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("norm", input):
        return autocast_policy.run("norm", norm, input, p, dim, keepdim)
    _float_input(input, "linalg.vector_norm")
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    dims = reduce_dims(input, dim, "norm")
    if input.dtype.compute is not input.dtype:
        return norm(input.to(input.dtype.compute), p, dims, keepdim).to(input.dtype)
    if p in ("fro", 2, 2.0):
        return _euclidean_norm(input, dims, keepdim)
    if p == float("inf"):
        return amax(input.abs(), dims, keepdim)
    if p == float("-inf"):
        return amin(input.abs(), dims, keepdim)
    if p == 0:
        return (input != 0).to(input.dtype).sum(dims, keepdim)
    if p == 1:
        return input.abs().sum(dims, keepdim)
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported norm type {p!r} for vector norms")
    return _scaled_by_max(input, dims, keepdim, lambda x: PNorm.apply(x, p, dims, keepdim))


def _euclidean_norm(input: Tensor, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """The 2-norm; float64 rows whose squares overflow (1e200) or underflow (1e-200) are computed rescaled."""
    plain = Norm2.apply(input, dims, keepdim)
    if input.dtype is not dtypes.float64 or input.numel() == 0:
        return plain
    edge = float(np.sqrt(np.finfo(np.float64).tiny))
    if not bool((plain.isinf() | (plain < edge)).any()):
        return plain
    return _scaled_by_max(input, dims, keepdim, lambda x: Norm2.apply(x, dims, keepdim))


def _scaled_by_max(input: Tensor, dims: tuple[int, ...], keepdim: bool, norm_of: Any) -> Tensor:
    """``norm_of(input / max|input|) * max|input|``: a p-norm is homogeneous, so this is the same value without
    the overflow or underflow of the powers in between (the scale is a constant to autograd, which is exact
    because the gradient of a homogeneous norm does not change under scaling)."""
    if input.numel() == 0:
        return norm_of(input)
    scale = amax(input.abs(), dims, keepdim=True).detach()
    scale = where((scale == 0) | scale.isinf(), 1.0, scale)
    result = norm_of(input / scale)
    return result * (scale if keepdim or not dims else scale.squeeze(dims))


@tensor_args
@with_out(cast=True)
def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over dims, computed stably (shifted by the maximum)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("logsumexp", input):
        return autocast_policy.run("logsumexp", logsumexp, input, dim, keepdim)
    if not input.dtype.is_floating_point:
        input = input.to(dtypes.get_default_dtype())
    dims = reduce_dims(input, dim, "logsumexp")
    if input.numel() == 0:
        return (input.exp().sum(dims, keepdim)).log()
    shift = amax(input, dims, keepdim=True).detach()
    shift = where(shift.isinf(), 0.0, shift)
    total = (input - shift).exp().sum(dims, keepdim=True).log() + shift
    return total if keepdim else total.squeeze(dims)


class Scan(Function):
    """cumsum / cumprod / logcumsumexp along one dim."""

    @staticmethod
    def forward(ctx, x, code, dim, out_dt):
        arr = computable(x._array)
        out = np.empty(arr.shape, dtype=out_dt.compute.np, like=arr)
        if arr.size:
            backend(x).scan(code, arr, dim, out)
        result = Tensor._make(out if out.dtype == out_dt.np else out.astype(out_dt.np))
        if ctx.needs_input_grad:
            ctx.code, ctx.dim = code, dim
            ctx.save_for_backward(x, result)
        return result

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = ctx.dim
        if ctx.code == op.S_SUM:
            return _reverse_cumsum(g, d), None, None, None
        if ctx.code == op.S_LOGSUMEXP:
            return _logcumsumexp_grad(x, y, g, d), None, None, None
        return _cumprod_grad(x, y, g, d), None, None, None


def _logcumsumexp_grad(x: Tensor, y: Tensor, g: Tensor, d: int) -> Tensor:
    """torch's stable form of ``exp(x_i) * sum_{j >= i} g_j / exp(y_j)``: the positive and negative parts of ``g``
    summed in log space (reverse logcumsumexp), so no exp overflows; in logcumsumexp itself, so it differentiates."""
    lowest = float(np.finfo(g.dtype.np).min)
    log_abs = g.abs().log()

    def part(mask: Tensor) -> Tensor:
        shifted = where(mask, log_abs, lowest) - y
        return (flip(logcumsumexp(flip(shifted, (d,)), d), (d,)) + x).exp()

    return part(g > 0) - part(g < 0)


def _cumprod_grad(x: Tensor, y: Tensor, g: Tensor, d: int) -> Tensor:
    """d y_j / d x_i is the product of x_k for k <= j, k != i: y_j / x_i without zeros, else one cumprod per i."""
    if not bool((x == 0).any()):
        return _reverse_cumsum(g * y, d) / x

    n = x.shape[d]
    positions = arange(n).reshape(tuple(n if i == d else 1 for i in range(x.ndim)))
    pieces = []
    for i in range(n):
        without_i = where(positions == i, 1.0, x).cumprod(d)
        pieces.append((g * without_i * (positions >= i)).sum(d, keepdim=True))
    return cat(pieces, d)


def _reverse_cumsum(g: Tensor, dim: int) -> Tensor:
    return g.sum(dim, keepdim=True) - g.cumsum(dim) + g


def _scan(input: Tensor, code: int, dim: int, dtype: Any, name: str) -> Tensor:
    d = _wrap_dim(dim, input.ndim, name)
    out_dt = _sum_dtype(input, dtype)
    if out_dt is not input.dtype:
        input = input.to(out_dt)
    if input.ndim == 0:
        return Scan.apply(input.reshape(1), code, 0, out_dt).reshape(())
    return Scan.apply(input, code, d, out_dt)


@tensor_args
@with_out(dtype_from_out=True)
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along ``dim`` (integers accumulate in int64)."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("cumsum", input):
        return autocast_policy.run("cumsum", cumsum, input, dim)
    return _scan(input, op.S_SUM, dim, dtype, "cumsum")


@tensor_args
@with_out(dtype_from_out=True)
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along ``dim``."""
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers("cumprod", input):
        return autocast_policy.run("cumprod", cumprod, input, dim)
    return _scan(input, op.S_PROD, dim, dtype, "cumprod")


@tensor_args
@with_out
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """Running ``log(sum(exp(x)))`` along ``dim``, computed stably (floating inputs only)."""
    _wrap_dim(dim, input.ndim, "logcumsumexp")  # torch checks the dim before the dtype
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for \'{input.dtype.scalar_type_name}\'')
    return _scan(input, op.S_LOGSUMEXP, dim, None, "logcumsumexp")


def _median(input: Tensor, dim: int | None, keepdim: bool, skip_nan: bool, name: str) -> Any:
    """median/nanmedian: the value of all elements, or (values, indices) along ``dim``; the nodes take torch's
    names (``<Name>Backward0`` without a dim, ``<Name>Backward1`` with one)."""
    if input.dtype is dtypes.bool:
        raise NotImplementedError('"median_cpu" not implemented for \'Bool\'')
    if dim is None:
        if input.numel() == 0:
            return Tensor._make(np.array(np.nan, dtype=input._array.dtype))
        values, _ = Median.apply(input.reshape(-1), 0, False, skip_nan)
        return name_node(values, name + "Backward0")
    d = _wrap_dim(dim, input.ndim, name.lower())
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    values, indices = Median.apply(input, d, keepdim, skip_nan)
    return name_node(values, name + "Backward1"), indices


@tensor_args
@with_out
def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (of all elements, or (values, indices) along ``dim``); NaN wherever a NaN is present."""
    result = _median(input, dim, keepdim, False, "Median")
    return result if dim is None else median_result(*result)


@tensor_args
@with_out
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """``median`` of the non-NaN elements (NaN only where all are NaN). Among equal candidates ember's index is the
    first in a stable sort; torch's (an nth_element partition's) can differ there, as its docs leave open."""
    result = _median(input, dim, keepdim, True, "Nanmedian")
    return result if dim is None else nanmedian_result(*result)


class Median(Function):
    """Lower median along one dim. A slice holding NaN has NaN as its median (its first NaN, as torch picks), or
    with ``skip_nan`` the lower median of its other elements."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, skip_nan=False):
        arr = x._array if x.ndim else x._array.reshape(1)
        n = arr.shape[dim]
        ordered = np.empty(arr.shape, arr.dtype, like=arr)
        order = np.empty(arr.shape, np.int64, like=arr)
        backend(x).sort(arr, dim, False, ordered, order)  # stable, NaN last
        pos = np.full(_keep_shape(arr.shape, (dim,)), (n - 1) // 2, np.int64, like=arr)
        if x.dtype.is_floating_point:  # the NaN sort last: the first one sits at n - #NaN
            nans = np.isnan(arr).sum(axis=dim, keepdims=True)
            pos = np.maximum((n - nans - 1) // 2, 0) if skip_nan else np.where(nans > 0, n - nans, pos)
        final = _final_shape(x.shape, (dim,), keepdim) if x.ndim else ()
        values = np.take_along_axis(ordered, pos, axis=dim).reshape(final)
        indices = Tensor._make(np.take_along_axis(order, pos, axis=dim).reshape(final))
        ctx.mark_non_differentiable(indices)
        if ctx.needs_input_grad:
            ctx.dim, ctx.keepdim, ctx.shape = dim, keepdim, x.shape
            ctx.save_for_backward(indices)
        return Tensor._make(values), indices

    @staticmethod
    def backward(ctx, g, _gi):
        (indices,) = ctx.saved_tensors
        return scatter_to_index(g, indices, ctx.dim, ctx.keepdim, ctx.shape), None, None, None
