"""Kernel cache files named by their place inside the ember package, not by where ember is installed.

Numba's disk cache puts a function's files in a folder named by a digest of its source file's absolute folder, so
the same ember installed into another folder or a new virtual environment recompiles every kernel (minutes on a
first run). Its freshness stamp is already a digest of the source text; only the folder name is
location-dependent. The locator here names the folder by the source file's path relative to the folder that holds
the ``ember`` package (``ember/kernels/cpu`` -> ``ember_kernels_cpu``), so identical sources share compiled
kernels wherever they are installed; the cache root itself is per user and per version of the shared kernel
definitions (``ember._runtime.kernel_cache_dir``). It is registered first among Numba's locators, for the CPU
backend when ``ember.kernels`` loads and for the CUDA backend when that loads (numba-cuda keeps its own copy of
the caching machinery).
"""
from __future__ import annotations

import os
from typing import Any

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def relative_cache_subpath(py_file: str) -> str | None:
    """The cache folder name for a source file inside the ember package, or None for a file outside it."""
    folder = os.path.dirname(os.path.abspath(py_file))
    relative = os.path.relpath(folder, _PACKAGE_PARENT)
    if relative.split(os.sep)[0] != "ember":
        return None
    return relative.replace(os.sep, "_")


def location_independent(base: type) -> type:
    """A subclass of Numba's user-provided-folder locator ``base`` that serves only ember's own source files."""

    class EmberCacheLocator(base):
        @classmethod
        def get_suitable_cache_subpath(cls, py_file: str) -> str:
            return relative_cache_subpath(py_file) or super().get_suitable_cache_subpath(py_file)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if relative_cache_subpath(py_file) is None:
                return None  # not ember's: Numba's own locators decide
            return super().from_function(py_func, py_file)

    return EmberCacheLocator


def register(cache_impl: type, base: type) -> None:
    """Put ember's locator first in ``cache_impl``'s list (once)."""
    if not any(getattr(c, "__name__", "") == "EmberCacheLocator" for c in cache_impl._locator_classes):
        cache_impl._locator_classes.insert(0, location_independent(base))


def register_cuda() -> None:
    """The same for numba-cuda's machinery (absent under the simulator, which caches nothing)."""
    from numba.cuda.core.caching import _UserProvidedCacheLocator

    try:
        from numba.cuda.dispatcher import CUDACacheImpl
    except ImportError:  # the simulator's dispatcher
        return
    register(CUDACacheImpl, _UserProvidedCacheLocator)
