"""The CUDA devices: which one is current on this thread, their names and properties, waiting for their work
(``torch.cuda``'s device functions).

The current device is what "cuda" without an index means; it is not the device whose Numba context is current
(``ember._cuda_context``), which follows the data an op works on.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, NamedTuple

from .._cuda_context import activate, using
from .availability import _lazy_init, device_count, is_simulator
from .device import device as device_type

_local = threading.local()


def _device_index(device: Any = None, optional: bool = True) -> int:
    """Normalise an int, ``"cuda:N"``, ``ember.device`` or None (the current device) to a device index."""
    if device is None:
        if not optional:
            raise ValueError("Expected a cuda device, but got: None")
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        dev = device if isinstance(device, device_type) else device_type(device)
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        index = current_device() if dev.index is None else dev.index
    count = device_count()
    if not 0 <= index < count:
        _lazy_init()
        raise RuntimeError(f"CUDA error: invalid device ordinal {index} (this machine has {count} device(s))")
    return index


def current_device() -> int:
    """Index of the current CUDA device of this thread."""
    _lazy_init()
    return getattr(_local, "device", 0)


def set_device(device: Any) -> None:
    """Make ``device`` current for this thread (a negative index is ignored, as in torch)."""
    if isinstance(device, int) and device < 0:
        return
    index = _device_index(device)
    activate(index)
    _local.device = index


class device(contextlib.ContextDecorator):
    """``with ember.cuda.device(1): ...`` makes a device current inside the block (None or -1: no change)."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else device
        self.prev_idx = -1

    def __enter__(self) -> "device":
        if self.idx == -1:
            return self
        self.prev_idx = current_device()
        set_device(self.idx)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.prev_idx != -1:
            set_device(self.prev_idx)


def device_of(obj: Any) -> device:
    """A ``device`` context for the device of ``obj`` (a tensor); no change for CPU objects."""
    dev = getattr(obj, "device", None)
    is_cuda = getattr(dev, "type", None) == "cuda"
    return device(_device_index(dev) if is_cuda else -1)


def _gpu(device: Any) -> Any:
    return _lazy_init().gpus[_device_index(device)]


def get_device_name(device: Any = None) -> str:
    """The device's marketing name ("Numba CUDA simulator" under the simulator)."""
    if is_simulator():
        _device_index(device)
        return "Numba CUDA simulator"
    name = _gpu(device).name
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The device's compute capability ``(major, minor)``."""
    return tuple(_gpu(device).compute_capability)


class _CudaDeviceProperties(NamedTuple):
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int


def get_device_properties(device: Any = None) -> _CudaDeviceProperties:
    """Name, compute capability, total memory in bytes (0 under the simulator) and SM count of a device."""
    index = _device_index(device)
    major, minor = get_device_capability(index)
    if is_simulator():
        return _CudaDeviceProperties(get_device_name(index), major, minor, 0, 1)
    cuda = _lazy_init()
    gpu = cuda.gpus[index]
    with gpu:
        total = int(cuda.current_context().get_memory_info().total)
        sms = int(gpu.MULTIPROCESSOR_COUNT)
    return _CudaDeviceProperties(get_device_name(index), major, minor, total, sms)


def synchronize(device: Any = None) -> None:
    """Wait until every kernel and copy queued on the device has finished."""
    cuda = _lazy_init()
    with using(_device_index(device)):
        cuda.synchronize()


__all__ = ["current_device", "set_device", "device", "device_of", "get_device_name", "get_device_capability",
           "get_device_properties", "synchronize"]
