"""``ember.cuda``: torch.cuda's API over numba-cuda.

Importing this package never needs numba-cuda or a GPU: ``is_available()`` is then False, the memory counters
read zero, seeding is remembered, and anything that needs a device raises ``CudaUnavailableError`` (a
RuntimeError and an AssertionError) explaining how to install GPU support (``pip install "ember[cuda]"`` plus an
NVIDIA driver). Under Numba's simulator (``NUMBA_ENABLE_CUDASIM=1``) there is one simulated device.
"""
from __future__ import annotations

from ._state import CudaUnavailableError, OutOfMemoryError, _lazy_init, current_device, device, device_count, \
    device_of, get_device_capability, get_device_name, get_device_properties, is_available, is_initialized, \
    is_simulator, set_device, synchronize
from .memory import empty_cache, max_memory_allocated, max_memory_cached, max_memory_reserved, memory_allocated, \
    memory_cached, memory_reserved, memory_stats, memory_summary, reset_max_memory_allocated, \
    reset_peak_memory_stats
from .random import get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed, seed_all, \
    set_rng_state, set_rng_state_all
from .streams import Event, Stream, current_stream, default_stream, set_stream, stream
from ..tensor.legacy_types import CUDA_TYPES as _LEGACY_TYPES

globals().update(_LEGACY_TYPES)  # torch.cuda.FloatTensor & co. (legacy tensor types on CUDA)
from . import amp  # noqa: E402  (torch.cuda.amp's deprecated autocast and GradScaler)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 tensors work on CUDA: whenever CUDA does (ember computes them in float32 on any GPU)."""
    return is_available()


def init() -> None:
    """Initialise CUDA now (it happens lazily otherwise); raises if CUDA is unavailable."""
    _lazy_init()


__all__ = [
    "CudaUnavailableError", "OutOfMemoryError", "init", "is_available", "is_initialized", "is_simulator",
    "device_count", "current_device", "set_device", "device", "device_of", "get_device_name",
    "get_device_capability", "get_device_properties", "synchronize",
    "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state",
    "get_rng_state_all", "set_rng_state_all",
    "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "reset_peak_memory_stats", "reset_max_memory_allocated", "empty_cache",
    "memory_summary", "amp", "is_bf16_supported", *_LEGACY_TYPES,
]
