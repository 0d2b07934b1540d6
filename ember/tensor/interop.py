"""Memory exchange with the rest of the array ecosystem, without copies: DLPack, the CUDA array interface, and
torch's rule for operators between a tensor and a NumPy array.

DLPack (``Tensor.__dlpack__``/``__dlpack_device__``, ``from_dlpack``, ``to_dlpack``) follows torch's API and
checks: a tensor that requires grad refuses export (BufferError); ``stream`` is an ``int`` (-1, the default, means
no synchronisation; on the CPU only -1 and None are allowed); a capsule is consumed once. Host tensors export
through NumPy's own ``ndarray.__dlpack__``; CUDA tensors through ``dlpack_abi``'s ctypes structs (the same code
with or without CuPy). Every capsule is read through ``dlpack_abi``, so what comes back is writable whichever
DLPack version the producer speaks (NumPy's reader marks arrays from unversioned capsules read-only); memory the
producer flags read-only stays read-only on the host.

On CUDA, export makes the consumer's ``stream`` wait for the work queued on ember's current stream, and import
asks the producer to order its work before the consumer's stream (DLPack's rule); the CUDA array interface's v3
``stream`` is waited on the same way. Under Numba's simulator every stream runs synchronously, and simulated
device memory is host memory: its address is what capsules and ``__cuda_array_interface__`` carry, so the same
code shares memory there.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._cuda_context import using
from .._cuda_runtime.availability import is_simulator, storage_type
from .._cuda_runtime.gpus import current_device
from .._cuda_runtime.streams import Stream, current_stream, default_stream
from . import dtypes
from .device import CPU, as_device
from .dlpack_abi import IS_COPIED, DLDeviceType, compact_strides, consume, describe, make_capsule
from .tensor import Tensor

__all__ = ["DLDeviceType", "cuda_array_interface", "dlpack", "dlpack_device", "from_cuda_array_interface",
           "from_dlpack", "ndarray_operator", "to_dlpack"]

_CPU = (DLDeviceType.kDLCPU, 0)
_HOST_TYPES = (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost)
_DEVICE_TYPES = (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged)


# ----------------------------------------------------------------------------------------------------- export
def dlpack_device(self: Tensor) -> tuple[DLDeviceType, int]:
    """``Tensor.__dlpack_device__``: ``(kDLCPU, 0)`` or ``(kDLCUDA, index)``."""
    array = self._array
    return _CPU if type(array) is np.ndarray else (DLDeviceType.kDLCUDA, array.device_index)


def dlpack(self: Tensor, *, stream: Any = -1, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """``Tensor.__dlpack__``: a capsule sharing this tensor's memory (a DLPack 1.0 capsule when ``max_version`` is
    1.0 or later, else the unversioned kind, as torch); ``dl_device`` other than this tensor's exports a copy
    there; ``copy=True`` always copies, ``copy=False`` never does."""
    if self._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    array = self._array
    if type(array) is not np.ndarray:
        _hand_over_on_cuda(array.device_index, stream)
    elif stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    return _export(self, max_version, dl_device, copy)


def _hand_over_on_cuda(index: int, stream: int | None) -> None:
    """torch's checks of a CUDA export (a tensor of the current device), then DLPack's ordering: unless ``stream``
    is -1, the consumer's stream waits for the work queued so far on ember's current stream."""
    if index != current_device():
        raise BufferError(f"Can't export tensors on a different CUDA device index. Expected: {index}. Current "
                          f"device: {current_device()}.")
    if stream != -1:
        consumer = _foreign_stream(_consumer_stream_pointer(stream), index)
        if consumer is not None:
            consumer.wait_stream(current_stream(index))


def to_dlpack(tensor: Tensor) -> Any:
    """``torch.utils.dlpack.to_dlpack``: an unversioned capsule over ``tensor``'s memory (torch checks nothing
    more here: ``__dlpack__`` is where a tensor that requires grad is refused)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'data' must be Tensor, not {type(tensor).__name__}")
    return _export(tensor, None, None, None)


