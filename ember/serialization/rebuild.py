"""Tensors out of a checkpoint's storages: torch's ``torch._utils._rebuild_*`` functions, as ember builds them.

A torch checkpoint pickles each tensor as a call of one of these functions on a storage (its bytes, named by a
persistent id) with an offset, sizes and strides. ``LoadedStorage`` holds one storage's bytes and places them on
the wanted device once, so tensors that shared a storage when saved share it after loading, views included.
Every size, stride and offset is checked against the storage before an array is made: a hostile file cannot make
a tensor that reaches outside its bytes.
"""
from __future__ import annotations

import collections
import numbers
from typing import Any, Callable

import numpy as np

from ..nn.parameter import Parameter
from ..tensor import dtypes
from ..tensor.creation import tensor as make_tensor
from ..tensor.tensor import Tensor
from ..tensor.views import storage_view
from .files import CorruptFile
from .placement import Placement


class LoadedStorage:
    """One storage record: its bytes on the host (little-endian unless the file says otherwise), placed on a device
    the first time a tensor views it as a given dtype."""

    def __init__(self, data: np.ndarray, dtype: dtypes.dtype, location: str, place: Placement,
                 big_endian: bool = False) -> None:
        self.data = data  # flat uint8
        self.dtype = dtype
        self.location = location
        self._place = place
        self._big_endian = big_endian
        self._owners: dict[np.dtype, Any] = {}

    def numel(self, dt: dtypes.dtype) -> int:
        return self.data.nbytes // np.dtype(dt.np).itemsize

    def owner(self, dt: dtypes.dtype) -> Any:
        """The whole storage as a flat array of ``dt`` where it is placed (a host ndarray or a device array)."""
        np_dtype = np.dtype(dt.np)
        found = self._owners.get(np_dtype)
        if found is None:
            data = self.data[: self.numel(dt) * np_dtype.itemsize]
            if data.ctypes.data % np_dtype.itemsize:  # an unaligned record (a foreign writer): copy it
                data = data.copy()
            flat = data.view(np_dtype.newbyteorder(">") if self._big_endian else np_dtype)
            if self._big_endian:
                flat = flat.astype(np_dtype)
            found = self._owners[np_dtype] = self._place(Tensor._make(flat), self.location)._array
        return found


def _ints(values: Any, what: str) -> tuple[int, ...]:
    if not isinstance(values, (tuple, list)) or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                                       for v in values):
        raise CorruptFile(f"bad tensor record: {what} must be a tuple of integers, got {values!r}")
    return tuple(int(v) for v in values)


def _view(storage: Any, offset: Any, size: Any, stride: Any, dt: dtypes.dtype) -> Tensor:
    if not isinstance(storage, LoadedStorage):
        raise CorruptFile(f"bad tensor record: expected a storage, got {type(storage).__name__}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    (offset,) = _ints((offset,), "storage offset")
    if len(size) != len(stride) or any(v < 0 for v in size + stride) or offset < 0:
        raise CorruptFile(f"bad tensor record: size {list(size)}, stride {list(stride)}, offset {offset}")
    needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if needed > storage.numel(dt):
        raise CorruptFile(f"bad tensor record: size {list(size)}, stride {list(stride)} and offset {offset} need "
                          f"{needed} elements, the storage has {storage.numel(dt)}")
    owner = storage.owner(dt)
    # an empty tensor keeps its offset where the storage holds it (torch's ``x[5:]`` of 5 elements)
    kept = offset if all(size) or offset <= storage.numel(dt) else 0
    return Tensor._make(storage_view(owner, owner.dtype, size, stride, kept))


def _requires_grad(t: Tensor, requires_grad: Any) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any) -> Tensor:
    """``torch._utils._rebuild_tensor``: a tensor of the storage's own dtype."""
    if not isinstance(storage, LoadedStorage):
        raise CorruptFile(f"bad tensor record: expected a storage, got {type(storage).__name__}")
    return _view(storage, storage_offset, size, stride, storage.dtype)


def rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                      backward_hooks: Any = None, metadata: Any = None) -> Tensor:
    """``torch._utils._rebuild_tensor_v2``, what ``torch.save`` writes for a tensor (hooks are not kept, as torch)."""
    return _requires_grad(rebuild_tensor(storage, storage_offset, size, stride), requires_grad)


