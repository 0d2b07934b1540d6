"""Page-locked ("pinned") host memory: torch's ``Tensor.pin_memory``/``is_pinned`` and non_blocking copies.

A pinned tensor is an ordinary CPU tensor whose NumPy array lives in memory from ``numba.cuda.pinned_array``,
which the GPU can read by DMA; so a host-to-device copy from it can be queued on the current stream and return
at once (``.to("cuda", non_blocking=True)``, ``.cuda(non_blocking=True)``). The registry of pinned buffers is
weak: a buffer stops counting when NumPy frees it. Until an asynchronous copy has finished, its source array is
kept alive here (torch's caching host allocator does the same). Under Numba's simulator pinned arrays are plain
arrays and every copy is synchronous, so the same code runs there.
"""
from __future__ import annotations

import collections
import math
import weakref
from typing import Any

import numpy as np

from .._cuda_runtime.availability import _lazy_init, is_simulator, storage_type
from .._cuda_runtime.streams import current_stream
from ..autograd.function import Function
from ..kernels.common.layout import root_array
from .tensor import Tensor

_PINNED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_IN_FLIGHT: collections.deque = collections.deque()  # (event, host array) of copies that may still be running


def is_pinned_array(array: Any) -> bool:
    """Whether ``array`` is a host array in pinned memory (any view of a pinned buffer counts)."""
    if type(array) is not np.ndarray:
        return False
    root = root_array(array)
    return _PINNED.get(id(root)) is root


def pinned_copy(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` (same shape and dtype, C order) in pinned memory; needs a usable CUDA device."""
    cuda = _lazy_init()
    out = cuda.pinned_array(array.shape, array.dtype) if math.prod(array.shape) else np.empty(array.shape, array.dtype)
    np.copyto(out, array)
    _PINNED[id(out)] = out
    return out


def copy_to_device_async(array: np.ndarray) -> Any:
    """A new device storage filled from the pinned, C-contiguous ``array`` by a copy queued on the current stream."""
    storage = storage_type().empty(array.shape, array.dtype)
    if storage.numel:
        stream = current_stream(storage.device_index).numba_stream
        storage.buffer.copy_to_device(array.reshape(-1), stream=stream)
        _keep_until_copied(stream, array)
    return storage


def _keep_until_copied(stream: Any, array: np.ndarray) -> None:
    """Hold ``array`` until the copy queued on ``stream`` is done (the simulator copies at once: nothing to hold)."""
    if is_simulator():
        return
    while _IN_FLIGHT and _IN_FLIGHT[0][0].query():
        _IN_FLIGHT.popleft()
    event = _lazy_init().event(timing=False)
    event.record(stream)
    _IN_FLIGHT.append((event, array))


class PinMemory(Function):
    """A pinned copy; the gradient passes through unchanged (torch's ``pin_memory`` is differentiable too)."""

    @staticmethod
    def forward(ctx, x):
        return pinned_copy(x._array)

    @staticmethod
    def backward(ctx, g):
        return g


def pin_memory(input: Tensor, device: Any = None) -> Tensor:
    """``input`` in pinned host memory (itself when it already is); only CPU tensors can be pinned."""
    if input.is_cuda:
        raise RuntimeError(f"cannot pin '{input.type()}' only dense CPU tensors can be pinned")
    return input if is_pinned_array(input._array) else PinMemory.apply(input)


def is_pinned(input: Tensor, device: Any = None) -> bool:
    """Whether ``input`` lives in pinned host memory."""
    return is_pinned_array(input._array)