def _export(t: Tensor, max_version: tuple[int, int] | None, dl_device: Any, copy: bool | None) -> Any:
    """The capsule of ``t`` (moved to ``dl_device`` first when that is another device): NumPy's for host memory,
    ``dlpack_abi``'s for CUDA memory."""
    if dl_device is not None and tuple(dl_device) != dlpack_device(t):
        if copy is False:
            raise BufferError(f"cannot export a tensor on {t.device} to DLPack device {tuple(dl_device)} without a "
                              "copy")
        t, copy = t.detach().to(_ember_device(dl_device)), None
    array = t._array
    if type(array) is np.ndarray:
        return array.__dlpack__(max_version=max_version, copy=copy)
    if copy:
        array = array.copy()
    versioned = max_version is not None and max_version[0] >= 1
    return make_capsule(_device_address(array), array.shape, array.strides, array.dtype,
                        (DLDeviceType.kDLCUDA, array.device_index), array, versioned, IS_COPIED if copy else 0)


def _ember_device(dl_device: Any) -> Any:
    """The ember device of a DLPack ``(device type, id)``."""
    kind, index = dl_device
    if kind in _HOST_TYPES:
        return CPU
    if kind in _DEVICE_TYPES:
        return as_device(f"cuda:{index}")
    raise BufferError(f"ember cannot place a tensor on DLPack device type {kind}")


def cuda_array_interface(self: Tensor) -> dict:
    """``Tensor.__cuda_array_interface__`` (version 3): this CUDA tensor's memory for CuPy, Numba, torch, ... An
    AttributeError on the CPU, so that ``hasattr(cpu_tensor, "__cuda_array_interface__")`` is False, as in torch;
    ``stream`` is ember's current stream, where the tensor's pending work is queued."""
    array = self._array
    if type(array) is np.ndarray:
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {self.type()} If CUDA "
                             "data is required use tensor.cuda() to copy tensor to device memory.")
    if self._requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. If gradients aren't "
                           "required, use var.detach() to get Variable that doesn't require grad.")
    item = array.dtype.itemsize
    pointer = current_stream(array.device_index).cuda_stream
    return {"typestr": array.dtype.str, "shape": tuple(array.shape),
            "strides": None if array.is_contiguous else tuple(s * item for s in array.strides),
            "data": (_device_address(array), False), "version": 3, "stream": pointer or 1}


def _device_address(storage: Any) -> int:
    """The address of device storage's first element (0 when empty); under the simulator, the host address of the
    simulated device memory."""
    if not storage.numel:
        return 0
    buffer = storage.buffer
    base = buffer.ctypes.data if is_simulator() else buffer.__cuda_array_interface__["data"][0]
    return base + storage.offset * storage.dtype.itemsize


