"""``ember.device``: where a tensor's storage lives, and the default device creation functions use.

The default device is per thread, as in torch: ``ember.set_default_device`` sets it for the calling thread and
``with ember.device("cuda"):`` changes it inside the block (a new thread starts on the CPU).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .._cuda_context import activate


class device:
    """A device such as ``device("cpu")`` or ``device("cuda", 0)``; compares equal to its string form."""

    __slots__ = ("type", "index", "_hash")  # the hash is kept: every recorded op hashes its outputs' device

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, device):
            self.type, self.index, self._hash = type.type, type.index, type._hash
            return
        if isinstance(type, int):  # torch's "index of the current accelerator": ember's accelerator is CUDA
            _require_accelerator()
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or int, got {type.__class__.__name__}")
        name, _, idx = type.partition(":")
        if name not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}"
            )
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        self.type = name
        self.index = index
        self._hash = hash((name, index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self) -> "device":
        """Make this the default device of creation functions until the block ends (as torch's device does)."""
        _defaults.stack.append(_defaults.device)
        _defaults.device = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _defaults.device = _defaults.stack.pop()


def _require_accelerator() -> None:
    from .. import cuda  # not at the top: ember.cuda imports the tensor layer

    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


class _Defaults(threading.local):
    """Per thread: the default device of creation functions (None: the CPU) and those ``with device`` replaced."""

    device: "device | None" = None

    def __init__(self) -> None:
        self.stack: list = []


_defaults = _Defaults()


def set_default(value: Any) -> None:
    """Make ``value`` (None: the CPU) this thread's default device. Checked for a valid name only: an unusable
    device (CUDA without a GPU) raises when a tensor is created there, as in torch."""
    _defaults.device = None if value is None else device(value)


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
        from .. import cuda  # not at the top: ember.cuda imports the tensor layer

        cuda._lazy_init()  # without numba-cuda or a GPU: the error that says how to install GPU support
        index = cuda.current_device() if dev.index is None else dev.index
        if not 0 <= index < cuda.device_count():
            raise RuntimeError(f"CUDA error: invalid device ordinal (device '{dev}' requested, "
                               f"{cuda.device_count()} device(s) available)")
        return cuda_device(index)
    if dev.type != "cpu":
        raise RuntimeError(f"ember: device '{dev}' is not available; ember runs tensors on the CPU and CUDA")
    return CPU


def factory_device(value: Any, fallback: device = CPU) -> device:
    """A creation function's ``device=``: ``value``, else this thread's default device, else ``fallback``."""
    if value is None:
        value = _defaults.device
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
    from ..cuda._state import storage_type  # not at the top: ember.cuda imports the tensor layer

    return storage_type().from_numpy(array)


def allocate(shape: tuple[int, ...], dtype: np.dtype, dev: device, fill: Any = None) -> Any:
    """A new C-contiguous array on ``dev``, filled with ``fill`` unless it is None."""
    if dev.type == "cpu":
        return np.empty(shape, dtype=dtype) if fill is None else np.full(shape, fill, dtype=dtype)
    from ..cuda._state import storage_type  # not at the top: ember.cuda imports the tensor layer

    activate(dev.index)
    array = storage_type().empty(shape, dtype)
    if fill is not None:
        array.fill(fill)
    return array