def rebuild_tensor_v3(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
                      backward_hooks: Any, dtype: Any, metadata: Any = None) -> Tensor:
    """``torch._utils._rebuild_tensor_v3``: the dtype is named by the call (torch writes it for the dtypes that have
    no typed storage class, the unsigned 16/32/64-bit ones)."""
    if not isinstance(dtype, dtypes.dtype):
        raise RuntimeError(f"ember.load: the file holds a tensor of dtype {dtype!r}")
    return _requires_grad(_view(storage, storage_offset, size, stride, dtype), requires_grad)


def rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any) -> Parameter:
    """``torch._utils._rebuild_parameter``."""
    if not isinstance(data, Tensor):
        raise CorruptFile(f"bad parameter record: expected a tensor, got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def set_state(obj: Any, state: Any, private: bool) -> Any:
    """torch's ``_set_obj_state``: attributes from a dict, or a ``(dict, slots)`` pair; attribute names starting
    with ``_`` (ember's internals) only when ``private`` (a load that trusts the file)."""
    parts = state if isinstance(state, tuple) else (state,)
    for part in parts:
        if part is None:
            continue
        if not isinstance(part, dict):
            raise CorruptFile(f"bad object state: expected a dict, got {type(part).__name__}")
        for name, value in part.items():
            if not isinstance(name, str) or (name.startswith("_") and not private):
                raise CorruptFile(f"bad object state: a weights-only load sets no attribute {name!r}")
            setattr(obj, name, value)
    return obj


def parameter_with_state(private: bool) -> Callable[..., Parameter]:
    """``torch._utils._rebuild_parameter_with_state`` (a Parameter carrying Python attributes)."""
    def rebuild(data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> Parameter:
        return set_state(rebuild_parameter(data, requires_grad, backward_hooks), state, private)
    return rebuild


def from_type_v2(private: bool) -> Callable[..., Any]:
    """``torch._tensor._rebuild_from_type_v2``: ``func(*args)`` as ``new_type``, with Python attributes."""
    def rebuild(func: Any, new_type: Any, args: Any, state: Any) -> Any:
        if not callable(func) or not isinstance(args, tuple):
            raise CorruptFile("bad tensor record: _rebuild_from_type_v2 needs a function and a tuple of arguments")
        if not private and getattr(func, "__module__", None) != __name__:
            raise CorruptFile(f"bad tensor record: a weights-only load rebuilds tensors with torch's rebuild "
                              f"functions only, not {func!r}")
        result = func(*args)
        if isinstance(new_type, type) and issubclass(new_type, Tensor) and type(result) is not new_type:
            if not isinstance(result, Tensor):
                raise CorruptFile(f"bad tensor record: {type(result).__name__} is not a tensor")
            result = Tensor._make.__func__(new_type, result._array, result.requires_grad, result._version)
        return set_state(result, state, private)
    return rebuild


def rebuild_device_tensor_from_cpu_tensor(data: Any, dtype: Any, device: Any, requires_grad: Any) -> Tensor:
    """``torch._utils._rebuild_device_tensor_from_cpu_tensor`` (tensors of devices saved through the host)."""
    if not isinstance(data, Tensor):
        raise CorruptFile(f"bad tensor record: expected a tensor, got {type(data).__name__}")
    return _requires_grad(data.to(device=device, dtype=dtype), requires_grad)


def rebuild_device_tensor_from_numpy(data: Any, dtype: Any, device: Any, requires_grad: Any) -> Tensor:
    """``torch._utils._rebuild_device_tensor_from_numpy``."""
    if not isinstance(data, np.ndarray):
        raise CorruptFile(f"bad tensor record: expected a NumPy array, got {type(data).__name__}")
    return make_tensor(data, dtype=dtype, device=device, requires_grad=bool(requires_grad))


def unsupported(kind: str) -> Callable[..., Any]:
    """A rebuild function for a kind of tensor ember does not have: loading such a file says which."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"ember.load: the file holds a {kind}, which ember does not support")
    return refuse


def checked_bytearray(*args: Any) -> bytearray:
    """``bytearray`` of bytes or of a string and its encoding, as pickles write one; never of a length (that would
    let a few bytes of file allocate any amount of memory)."""
    if not args or not isinstance(args[0], (bytes, bytearray, str)):
        raise CorruptFile("bad bytearray record")
    return bytearray(*args)


def ordered_dict_state(obj: collections.OrderedDict, state: Any) -> None:
    """BUILD on an OrderedDict: torch's checkpoints give it attributes (``_metadata`` of a state_dict)."""
    if isinstance(state, dict):
        for name, value in state.items():
            if not isinstance(name, str):
                raise CorruptFile("bad OrderedDict state")
            setattr(obj, name, value)
    elif state is not None:
        raise CorruptFile("bad OrderedDict state")