# ----------------------------------------------------------------------------------------------------- import
def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """``torch.from_dlpack``: a tensor sharing the memory of ``ext_tensor`` (any object with ``__dlpack__``, or a
    DLPack capsule), on the host or a CUDA device. ``device`` places it elsewhere (a copy); ``copy=True`` always
    copies, ``copy=False`` refuses to. An object with only ``__cuda_array_interface__`` (a Numba device array) is
    taken through that, also without a copy."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if hasattr(ext_tensor, "__cuda_array_interface__"):
            t = from_cuda_array_interface(ext_tensor)
            target = t.device if device is None else as_device(device)
            if copy is False and target != t.device:
                raise ValueError(f"cannot move a tensor from {t.device} to {target} without copying. Set copy=None "
                                 "or copy=True.")
            return t.to(target, copy=bool(copy))
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        return _from_capsule(ext_tensor)
    source = tuple(ext_tensor.__dlpack_device__())
    kwargs: dict[str, Any] = {"max_version": (1, 0)}
    if copy is not None:
        kwargs["copy"] = copy
    target = None
    if device is not None:
        target = as_device(device)
        wanted = _dl_device_of(target)
        if wanted == source:
            kwargs["dl_device"] = wanted
            target = None
        elif copy is False:
            raise ValueError(f"cannot move DLPack tensor from device {source} to {wanted} without copying. Set "
                             "copy=None or copy=True.")
    if source[0] in _DEVICE_TYPES:
        kwargs["stream"] = current_stream(source[1]).cuda_stream or 1  # the legacy default stream is 1
    capsule, copied = _request(ext_tensor, kwargs)
    t = _from_capsule(capsule)
    if target is not None:
        return t.to(target)
    return t.clone() if copy and not copied else t


def _request(ext_tensor: Any, kwargs: dict) -> tuple[Any, bool]:
    """``ext_tensor.__dlpack__(**kwargs)``, leaving out what an older producer does not take (as torch does:
    ``max_version``, then ``copy``, then ``dl_device``); the capsule, and whether the producer took ``copy``."""
    for dropped in ("max_version", "copy", "dl_device"):
        try:
            return ext_tensor.__dlpack__(**kwargs), "copy" in kwargs
        except TypeError:
            kwargs.pop(dropped, None)
    return ext_tensor.__dlpack__(**kwargs), "copy" in kwargs


def _dl_device_of(dev: Any) -> tuple[DLDeviceType, int]:
    """The DLPack ``(device type, id)`` of an ember device."""
    return _CPU if dev.type == "cpu" else (DLDeviceType.kDLCUDA, dev.index)


def _from_capsule(capsule: Any) -> Tensor:
    """A tensor over the memory a capsule describes (the capsule is consumed)."""
    found = describe(capsule)  # torch's RuntimeError for a used capsule (or anything else)
    dtypes.from_numpy_dtype(found.dtype)  # a dtype ember holds, checked before the capsule is taken
    kind, index = found.device
    if kind not in _HOST_TYPES and kind not in _DEVICE_TYPES:
        raise BufferError(f"ember cannot import DLPack memory of device type {kind}")
    lease = consume(capsule)
    if kind in _HOST_TYPES:
        return Tensor._make(_host_array(found.address, found.shape, found.strides, found.dtype, found.read_only,
                                        lease))
    return Tensor._make(_device_storage(found.address, found.shape, found.strides, found.dtype, lease, index))


def from_cuda_array_interface(obj: Any) -> Tensor:
    """A CUDA tensor over the memory ``obj.__cuda_array_interface__`` describes (CuPy, Numba and torch CUDA
    arrays), on the current CUDA device, without a copy; ``obj`` is kept alive as long as the memory is used."""
    desc = obj.__cuda_array_interface__
    if desc.get("mask") is not None:
        raise TypeError("ember cannot take a masked array through __cuda_array_interface__")
    dtype = np.dtype(desc["typestr"])
    dtypes.from_numpy_dtype(dtype)
    shape = tuple(int(n) for n in desc["shape"])
    strides = desc.get("strides")
    if strides is None:
        strides = compact_strides(shape)
    elif any(s % dtype.itemsize for s in strides):
        raise ValueError(f"__cuda_array_interface__ strides {tuple(strides)} are not multiples of the element size "
                         f"{dtype.itemsize}")
    else:
        strides = tuple(s // dtype.itemsize for s in strides)
    index = current_device()
    producer = _foreign_stream(desc.get("stream"), index)
    if producer is not None:
        current_stream(index).wait_stream(producer)
    return Tensor._make(_device_storage(int(desc["data"][0]), shape, strides, dtype, obj, index))


class _HostWindow:
    """An ``__array_interface__`` over memory another library owns: NumPy keeps it as the array's base, and it
    keeps ``owner`` (the producer's lease) alive."""

    def __init__(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...] | None, dtype: np.dtype,
                 read_only: bool, owner: Any) -> None:
        self.__array_interface__ = {"data": (address, read_only), "shape": shape, "typestr": dtype.str,
                                    "strides": strides, "version": 3}
        self.owner = owner


