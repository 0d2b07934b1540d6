"""Advanced indexing and the index / gather / scatter / mask ops.

Everything that writes through indices is one of two Functions:
``IndexGet`` (``x[key]`` for a key of full slices and int64 index arrays, a
copy) and ``IndexPut`` (a copy of ``x`` with ``values`` written or added at
``key``); gather/scatter along a dim is ``Gather`` / ``ScatterReduce``. Each
backward is written with these same ops, so gradients of gradients work and
duplicate indices accumulate (the adjoint of a gather is a scatter-add).

Keys follow torch's rules: integers, slices, None and Ellipsis are applied
first as a view (``views.getitem``), then the remaining index arrays (int
tensors, lists, NumPy arrays, boolean masks expanded by ``nonzero``) are
broadcast together and placed where NumPy places them over that view
(in place when adjacent, first when separated by a slice). Indices are
checked here, vectorised, before any kernel runs.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .._determinism import alert_not_deterministic
from ..kernels.common.dtypes import FLOAT_KINDS
from ..autograd.function import Function
from ..autograd.tangents import linear_jvp
from . import autocast_policy, dtypes, views
from .dtypes import check_number_fits
from ._dispatch import ascontiguous, backend, broadcast_shapes, copy_array, sum_to_shape
from .device import CPU, array_device, place
from .conversion import copy_
from .elementwise import inplace, where as _where3
from .tensor import Tensor, _wrap_dim
from .out_arg import with_out
from .arguments import tensor_args

Key = tuple  # of slice(None) and int64 ndarrays

_BASIC_TYPES = (int, np.integer, slice, type(None), type(Ellipsis))
_INDEX_ERROR = "tensors used as indices must be long, int, byte or bool tensors"


# ----------------------------------------------------------------------------- keys
def _is_basic(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return all(isinstance(i, _BASIC_TYPES) and not isinstance(i, (bool, np.bool_)) for i in items)


def _as_items(key: Any, ndim: int | None = None) -> tuple:
    """The key as a tuple of items; a list holding sequences, slices, None or ... is a tuple (torch's legacy rule).
    Given the indexed tensor's ``ndim``, several Ellipses are spelled out as torch reads them."""
    if isinstance(key, list) and len(key) < 32 and any(
            isinstance(i, (Tensor, list, tuple, np.ndarray, slice)) or i is None or i is Ellipsis for i in key):
        key = tuple(key)
    if not isinstance(key, tuple):
        return (key,)
    if ndim is None or sum(i is Ellipsis for i in key) < 2:
        return key
    return _expand_ellipses(key, ndim)


def _expand_ellipses(items: tuple, ndim: int) -> tuple:
    """torch's reading of an index with several Ellipses: each stands for the dims the other items leave (so they
    may reach past the last dim); a slice from the start with step 1 is a no-op out there (whatever its stop),
    anything else an IndexError."""
    counts = [None if i is Ellipsis else _consumed(*_classify(i, True)) for i in items]
    width = max(ndim - sum(c for c in counts if c is not None), 0)
    total = sum(width if c is None else c for c in counts)
    out: list = []
    dim = 0
    for item, used in zip(items, counts):
        if used is None:
            out += [slice(None)] * max(0, min(width, ndim - dim))
            dim += width
        elif dim + used <= ndim:
            out.append(item)
            dim += used
        elif not (isinstance(item, slice) and item.start in (None, 0) and item.step in (None, 1)):
            raise IndexError(f"too many indices for tensor of dimension {ndim} (got {total}: each single ellipsis "
                             f"stands for {width} dims here)")
    return tuple(out)


def _type_name(value: Any) -> str:
    """A type's name as torch's messages spell it: ``list``, ``numpy.float32``."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _sequence_array(item: Any) -> np.ndarray:
    """A list, tuple, range or NumPy array used as an index, as an array; torch's errors for what is no number."""
    try:
        arr = np.asarray(list(item) if isinstance(item, range) else item)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length sequences as an index: {e}") from None
    if arr.dtype.kind in "US":
        if isinstance(item, np.ndarray):
            raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. The only supported "
                            "types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
        raise TypeError(f"new(): invalid data type '{_type_name(arr.reshape(-1)[0].item())}'")
    if arr.dtype.kind == "O":
        odd = next(v for v in arr.reshape(-1) if not isinstance(v, (int, float, bool, np.number)))
        raise RuntimeError(f"Could not infer dtype of {type(odd).__name__}")
    return arr


def _classify(item: Any, ints_select: bool) -> tuple[str, Any]:
    """One key item as (kind, value); kinds: int, slice, none, ellipsis, bool, index (int64 array), mask."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, bool):  # a NumPy bool scalar is no index in torch
        return "bool", item
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, slice):
        if item.step is not None and int(item.step) <= 0:
            raise ValueError("step must be greater than zero")
        return "slice", item
    if isinstance(item, Tensor):
        arr = place(item._array, CPU)  # indices are checked on the host
        if arr.dtype == np.bool_ or arr.dtype == np.uint8:
            return ("bool", bool(arr)) if arr.ndim == 0 else ("mask", arr.astype(np.bool_, copy=False))
        if arr.dtype not in (np.int64, np.int32):
            raise IndexError(_INDEX_ERROR)
        if arr.ndim == 0 and ints_select:
            return "int", int(arr)
        return "index", arr.astype(np.int64, copy=False)
    if isinstance(item, (list, tuple, range, np.ndarray)):
        arr = _sequence_array(item)
        if arr.dtype == np.bool_ or (arr.dtype == np.uint8 and isinstance(item, np.ndarray)):  # as a uint8 tensor
            return ("bool", bool(arr)) if arr.ndim == 0 else ("mask", arr.astype(np.bool_, copy=False))
        if arr.ndim == 0 and ints_select and arr.dtype.kind in "iu":  # a 0-d array is an int, as a 0-d tensor
            return "int", int(arr)
        # torch turns a sequence (not a tensor) into a long index tensor, truncating floats
        return "index", arr.astype(np.int64)
    if isinstance(item, str):  # torch reads a string as a sequence of characters
        raise TypeError("new(): invalid data type 'str'")
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                     f"indices (got {_type_name(item)})")


def _consumed(kind: str, value: Any) -> int:
    return value.ndim if kind == "mask" else int(kind in ("int", "slice", "index"))


def split_key(shape: tuple[int, ...], key: Any, ints_select: bool = True) -> tuple[tuple | None, Key | None]:
    """Split an index into torch's two steps: a basic key (a view) and an advanced key over that view.

    The basic key is None when it selects everything; the advanced key is None
    when there are no index arrays. Advanced arrays come back broadcast-checked,
    bounds-checked and non-negative.
    """
    basic, adv, sizes = _split_unchecked(shape, key, ints_select)
    return basic, (None if adv is None else _bounds_checked(adv, sizes))


def _split_unchecked(shape: tuple[int, ...], key: Any, ints_select: bool) -> tuple[tuple | None, Key | None, list]:
    """``split_key`` before the advanced arrays' bounds check: (basic, advanced, the dim size each array indexes
    (None: always in range)); ``x[key] = value`` checks the value in between, as torch does."""
    items = [_classify(i, ints_select) for i in _as_items(key, len(shape))]
    consumed = sum(_consumed(kind, v) for kind, v in items)
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    basic: list = []
    adv: list = []
    sizes: list[int | None] = []  # the dim size each advanced array indexes (None: always in range)
    dim = 0
    for kind, v in items:
        if kind == "ellipsis":
            n = len(shape) - consumed
            basic += [slice(None)] * n
            adv += [slice(None)] * n
            dim += n
        elif kind == "none":
            basic.append(None)
            adv.append(slice(None))
        elif kind == "bool":
            basic.append(None)
            adv.append(np.zeros(1 if v else 0, np.int64))
            sizes.append(None)
        elif kind == "int":
            size = shape[dim]
            if v < -size or v >= size:
                raise IndexError(f"index {v} is out of bounds for dimension {dim} with size {size}")
            basic.append(v)
            dim += 1
        elif kind == "slice":
            basic.append(v)
            adv.append(slice(None))
            dim += 1
        elif kind == "index":
            basic.append(slice(None))
            adv.append(v)
            sizes.append(shape[dim])
            dim += 1
        else:  # mask
            k = v.ndim
            for j in range(k):
                if v.shape[j] != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(v.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(shape)} at index {dim + j}")
            basic += [slice(None)] * k
            adv += [a.astype(np.int64) for a in np.nonzero(v)]
            sizes += [None] * k
            dim += k
    trivial = all(isinstance(b, slice) and b == slice(None) for b in basic)
    if not any(kind == "ellipsis" for kind, _ in items):
        basic.append(Ellipsis)  # so an all-integer basic key gives a 0-d view, not a NumPy scalar
    arrays = [a for a in adv if isinstance(a, np.ndarray)]
    if not arrays:
        return (None if trivial else tuple(basic)), None, sizes
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(a.shape)) for a in arrays)) from None
    return (None if trivial else tuple(basic)), tuple(adv), sizes


def _read_checked(base_shape: tuple[int, ...], adv: Key, sizes: list) -> Key:
    """``_bounds_checked`` unless ``base[adv]`` is empty: torch checks an index when it reads through it, so an
    empty result checks none (``x[[9], :0]`` is fine)."""
    return adv if _empty_result(base_shape, adv) is not None else _bounds_checked(adv, sizes)


def _empty_result(shape: tuple[int, ...], key: Key) -> tuple[int, ...] | None:
    """The shape of ``a[key]`` (``a`` of ``shape``) when it has no elements, else None."""
    if math.prod(shape) and all(a.size for a in key if isinstance(a, np.ndarray)):
        return None
    result = _indexed_shape(shape, key)
    return result if math.prod(result) == 0 else None


def _bounds_checked(adv: Key, sizes: list) -> Key:
    """The advanced key with every index array checked against the dim size it indexes, negatives wrapped."""
    arrays = iter(sizes)
    checked = []
    for ordinal, a in enumerate(i for i in adv if isinstance(i, np.ndarray)):
        size = next(arrays)
        checked.append(a if size is None else check_range(a, size, lambda v, o=ordinal, n=size: IndexError(
            f"index {v} is out of bounds for dimension {o} with size {n}")))
    found = iter(checked)
    return tuple(next(found) if isinstance(a, np.ndarray) else a for a in adv)


def check_range(index: np.ndarray, size: int, error: Callable[[int], Exception], wrap: bool = True) -> np.ndarray:
    """``index`` with negatives wrapped (when ``wrap``), or ``error(first bad value)`` raised."""
    if index.size == 0:
        return index
    lo = -size if wrap else 0
    bad = (index < lo) | (index >= size)
    if bad.any():
        raise error(int(index.reshape(-1)[np.argmax(bad.reshape(-1))]))
    return np.where(index < 0, index + size, index) if wrap and index.min() < 0 else index


def _indexed_shape(shape: tuple[int, ...], key: Key) -> tuple[int, ...]:
    """The shape of ``a[key]`` for an array of ``shape`` (NumPy's placement of the advanced dims)."""
    where_ = [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]
    adv_shape = np.broadcast_shapes(*(key[i].shape for i in where_))
    rest = [shape[i] for i, k in enumerate(key) if not isinstance(k, np.ndarray)] + list(shape[len(key):])
    adjacent = where_[-1] - where_[0] + 1 == len(where_)
    at = where_[0] if adjacent else 0
    return tuple(rest[:at]) + tuple(adv_shape) + tuple(rest[at:])


def _positions(shape: tuple[int, ...], key: Key) -> np.ndarray:
    """Flat (C-order) positions in an array of ``shape`` of the elements ``key`` selects."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[key]


# ----------------------------------------------------------------------------- core Functions
class IndexGet(Function):
    """``x[key]`` for an advanced key: a copy; the gradient is scatter-added back (duplicates accumulate)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, key: Key):
        ctx.key, ctx.shape = key, x.shape
        empty = _empty_result(x.shape, key)
        if empty is not None:  # reads nothing: the key's indices may be unchecked (see _read_checked)
            return np.empty(empty, dtype=x._array.dtype, like=x._array)
        return ascontiguous(x._array[key])

    @staticmethod
    def backward(ctx, g: Tensor):
        return IndexPut.apply(g.new_zeros(ctx.shape), g, ctx.key, True), None


