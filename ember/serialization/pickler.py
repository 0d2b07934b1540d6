"""Pickling an object the way ``torch.save`` does: tensors as calls of torch's rebuild functions on storages that
are persistent ids, so the pickle names only torch's globals for ember's data types.

The pickler derives from the standard library's Python pickler, whose ``save`` can write a global by name: the C
pickler only writes globals it can import and find identical, and torch's names are not ember's objects.
"""
from __future__ import annotations

import collections
import pickle
from typing import Any, BinaryIO

import numpy as np

from ..nn.parameter import Parameter
from ..tensor import dtypes
from ..tensor.device import device
from ..tensor.host_views import HostViews, root_array
from ..tensor.tensor import Size, Tensor
from . import torch_globals as names


class StorageRef:
    """One storage of the file: the flat bytes of a host buffer, and the dtype and device its tensors have."""

    __slots__ = ("key", "data", "dtype", "location")

    def __init__(self, key: str, data: np.ndarray, dt: dtypes.dtype, location: str) -> None:
        self.key, self.data, self.dtype, self.location = key, data, dt, location

    @property
    def numel(self) -> int:
        return self.data.nbytes // np.dtype(self.dtype.np).itemsize


class StorageTable:
    """The storages of the tensors pickled so far, one per host buffer, so views stay views in the file."""

    def __init__(self) -> None:
        self.refs: list[StorageRef] = []
        self._by_root: dict[int, StorageRef] = {}
        self._keep: list[Any] = []  # every id() above stays alive while the table does
        self._host = HostViews()  # one host copy per device buffer, so views of a CUDA storage share it

    def place(self, t: Tensor) -> tuple[StorageRef, int, tuple[int, ...], tuple[int, ...]]:
        """``t``'s storage, its offset in it and its strides (both in elements)."""
        a = self._host.of(t)
        dt = t.dtype
        root = root_array(a)
        item = a.itemsize
        offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        describable = ((root.flags.c_contiguous or root.flags.f_contiguous) and root.dtype.isnative
                       and offset >= 0 and offset % item == 0 and all(s >= 0 and s % item == 0 for s in a.strides))
        if not describable:  # a buffer we cannot describe as one run of elements: save a compact copy
            root = a = np.ascontiguousarray(a)
            offset = 0
        ref = self._by_root.get(id(root))
        if ref is None:
            ref = StorageRef(str(len(self.refs)), root.reshape(-1, order="A").view(np.uint8), dt, str(t.device))
            self._by_root[id(root)] = ref
            self.refs.append(ref)
            self._keep.append(root)
        elif ref.dtype != dt:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        strides = tuple(s // item for s in a.strides)
        return ref, (offset // item if a.size or offset <= root.nbytes else 0), tuple(a.shape), strides


class _TensorData:
    """A Parameter's data, pickled as the plain tensor torch's ``_rebuild_parameter`` takes."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


def pickler_class(base: type) -> type:
    """A pickler class over ``base`` (``pickle._Pickler`` or a pickle module's subclass of it) writing torch's
    names; ``legacy`` picklers write the persistent ids of torch's pre-1.6 format."""
    if not (isinstance(base, type) and issubclass(base, pickle._Pickler)):
        raise TypeError(f"ember.save: pickle_module's Pickler must derive from the standard library's Python "
                        f"pickler (pickle._Pickler), as dill's does; got {base!r}")

    class TorchPickler(base):  # type: ignore[misc, valid-type]
        def __init__(self, file: BinaryIO, protocol: int, storages: StorageTable, legacy: bool = False) -> None:
            super().__init__(file, protocol)
            self.storages = storages
            self.legacy = legacy

        def save(self, obj: Any, save_persistent_id: bool = True) -> None:
            name = names.global_name(obj)
            if name is None:
                super().save(obj, save_persistent_id)
                return
            memoized = self.memo.get(id(obj))
            if memoized is not None:
                self.write(self.get(memoized[0]))
                return
            self.write(pickle.GLOBAL + f"{name.module}\n{name.name}\n".encode("utf-8"))
            self.memoize(obj)

        def persistent_id(self, obj: Any) -> Any:
            if type(obj) is not StorageRef:
                return None
            pid = ("storage", names.storage_name(obj.dtype), obj.key, obj.location, obj.numel)
            return pid + (None,) if self.legacy else pid

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, Tensor):
                if isinstance(obj, Parameter):
                    return names.REBUILD_PARAMETER, (_TensorData(obj), obj.requires_grad, collections.OrderedDict())
                return self._tensor(obj, obj.requires_grad)
            if type(obj) is _TensorData:
                return self._tensor(obj.tensor, False)
            if type(obj) is Size:
                return names.SIZE, (tuple(obj),)
            if type(obj) is device:
                return names.DEVICE, ((obj.type,) if obj.index is None else (obj.type, obj.index))
            return NotImplemented

        def _tensor(self, t: Tensor, requires_grad: bool) -> tuple:
            ref, offset, size, strides = self.storages.place(t)
            return names.REBUILD_TENSOR_V2, (ref, offset, size, strides, requires_grad, collections.OrderedDict())

    return TorchPickler


DEFAULT_PICKLER = pickler_class(pickle._Pickler)
