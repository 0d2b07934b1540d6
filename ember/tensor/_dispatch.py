"""Backend selection, and the shared plumbing of the tensor ops (operands, broadcasting, grad reduction).

``backend(*operands)`` is the one way to the kernels: it returns the kernel package of the device the operands
(tensors or raw arrays) live on, ``ember.kernels.cpu`` or ``ember.kernels.cuda`` (see
``ember.kernels.contract``), whose kernel families are its attributes (``backend(x).pooling.max_pool(...)``).
This module is the only one of the tensor layer that imports a backend, and the place for the array helpers
whose code differs by device (``on_device`` and the helpers that use it).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels import cpu as cpu_kernels
from ..kernels.common.layout import dense_flat, is_dense
from ..kernels.cpu import host_cache
from .._cuda_context import active, activate
from . import dtypes
from .device import cuda_device
from .memory_format import empty_for_operands
from .tensor import Tensor

_cuda_kernels: Any = None  # ember.kernels.cuda, imported with the first device array (import ember needs no numba-cuda)


def backend(*operands: Any) -> Any:
    """The kernel package (an ``ember.kernels.contract.Backend``) of the operands' device, whose CUDA context it
    makes current. Operands are tensors, raw arrays (NumPy arrays or device storage) and Python numbers.

    CUDA tensors may meet Python numbers and 0-d CPU tensors (as in torch); any other CPU tensor, or a tensor on
    another CUDA device, in the same op is torch's "Expected all tensors to be on the same device" RuntimeError."""
    for x in operands:
        if isinstance(x, Tensor):
            x = x._array
        if type(x) is not np.ndarray and hasattr(x, "__ember_device_array__"):
            return _device_backend(operands, x.device_index)
    return cpu_kernels


def _device_backend(operands: tuple, index: int) -> Any:
    """The CUDA kernels, for operands one of which is on device ``index``; checks that the tensors are there too."""
    global _cuda_kernels
    for x in operands:
        if isinstance(x, Tensor):
            array = x._array
            elsewhere = array.device_index != index if on_device(array) else array.ndim > 0
            if elsewhere:
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                                   f"{cuda_device(index)} and {x.device}!")
    if index != active.index:
        activate(index)
    if _cuda_kernels is None:
        from ..kernels import cuda  # the CUDA kernels (numba-cuda) load on first use

        _cuda_kernels = cuda
    return _cuda_kernels


def on_device(array: Any) -> bool:
    """Whether an array is device storage (anything else, NumPy arrays and numbers, lives on the host)."""
    return type(array) is not np.ndarray and hasattr(array, "__ember_device_array__")


def is_c_contiguous(array: Any) -> bool:
    """``array.flags.c_contiguous``, asked of device storage directly (its ``flags`` builds a namespace per read)."""
    return array.flags.c_contiguous if type(array) is np.ndarray else array.is_contiguous


def ascontiguous(array: Any, dtype: Any = None) -> Any:
    """``np.ascontiguousarray`` for NumPy arrays and device storage alike (NumPy's own would copy device storage
    to the host, which device storage refuses)."""
    if not on_device(array):
        return np.ascontiguousarray(array, dtype=dtype)
    array = array.contiguous()
    return array if dtype is None or array.dtype == np.dtype(dtype) else array.astype(dtype)


def copy_array(array: Any, order: str = "C") -> Any:
    """A copy that shares nothing (``np.array(a, copy=True)``), on the array's device; device copies are C order."""
    return array.copy() if on_device(array) else np.array(array, order=order, copy=True)