_INDEX_SELECT = IndexGet.named("IndexSelectBackward0")


class IndexPut(Function):
    """A copy of ``x`` with ``values`` (broadcast to ``x[key]``'s shape) written, or added, at ``key``."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, values: Tensor, key: Key, accumulate: bool):
        target = _indexed_shape(x.shape, key)
        _check_value_shape(values.shape, target)
        vals = np.broadcast_to(values._array.astype(x._array.dtype, copy=False), target)
        out = copy_array(x._array)
        if math.prod(target) == 0:  # writes nothing (the key may be unchecked, see _read_checked)
            pass
        elif accumulate:
            backend(x).scatter("sum", out.reshape(-1), _positions(x.shape, key), vals)
        else:
            out[key] = vals
        ctx.key, ctx.accumulate, ctx.values_shape = key, accumulate, values.shape
        return out

    @staticmethod
    def backward(ctx, g: Tensor):
        n = ctx.needs_input_grad
        gx = gv = None
        if n[0]:
            gx = g if ctx.accumulate else IndexPut.apply(g, g.new_zeros(()), ctx.key, False)
        if n[1]:
            gv = sum_to_shape(IndexGet.apply(g, ctx.key), ctx.values_shape)
        return gx, gv, None, None


def _check_value_shape(shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    """torch's RuntimeError when values of ``shape`` do not broadcast to the indexing result's ``target`` shape."""
    try:
        fits = np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(shape)} cannot be broadcast to indexing "
                           f"result of shape {list(target)}")


def _value_tensor(value: Any, dt: dtypes.dtype) -> Tensor:
    """``value`` (number, sequence or tensor) as a tensor of dtype ``dt``; a tensor keeps its graph."""
    if isinstance(value, Tensor):
        return value if value.dtype is dt else value.to(dt)
    if isinstance(value, (int, float, np.number)):
        check_number_fits(value, dt)
    return Tensor._make(np.asarray(np.asarray(value).astype(dt.np)))


def _basic_view_key(key: Any, ndim: int) -> tuple:
    """A basic key with a trailing Ellipsis, so that all-integer keys give 0-d views rather than NumPy scalars."""
    items = _as_items(key, ndim)
    return items if any(i is Ellipsis for i in items) else items + (Ellipsis,)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: a view for basic keys, a copy when the key holds index arrays or masks (torch's rules)."""
    if _is_basic(key):
        return views.getitem(x, _basic_view_key(key, x.ndim))
    basic, adv, sizes = _split_unchecked(x.shape, key, True)
    base = x if basic is None else views.getitem(x, basic)
    return base if adv is None else IndexGet.apply(base, _read_checked(base.shape, adv, sizes))


