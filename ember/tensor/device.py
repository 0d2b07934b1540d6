"""``ember.device``: where a tensor's storage lives, and the default device creation functions use.

The default device is per thread, as in torch: ``ember.set_default_device`` sets it for the calling thread and
``with ember.device("cuda"):`` changes it inside the block (a new thread starts on the CPU). The device type and
that per-thread default are ``ember._cuda_runtime.device``'s (the CUDA runtime reads and returns devices); this
module normalises ``device=`` arguments and places arrays on devices.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._cuda_context import activate
from .._cuda_runtime.availability import _lazy_init, device_count, storage_type
from .._cuda_runtime.device import defaults, device
from .._cuda_runtime.gpus import current_device


def set_default(value: Any) -> None:
    """Make ``value`` (None: the CPU) this thread's default device. Checked for a valid name only: an unusable
    device (CUDA without a GPU) raises when a tensor is created there, as in torch."""
    defaults.device = None if value is None else device(value)


def default_device() -> "device":
    """This thread's default device, with the current CUDA device's index when it names CUDA without one."""
    return factory_device(None)


CPU = device("cpu")
_CUDA_DEVICES: dict[int, device] = {}


def cuda_device(index: int) -> device:
    """The (shared) ``device("cuda", index)`` object."""
    found = _CUDA_DEVICES.get(index)
    if found is None:
        found = _CUDA_DEVICES[index] = device("cuda", index)
    return found


def as_device(value: Any) -> device:
    """Normalise a ``device=`` argument (None is the CPU); a CUDA request initialises CUDA or explains why not."""
    if value is None:
        return CPU
    if value is CPU or (type(value) is device and _CUDA_DEVICES.get(value.index) is value):
        return value  # already normalised (a tensor's own device)
    dev = value if isinstance(value, device) else device(value)
    if dev.type == "cuda":
        _lazy_init()  # without numba-cuda or a GPU: the error that says how to install GPU support
        index = current_device() if dev.index is None else dev.index
        if not 0 <= index < device_count():
            raise RuntimeError(f"CUDA error: invalid device ordinal (device '{dev}' requested, "
                               f"{device_count()} device(s) available)")
        return cuda_device(index)
    if dev.type != "cpu":
        raise RuntimeError(f"ember: device '{dev}' is not available; ember runs tensors on the CPU and CUDA")
    return CPU


def factory_device(value: Any, fallback: device = CPU) -> device:
    """A creation function's ``device=``: ``value``, else this thread's default device, else ``fallback``."""
    if value is None:
        value = defaults.device
        if value is None:
            return fallback
    return as_device(value)


def array_device(array: Any) -> device:
    """Where an array lives: the CPU for a NumPy array, else the CUDA device of device storage."""
    return CPU if type(array) is np.ndarray else cuda_device(array.device_index)


def place(array: Any, dev: device, non_blocking: bool = False) -> Any:
    """``array`` on ``dev`` (copied across devices, returned as is when already there). ``non_blocking`` queues a
    copy from pinned host memory on the current stream instead of waiting for it."""
    if dev.type == "cpu":
        return array if type(array) is np.ndarray else array.to_numpy()
    if type(array) is not np.ndarray:
        return array.on_device(dev.index)
    activate(dev.index)
    from .pinned import copy_to_device_async, is_pinned_array  # not at the top: pinned.py imports the tensor core

    if non_blocking and array.flags.c_contiguous and is_pinned_array(array):
        return copy_to_device_async(array)
    return storage_type().from_numpy(array)


def allocate(shape: tuple[int, ...], dtype: np.dtype, dev: device, fill: Any = None) -> Any:
    """A new C-contiguous array on ``dev``, filled with ``fill`` unless it is None."""
    if dev.type == "cpu":
        return np.empty(shape, dtype=dtype) if fill is None else np.full(shape, fill, dtype=dtype)
    activate(dev.index)
    array = storage_type().empty(shape, dtype)
    if fill is not None:
        array.fill(fill)
    return array
