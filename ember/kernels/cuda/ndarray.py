"""NumPy's array protocols for device storage, so the tensor layer's array code runs on the GPU unchanged.

The tensor layer is written against NumPy arrays: it calls ``np.reshape``, ``np.empty_like``, ``np.where``,
``a.astype(...)``, ufuncs and basic indexing on a tensor's array. ``DeviceStorage`` takes part in NumPy's
dispatch (``__array_function__``, ``__array_ufunc__``) and offers the ndarray methods that code uses, each one
running on the device through this backend's kernels. A NumPy function with no device version here raises a
RuntimeError that names it, instead of silently copying to the host; implicit conversion to a host array
(``np.asarray(storage)``) is refused for the same reason. What is served is exactly the array surface of
``ember.kernels.contract`` (``tests/cuda/test_device_contract.py`` checks it both ways).

Views are computed exactly as NumPy computes them, on a *shadow*: a zero-cost NumPy array of one-byte items
whose byte strides are the storage's element strides. Whatever view NumPy makes of the shadow (reshape without
copy, squeeze, swapaxes, broadcast_to, diagonal, basic indexing) gives the device view's shape, strides and
offset change, so device views follow NumPy's rules to the letter with no code of their own.

This module is ``DeviceStorage``'s base (``storage.py`` imports it) and the kernels that serve NumPy's calls
make ``DeviceStorage``s (they import ``storage.py``): so each function here imports the kernels it calls, and
``DeviceStorage``, inside itself (the backend's one import cycle).
"""
from __future__ import annotations

import functools
import math
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from ... import opcodes as op
from ..._cuda_context import active, activate
from ..common.dtypes import BFLOAT16
from ..common.elementwise import BOOL_UFUNCS, INTEGER_TWINS, UFUNCS

__all__ = ["NdarrayProtocol", "constant", "is_device_array", "on_own_device"]

_FLOAT = np.dtype(np.float32)  # what bfloat16 computes in
_ANCHOR = np.zeros(1, np.uint8)
_ANCHOR_PTR = _ANCHOR.__array_interface__["data"][0]


def is_device_array(x: Any) -> bool:
    """Whether ``x`` is device storage (anything taking part in this protocol)."""
    return isinstance(x, NdarrayProtocol)


def _shadow(s) -> np.ndarray:
    """A NumPy stand-in with ``s``'s shape whose byte strides equal ``s``'s element strides (never read)."""
    return np.lib.stride_tricks.as_strided(_ANCHOR, s.shape, s.strides)


def _from_shadow(s, view: np.ndarray):
    """The device view of ``s`` that ``view`` (made from ``_shadow(s)``) describes."""
    moved = view.__array_interface__["data"][0] - _ANCHOR_PTR
    return type(s)(s.buffer, view.shape, view.strides, s.offset + moved, s.device_index, s.dtype)


def _view_function(func: Callable) -> Callable:
    """A NumPy view function applied to device storage through its shadow."""
    def apply(a, *args, **kwargs):
        return _from_shadow(a, func(_shadow(a), *args, **kwargs))
    apply.__name__ = func.__name__
    return apply


def _is_advanced(key: Any) -> bool:
    """Whether an indexing key holds index arrays (NumPy's advanced indexing) rather than only basic items."""
    items = key if isinstance(key, tuple) else (key,)
    return any(not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))) for k in items)


def _buffer_positions(s, key) -> np.ndarray:
    """The buffer index of every element ``s[key]`` selects, by NumPy's indexing rules (host int64 array).

    Each dim contributes ``index * stride``: its coordinate grid, broadcast to ``s``'s shape (a free view), is
    indexed with the same key, so the work is the size of the result, never of ``s``."""
    key = tuple(k.to_numpy() if is_device_array(k) else k for k in (key if isinstance(key, tuple) else (key,)))
    total = np.asarray(s.offset, np.int64)
    for d, (n, step) in enumerate(zip(s.shape, s.strides)):
        coord = (np.arange(n, dtype=np.int64) * step).reshape((1,) * d + (n,) + (1,) * (len(s.shape) - d - 1))
        total = total + np.broadcast_to(coord, s.shape)[key]
    return np.ascontiguousarray(total, dtype=np.int64).reshape(np.shape(total))