# what ``x[key] = value`` takes: tensors and Python numbers (NumPy integers and float64, a float, convert too)
_ASSIGNABLE = (Tensor, bool, int, float, np.integer)


def _check_assignable(x: Tensor, value: Any) -> None:
    if not isinstance(value, _ASSIGNABLE):
        raise TypeError(f"can't assign a {_type_name(value)} to a {x.type()}")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and not -2**63 <= int(value) < 2**63:
        raise ValueError("Overflow when unpacking long long")


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: cast to ``x``'s dtype, broadcast, written in place; differentiable in both."""
    _check_assignable(x, value)
    if not isinstance(value, Tensor):
        check_number_fits(value, x.dtype)  # torch converts the value before it looks at the key
    if key is False:  # torch writes nothing and checks nothing more
        return
    if x._array.size == 0:  # nothing to write: only check the key and the value
        getitem(x, key)
        _check_put_value(x, key, value)
        return
    value = _drop_leading_ones(value)
    if _is_basic(key):  # copy (with broadcasting) into the viewed region
        copy_(views.getitem(x, _basic_view_key(key, x.ndim)), value)
        return
    basic, adv, sizes = _split_unchecked(x.shape, key, True)
    _check_put_value(x, key, value)
    target = x if basic is None else views.getitem(x, basic)
    if adv is None:
        copy_(target, value)
        return
    values = _drop_leading_ones(_value_tensor(value, x.dtype))
    _check_value_shape(values.shape, _indexed_shape(target.shape, adv))  # before the bounds, as in torch
    adv = _read_checked(target.shape, adv, sizes)
    inplace(target, "index_put", lambda s: IndexPut.apply(s, values, adv, False))