def flat_views(arrays: list[Any], dtype: np.dtype) -> tuple[list[Any], Any, Any]:
    """Flat 1-D views of same-shape arrays in one shared memory order, cast to ``dtype``, plus a new output array
    and its flat view, for kernels that run over elements in any order.

    Dense host arrays of one layout (contiguous, channels_last, any permutation) keep their order, so the result
    has the input's memory format; other host arrays are copied into the order torch's TensorIterator would give
    the result (``iterator_order``: a sliced channels_last input stays channels_last); device storage is copied
    to C order.
    """
    first = arrays[0]
    if type(first) is np.ndarray and is_dense(first) and all(a.strides == first.strides and a.dtype == dtype
                                                             for a in arrays):
        out = np.empty_like(first, dtype=dtype, order="K")
        return [dense_flat(a) for a in arrays], out, dense_flat(out)
    if type(first) is np.ndarray and first.ndim > 1:
        out = empty_for_operands(arrays, first.shape, dtype)
        copies = []
        for a in arrays:
            buf = np.empty_like(out, dtype=dtype, order="K")
            np.copyto(buf, a, casting="unsafe")
            copies.append(dense_flat(buf))
        return copies, out, dense_flat(out)
    arrays = [ascontiguous(a, dtype=dtype) for a in arrays]
    out = np.empty(first.shape, dtype=dtype, like=first)
    return [a.reshape(-1) for a in arrays], out, out.reshape(-1)


def shape_of(x: Any) -> tuple[int, ...] | None:
    """The shape of a tensor operand, None for a Python number."""
    return x._array.shape if isinstance(x, Tensor) else None


def as_array(x: Any, dt: dtypes.dtype) -> np.ndarray:
    """A tensor's array or a number as a 0-d array, in dtype ``dt`` (ints wrap like C casts)."""
    if isinstance(x, Tensor):
        arr = x._array
        return arr if arr.dtype == dt.np else arr.astype(dt.np)
    if isinstance(x, (bool, np.bool_)) or not dt.is_floating_point:
        return np.asarray(x).astype(dt.np)
    return np.asarray(x, dtype=dt.np)


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "") -> tuple[int, ...]:
    """torch's broadcasting of shapes, with torch's error message (plus the op and the shapes)."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return tuple(first)
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for j in range(ndim):
        sizes = [s[len(s) - ndim + j] for s in shapes if len(s) - ndim + j >= 0]
        distinct = list(dict.fromkeys(n for n in sizes if n != 1))
        if len(distinct) > 1:
            where = f" ({op} with shapes {' and '.join(str(list(s)) for s in shapes)})" if op else ""
            raise RuntimeError(
                f"The size of tensor a ({distinct[0]}) must match the size of tensor b ({distinct[1]}) "
                f"at non-singleton dimension {j}{where}"
            )
        result.append(distinct[0] if distinct else 1)
    return tuple(result)


def sum_to_shape(grad: Tensor, shape: tuple[int, ...] | None) -> Tensor | None:
    """Undo broadcasting: sum ``grad`` down to ``shape`` (None for a Python-number operand)."""
    if shape is None:
        return None
    if grad._array.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(shape)


def empty_like_layout(template: np.ndarray | None, shape: tuple[int, ...], dt: dtypes.dtype,
                      like: Any = None, operands: Sequence[Any] = ()) -> np.ndarray:
    """A new array of ``shape`` on ``like``'s device (the CPU when None). Given the op's ``operands``, it is laid
    out as torch's TensorIterator lays out a result (``memory_format.empty_for_operands``: mixed formats resolve
    by the operands' strides, the first deciding ties); else it keeps ``template``'s memory order (e.g.
    channels_last) when shapes agree."""
    if operands and len(shape) > 1:
        tensors = [a for a in operands if a.ndim]
        if not all(a.shape == shape and is_c_contiguous(a) for a in tensors):
            return empty_for_operands(tensors, shape, dt.np, like=like)
    elif template is not None and template.shape == shape and template.ndim > 1 and \
            not template.flags.c_contiguous:
        return np.empty_like(template, dtype=dt.np, order="K")
    if on_device(like):
        return np.empty(shape, dtype=dt.np, like=like)
    return host_cache.empty(shape, dt.np)


compute_dtype = dtypes.compute_dtype  # still imported from here by the fused ops and elementwise
