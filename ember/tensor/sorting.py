"""Sorting, selection and set ops with torch's names, defaults, dtypes, errors and named-tuple results.

sort/topk/kthvalue/mode/cummax/cummin return (values, indices); the values are
differentiable (the gradient is scatter-added back to the chosen positions, whose
own backward gathers, so double backward works) and the indices are not.
Everything runs on the input's device through the backend's kernels (sort,
searchsorted, bincount, histc, scan_indices); unique/unique_consecutive find runs
with NumPy on the host, so a CUDA tensor makes that one round trip (the result's
size depends on the data, as torch's CUDA unique also synchronises for).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import opcodes as op
from ..return_types import return_type
from ..autograd.function import Function, name_node
from . import dtypes
from ._dispatch import ascontiguous, backend
from .device import CPU, place
from .indexing import scatter_add
from .reduce import amax, amin, cummax_result, cummin_result
from .tensor import Tensor, _wrap_dim
from .out_arg import with_out
from .arguments import tensor_args

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "mode", "cummax", "cummin", "unique",
           "unique_consecutive", "searchsorted", "bucketize", "bincount", "histc", "isin"]

sort_result = return_type("sort", ["values", "indices"])
topk_result = return_type("topk", ["values", "indices"])
kthvalue_result = return_type("kthvalue", ["values", "indices"])
mode_result = return_type("mode", ["values", "indices"])


def _kernel(name: str, *operands: Any) -> Callable:
    """Kernel entry point ``name`` of the operands' backend."""
    return getattr(backend(*operands), name)


class Selected(Function):
    """Values picked along ``dim`` by a kernel, with their int64 indices (non-differentiable).

    ``run(array, values, indices)`` fills the outputs (``shape`` along the kept-dims layout); the gradient of
    the values goes back to the picked positions. ``keepdim=False`` squeezes ``dim`` from both outputs.
    """

    @staticmethod
    def forward(ctx, x, run, dim, shape, keepdim):
        arr = x._array if x.ndim else x._array.reshape(1)
        values = np.empty(shape, arr.dtype, like=arr)
        indices = np.empty(shape, np.int64, like=arr)
        run(arr, values, indices)
        if x.ndim == 0:
            values, indices = values.reshape(()), indices.reshape(())
        elif not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        values, indices = Tensor._make(values), Tensor._make(indices)
        ctx.mark_non_differentiable(indices)
        if ctx.needs_input_grad:
            ctx.dim, ctx.keepdim, ctx.shape = dim, keepdim or x.ndim == 0, arr.shape
            ctx.scalar = x.ndim == 0
            ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        (indices,) = ctx.saved_tensors
        if ctx.scalar:
            g, indices = g.reshape(1), indices.reshape(1)
        elif not ctx.keepdim:
            g, indices = g.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        grad = scatter_add(g.new_zeros(ctx.shape), ctx.dim, indices, g)
        return (grad.reshape(()) if ctx.scalar else grad), None, None, None, None


def _select(x: Tensor, dim: int, size: int, keepdim: bool, run: Callable, node: str) -> tuple[Tensor, Tensor]:
    """Run a selection kernel whose outputs have ``size`` along ``dim`` (``node``: torch's name of its graph
    node)."""
    arr_shape = x.shape if x.ndim else (1,)
    shape = tuple(size if i == dim else n for i, n in enumerate(arr_shape))
    values, indices = Selected.apply(x, run, dim, shape, keepdim)
    return name_node(values, node), indices


def _dim_size(x: Tensor, dim: int) -> int:
    return x.shape[dim] if x.ndim else 1


# ------------------------------------------------------------------ sort family
@tensor_args
@with_out
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
    """Values sorted along ``dim`` and their original positions; NaN sorts as the largest value.

    The sort is always stable (``stable=False`` allows any order of equal elements; this one keeps theirs).
    """
    d = _wrap_dim(dim, input.ndim, "sort")
    run = _kernel("sort", input)
    return sort_result(*_select(input, d, _dim_size(input, d), True,
                                lambda a, v, i: run(a, d, bool(descending), v, i), "SortBackward0"))