def _drop_leading_ones(value: Any) -> Any:
    """A value tensor without its leading size-1 dims, as torch writes it (so a [1, 1] value fits a 0-d target)."""
    if not isinstance(value, Tensor):
        return value
    shape = tuple(value.shape)
    ones = next((i for i, n in enumerate(shape) if n != 1), len(shape))
    return value.reshape(shape[ones:]) if ones else value


# ----------------------------------------------------------------------------- checks
def _is_index_item(item: Any) -> bool:
    """Whether torch indexes with ``item`` through index_put: a tensor (but a 0-d integer one is a plain int) or a
    sequence."""
    if isinstance(item, Tensor):
        return not (item.ndim == 0 and item.dtype in (dtypes.int64, dtypes.int32))
    if isinstance(item, np.ndarray):
        return not (item.ndim == 0 and item.dtype.kind in "iu")
    return isinstance(item, (list, tuple, range))


def _array_of(item: Any) -> np.ndarray:
    return item._array if isinstance(item, Tensor) else np.asarray(item)


def _is_mask(item: Any) -> bool:
    arr = _array_of(item)
    if isinstance(item, Tensor):
        return arr.ndim > 0 and arr.dtype in (np.bool_, np.uint8)
    return arr.dtype == np.bool_ or (arr.dtype == np.uint8 and isinstance(item, np.ndarray))


def _check_put_value(x: Tensor, key: Any, value: Any) -> None:
    """Through index_put torch takes a value tensor only in ``x``'s dtype. Numbers cast, and so does a one-element
    value under a single mask (torch fills it with masked_fill, which takes no uint8 mask)."""
    # a bool inside a tuple goes through index_put too (``x[True]`` alone is a view's copy)
    indices = [item for item in _as_items(key) if _is_index_item(item) or (isinstance(item, bool) and item is not key)]
    filled = len(indices) == 1 and (not isinstance(value, Tensor) or value.numel() == 1) and _is_mask(indices[0])
    if filled and _array_of(indices[0]).dtype == np.uint8:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")
    if indices and not filled and isinstance(value, Tensor):
        _check_put_dtype(x, value)


def _check_put_dtype(x: Tensor, values: Tensor) -> None:
    if values.dtype is not x.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{x.dtype.scalar_type_name} for the destination and {values.dtype.scalar_type_name} for "
                           "the source.")


def _check_same_dtype(x: Tensor, other: Tensor, message: str) -> None:
    if x.dtype is not other.dtype:
        raise RuntimeError(message.format(self=x.dtype.scalar_type_name, other=other.dtype.scalar_type_name))


def _index_array(op: str, index: Any, allowed: tuple = (np.int64, np.int32), message: str | None = None,
                 dtype_error: type = RuntimeError) -> np.ndarray:
    """The index tensor's array as int64, or torch's error when it is not an allowed integer tensor."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    arr = place(index._array, CPU)  # checked on the host
    if arr.dtype not in allowed:
        raise dtype_error(message or f"{op}(): Expected dtype int32/int64 for index")
    return arr.astype(np.int64, copy=False)


def _vector_key(op: str, x: Tensor, dim: int, index: Tensor, error: type, prefix: str = "",
                vector_message: str | None = None, wrap: bool = True,
                out_of_range: Callable[[int, int, int], Exception] | None = None, **kw: Any) -> tuple[int, Key]:
    """Check a 0-d/1-d index into dim ``dim`` (negatives count from the end when ``wrap``); the key selecting it.
    A bad value raises ``out_of_range(value, dim, size)`` when given, else ``error`` with ember's message."""
    d = _wrap_dim(dim, x.ndim, op)
    arr = _index_array(op, index, **kw)
    if arr.ndim > 1:
        raise IndexError(vector_message or f"{op}(): Index is supposed to be a vector")
    size = x.shape[d] if x.ndim else 1
    make_error = out_of_range or (lambda v, d, n: error(f"{prefix}index {v} is out of bounds for dimension {d} with "
                                                        f"size {n}"))
    arr = check_range(arr.reshape(-1), size, lambda v: make_error(v, d, size), wrap=wrap)
    return d, (slice(None),) * d + (arr,)


