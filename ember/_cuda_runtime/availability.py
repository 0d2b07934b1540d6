"""Whether CUDA can be used, and its lazy initialisation.

Nothing here imports numba-cuda at module import: ``import ember`` works without it. ``is_available`` imports
``numba.cuda`` (which creates no CUDA context); ``_lazy_init``, which everything that uses a device calls first,
raises ``CudaUnavailableError`` with install instructions when CUDA cannot be used, and otherwise installs ember's
caching allocator as Numba's memory manager (real hardware) before any context exists.
"""
from __future__ import annotations

import threading
from typing import Any

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


__all__ = ["CudaUnavailableError", "INSTALL_HINT", "device_count", "is_available", "is_initialized", "is_simulator",
           "storage_type"]
