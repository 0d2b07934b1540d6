"""Shared plumbing of the tensor ops: backend choice, operands, broadcasting, grad reduction."""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from .. import cpu_kernels
from ..cpu_kernels import host_cache
from .._cuda_context import active, activate
from . import dtypes
from .tensor import Tensor


def backend(*operands: Any):
    """The kernel module (an ``ember.backend.Backend``) for the operands' device, whose context it makes current.

    CUDA tensors may meet Python numbers and 0-d CPU tensors (as in torch); any other CPU tensor, or a tensor on
    another CUDA device, in the same op is torch's "Expected all tensors to be on the same device" RuntimeError."""
    found = next((x for x in operands if isinstance(x, Tensor) and on_device(x._array)), None)
    if found is None:
        return cpu_kernels
    for x in operands:
        if isinstance(x, Tensor) and x.device != found.device and (x._array.ndim or on_device(x._array)):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               f"{found.device} and {x.device}!")
    index = found._array.device_index
    if index != active.index:
        activate(index)
    from .. import cuda_kernels

    return cuda_kernels


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


_FAMILIES: dict[tuple[str, str], Any] = {}


def _backend_name(operands: tuple) -> str:
    """The backend package of the operands; for device storage, its device's context is made current."""
    for x in operands:
        array = x._array if isinstance(x, Tensor) else x
        if on_device(array):
            if array.device_index != active.index:
                activate(array.device_index)
            return "cuda_kernels"
    return "cpu_kernels"


def array_backend(*arrays: Any):
    """The kernel module of the backend raw arrays (NumPy arrays or device storage) live on."""
    return family("", *arrays)


def family(name: str, *operands: Any):
    """Kernel family ``name`` (a key of ``ember.backend.KERNEL_FAMILIES``; "" for the core contract) of the
    backend the operands (tensors or arrays) live on."""
    backend_name = _backend_name(operands)
    found = _FAMILIES.get((backend_name, name))
    if found is None:
        module = f"ember.{backend_name}.{name}" if name else f"ember.{backend_name}"
        found = _FAMILIES[(backend_name, name)] = importlib.import_module(module)
    return found


def on_device(array: Any) -> bool:
    """Whether an array is device storage (anything else, NumPy arrays and numbers, lives on the host)."""
    return type(array) is not np.ndarray and hasattr(array, "__ember_device_array__")


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
                      like: Any = None) -> np.ndarray:
    """A new array of ``shape`` on ``like``'s device (the CPU when None); keeps ``template``'s memory order
    (e.g. channels_last) when shapes agree."""
    if template is not None and template.shape == shape and template.ndim > 1 and not template.flags.c_contiguous:
        return np.empty_like(template, dtype=dt.np, order="K")
    if on_device(like):
        return np.empty(shape, dtype=dt.np, like=like)
    return host_cache.empty(shape, dt.np)


def compute_dtype(dt: dtypes.dtype) -> dtypes.dtype:
    """The dtype kernels compute in: float16 is widened to float32, as torch's CPU kernels do."""
    return dtypes.float32 if dt is dtypes.float16 else dt