def _flat_if_scalar(x: Tensor) -> Tensor:
    return x.reshape(1) if x.ndim == 0 else x


# ----------------------------------------------------------------------------- index_* ops
def _index_select_range_error(x: Tensor) -> Callable[[int, int, int], Exception]:
    """torch's index_select error for an index outside [0, size): its 2-d+ paths along dim 1 or over an empty
    tensor raise RuntimeError, the others IndexError."""
    def error(value: int, d: int, size: int) -> Exception:
        if x.ndim > 1 and size == 0:
            return RuntimeError("index_select(): self indexing axis dim should be positive")
        if x.ndim > 1 and (d == 1 or x.numel() == 0):
            return RuntimeError(f"INDICES element is out of DATA bounds, id={value} axis_dim={size}")
        return IndexError("index out of range in self")
    return error


@tensor_args
@with_out
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` at ``index`` along ``dim`` (a copy; duplicates allowed; no negative indices)."""
    d, key = _vector_key("index_select", input, dim, index, IndexError, wrap=False,
                         out_of_range=_index_select_range_error(input),
                         message="index_select(): Expected dtype int32 or int64 for index")
    if input.ndim == 0:
        if key[-1].size != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {key[-1].size} value(s)")
        return IndexGet.apply(input.reshape(1), key).reshape(())
    return _INDEX_SELECT.apply(input, key)


def _check_source(op: str, x: Tensor, d: int, key: Key, source: Tensor, error: type, count_message: str) -> None:
    n = key[-1].size
    if source.ndim and source.shape[d] != n:
        raise error(count_message.format(n=n, m=source.shape[d], d=d))
    if source.ndim and x.ndim and (x.shape[:d] + x.shape[d + 1:] != source.shape[:d] + source.shape[d + 1:]
                                   or x.ndim != source.ndim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}")


@tensor_args
@with_out
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """``input`` with ``alpha * source`` slices added at ``index`` along ``dim`` (duplicates accumulate)."""
    _check_same_dtype(input, source, "index_add_(): self ({self}) and source ({other}) must have the same scalar type")
    d, key = _vector_key("index_add", input, dim, index, IndexError, prefix="index_add(): ", wrap=False,
                         message=f"index_add_(): Expected dtype int32/int64 for index but got: "
                                 f"{index.dtype.scalar_type_name}")
    _check_source("index_add", input, d, key, source, RuntimeError,
                  "index_add_(): Number of indices ({n}) should be equal to source.size(dim): ({m}), for dim: {d}")
    values = source if alpha == 1 else source * alpha
    return _index_put_flat(input, values, key, True)


def _index_put_flat(x: Tensor, values: Tensor, key: Key, accumulate: bool) -> Tensor:
    """IndexPut that treats a 0-d ``x`` as one element."""
    if x.ndim == 0:
        return IndexPut.apply(x.reshape(1), values.reshape(-1), key, accumulate).reshape(())
    return IndexPut.apply(x, values, key, accumulate)


@tensor_args
@with_out
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``input`` with its slices at ``index`` along ``dim`` replaced by ``source``'s."""
    if autocast_policy.ACTIVE and autocast_policy.covers("index_copy", input):
        return autocast_policy.run("index_copy", index_copy, input, dim, index, source)
    _check_same_dtype(input, source, "index_copy_(): self and source expected to have the same dtype, but got "
                                     "(self) {self} and (source) {other}")
    d, key = _vector_key("index_copy", input, dim, index, IndexError, prefix="index_copy_(): ", wrap=False,
                         allowed=(np.int64,),
                         message=f"index_copy_(): Expected a long tensor for index, but got "
                                 f"{index.dtype.scalar_type_name}")
    _check_source("index_copy", input, d, key, source, IndexError,
                  "index_copy_(): Number of indices ({n}) should be equal to source.size(dim) ({m})")
    return _index_put_flat(input, source, key, False)


@tensor_args
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``input`` with its slices at ``index`` along ``dim`` set to ``value`` (a number or 0-d tensor)."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    d, key = _vector_key("index_fill", input, dim, index, IndexError, allowed=(np.int64,),
                         message="index_fill_(): Expected dtype int64 for index.",
                         vector_message="Index has to be a vector/scalar", dtype_error=IndexError)
    key = key[:d] + (np.unique(key[d]),)  # each filled slice counts once in the value's gradient, as in torch
    return _index_put_flat(input, _value_tensor(value, input.dtype), key, False)


@tensor_args
def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` with ``values`` written (or added, duplicates accumulating) at ``input[indices]``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("index_put", input):
        return autocast_policy.run("index_put", index_put, input, indices, values, accumulate)
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(t).__name__}")
    _check_put_dtype(input, values)
    _, key = split_key(input.shape, tuple(indices), ints_select=False)
    if key is None:  # only bool scalars / nothing: behave as a full write
        key = (slice(None),)
    return IndexPut.apply(input, values, key, bool(accumulate))


# ----------------------------------------------------------------------------- masks
def _check_mask(op: str, mask: Tensor) -> None:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool:
        got = mask.dtype.scalar_type_name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {got}")


