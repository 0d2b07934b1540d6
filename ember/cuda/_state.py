"""Whether CUDA can be used, lazy initialisation, and the current device (``torch.cuda``'s device functions).

Nothing here imports numba-cuda at module import: ``import ember`` works without it. ``is_available`` imports
``numba.cuda`` (which creates no CUDA context); ``_lazy_init``, which everything that uses a device calls first,
raises ``CudaUnavailableError`` with install instructions when CUDA cannot be used, and otherwise installs ember's
caching allocator as Numba's memory manager (real hardware) before any context exists.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, NamedTuple

from .._cuda_context import activate, using
from ..kernels.memory import OutOfMemoryError
from ..tensor.device import device as device_type

INSTALL_HINT = (
    'Install GPU support with `pip install "ember[cuda]"` (it brings numba-cuda) on a machine with an NVIDIA GPU '
    "and its CUDA driver; to run CUDA code without a GPU, set NUMBA_ENABLE_CUDASIM=1 (Numba's simulator) before "
    "importing ember."
)


class CudaUnavailableError(RuntimeError, AssertionError):
    """Raised when CUDA is requested but cannot be used. Both a RuntimeError and an AssertionError, so code
    written for torch's "Torch not compiled with CUDA enabled" (AssertionError) or "Found no NVIDIA driver"
    (RuntimeError) catches it."""


_NOT_LOADED = object()
_cuda_module: Any = _NOT_LOADED
_import_error: str = ""
_init_lock = threading.Lock()
_initialized = False
_local = threading.local()


def _numba_cuda() -> Any:
    """``numba.cuda``, or None when numba-cuda cannot be imported (the reason kept for the error message)."""
    global _cuda_module, _import_error
    if _cuda_module is _NOT_LOADED:
        try:
            from numba import cuda

            _cuda_module = cuda
        except Exception as exc:  # noqa: BLE001 - any failure to load means "no CUDA", never a crash
            _cuda_module, _import_error = None, f"{type(exc).__name__}: {exc}"
    return _cuda_module


def is_available() -> bool:
    """Whether CUDA can be used: numba-cuda imports and finds a device (always True under the simulator)."""
    cuda = _numba_cuda()
    if cuda is None:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver reads as "not available"
        return False


def is_simulator() -> bool:
    """Whether CUDA code runs in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    if _numba_cuda() is None:
        return False
    from numba.cuda.core import config

    return bool(config.ENABLE_CUDASIM)


def _unavailable_error() -> CudaUnavailableError:
    if _numba_cuda() is None:
        return CudaUnavailableError(
            f"Torch not compiled with CUDA enabled: ember's CUDA support needs numba-cuda, which could not be "
            f"imported ({_import_error}). {INSTALL_HINT}"
        )
    return CudaUnavailableError(
        f"Found no NVIDIA driver or CUDA device on this system: numba-cuda is installed but reports CUDA as "
        f"unavailable. {INSTALL_HINT}"
    )


def _lazy_init() -> Any:
    """Check CUDA can be used and return ``numba.cuda``; raises ``CudaUnavailableError`` with install help."""
    global _initialized
    if _initialized:
        return _cuda_module
    with _init_lock:
        if not is_available():
            raise _unavailable_error()
        from ..kernels.cuda.allocator import install_plugin  # the CUDA backend (numba-cuda) loads on first use

        install_plugin()  # before ember creates the first CUDA context
        _initialized = True
    return _cuda_module


def storage_type() -> type:
    """``ember.kernels.cuda.DeviceStorage``, the array of CUDA tensors (the CUDA kernels load on first use)."""
    from ..kernels.cuda import DeviceStorage

    return DeviceStorage


def is_initialized() -> bool:
    """Whether ember has initialised CUDA in this process."""
    return _initialized


def device_count() -> int:
    """Number of CUDA devices (0 when CUDA is unavailable)."""
    if not is_available():
        return 0
    return len(_cuda_module.gpus)


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
    _lazy_init()
    return _cuda_module.gpus[_device_index(device)]


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
    gpu = _cuda_module.gpus[index]
    with gpu:
        total = int(_cuda_module.current_context().get_memory_info().total)
        sms = int(gpu.MULTIPROCESSOR_COUNT)
    return _CudaDeviceProperties(get_device_name(index), major, minor, total, sms)


def synchronize(device: Any = None) -> None:
    """Wait until every kernel and copy queued on the device has finished."""
    cuda = _lazy_init()
    with using(_device_index(device)):
        cuda.synchronize()


__all__ = [
    "OutOfMemoryError", "CudaUnavailableError", "INSTALL_HINT", "is_available", "is_simulator", "is_initialized",
    "device_count",
    "current_device", "set_device", "device", "device_of", "get_device_name", "get_device_capability",
    "get_device_properties", "synchronize",
]
