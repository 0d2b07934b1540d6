"""``ember.accelerator``: torch.accelerator's device-agnostic API, over ember's one accelerator, CUDA.

torch names the accelerator its binary was built for; ember decides at run time: CUDA is the accelerator when
``ember.cuda.is_available()`` (an NVIDIA GPU with numba-cuda, or Numba's simulator). Without it ember answers as
torch's CPU build does: no accelerator, ``device_count() == 0``, and whatever needs a device raises torch's
RuntimeError. Everything else delegates to ``ember.cuda``.
"""
from __future__ import annotations

import warnings
from typing import Any

from . import cuda
from .tensor.device import device as _device

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """Whether an accelerator can be used now."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """``device("cuda")`` when CUDA can be used, else None (``check_available`` asks the same question here)."""
    return _device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return cuda.device_count()


def _require() -> None:
    if not cuda.is_available():
        raise RuntimeError(_NONE_AVAILABLE)


def current_device_index() -> int:
    """The index of the current accelerator device of this thread."""
    _require()
    return cuda.current_device()


def _device_index(device: Any, optional: bool) -> int:
    """torch's reading of a device argument: an int is an index; a string or device must name the accelerator,
    with an index unless ``optional`` (then None and no index mean the current device)."""
    if isinstance(device, int):
        return device
    if device is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return current_device_index()
    dev = device if isinstance(device, _device) else _device(device)
    accelerator = current_accelerator()
    if accelerator is None:
        raise RuntimeError("Accelerator expected")
    if dev.type != accelerator.type:
        raise ValueError(f"{dev.type} doesn't match the current accelerator {accelerator}.")
    if dev.index is None:
        return _device_index(None, optional)
    return dev.index


def set_device_index(device: Any, /) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type with an index) current for this thread;
    a negative index changes nothing."""
    index = _device_index(device, optional=False)
    if index < 0:
        return
    _require()
    cuda.set_device(index)


def current_device_idx() -> int:
    """Deprecated alias of ``current_device_index`` (torch's FutureWarning)."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device: Any, /) -> None:
    """Deprecated alias of ``set_device_index`` (torch's FutureWarning)."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:
    """``with ember.accelerator.device_index(i):`` makes device ``i`` current inside the block and restores the
    previous one after; None changes nothing."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def synchronize(device: Any = None, /) -> None:
    """Wait for everything queued on the device (None: the current one) to finish."""
    index = _device_index(device, optional=True)
    _require()
    cuda.synchronize(index)


def current_stream(device: Any = None, /) -> cuda.Stream:
    """The current stream of the device (None: the current one)."""
    index = _device_index(device, optional=True)
    _require()
    return cuda.current_stream(index)


def set_stream(stream: cuda.Stream) -> None:
    """Make ``stream`` current, and its device the current device."""
    _require()
    cuda.set_device(stream.device_index)
    cuda.set_stream(stream)


def empty_cache() -> None:
    """Give the caching allocator's unused blocks back to the device."""
    _require()
    cuda.empty_cache()


def _allocator_query(query: Any, device_index: Any) -> Any:
    """``query`` of the caching allocator for a device argument (None: the current device)."""
    _require()
    return query(_device_index(device_index, optional=True))


def memory_stats(device_index: Any = None, /) -> dict[str, int]:
    """The caching allocator's statistics of the device (None: the current one)."""
    return _allocator_query(cuda.memory_stats, device_index)


def memory_allocated(device_index: Any = None, /) -> int:
    """Bytes held by tensors on the device now."""
    return _allocator_query(cuda.memory_allocated, device_index)


def max_memory_allocated(device_index: Any = None, /) -> int:
    """The peak of ``memory_allocated`` since the start or the last ``reset_peak_memory_stats``."""
    return _allocator_query(cuda.max_memory_allocated, device_index)


def memory_reserved(device_index: Any = None, /) -> int:
    """Bytes the caching allocator holds on the device now (in use or cached)."""
    return _allocator_query(cuda.memory_reserved, device_index)


def max_memory_reserved(device_index: Any = None, /) -> int:
    """The peak of ``memory_reserved`` since the start or the last ``reset_peak_memory_stats``."""
    return _allocator_query(cuda.max_memory_reserved, device_index)


def reset_peak_memory_stats(device_index: Any = None, /) -> None:
    """Start the peak statistics of the device over from the current values."""
    _allocator_query(cuda.reset_peak_memory_stats, device_index)


__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "device_index", "synchronize", "current_stream", "set_stream",
           "empty_cache", "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats"]