@tensor_args
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` holds, else ``input`` (broadcast together); keeps ``input``'s dtype."""
    _check_mask("masked_fill_", mask)
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    return _where3(mask, _value_tensor(value, input.dtype), input)


def _flat_mask(op: str, input: Tensor, mask: Tensor) -> tuple[tuple[int, ...], Tensor, Key]:
    """Broadcast ``input`` and ``mask``: the shape, ``input`` flattened, and the key of the mask's ones."""
    shape = broadcast_shapes(input.shape, mask.shape, op=op)
    flat = (input if input.shape == shape else views.expand(input, shape)).reshape(-1)
    positions = np.flatnonzero(np.broadcast_to(mask._array, shape))  # found on the mask's device
    return shape, flat, (place(positions, CPU),)  # keys are host metadata, as everywhere in this module


@tensor_args
@with_out
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` holds (broadcast together), as a 1-D copy."""
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    _, flat, key = _flat_mask("masked_select", input, mask)
    return IndexGet.apply(flat, key)


@tensor_args
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` with the positions where ``mask`` holds filled, in order, by ``source``'s elements."""
    _check_mask("masked_scatter_", mask)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{input.dtype.scalar_type_name} and {source.dtype.scalar_type_name}")
    shape, flat, key = _flat_mask("masked_scatter", input, mask)
    k = key[0].size
    if source.numel() < k:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    values = views.narrow(source.reshape(-1), 0, 0, k)
    return IndexPut.apply(flat, values, key, False).reshape(shape)


# ----------------------------------------------------------------------------- flat (take / put)
def _flat_key(op: str, x: Tensor, index: Tensor) -> Key:
    arr = _index_array(op, index, allowed=(np.int64,),
                       message=f"{op}(): Expected a long tensor for index, but got {index.dtype.scalar_type_name}")
    n = x.numel()
    return (check_range(arr, n, lambda v: IndexError(
        f"out of range: tried to access index {v} on a tensor of {n} elements.")),)


