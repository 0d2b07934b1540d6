"""The DLPack C ABI in ctypes: its structs, the capsules that carry them, and who frees what.

A DLPack exchange hands over one ``DLManagedTensor`` (``DLManagedTensorVersioned`` from DLPack 1.0) in a
``PyCapsule`` named "dltensor" ("dltensor_versioned"). The consumer renames the capsule "used_dltensor"
("used_dltensor_versioned") when it takes the tensor, so a capsule is consumed once, and calls the struct's
``deleter`` when it no longer needs the memory; a capsule dropped unconsumed calls it from its destructor.

NumPy writes capsules for host arrays (``ndarray.__dlpack__``), and ember uses that. This module is for what NumPy
does not do: capsules over CUDA memory, and reading any capsule so that what comes back is writable (NumPy's
``from_dlpack`` marks arrays from unversioned capsules read-only, where torch hands back writable memory).
"""
from __future__ import annotations

import ctypes
import enum
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DLDeviceType", "Described", "IS_COPIED", "READ_ONLY", "compact_strides", "consume", "describe",
           "make_capsule"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (``torch.utils.dlpack.DLDeviceType``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


READ_ONLY = 1 << 0  # DLPACK_FLAG_BITMASK_READ_ONLY: the consumer must not write
IS_COPIED = 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED: the producer made a copy for this exchange


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_USED = {_LEGACY: b"used_dltensor", _VERSIONED: b"used_dltensor_versioned"}  # the names keep these bytes alive
_STRUCTS = {_LEGACY: _DLManagedTensor, _VERSIONED: _DLManagedTensorVersioned}

# The capsule functions of the C API, as private prototypes (setting argtypes on ctypes.pythonapi would change
# them for every other user in the process). The raw forms take the bare pointer a capsule destructor receives.
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _DESTRUCTOR)(
    ("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _api))
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

_INVALID_CAPSULE = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, "
                    "so you might have already constructed a tensor from it once.")

# DLPack's type codes by NumPy kind (kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool), and back
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {code: kind for kind, code in _CODES.items()}


@dataclass(frozen=True)
class Described:
    """What a capsule's ``DLTensor`` describes: the first element's address, shape, element strides, dtype,
    ``(device type, device id)`` and whether the producer forbids writes."""

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    device: tuple[int, int]
    read_only: bool


def _managed(capsule: Any) -> tuple[bytes, Any]:
    """The capsule's name and the managed tensor it holds; torch's RuntimeError for a used or foreign object."""
    for name in (_VERSIONED, _LEGACY):
        if _is_valid(capsule, name):
            managed = _STRUCTS[name].from_address(_pointer(capsule, name))
            if name == _VERSIONED and managed.version.major > 1:
                raise BufferError(f"DLPack version {managed.version.major}.{managed.version.minor} is newer than "
                                  "ember reads (1.x)")
            return name, managed
    raise RuntimeError(_INVALID_CAPSULE)


def _numpy_dtype(dtype: _DLDataType) -> np.dtype:
    kind = _KINDS.get(dtype.code)
    if kind is None or dtype.lanes != 1 or dtype.bits % 8:
        raise TypeError(f"ember cannot hold DLPack data of type code {dtype.code}, {dtype.bits} bits, "
                        f"{dtype.lanes} lanes")
    return np.dtype("?" if kind == "b" else f"{kind}{dtype.bits // 8}")


def compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a compact row-major array of ``shape`` (what NULL strides mean)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def describe(capsule: Any) -> Described:
    """Read a live capsule without consuming it."""
    name, managed = _managed(capsule)
    tensor = managed.dl_tensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = tuple(tensor.strides[i] for i in range(tensor.ndim)) if tensor.strides else compact_strides(shape)
    read_only = name == _VERSIONED and bool(managed.flags & READ_ONLY)
    return Described((tensor.data or 0) + tensor.byte_offset, shape, strides, _numpy_dtype(tensor.dtype),
                     (tensor.device.device_type, tensor.device.device_id), read_only)


class _Lease:
    """A consumer's hold on a producer's memory: when the last array over it is gone, the producer's deleter runs."""

    __slots__ = ("__weakref__",)


def consume(capsule: Any) -> _Lease:
    """Take the capsule's tensor (rename the capsule "used_..."); the returned lease must live as long as the memory
    is used (make it the owner of the arrays over it)."""
    name, managed = _managed(capsule)
    _set_name(capsule, _USED[name])
    lease = _Lease()
    if managed.deleter:
        # not at interpreter exit: the producer's library may be gone by then (the process frees the memory anyway)
        weakref.finalize(lease, managed.deleter, ctypes.addressof(managed)).atexit = False
    return lease


# ------------------------------------------------------------------------------------------------- producing
_LIVE: dict[int, tuple] = {}  # managed tensor's address -> the ctypes objects and the owner that back it


@_DELETER
def _deleter(address: int) -> None:
    _LIVE.pop(address, None)


@_DESTRUCTOR
def _drop_unconsumed(capsule: int) -> None:
    """A capsule's destructor: release its tensor if no consumer took it."""
    for name in (_LEGACY, _VERSIONED):
        if _raw_is_valid(capsule, name):
            _LIVE.pop(_raw_pointer(capsule, name), None)


def make_capsule(address: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype,
                 device: tuple[int, int], owner: Any, versioned: bool, flags: int = 0) -> Any:
    """A capsule over ``address`` (shape and element strides) whose deleter releases ``owner``; a DLPack 1.0 capsule
    ("dltensor_versioned", with ``flags``) when ``versioned``, else the unversioned kind."""
    ndim = len(shape)
    shape_array, strides_array = (ctypes.c_int64 * ndim)(*shape), (ctypes.c_int64 * ndim)(*strides)
    dtype = np.dtype(dtype)
    tensor = _DLTensor(address or None, _DLDevice(*device), ndim,
                       _DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1),
                       ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)),
                       ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64)), 0)
    if versioned:
        managed = _DLManagedTensorVersioned(_DLPackVersion(1, 0), None, _deleter, flags, tensor)
    else:
        managed = _DLManagedTensor(tensor, None, _deleter)
    key = ctypes.addressof(managed)
    _LIVE[key] = (managed, shape_array, strides_array, owner)
    return _capsule_new(key, _VERSIONED if versioned else _LEGACY, _drop_unconsumed)