def _host_array(address: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype, read_only: bool,
                 owner: Any) -> np.ndarray:
    """A NumPy array over host memory at ``address`` (element strides, any sign)."""
    if not all(shape):
        return np.empty(shape, dtype)
    item = dtype.itemsize
    return np.asarray(_HostWindow(address, shape, tuple(s * item for s in strides), dtype, read_only, owner))


def _device_storage(address: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype, owner: Any,
                    index: int) -> Any:
    """Device storage over CUDA memory at ``address`` on device ``index``: a flat buffer over the span the strides
    reach, seen through them (the simulator's device memory is host memory at that address)."""
    storage = storage_type()
    with using(index):
        if not all(shape):
            return storage.empty(shape, dtype)
        low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
        high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0)
        start, count = address + low * dtype.itemsize, high - low + 1
        if is_simulator():
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

            buffer = FakeCUDAArray(np.asarray(_HostWindow(start, (count,), None, dtype, False, owner)))
        else:
            from numba import cuda

            buffer = cuda.from_cuda_array_interface(
                {"shape": (count,), "strides": None, "typestr": dtype.str, "data": (start, False), "version": 3},
                owner=owner, sync=False)
    return storage(buffer, shape, strides, -low, index)


# ----------------------------------------------------------------------------------------------------- streams
def _consumer_stream_pointer(stream: int | None) -> int:
    """The consumer's stream of ``__dlpack__(stream=...)`` on CUDA, with torch's checks (None and 1: the legacy
    default stream; 0 is ambiguous; 2, the per-thread default stream, is not supported)."""
    if stream is None or stream == 1:
        return 1
    if stream == 2:
        raise BufferError("per-thread default stream is not supported.")
    if stream == 0:
        raise AssertionError(f"unsupported stream on CUDA: {stream}.")
    return stream


def _foreign_stream(pointer: int | None, index: int) -> Any:
    """The stream ``pointer`` names on device ``index`` as an ember Stream (1: the legacy default stream), or None
    when there is nothing to order: no stream, ember's current stream itself, or the simulator (where all work
    runs synchronously)."""
    if pointer is None or is_simulator():
        return None
    current = current_stream(index)
    if pointer == 1:
        return None if current.cuda_stream == 0 else default_stream(index)
    if pointer == current.cuda_stream:
        return None
    from numba import cuda

    with using(index):
        return Stream(index, _numba_stream=cuda.external_stream(pointer))


# ----------------------------------------------------------------------------------------------------- NumPy
# torch's operators leave a NumPy array operand to NumPy: ``t + a`` returns NotImplemented, so ``a.__radd__`` runs
# ``np.add(t, a)`` (the tensor's ``__array__`` in, its ``__array_wrap__`` out: NumPy's result dtype, a tensor back).
_NUMPY_OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
                    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
                    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
                    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift}


def ndarray_operator(name: str, a: Any, b: Any) -> Any:
    """What torch gives for operator ``name`` between a tensor and a NumPy array, or None where it raises a
    TypeError (``a + t``, ``t < a``): ``t OP a`` is NumPy's ufunc on the two; ``a / t`` is ``t.reciprocal() * a``
    (torch's ``__rtruediv__``); ``==`` and ``!=`` compare the array as a tensor."""
    if isinstance(a, Tensor) and isinstance(b, np.ndarray):
        if name in ("eq", "ne"):
            dtypes.from_numpy_dtype(b.dtype)
            return getattr(a, name)(Tensor._make(b))
        ufunc = _NUMPY_OPERATORS.get(name)
        return None if ufunc is None else ufunc(a, b)
    if name == "div" and isinstance(a, np.ndarray) and isinstance(b, Tensor):
        return np.multiply(b.reciprocal(), a)
    return None
