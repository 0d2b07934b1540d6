"""Tensor creation: from data, filled, ranges, identity."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .._determinism import uninitialized_fill
from .._user_warnings import warn_user, warn_user_once
from . import dtypes
from .device import CPU, allocate, as_device, factory_device, place
from .tensor import Size, Tensor
from .interop import from_cuda_array_interface
from .out_arg import with_out
from .pinned import pinned_copy
from .arguments import tensor_args
from .memory_format import check_format, contiguous_format, empty_in_format, empty_like_format, preserve_format
from .views import storage_view


def _finish(array: np.ndarray, requires_grad: bool, device: Any = CPU, pin_memory: bool = False) -> Tensor:
    if pin_memory:
        if device.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        array = pinned_copy(array)
    t = Tensor._make(place(array, device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _size_arg(size: Sequence[Any], op: str) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    try:
        shape = tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found {size!r}") from None
    if any(s < 0 for s in shape):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return shape


def _dtype_or_default(dtype: Any) -> dtypes.dtype:
    return dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)


def _infer_dtype(data: Any, array: np.ndarray) -> dtypes.dtype:
    """The dtype torch infers for ``data``: NumPy arrays keep theirs, Python floats take the default."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic) or array.dtype == dtypes.bfloat16.np:
        return dtypes.from_numpy_dtype(array.dtype)  # (bfloat16 here: a list of bfloat16 tensors, as torch keeps)
    if array.dtype.kind == "f":
        return dtypes.get_default_dtype()
    if array.dtype.kind in "iu":
        return dtypes.int64
    if array.dtype.kind == "b":
        return dtypes.bool
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _to_numpy(data: Any) -> np.ndarray:
    if isinstance(data, Tensor):
        return data._array
    if isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in data):
        return np.array([_to_numpy(d) for d in data])
    try:
        return np.asarray(data)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length sequences: {e}") from None


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor that copies ``data`` (nested lists, numbers, NumPy arrays or tensors)."""
    if isinstance(data, Tensor):  # a copy on the tensor's device unless told otherwise
        warn_user("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                  "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).")
        dev = factory_device(device, data.device)
        dt = dtypes.to_dtype(dtype) if dtype is not None else data.dtype
        return _finish(place(data._array, dev).astype(dt.np), requires_grad, dev, pin_memory)
    device = factory_device(device)
    array = _to_numpy(data)
    if array.dtype == object or (array.dtype.kind not in "biuf" and array.dtype != dtypes.bfloat16.np):
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else _infer_dtype(data, array)
    return _finish(np.array(array, dtype=dt.np, copy=True), requires_grad, device, pin_memory)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor over ``data`` without copying when it already is a tensor or array of that dtype."""
    if isinstance(data, Tensor):
        return data.to(device=factory_device(device, data.device), dtype=dtype)
    if hasattr(data, "__cuda_array_interface__"):  # CuPy, Numba and torch CUDA arrays: their memory, no copy
        data = from_cuda_array_interface(data)
        return data.to(device=factory_device(device, data.device), dtype=dtype)
    device = factory_device(device)
    if device is CPU and isinstance(data, np.ndarray) and (dtype is None or dtypes.to_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (writes are seen by both)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dtypes.from_numpy_dtype(array.dtype)
    if any(s % array.itemsize for s in array.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.")
    return Tensor._make(array)


def _filled(size: Sequence[Any], op: str, value: Any, dtype: Any, device: Any, requires_grad: bool,
            pin_memory: bool = False) -> Tensor:
    device = factory_device(device)
    shape = _size_arg(size, op)
    dt = _dtype_or_default(dtype)
    if value is None:  # empty(): torch's deterministic mode fills it (NaN / the largest integer)
        value = uninitialized_fill(dt.np)
    return _finish(allocate(shape, dt.np, device, value), requires_grad, device, pin_memory)


@tensor_args
@with_out(dtype_from_out=True)
def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _filled(size, "zeros", 0, dtype, device, requires_grad, pin_memory)


@tensor_args
@with_out(dtype_from_out=True)
def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of ones."""
    return _filled(size, "ones", 1, dtype, device, requires_grad, pin_memory)


@tensor_args
@with_out(dtype_from_out=True)
def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          memory_format: Any = None, pin_memory: bool = False, layout: Any = None) -> Tensor:
    """An uninitialised tensor, laid out in ``memory_format`` (contiguous by default)."""
    if memory_format is None or memory_format is contiguous_format:
        return _filled(size, "empty", None, dtype, device, requires_grad, pin_memory)
    if memory_format is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    shape = _size_arg(size, "empty")
    check_format(memory_format, len(shape))
    dev, dt = factory_device(device), _dtype_or_default(dtype)
    array = empty_in_format(shape, dt.np, memory_format, like=_device_anchor(dt, dev))
    return _finish_uninitialized(array, dt, requires_grad, dev, pin_memory)


def _device_anchor(dt: dtypes.dtype, dev: Any) -> Any:
    """An empty array on ``dev``: what NumPy's ``like=`` needs to allocate there."""
    return allocate((0,), dt.np, dev)


def _finish_uninitialized(array: Any, dt: dtypes.dtype, requires_grad: bool, dev: Any,
                          pin_memory: bool = False) -> Tensor:
    """Wrap a fresh array that ``empty`` gave out (filled under torch's deterministic mode)."""
    fill = uninitialized_fill(dt.np)
    if fill is not None:
        array.fill(fill)
    if pin_memory:
        if dev.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        array = pinned_copy(array)  # (a copy keeps the stride order: NumPy's order="K")
    t = Tensor._make(array)
    return t.requires_grad_(True) if requires_grad else t


@tensor_args
@with_out(dtype_from_out=True)
def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value when not given (as in torch)."""
    if dtype is None:
        dtype = dtypes.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    dt = dtypes.to_dtype(dtype)
    if not dt.is_floating_point and not isinstance(fill_value, Tensor):
        dtypes.check_number_fits(fill_value, dt)   # an int tensor never holds a wrapped value or NaN's garbage
    return _filled((tuple(size),), "full", fill_value, dt, device, requires_grad)


def _like(op: str, input: Tensor, dtype: Any, device: Any, requires_grad: bool, memory_format: Any,
          fill: Any) -> Tensor:
    """``input``-shaped tensor by torch's ``empty_like`` layout rule (see ``empty_like_format``), holding
    ``fill`` (None: uninitialised)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dt = input.dtype if dtype is None else dtypes.to_dtype(dtype)
    dev = input.device if device is None else as_device(device)
    fmt = preserve_format if memory_format is None else memory_format
    if fmt is not preserve_format:
        check_format(fmt, input.ndim)
    like = input._array if dev == input.device else _device_anchor(dt, dev)
    array = empty_like_format(input._array, dt.np, fmt, like=like)
    if fill is None:
        return _finish_uninitialized(array, dt, requires_grad, dev)
    if not dt.is_floating_point and not isinstance(fill, Tensor):
        dtypes.check_number_fits(fill, dt)
    array.fill(fill.item() if isinstance(fill, Tensor) else fill)
    t = Tensor._make(array)
    return t.requires_grad_(True) if requires_grad else t


@tensor_args
def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = preserve_format, layout: Any = None) -> Tensor:
    """Zeros of ``input``'s shape and dtype, in ``input``'s layout by default."""
    return _like("zeros_like", input, dtype, device, requires_grad, memory_format, 0)


@tensor_args
def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = preserve_format, layout: Any = None) -> Tensor:
    """Ones of ``input``'s shape and dtype, in ``input``'s layout by default."""
    return _like("ones_like", input, dtype, device, requires_grad, memory_format, 1)


