"""Turning a checkpoint's persistent ids into storages, for both of torch's formats.

A persistent id is ``("storage", <storage type>, key, location, numel)`` (torch's pre-1.6 format adds a view
description, which must be None: storage views were retired before that format was). The id is checked before any
bytes are read or allocated; each key is read once, so every tensor naming it shares the storage.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from .files import CorruptFile
from .placement import Placement
from .rebuild import LoadedStorage
from .torch_globals import StorageType


def storage_loader(read: Callable[[str, int], np.ndarray], place: Placement,
                   big_endian: bool) -> Callable[[Any], LoadedStorage]:
    """``persistent_load`` for an unpickler: ``read(key, nbytes)`` gives a storage's bytes."""
    loaded: dict[str, LoadedStorage] = {}

    def persistent_load(pid: Any) -> LoadedStorage:
        if (not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] != "storage"
                or (len(pid) == 6 and pid[5] is not None)):
            raise CorruptFile(f"unsupported persistent id in the pickle: {pid!r}")
        _, storage_type, key, location, numel = pid[:5]
        if (not isinstance(storage_type, StorageType) or not isinstance(key, str) or not isinstance(location, str)
                or not isinstance(numel, numbers.Integral) or numel < 0):
            raise CorruptFile(f"bad storage id in the pickle: {pid!r}")
        found = loaded.get(key)
        if found is None:
            dt = storage_type.dtype()
            data = read(key, int(numel) * np.dtype(dt.np).itemsize)
            found = loaded[key] = LoadedStorage(data, dt, location, place, big_endian)
        return found

    return persistent_load