# ----------------------------------------------------------------------------- constants
_CONSTANTS: OrderedDict = OrderedDict()


def constant(value: Any, dtype: Any):
    """A cached 0-d device array holding ``value`` (scalars met in ops: 2.0, 0.5, 1, ...)."""
    from .storage import DeviceStorage  # not at the top: the import cycle in the docstring

    host = np.asarray(value).astype(dtype)
    key = (active.index, host.dtype.str, host.tobytes())
    found = _CONSTANTS.get(key)
    if found is None:
        found = _CONSTANTS[key] = DeviceStorage.from_numpy(host)
        if len(_CONSTANTS) > 1024:
            _CONSTANTS.popitem(last=False)
    else:
        _CONSTANTS.move_to_end(key)
    return found


def to_device_operand(x: Any, dtype: Any = None):
    """Device storage for a kernel operand: device storage as is, a scalar or 0-d/1-element host array as a
    cached constant. A larger host array here means a CPU tensor met a CUDA one in an op."""
    if is_device_array(x):
        if x.device_index != active.index:  # ops run on their first operand's device
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{active.index} and cuda:{x.device_index}!")
        return x if dtype is None or x.dtype == np.dtype(dtype) else x.astype(dtype)
    host = np.asarray(x) if dtype is None else np.asarray(x).astype(dtype)
    if host.size == 1:
        return constant(host.reshape(()), host.dtype).reshape(host.shape)
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                       f"cuda:{active.index} and cpu! (a host array of shape {host.shape} met CUDA storage)")


# ----------------------------------------------------------------------------- ufuncs
# The ufuncs served, by name: the declarations' NumPy names (``ember.opcodes``); integers run the integer twin.
_UNARY_UFUNCS, _BINARY_UFUNCS = UFUNCS[1], UFUNCS[2]


def _matmul(a, b, out=None):
    """NumPy's matmul (1-D operands promoted and dropped, batch dims broadcast) on the tiled device kernel."""
    from .products import matmul  # not at the top: the import cycle in the docstring

    a, b = to_device_operand(a), to_device_operand(b)
    dtype = np.result_type(a.dtype, b.dtype)
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    (m, k), (k2, n) = a2.shape[-2:], b2.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: mismatch in core dimension ({a.shape} @ {b.shape})")
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    count = math.prod(batch)
    a3 = _view_function(np.broadcast_to)(a2, batch + (m, k)).reshape(count, m, k)
    b3 = _view_function(np.broadcast_to)(b2, batch + (k, n)).reshape(count, k, n)
    result = type(a).empty((count, m, n), dtype)
    matmul(a3, b3, result)
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    result = result.reshape(shape)
    if out is None:
        return result
    out.copy_from(result)
    return out


def _apply_ufunc(ufunc: np.ufunc, inputs: tuple, out: Any):
    from . import elementwise  # not at the top: the import cycle in the docstring

    name = ufunc.__name__
    if name == "matmul":
        return _matmul(*inputs, out=out)
    table = _UNARY_UFUNCS if ufunc.nin == 1 else _BINARY_UFUNCS
    code = table.get(name)
    if code is None or ufunc.nin > 2:
        raise RuntimeError(f"ember: numpy.{name} has no CUDA implementation (a CUDA tensor reached a CPU-only "
                           "code path)")
    probes = [x.dtype if is_device_array(x) else x for x in inputs]
    result_dtype = compute = np.result_type(*probes)
    if compute == BFLOAT16:  # computed in float32, the result rounded once
        compute = _FLOAT
    if name in ("divide", "true_divide") and compute.kind in "biu":
        result_dtype = compute = np.dtype(np.float64)
    if compute.kind in "biu":
        code = INTEGER_TWINS.get(code, code) if ufunc.nin == 2 else code
    shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
    if name in BOOL_UFUNCS:
        result_dtype = np.dtype(np.bool_)
    operands = [to_device_operand(x, compute) for x in inputs]
    if out is None:
        out = type(operands[0]).empty(shape, result_dtype)
    target = type(out).empty(out.shape, _FLOAT) if out.dtype == BFLOAT16 else out
    (elementwise.unary if ufunc.nin == 1 else elementwise.binary)(code, *operands, target)
    if target is not out:
        out.copy_from(target)
    return out


