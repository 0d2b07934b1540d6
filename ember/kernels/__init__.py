"""The kernels: arrays and numbers in, arrays out; nothing of Tensor or autograd (see docs/architecture.md).

``contract`` says what a backend provides; ``cpu`` (Numba njit) and ``cuda`` (numba.cuda) are the backends, and
``common`` holds the definitions both compile (they import it, never each other); ``memory`` is what the device
allocator raises and prints, importable without numba-cuda. Kernel code imports only kernel code and ember's
leaf modules (``opcodes``, ``_determinism``, ``_cuda_context``, ``_matmul_precision``, ``_runtime``).
"""
from numba.core.caching import CacheImpl as _CacheImpl, UserProvidedCacheLocator as _UserProvidedCacheLocator

from .cache_locator import register as _register_cache_locator

_register_cache_locator(_CacheImpl, _UserProvidedCacheLocator)  # before any kernel is defined