@tensor_args
@with_out
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The positions that sort ``input`` along ``dim`` (``sort(...).indices``)."""
    return sort(input, dim, descending, stable=stable).indices


@tensor_args
@with_out
def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dim."""
    return sort(input, 0).values


@tensor_args
@with_out
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim`` with their positions, in sorted order."""
    d = _wrap_dim(dim, input.ndim, "topk")
    if input.dtype is dtypes.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if not 0 <= k <= _dim_size(input, d):
        raise RuntimeError(f"selected index k out of range (topk with k={k} on shape {list(input.shape)}, dim {d})")
    k = k if input.ndim else 1  # torch gives a 0-d tensor's only element even for k=0
    run = _kernel("topk", input)
    return topk_result(*_select(input, d, k, True, lambda a, v, i: run(a, k, d, bool(largest), v, i),
                                "TopkBackward0"))


def _check_orderable(input: Tensor, name: str) -> None:
    if input.dtype is dtypes.bool:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'Bool\'')


@tensor_args
@with_out
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest element (1-based) along ``dim`` and its position; NaN counts as the largest."""
    d = _wrap_dim(dim, input.ndim, "kthvalue")
    _check_orderable(input, "kthvalue")
    n = _dim_size(input, d)
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} "
                           f"(k={k}, shape {list(input.shape)})")
    kern = _kernel("kthvalue", input)
    return kthvalue_result(*_select(input, d, 1, keepdim, lambda a, v, i: kern(a, k, d, v, i) if a.size else None,
                                    "KthvalueBackward0"))


@tensor_args
@with_out
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The smallest most frequent value along ``dim`` and its last position (torch's tie rules)."""
    d = _wrap_dim(dim, input.ndim, "mode")
    if _dim_size(input, d) == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    kern = _kernel("mode", input)
    return mode_result(*_select(input, d, 1, keepdim, lambda a, v, i: kern(a, d, v, i) if a.size else None,
                                "ModeBackward0"))


def _cumulative(input: Tensor, code: int, dim: int, name: str) -> tuple[Tensor, Tensor]:
    d = _wrap_dim(dim, input.ndim, name)
    kern = _kernel("scan_indices", input)
    return _select(input, d, _dim_size(input, d), True, lambda a, v, i: kern(code, a, d, v, i) if a.size else None,
                   name.capitalize() + "Backward0")


@tensor_args
@with_out
def cummax(input: Tensor, dim: int) -> Any:
    """Running maximum along ``dim`` and where it was last reached (NaN propagates)."""
    return cummax_result(*_cumulative(input, op.S_MAX, dim, "cummax"))


@tensor_args
@with_out
def cummin(input: Tensor, dim: int) -> Any:
    """Running minimum along ``dim`` and where it was last reached (NaN propagates)."""
    return cummin_result(*_cumulative(input, op.S_MIN, dim, "cummin"))


# ------------------------------------------------------------------ unique
def _runs(rows: np.ndarray) -> np.ndarray:
    """Boolean mask of run starts over the first axis (NaN never equals NaN, as in torch)."""
    starts = np.ones(rows.shape[0], bool)
    if rows.shape[0] > 1:
        differs = rows[1:] != rows[:-1]
        starts[1:] = differs.reshape(differs.shape[0], -1).any(axis=1) if differs.ndim > 1 else differs
    return starts


def _unique_impl(input: Tensor, dim: int | None, sort_first: bool, return_inverse: bool,
                 return_counts: bool, name: str) -> Any:
    arr = place(input._array, CPU)
    if dim is None:
        rows, d = arr.reshape(-1), None
    else:
        if input.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = _wrap_dim(dim, input.ndim, name)
        if arr.size == 0 and arr.shape[d] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        rows = np.moveaxis(arr, d, 0)
    n = rows.shape[0]
    order = np.arange(n)
    if sort_first and n:
        flat = rows.reshape(n, -1)
        order = np.argsort(flat[:, 0], kind="stable") if flat.shape[1] == 1 else np.lexsort(flat.T[::-1])
        rows = rows[order]
    starts = _runs(rows)
    values = rows[starts]
    values = ascontiguous(values if d is None else np.moveaxis(values, 0, d))
    result = [values]
    if return_inverse:
        inverse = np.empty(n, np.int64)
        inverse[order] = np.cumsum(starts) - 1
        result.append(inverse.reshape(arr.shape) if d is None else inverse)
    if return_counts:
        first = np.flatnonzero(starts)
        result.append(np.diff(np.append(first, n)).astype(np.int64))
    result = [Tensor._make(place(a, input.device)) for a in result]
    return result[0] if len(result) == 1 else tuple(result)


@tensor_args
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct elements (or slices along ``dim``) in ascending order, optionally with the inverse
    mapping and counts. NaNs are all distinct, and the result is sorted even with ``sorted=False``, as torch
    does on the CPU."""
    return _unique_impl(input, dim, True, return_inverse, return_counts, "unique")


@tensor_args
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse each run of equal consecutive elements (or slices along ``dim``) to one."""
    return _unique_impl(input, dim, False, return_inverse, return_counts, "unique_consecutive")


# ------------------------------------------------------------------ searching and counting
def _search_dtype(*operands: Any) -> dtypes.dtype:
    """A dtype that holds both operands exactly (plain category promotion), as searchsorted/isin compare."""
    found = [o.dtype if isinstance(o, Tensor) else dtypes.scalar_dtype(o) for o in operands]
    result = found[0]
    for dt in found[1:]:
        result = dtypes.promote_types(result, dt)
    return result


def _beside(x: Tensor, other: Tensor) -> Tensor:
    """``x`` on ``other``'s device when ``x`` is a 0-d tensor (a number) elsewhere; devices already checked."""
    return x.to(other.device) if x.ndim == 0 and x.device != other.device else x


def _as_tensor(x: Any, name: str, arg: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, np.number)):
        return Tensor._make(np.asarray(x))
    raise TypeError(f"{name}(): argument '{arg}' must be Tensor or Number, not {type(x).__name__}")