# ----------------------------------------------------------------------------- array functions
def _storage_type():
    from .storage import DeviceStorage  # not at the top: the import cycle in the docstring
    return DeviceStorage


def _dtype_of(a, dtype):
    return np.dtype(dtype) if dtype is not None else a.dtype


def _shape_arg(shape) -> tuple[int, ...]:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)


def _empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _storage_type().empty(a.shape if shape is None else _shape_arg(shape), _dtype_of(a, dtype))


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    out = _empty_like(a, dtype, shape=shape)
    out.fill(fill_value)
    return out


def _zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _full_like(a, 0, dtype, shape=shape)


def _ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _full_like(a, 1, dtype, shape=shape)


def _creation_like(fill: Any) -> Callable:
    """``np.empty/zeros/ones(shape, dtype, like=storage)``: NEP 35 creation on the device."""
    def create(shape, dtype=float, order="C", *, like=None, device=None):
        out = _storage_type().empty(_shape_arg(shape), np.dtype(dtype))
        if fill is not None:
            out.fill(fill)
        return out
    return create


def _full(shape, fill_value, dtype=None, order="C", *, like=None, device=None):
    dtype = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    out = _storage_type().empty(_shape_arg(shape), dtype)
    out.fill(fill_value)
    return out


def _copyto(dst, src, casting="same_kind", where=True):
    if where is not True:
        raise RuntimeError("ember: numpy.copyto with where= has no CUDA implementation")
    if not is_device_array(dst):  # device to host: an explicit copy
        np.copyto(dst, src.to_numpy() if is_device_array(src) else src, casting=casting)
        return
    dst.copy_from(src)


def _ascontiguousarray(a, dtype=None, *, like=None, device=None):
    out = a.contiguous()
    return out if dtype is None or out.dtype == np.dtype(dtype) else out.astype(dtype)


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = [to_device_operand(a) for a in arrays]
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    axis = axis % arrays[0].ndim
    dtype = np.dtype(dtype) if dtype is not None else np.result_type(*[a.dtype for a in arrays])
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = out if out is not None else _storage_type().empty(shape, dtype)
    start = 0
    for a in arrays:
        n = a.shape[axis]
        out.slice(axis, start, start + n).copy_from(a)
        start += n
    return out


def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = [to_device_operand(a) for a in arrays]
    axis = axis % (arrays[0].ndim + 1)
    return _concatenate([_view_function(np.expand_dims)(a, axis) for a in arrays], axis, out, dtype)


def _where(condition, x=None, y=None):
    from . import elementwise  # not at the top: the import cycle in the docstring

    if x is None or y is None:
        raise RuntimeError("ember: numpy.where with one argument (nonzero) has no CUDA implementation")
    dtype = np.result_type(*[v.dtype if is_device_array(v) else v for v in (x, y)])
    shape = np.broadcast_shapes(*(np.shape(v) for v in (condition, x, y)))
    out = _storage_type().empty(shape, dtype)
    x, y = to_device_operand(x, dtype), to_device_operand(y, dtype)
    elementwise.ternary(op.WHERE, to_device_operand(condition, np.bool_), x.bits(), y.bits(), out.bits())
    return out


def _along_axis_key(arr, indices, axis) -> tuple:
    """The advanced key that picks ``indices`` along ``axis`` (NumPy's take/put_along_axis rule), on the host."""
    indices = indices.to_numpy() if is_device_array(indices) else np.asarray(indices)
    axis = axis % arr.ndim
    return tuple(indices if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (arr.ndim - d - 1))
                 for d, n in enumerate(arr.shape))


def _take_along_axis(arr, indices, axis):
    return arr[_along_axis_key(arr, indices, axis)]