@tensor_args
def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = preserve_format, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Uninitialised, of ``input``'s shape and dtype, in ``input``'s layout by default."""
    return _like("empty_like", input, dtype, device, requires_grad, memory_format, None)


@tensor_args
def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = preserve_format, layout: Any = None) -> Tensor:
    """``fill_value`` in ``input``'s shape and dtype, in ``input``'s layout by default."""
    return _like("full_like", input, dtype, device, requires_grad, memory_format, fill_value)


def _number(x: Any) -> Any:
    return x.item() if isinstance(x, Tensor) else x


@tensor_args
@with_out(dtype_from_out=True)
def arange(start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` every ``step``."""
    device = factory_device(device)
    start, end, step = _number(start), _number(end), _number(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if any(isinstance(v, float) and not math.isfinite(v) for v in (start, end, step)):
        raise RuntimeError("unsupported range: " + f"{start} -> {end}")
    if dtype is None:
        dt = dtypes.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else dtypes.int64
    else:
        dt = dtypes.to_dtype(dtype)
    count = max(0, math.ceil((end - start) / step))
    array = (start + step * np.arange(count, dtype=np.float64 if dt.is_floating_point else np.int64)).astype(dt.np)
    return _finish(array, requires_grad, device)


@tensor_args
@with_out(dtype_from_out=True)
def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    device = factory_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _dtype_or_default(dtype)
    array = np.linspace(_number(start), _number(end), int(steps), dtype=np.float64)
    if not dt.is_floating_point:
        array = np.trunc(array)
    return _finish(array.astype(dt.np), requires_grad, device)


@tensor_args
@with_out(dtype_from_out=True)
def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``base`` raised to ``steps`` evenly spaced exponents."""
    device = factory_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _dtype_or_default(dtype)
    array = np.power(float(base), np.linspace(_number(start), _number(end), int(steps), dtype=np.float64))
    return _finish(array.astype(dt.np), requires_grad, device)


@tensor_args
@with_out(dtype_from_out=True)
def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The ``n`` x ``m`` identity matrix."""
    device = factory_device(device)
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {min(n, m)}")
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype).np), requires_grad, device)


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with the given element ``stride``s, over a storage just big enough."""
    shape = _size_arg((tuple(size),), "empty_strided")
    strides = tuple(int(s) for s in stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(strides)})")
    if any(s < 0 for s in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and strides="
                           f"{list(strides)}")
    needed = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    dt, dev = _dtype_or_default(dtype), factory_device(device)
    if pin_memory and dev.type != "cpu":
        raise RuntimeError("Only dense CPU tensors can be pinned")
    storage = allocate((needed,), dt.np, dev, uninitialized_fill(dt.np))
    if pin_memory:
        storage = pinned_copy(storage)
    t = Tensor._make(storage_view(storage, dt.np, shape, strides, 0))
    return t.requires_grad_(True) if requires_grad else t


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s``, in the default float dtype unless ``dtype`` says otherwise."""
    value = s.item() if isinstance(s, Tensor) and s.numel() == 1 else s
    if not isinstance(value, (int, float, np.number, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    dt = _dtype_or_default(dtype)
    dtypes.check_number_fits(value, dt)
    return _filled(((),), "scalar_tensor", value, dt, device, requires_grad, pin_memory)


_DEFAULT_REQUIRES_GRAD = None  # asarray's "not given": the tensor's own flag (torch 2.13's rule, with a warning)


def _asarray_tensor(obj: Tensor, dtype: Any, device: Any, copy: bool | None) -> Tensor:
    """torch's rules for a tensor: the tensor itself unless a copy is asked for or a dtype/device change needs
    one (a differentiable copy); ``copy=False`` with a change is a ValueError."""
    dt = None if dtype is None else dtypes.to_dtype(dtype)
    dev = None if device is None else as_device(device)
    wrong_dtype, wrong_device = dt is not None and dt is not obj.dtype, dev is not None and dev != obj.device
    if copy is False and wrong_device:
        raise ValueError(f"can't alias tensor from device '{obj.device}' to '{dev}'.")
    if copy is False and wrong_dtype:
        raise ValueError(f"can't alias tensor with dtype '{dtypes.SCALAR_TYPE_NAMES[obj.dtype.name]}' into dtype "
                         f"'{dtypes.SCALAR_TYPE_NAMES[dt.name]}'.")
    if wrong_dtype or wrong_device:
        return obj.to(device=dev or obj.device, dtype=dt or obj.dtype, copy=True)
    return obj.clone() if copy else obj


def _asarray_buffer(view: memoryview, dtype: Any, copy: bool | None) -> np.ndarray:
    """The bytes of a buffer-protocol object read as elements of ``dtype`` (default: the default dtype), as
    torch's frombuffer does. A read-only buffer (``bytes``) is copied: NumPy cannot write through it."""
    dt = _dtype_or_default(dtype)
    if view.nbytes % dt.itemsize:
        raise ValueError(f"buffer length ({view.nbytes} bytes) after offset (0 bytes) must be a multiple of "
                         f"element size ({dt.itemsize})")
    array = np.frombuffer(view, dtype=dt.np)
    return array.copy() if copy or view.readonly else array


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: Any = _DEFAULT_REQUIRES_GRAD) -> Tensor:
    """``obj`` as a tensor, sharing its memory when it can: a tensor (itself), a NumPy array or a writable
    buffer of the right dtype on the CPU; sequences and scalars are copied. ``copy=True`` always copies,
    ``copy=False`` refuses to (ValueError). ``requires_grad`` not given keeps a tensor's own flag (warning when it
    is set, as torch 2.13); given, it is set on the result (a non-leaf is detached for ``False``)."""
    if isinstance(obj, Tensor):
        result = _asarray_tensor(obj, dtype, device, copy)
    elif isinstance(obj, np.ndarray):
        if not obj.dtype.isnative:
            raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                             "between byte orders is currently not supported.")
        result = _asarray_tensor(from_numpy(obj), dtype, factory_device(device), copy)
    elif isinstance(obj, np.generic):
        if copy is False:
            raise RuntimeError("can't alias NumPy scalars. Either remove copy=False or transform it in a ndarray. ")
        result = tensor(np.asarray(obj), dtype=dtype, device=device)
    else:
        try:
            view = memoryview(obj)
        except TypeError:
            if copy is False:
                raise ValueError("can't alias arbitrary sequence into a tensor.") from None
            result = tensor(obj, dtype=dtype, device=device)
        else:
            result = _asarray_tensor(from_numpy(_asarray_buffer(view, dtype, copy)), None, factory_device(device),
                                     None)
    if requires_grad is _DEFAULT_REQUIRES_GRAD:
        if result.requires_grad:
            warn_user_once("asarray", "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad "
                           "instead of False. Pass requires_grad=False explicitly to get the old behavior and "
                           "silence this warning.")
        return result
    if not requires_grad and not result.is_leaf:
        return result.detach()
    return result.requires_grad_(bool(requires_grad))
