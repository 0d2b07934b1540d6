"""Tensors' elements as host NumPy arrays that keep their sharing: every view of one device buffer becomes the same
view of one host copy of that buffer, so a writer that stores each buffer once (``ember.save``) keeps views as
views for device tensors too. ``root_array`` (the ndarray at the bottom of a chain of host views) is the other
half such a writer needs."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..kernels.common.layout import root_array
from ._dispatch import on_device
from .tensor import Tensor

__all__ = ["HostViews", "root_array"]


class HostViews:
    """Host arrays of tensors' elements; a device buffer is copied to the host once, however many tensors view it."""

    def __init__(self) -> None:
        self._copies: dict[int, tuple[Any, np.ndarray]] = {}  # id(device buffer) -> (the buffer, its host copy)

    def of(self, t: Tensor) -> np.ndarray:
        """``t``'s elements on the host: its own array on the CPU; for device storage, the same view of the host
        copy of its whole buffer."""
        a = t._array
        if not on_device(a):
            return a
        found = self._copies.get(id(a.buffer))
        if found is None:  # the buffer is kept with its copy, so its id() is not reused meanwhile
            found = self._copies[id(a.buffer)] = (a.buffer, a.buffer.copy_to_host())
        item = a.dtype.itemsize
        return np.ndarray(a.shape, a.dtype, buffer=found[1], offset=a.offset * item if a.numel else 0,
                          strides=tuple(s * item for s in a.strides))