def _put_along_axis(arr, indices, values, axis):
    arr[_along_axis_key(arr, indices, axis)] = values


def _upload(host: np.ndarray):
    """A small host array (index or shape sized, never data sized) copied to the device."""
    return _storage_type().from_numpy(np.ascontiguousarray(host))


def _tile(a, reps):
    """``np.tile``: ``a`` seen as (1, n0, 1, n1, ...), broadcast to (r0, n0, r1, n1, ...) and copied once."""
    reps = _shape_arg(reps)
    ndim = max(a.ndim, len(reps))
    shape = (1,) * (ndim - a.ndim) + a.shape
    reps = (1,) * (ndim - len(reps)) + reps
    pairs = tuple(v for r, n in zip(reps, shape) for v in (r, n))
    spread = a.reshape(tuple(v for n in shape for v in (1, n)))
    tiled = _view_function(np.broadcast_to)(spread, pairs).copy()
    return tiled.reshape(tuple(r * n for r, n in zip(reps, shape)))


def _repeat(a, repeats, axis=None):
    """``np.repeat``: one count for all (a broadcast view copied once) or one per element (a gather)."""
    a = to_device_operand(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis %= a.ndim
    counts = repeats.to_numpy() if is_device_array(repeats) else np.asarray(repeats)
    n = a.shape[axis]
    if counts.size == 1:
        r = int(counts.reshape(-1)[0])
        spread = a.reshape(a.shape[:axis + 1] + (1,) + a.shape[axis + 1:])
        wide = _view_function(np.broadcast_to)(spread, a.shape[:axis + 1] + (r,) + a.shape[axis + 1:]).copy()
        return wide.reshape(a.shape[:axis] + (n * r,) + a.shape[axis + 1:])
    index = np.repeat(np.arange(n, dtype=np.int64), np.broadcast_to(counts, (n,)))
    return a[(slice(None),) * axis + (index,)]


def _roll(a, shift, axis=None):
    """``np.roll``: per rolled axis, the two slices joined in swapped order."""
    if axis is None:
        return _roll(a.reshape(-1), shift, 0).reshape(a.shape)
    out = a
    for s, ax in zip(*np.broadcast_arrays(np.atleast_1d(shift), np.atleast_1d(axis))):
        ax = int(ax) % a.ndim
        n = out.shape[ax]
        cut = n - int(s) % n if n else 0
        if cut % max(n, 1):
            lead = (slice(None),) * ax
            out = _concatenate([out[lead + (slice(cut, None),)], out[lead + (slice(0, cut),)]], ax)
    return out if out is not a else a.copy()


def _triangle(lower: bool) -> Callable:
    """``np.tril``/``np.triu``: a device mask from the row and column numbers (shape sized), then ``where``."""
    def triangle(m, k=0):
        rows, cols = m.shape[-2:]
        offsets = _apply_ufunc(np.subtract, (_upload(np.arange(cols, dtype=np.int64)),
                                             _upload(np.arange(rows, dtype=np.int64).reshape(-1, 1))), None)
        keep = _apply_ufunc(np.less_equal if lower else np.greater_equal, (offsets, int(k)), None)
        return _where(keep, m, constant(0, m.dtype))
    return triangle


def _flat_nonzero(a):
    """The C-order positions of ``a``'s non-zero elements (int64, on the device)."""
    from .indexing import flat_nonzero  # not at the top: the import cycle in the docstring

    flags = _apply_ufunc(np.not_equal, (to_device_operand(a), 0), None)
    return flat_nonzero(flags.reshape(-1))


def _argwhere(a):
    """``np.argwhere``: the flat positions unravelled on the device, one row of coordinates each."""
    flat = _flat_nonzero(a).reshape(-1, 1)
    if not a.ndim:
        return flat[:, :0].copy()
    strides = _upload(np.array([math.prod(a.shape[d + 1:]) for d in range(a.ndim)], np.int64))
    sizes = _upload(np.array(a.shape, np.int64))
    return _apply_ufunc(np.remainder, (_apply_ufunc(np.floor_divide, (flat, strides), None), sizes), None)


def _nonzero(a):
    if not a.ndim:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    coords = _argwhere(a)
    return tuple(coords[:, d].copy() for d in range(a.ndim))


def _cumulative(code: int) -> Callable:
    """``np.cumsum``/``np.cumprod`` on the device scan (NumPy's result dtypes: small ints and bool widen)."""
    def scan_on_device(a, axis=None, dtype=None, out=None):
        from .scans import scan  # not at the top: the import cycle in the docstring

        a = to_device_operand(a)
        if axis is None:
            a, axis = a.reshape(-1), 0
        if dtype is None:
            dtype = np.result_type(a.dtype, np.int64) if a.dtype.kind in "biu" else a.dtype
        source = a.astype(dtype, copy=False)
        result = _storage_type().empty(source.shape, source.dtype)
        scan(code, source, axis % max(source.ndim, 1), result)
        if out is None:
            return result
        out.copy_from(result)
        return out
    return scan_on_device


def _predicate(code: int) -> Callable:
    """A NumPy test function that is not a ufunc (``np.isneginf``) as one device kernel with a bool result."""
    def test(x, out=None):
        from . import elementwise  # not at the top: the import cycle in the docstring

        x = to_device_operand(x)
        out = _storage_type().empty(x.shape, np.bool_) if out is None else out
        elementwise.unary(code, x.astype(_FLOAT) if x.dtype == BFLOAT16 else x, out)
        return out
    return test


def _shares_memory(a, b, max_work=None):
    if not (is_device_array(a) and is_device_array(b)) or a.buffer is not b.buffer:
        return False
    (lo_a, hi_a), (lo_b, hi_b) = a.span(), b.span()
    return lo_a < hi_b and lo_b < hi_a


def _result_type(*arrays_and_dtypes):
    return np.result_type(*[a.dtype if is_device_array(a) else a for a in arrays_and_dtypes])


def _shape(a):
    return a.shape


def _ndim(a):
    return a.ndim


def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


def _transpose(a, axes=None):
    return a.transpose(axes)


def _moveaxis(a, source, destination):
    return _view_function(np.moveaxis)(a, source, destination)


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    return a.reshape(shape if shape is not None else newshape, copy=copy)


def _ravel(a, order="C"):
    return a.reshape(-1)


def _array_equal(a1, a2, equal_nan=False):
    if np.shape(a1) != np.shape(a2):
        return False
    host = [x.to_numpy() if is_device_array(x) else np.asarray(x) for x in (a1, a2)]
    return bool(np.array_equal(*host, equal_nan=equal_nan))


def _reduce(a, code: int, axis, keepdims: bool, dtype: Any = None):
    """A device reduction of ``a`` over ``axis`` (None, an int or a tuple) into a new ``dtype`` array
    (``a``'s dtype when None)."""
    from .reductions import reduce  # not at the top: the import cycle in the docstring

    a = to_device_operand(a)
    dims = tuple(range(a.ndim)) if axis is None else tuple(
        d % a.ndim for d in ((axis,) if isinstance(axis, (int, np.integer)) else axis))
    if code in (op.R_MAX, op.R_MIN) and any(a.shape[d] == 0 for d in dims):
        raise ValueError(f"zero-size array to reduction operation {'maximum' if code == op.R_MAX else 'minimum'} "
                         "which has no identity")
    kept = tuple(1 if d in dims else n for d, n in enumerate(a.shape))
    out = _storage_type().empty(kept, a.dtype if dtype is None else dtype)
    reduce(code, a, dims, out)
    return out if keepdims else out.reshape(tuple(n for d, n in enumerate(a.shape) if d not in dims))


def _check_reduction(code: int) -> Callable:
    """A reduction NumPy code uses for checks (``(idx < 0).any()``, ``idx.max()``): computed on the device; over
    all dims the result is a host scalar (one number copied back), as NumPy's is."""
    logical = code in (op.R_ALL, op.R_ANY)

    def reduce_on_device(a, axis=None, out=None, keepdims=False):
        if out is not None:
            raise RuntimeError("ember: a reduction with out= has no CUDA implementation")
        result = _reduce(a, code, axis, keepdims, np.bool_ if logical else None)
        return result.to_numpy()[()] if axis is None and not keepdims else result
    return reduce_on_device


_any, _all = _check_reduction(op.R_ANY), _check_reduction(op.R_ALL)
_max, _min = _check_reduction(op.R_MAX), _check_reduction(op.R_MIN)


def _array_equiv(a1, a2):
    try:
        shape = np.broadcast_shapes(np.shape(a1), np.shape(a2))
    except ValueError:
        return False
    return bool(_all(_apply_ufunc(np.equal, (a1, a2), None))) if math.prod(shape) else True


_FUNCTIONS: dict[Callable, Callable] = {
    np.empty_like: _empty_like, np.zeros_like: _zeros_like, np.ones_like: _ones_like, np.full_like: _full_like,
    np.empty: _creation_like(None), np.zeros: _creation_like(0), np.ones: _creation_like(1), np.full: _full,
    np.copyto: _copyto, np.ascontiguousarray: _ascontiguousarray, np.concatenate: _concatenate, np.stack: _stack,
    np.where: _where, np.result_type: _result_type, np.shape: _shape, np.ndim: _ndim, np.size: _size,
    np.transpose: _transpose, np.moveaxis: _moveaxis, np.reshape: _reshape, np.ravel: _ravel,
    np.array_equal: _array_equal, np.shares_memory: _shares_memory, np.may_share_memory: _shares_memory,
    np.take_along_axis: _take_along_axis, np.flip: _view_function(np.flip),
    np.squeeze: _view_function(np.squeeze), np.expand_dims: _view_function(np.expand_dims),
    np.swapaxes: _view_function(np.swapaxes), np.broadcast_to: _view_function(np.broadcast_to),
    np.diagonal: _view_function(np.diagonal),
    np.all: _all, np.any: _any, np.min: _min, np.max: _max, np.amin: _min, np.amax: _max,
    np.array_equiv: _array_equiv, np.put_along_axis: _put_along_axis, np.tile: _tile, np.repeat: _repeat,
    np.roll: _roll, np.tril: _triangle(True), np.triu: _triangle(False), np.flatnonzero: _flat_nonzero,
    np.argwhere: _argwhere, np.nonzero: _nonzero, np.cumsum: _cumulative(op.S_SUM),
    np.cumprod: _cumulative(op.S_PROD), np.isneginf: _predicate(op.ISNEGINF), np.isposinf: _predicate(op.ISPOSINF),
}


def on_own_device(method: Callable) -> Callable:
    """A storage method run with its device's context current, so what it allocates and launches lands there."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if self.device_index != active.index:
            activate(self.device_index)
        return method(self, *args, **kwargs)
    return run


def _no_device_version(name: str):
    return RuntimeError(f"ember: numpy.{name} has no CUDA implementation (a CUDA tensor reached a CPU-only code "
                        "path); move the tensor to the CPU with .cpu() for this operation")


class NdarrayProtocol(np.lib.mixins.NDArrayOperatorsMixin):
    """The ndarray surface of device storage (mixed into ``DeviceStorage``); see the module docstring."""

    __slots__ = ()
    __array_priority__ = 2000
    __ember_device_array__ = True

    # -- NumPy dispatch ---------------------------------------------------------------------------------------
    @on_own_device
    def __array_function__(self, func, types, args, kwargs):
        impl = _FUNCTIONS.get(func)
        if impl is None:
            raise _no_device_version(func.__name__)
        return impl(*args, **kwargs)

    @on_own_device
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method != "__call__" or kwargs:
            raise _no_device_version(f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__)
        if isinstance(out, tuple):
            out = out[0]
        return _apply_ufunc(ufunc, inputs, out)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"can't convert cuda:{self.device_index} device type tensor to numpy. Use Tensor.cpu() to "
                        "copy the tensor to host memory first.")

    # -- metadata ---------------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flags(self):
        """The ndarray flags the tensor layer reads (contiguity; device storage is always writeable)."""
        return SimpleNamespace(c_contiguous=self.is_contiguous, contiguous=self.is_contiguous, writeable=True,
                               f_contiguous=self.ndim <= 1 and self.is_contiguous)

    @property
    def T(self):
        return self.transpose()

    def data_ptr(self) -> int:
        """The device address of this view's first element (the simulator has no addresses: a stable stand-in)."""
        interface = getattr(self.buffer, "__cuda_array_interface__", None)
        base = interface["data"][0] if interface else id(self.buffer) * 256
        return base + self.offset * self.dtype.itemsize

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                             "a.all()")
        return bool(self.item())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -- views ------------------------------------------------------------------------------------------------
    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = None if axes[0] is None else tuple(int(a) for a in axes[0])
        return _from_shadow(self, _shadow(self).transpose(axes or None))

    def reshape(self, *shape, order: str = "C", copy: bool | None = None):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        try:
            return _from_shadow(self, np.reshape(_shadow(self), shape, copy=False))
        except ValueError:
            if copy is False:
                raise
        return self.contiguous().reshape(shape)

    def view(self, dtype=None):
        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise RuntimeError("ember: reinterpreting CUDA storage as another dtype is not supported")
        return type(self)(self.buffer, self.shape, self.strides, self.offset, self.device_index, self.dtype)

    def squeeze(self, axis=None):
        return _from_shadow(self, _shadow(self).squeeze(axis))

    def __getitem__(self, key):
        if _is_advanced(key):
            from .indexing import take  # not at the top: the import cycle in the docstring

            activate(self.device_index)
            positions = _buffer_positions(self, key)
            out = type(self).empty(positions.shape, self.dtype)
            take(self, type(self).from_numpy(positions), out)
            return out
        view = _shadow(self)[key]
        if not isinstance(view, np.ndarray):  # an integer key on every dim gives a NumPy scalar: keep a 0-d view
            view = _shadow(self)[key + (Ellipsis,) if isinstance(key, tuple) else (key, Ellipsis)]
        return _from_shadow(self, view)

    @on_own_device
    def __setitem__(self, key, value) -> None:
        if not _is_advanced(key):
            self[key].copy_from(value)
            return
        from .indexing import scatter  # not at the top: the import cycle in the docstring

        positions = _buffer_positions(self, key)
        values = type(self).empty(positions.shape, self.dtype)
        values.copy_from(value if is_device_array(value) else np.asarray(value))
        whole = type(self)(self.buffer, (self.buffer.size,), (1,), 0, self.device_index, self.dtype)
        scatter("assign", whole, type(self).from_numpy(positions.reshape(-1)), values.reshape(-1))

    # -- copies and conversion --------------------------------------------------------------------------------
    @on_own_device
    def astype(self, dtype, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        out = type(self).empty(self.shape, dtype)
        out.copy_from(self)
        return out

    def copy(self, order: str = "C"):
        return self.astype(self.dtype)

    @on_own_device
    def fill(self, value) -> None:
        self.copy_from(constant(value, self.dtype))

    def item(self, *args):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_numpy().reshape(()).item()

    def tolist(self):
        return self.to_numpy().tolist()

    @on_own_device
    def sum(self, axis=None, dtype=None, keepdims: bool = False):
        """A device reduction (``axis`` None, an int or a tuple), accumulating in ``dtype`` when given."""
        source = self if dtype is None or np.dtype(dtype) == self.dtype else self.astype(dtype)
        wide = np.result_type(source.dtype, np.int64) if source.dtype.kind in "bi" else source.dtype
        return _reduce(source, op.R_SUM, axis, keepdims, wide)

    @on_own_device
    def any(self, axis=None, out=None, keepdims: bool = False):
        return _any(self, axis, out, keepdims)

    @on_own_device
    def all(self, axis=None, out=None, keepdims: bool = False):
        return _all(self, axis, out, keepdims)

    @on_own_device
    def min(self, axis=None, out=None, keepdims: bool = False):
        return _min(self, axis, out, keepdims)

    @on_own_device
    def max(self, axis=None, out=None, keepdims: bool = False):
        return _max(self, axis, out, keepdims)