def _side(right: bool, side: str | None) -> bool:
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                           "while right was True")
    return side == "right"


def _extremes(x: Tensor) -> tuple[Any, Any]:
    """(min, max) of a non-empty tensor as Python numbers (on a device: two reductions, two numbers copied back)."""
    x = x.detach()
    return amin(x).item(), amax(x).item()


def _check_sorter(sorter: Tensor, boundaries: Tensor) -> None:
    if sorter.dtype is not dtypes.int64:
        raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                           f"{sorter.dtype.scalar_type_name}")
    if sorter.shape != boundaries.shape:
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                           f"tensor {list(boundaries.shape)}and got sorter tensor {list(sorter.shape)}")
    if sorter.numel():
        lo, hi = _extremes(sorter)
        if lo < 0 or hi >= boundaries.shape[-1]:
            raise RuntimeError("torch.searchsorted(): sorter index out of range")


@tensor_args
@with_out
def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value would be inserted into the innermost dim of ``sorted_sequence`` to keep it sorted."""
    boundaries = sorted_sequence
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"searchsorted(): argument 'sorted_sequence' must be Tensor, not {type(boundaries).__name__}")
    is_scalar = not isinstance(input, Tensor)
    values = _as_tensor(input, "searchsorted", "input")
    run = _kernel("searchsorted", boundaries, values, sorter)
    values = _beside(values, boundaries)
    use_right = _side(right, side)
    if boundaries.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if is_scalar and boundaries.ndim != 1:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({boundaries.ndim}) and input value's "
                           f"dim(0) numel(1)")
    if boundaries.ndim > 1 and (values.ndim != boundaries.ndim or values.shape[:-1] != boundaries.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(boundaries.shape)} and input value tensor "
                           f"{list(values.shape)}")
    dt = _search_dtype(boundaries, values)
    if dt is dtypes.bool:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    if sorter is not None:
        _check_sorter(sorter, boundaries)
    m = boundaries.shape[-1]
    bounds = boundaries._array.astype(dt.np, copy=False).reshape(math.prod(boundaries.shape[:-1]), m)
    if boundaries.ndim == 1:
        vals = values._array.astype(dt.np, copy=False).reshape(1, -1)
    else:
        vals = values._array.astype(dt.np, copy=False).reshape(bounds.shape[0], values.shape[-1])
    out = np.empty(vals.shape, np.int32 if out_int32 else np.int64, like=bounds)
    order = None if sorter is None else sorter._array.reshape(bounds.shape)
    run(bounds, vals, use_right, order, out)
    return Tensor._make(out.reshape(values.shape))


@tensor_args
@with_out
def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each element: i with ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` when right)."""
    if not isinstance(boundaries, Tensor) or boundaries.ndim != 1:
        dim = boundaries.ndim if isinstance(boundaries, Tensor) else 0
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({dim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@tensor_args
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in 1-D ``input`` (summing ``weights`` instead of ones)."""
    if input.dtype.is_floating_point or input.dtype is dtypes.bool:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input.dtype.scalar_type_name}'")
    if minlength < 0:
        raise RuntimeError(f"minlength should be >= 0 (bincount got minlength={minlength})")
    run = _kernel("bincount", input, weights)
    lo, hi = _extremes(input) if input.numel() else (0, -1)
    if input.ndim != 1 or lo < 0:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs. (got shape "
                           f"{list(input.shape)})")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError(f"weights should be 1-d and have the same length as input (got weights "
                           f"{list(weights.shape)} and input {list(input.shape)})")
    size = max(int(hi) + 1, minlength)
    if weights is None:
        out_dt = dtypes.int64
    else:
        out_dt = weights.dtype if weights.dtype in (dtypes.float32, dtypes.float64) else dtypes.float64
    out = np.zeros(size, out_dt.np, like=input._array)
    if input.numel():
        run(input._array, None if weights is None else weights._array, out)
    return Tensor._make(out)


@tensor_args
@with_out
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Counts in ``bins`` equal-width bins over [min, max] (the data's range when min == max); values outside
    are ignored. Floating inputs only, result in the input's dtype."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.scalar_type_name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = (float(v) for v in _extremes(input))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min (got min={min}, max={max})")
    out = np.zeros(bins, input._array.dtype, like=input._array)
    if input.numel():
        _kernel("histc", input)(input._array, lo, hi, out)
    return Tensor._make(out)


@tensor_args
@with_out
def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of ``elements`` equals some element of ``test_elements`` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}): one must be a Tensor")
    e = _as_tensor(elements, "isin", "elements")
    t = _as_tensor(test_elements, "isin", "test_elements")
    if e.dtype is dtypes.bool or t.dtype is dtypes.bool:
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    kernels = backend(e, t)
    e, t = _beside(e, t), _beside(t, e)
    dt = _search_dtype(elements, test_elements)
    pool = t._array.astype(dt.np).reshape(1, -1)
    ordered = np.empty_like(pool)
    kernels.sort(pool, 1, False, ordered, np.empty(pool.shape, np.int64, like=pool))
    if dt.is_floating_point:  # NaN equals nothing and sorts last; left in, it would break the search
        ordered = ordered[:, :pool.size - np.isnan(pool).sum().item()]
    probes = e._array.astype(dt.np).reshape(1, -1)
    first, past = (np.empty(probes.shape, np.int64, like=pool) for _ in range(2))
    kernels.searchsorted(ordered, probes, False, None, first)
    kernels.searchsorted(ordered, probes, True, None, past)
    found = past != first  # a value is present when its left and right insertion points differ
    return Tensor._make((found != bool(invert)).reshape(e.shape))


TENSOR_METHODS: dict[str, Callable] = {
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue, "mode": mode,
    "cummax": cummax, "cummin": cummin, "unique": unique, "unique_consecutive": unique_consecutive,
    "bincount": bincount, "histc": histc,
}