@tensor_args
@with_out
def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of ``input`` seen as 1-D, at ``index`` (result has ``index``'s shape)."""
    return IndexGet.apply(input.reshape(-1), _flat_key("take", input, index)).reshape(index.shape)


@tensor_args
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` (seen as 1-D) with ``source``'s elements written, or added, at ``index``."""
    key = _flat_key("put_", input, index)
    if source.numel() != index.numel():
        raise IndexError("put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype.scalar_type_name} and source.dtype = {source.dtype.scalar_type_name}")
    if not accumulate:  # which duplicate wins is unspecified in torch: no deterministic put_ there
        alert_not_deterministic("put_")
    flat_key = (key[0].reshape(-1),)
    return IndexPut.apply(input.reshape(-1), source.reshape(-1), flat_key, bool(accumulate)).reshape(input.shape)


# ----------------------------------------------------------------------------- gather / scatter along a dim
def _check_along(op: str, x: Tensor, dim: int, index: Tensor, src: Tensor | None) -> tuple[int, np.ndarray]:
    """torch's checks for gather/scatter: dtype, rank, sizes and range of ``index``; returns (dim, index)."""
    d = _wrap_dim(dim, x.ndim, op)
    if isinstance(index, Tensor) and index.numel() == 0:
        return d, np.zeros(index.shape, dtype=np.int64)   # torch checks nothing more about an empty index
    arr = _index_array(op, index)
    rank = max(x.ndim, 1)
    if max(arr.ndim, 1) != rank:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if src is not None and max(src.ndim, 1) != rank:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ishape, xshape = arr.shape or (1,), x.shape or (1,)
    sshape = (src.shape or (1,)) if src is not None else None
    if arr.size:
        for k in range(rank):
            too_big_self = k != d and ishape[k] > xshape[k]
            if src is None and too_big_self:
                raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} to be no "
                                   f"larger than self {list(x.shape)} apart from dimension {d}")
            if src is not None and (too_big_self or ishape[k] > sshape[k]):
                raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} "
                                   f"apart from dimension {d} and to be no larger size than src {list(src.shape)}")
    size = xshape[d]
    arr = check_range(arr, size, lambda v: RuntimeError(
        f"index {v} is out of bounds for dimension {d} with size {size}"), wrap=False)
    return d, arr.reshape(ishape)


def _leading(shape: tuple[int, ...], dim: int | None = None) -> tuple:
    """The key of the leading block of ``shape`` (all of ``dim``)."""
    return tuple(slice(None) if k == dim else slice(0, n) for k, n in enumerate(shape))


class Gather(Function):
    """``out[..i..] = x[..index[..i..] at dim..]``; backward scatter-adds (duplicates accumulate)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, index: np.ndarray, index_tensor: Tensor):
        arr = x._array.reshape(x._array.shape or (1,))
        out = np.take_along_axis(arr[_leading(index.shape, dim)], index, axis=dim)
        ctx.dim, ctx.index, ctx.shape = dim, index_tensor, x.shape
        return out.reshape(index_tensor.shape)

    @staticmethod
    def backward(ctx, g: Tensor):
        return scatter_add(g.new_zeros(ctx.shape), ctx.dim, ctx.index, g), None, None, None


@tensor_args
@with_out
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values of ``input`` picked along ``dim`` by ``index`` (same rank; result has ``index``'s shape)."""
    d, arr = _check_along("gather", input, dim, index, None)
    if arr.size == 0:
        return Tensor._make(np.empty(arr.shape, dtype=input._array.dtype, like=input._array))
    return Gather.apply(input, d, arr, index)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, dt: np.dtype) -> Any:
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind in FLOAT_KINDS:
        return -np.inf if reduce == "amax" else np.inf
    if dt.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dt)
    return info.min if reduce == "amax" else info.max


def _scatter_positions(shape: tuple[int, ...], dim: int, index: np.ndarray) -> np.ndarray:
    """Flat positions in a C-contiguous array of ``shape`` that ``index`` (along ``dim``) addresses."""
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    pos = index * strides[dim]
    for k, n in enumerate(index.shape):
        if k != dim:
            pos = pos + np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (index.ndim - k - 1)) * strides[k]
    return pos.reshape(-1)


def _divide_by_count(flat: Any, pos: np.ndarray, include_self: bool) -> None:
    """scatter_reduce's mean: each position ``pos`` hit holds a sum; divide it by its count (host metadata of the
    index's size), in place on ``flat``'s device."""
    hit, count = np.unique(pos, return_counts=True)
    count = place(count + int(include_self), array_device(flat)).astype(flat.dtype)
    flat[hit] = flat[hit] / count if flat.dtype.kind in FLOAT_KINDS else flat[hit] // count


class ScatterReduce(Function):
    """``x`` with ``src`` (or a number) scattered along ``dim`` at ``index``: assigned or reduced."""

    @staticmethod
    def forward(ctx, x: Tensor, dim: int, index: np.ndarray, src: Any, reduce: str, include_self: bool,
                index_tensor: Tensor):
        shape = x._array.shape or (1,)
        out = copy_array(x._array.reshape(shape))
        flat = out.reshape(-1)
        pos = _scatter_positions(shape, dim, index)
        if isinstance(src, Tensor):
            vals = src._array.reshape(src._array.shape or (1,))[_leading(index.shape)]
        else:
            vals = np.full(index.shape, src, dtype=out.dtype)
        kernels = backend(x)
        if reduce == "assign":
            kernels.scatter("assign", flat, pos, vals)
        else:
            if not include_self:
                flat[pos] = _identity(reduce, out.dtype)
            kernels.scatter("sum" if reduce == "mean" else reduce, flat, pos, vals)
            if reduce == "mean":
                _divide_by_count(flat, pos, include_self)
        result = Tensor._make(out.reshape(x._array.shape))
        if ctx.needs_input_grad:
            ctx.dim, ctx.index, ctx.reduce, ctx.include_self = dim, index_tensor, reduce, include_self
            ctx.src_shape = src.shape if isinstance(src, Tensor) else None
            ctx.save_for_backward(x, src if isinstance(src, Tensor) else None, result)
        return result

    @staticmethod
    def backward(ctx, g: Tensor):
        x, src, result = ctx.saved_tensors
        block = None
        if src is not None and src.shape != ctx.index.shape:  # src larger than index: only its leading block is used
            block = _leading(ctx.index.shape)
            src = views.getitem(src, block)
        gx, gs = _scatter_reduce_grads(g, x, src, result, ctx.dim, ctx.index, ctx.reduce, ctx.include_self)
        if gs is not None and block is not None:
            gs = views.EmbedIntoView.apply(gs, ctx.src_shape, lambda a: a[block], False)
        n = ctx.needs_input_grad
        return (gx if n[0] else None), None, None, (gs if n[3] else None), None, None, None


def _scatter_reduce_grads(g: Tensor, x: Tensor, src: Tensor | None, result: Tensor, dim: int, index: Tensor,
                          reduce: str, include_self: bool) -> tuple[Tensor, Tensor | None]:
    """torch's gradients of scatter / scatter_reduce (written in ember ops, so they differentiate again)."""
    if reduce == "assign":
        return scatter(g, dim, index, 0), (gather(g, dim, index) if src is not None else None)
    if reduce == "sum":
        gx, gs = g, gather(g, dim, index)
    elif reduce == "mean":
        count = (g.new_ones(g.shape) if include_self else g.new_zeros(g.shape))
        count = scatter_add(count, dim, index, g.new_ones(index.shape))
        count = masked_fill(count, count == 0, 1)
        gx, gs = g / count, gather(g, dim, index) / gather(count, dim, index)
    elif reduce == "prod":
        masked_x = masked_fill(x, x == 0, 1)
        gx = g * scatter_reduce(masked_x, dim, index, src, "prod", include_self=include_self) / masked_x
        src_zero = src == 0
        zeros_at = scatter_add(x.new_zeros(x.shape), dim, index, src_zero.to(x.dtype)).detach()
        single_zero = src_zero & (gather(zeros_at, dim, index) == 1)
        masked_src_result = scatter_reduce(x, dim, index, masked_fill(src, single_zero, 1), "prod",
                                           include_self=include_self)
        gs = _where3(single_zero, gather(g * masked_src_result, dim, index),
                     gather(g * result, dim, index) / masked_fill(src, src_zero, 1))
    else:  # amax / amin: ties share the gradient evenly
        value = gather(result, dim, index)
        x_hit = (x == result).to(x.dtype)
        src_hit = (src == value).to(x.dtype)
        share = g / scatter_add(x_hit, dim, index, src_hit)
        gx, gs = x_hit * share, src_hit * gather(share, dim, index)
    if not include_self:
        gx = scatter(gx, dim, index, 0)
    return gx, gs


def _scatter(op: str, input: Tensor, dim: int, index: Tensor, src: Any, reduce: str, include_self: bool) -> Tensor:
    if isinstance(src, Tensor):
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        d, arr = _check_along(op, input, dim, index, src)
    else:
        d, arr = _check_along(op, input, dim, index, None)
        if reduce != "assign":  # reductions (and their gradients) need the value as a tensor
            src = Tensor._make(np.full(index.shape, src, dtype=input._array.dtype))
    if arr.size == 0:
        return input.clone()
    return ScatterReduce.apply(input, d, arr, src, reduce, include_self, index)


_LEGACY_REDUCE = {"add": "sum", "multiply": "prod"}


@tensor_args
@with_out
def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """``input`` with ``src`` (a tensor, or the number ``value``) written along ``dim`` at ``index``."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    if reduce is not None and reduce not in _LEGACY_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    return _scatter("scatter", input, dim, index, src, _LEGACY_REDUCE.get(reduce, "assign"), True)


@tensor_args
@with_out
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src`` added along ``dim`` at ``index`` (duplicates accumulate)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("scatter_add", input):
        return autocast_policy.run("scatter_add", scatter_add, input, dim, index, src)
    return _scatter("scatter_add", input, dim, index, src, "sum", True)


@tensor_args
@with_out
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``input`` with ``src`` reduced (sum, prod, mean, amax, amin) into it along ``dim`` at ``index``."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    return _scatter("scatter_reduce", input, dim, index, src, reduce, bool(include_self))


@tensor_args
@with_out
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` with ``input`` and ``indices`` broadcast except along ``dim`` (flattened when dim is None)."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = _wrap_dim(dim, input.ndim, "take_along_dim")
    rest = broadcast_shapes(input.shape[:d] + (1,) + input.shape[d + 1:],
                            indices.shape[:d] + (1,) + indices.shape[d + 1:], op="take_along_dim")
    x_shape = rest[:d] + input.shape[d:d + 1] + rest[d + 1:]
    i_shape = rest[:d] + indices.shape[d:d + 1] + rest[d + 1:]
    x = input if input.shape == x_shape else views.expand(input, x_shape)
    idx = indices if indices.shape == i_shape else Tensor._make(np.broadcast_to(indices._array, i_shape))
    return gather(x, d, idx)


# ----------------------------------------------------------------------------- nonzero
@tensor_args
@with_out
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    arr = input._array
    if not as_tuple:
        return Tensor._make(np.argwhere(arr).astype(np.int64))
    if arr.ndim == 0:
        return (Tensor._make(np.zeros(1 if arr else 0, np.int64, like=arr)),)
    return tuple(Tensor._make(a.astype(np.int64)) for a in np.nonzero(arr))


@tensor_args
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: the (n, ndim) indices of the non-zero elements."""
    return nonzero(input)


@tensor_args
@with_out
def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` else ``other``; with only ``condition``, ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() expects either one argument (condition) or three (condition, input, other)")
    return _where3(condition, input, other)


# ----------------------------------------------------------------------------- in-place variants
def _inplace_variant(name: str, fn: Callable) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return inplace(self, name, lambda s: fn(s, *args, **kwargs))

    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``: ``self`` takes the result (autograd history rebased)."
    return method


_OUT_OF_PLACE = {
    "index_select": index_select, "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
    "scatter_reduce": scatter_reduce, "index_add": index_add, "index_copy": index_copy, "index_fill": index_fill,
    "index_put": index_put, "masked_fill": masked_fill, "masked_scatter": masked_scatter,
    "masked_select": masked_select, "take": take, "take_along_dim": take_along_dim, "put": put,
    "nonzero": nonzero, "argwhere": argwhere,
}
_IN_PLACE = ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put",
             "masked_fill", "masked_scatter", "put")

TENSOR_METHODS: dict[str, Callable] = dict(_OUT_OF_PLACE)
TENSOR_METHODS.update({name + "_": _inplace_variant(name, _OUT_OF_PLACE[name]) for name in _IN_PLACE})

scatter_ = TENSOR_METHODS["scatter_"]
scatter_add_ = TENSOR_METHODS["scatter_add_"]
scatter_reduce_ = TENSOR_METHODS["scatter_reduce_"]
index_add_ = TENSOR_METHODS["index_add_"]
index_copy_ = TENSOR_METHODS["index_copy_"]
index_fill_ = TENSOR_METHODS["index_fill_"]
index_put_ = tensor_args(TENSOR_METHODS["index_put_"])
masked_fill_ = TENSOR_METHODS["masked_fill_"]
masked_scatter_ = TENSOR_METHODS["masked_scatter_"]
put_ = TENSOR_METHODS["put_"]

__all__ = [
    "index_select", "gather", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill",
    "index_put", "index_put_", "masked_fill", "masked_scatter", "masked_select", "take", "take_along_dim", "put",
    "nonzero", "argwhere", "where",
]
