"""ember's caching allocator for CUDA device memory.

A training loop allocates the same sizes step after step; asking the driver (``cuMemAlloc``/``cuMemFree``) each
time is slow and synchronising. ``CachingPool`` keeps freed blocks in per-size free lists and hands them out
again. It is plain Python bookkeeping over a *backing* (two callables that really allocate and free), so it is
tested directly on any machine:

- every request is rounded up to a size class (``size_class``): multiples of 512 bytes up to 1 MiB, then the
  next of 1, 1.25, 1.5 or 1.75 times a power of two (at most 25% waste, few distinct classes);
- a freed block goes to its class's free list and the next request of that class reuses it (a cache hit);
- counters follow torch's: allocated (blocks in use), reserved (blocks held from the driver, in use or cached),
  their peaks, and request/hit/free counts; ``release_cached`` (``ember.cuda.empty_cache``) returns the cached
  blocks to the driver;
- when the backing runs out of memory the pool empties its cache and tries once more, then raises
  ``OutOfMemoryError``.

Two front ends use one pool per device:

- on a real GPU, ``plugin_class()`` builds a Numba External Memory Management plugin (``set_memory_manager``), a
  thin adapter whose ``memalloc`` takes a block from the pool and whose finalizer gives it back; every Numba device
  allocation (``cuda.device_array``, ``to_device``, ...) then goes through the pool. ``install_plugin`` (called
  by ``ember.cuda._lazy_init``) sets it before ember creates the first CUDA context;
- Numba's CUDA simulator has no EMM plugin support (device arrays are plain NumPy arrays), so ``device_empty``
  there takes a pool block backed by host bytes and releases it when the last view of it is gone. On hardware
  ``device_empty`` is ``cuda.device_array`` (already pooled by the plugin). Either way the counters feed
  ``ember.cuda.memory_allocated`` and friends.

Blocks are reused in allocation order on one stream: a block freed while a kernel on another stream still reads
it is not protected (torch's ``record_stream`` is not implemented).
"""
from __future__ import annotations

import functools
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..memory import OutOfMemoryError, format_bytes  # defined there so `except` works without numba-cuda

SMALL_LIMIT = 1 << 20  # requests up to 1 MiB round to multiples of 512 bytes
SMALL_STEP = 512


def size_class(nbytes: int) -> int:
    """The block size a request of ``nbytes`` is served from (0 for an empty request)."""
    if nbytes <= 0:
        return 0
    if nbytes <= SMALL_LIMIT:
        return -(-nbytes // SMALL_STEP) * SMALL_STEP
    power = 1 << (nbytes - 1).bit_length() - 1  # largest power of two below nbytes
    quarter = power // 4
    return power + -(-(nbytes - power) // quarter) * quarter


@dataclass(eq=False)
class Block:
    """One piece of device memory the pool owns: ``handle`` is whatever the backing's alloc returned."""

    size: int
    handle: Any
    requested: int = 0


class CachingPool:
    """Size-class free lists and torch-style counters over a ``backing_alloc(size) -> handle`` /
    ``backing_free(handle)`` pair. ``backing_alloc`` raises ``OutOfMemoryError`` when the device is full."""

    def __init__(self, backing_alloc: Callable[[int], Any], backing_free: Callable[[Any], None]) -> None:
        self._alloc = backing_alloc
        self._free = backing_free
        self._lock = threading.RLock()  # finalizers may free from any thread, or re-enter during allocate
        self._free_lists: dict[int, list[Block]] = {}
        self.reset_counters()

    def reset_counters(self) -> None:
        """Zero every counter (the pool must hold no blocks)."""
        self.allocated = self.peak_allocated = 0
        self.reserved = self.peak_reserved = 0
        self.requested = self.peak_requested = 0
        self.num_allocs = self.num_frees = self.num_cache_hits = 0
        self.num_driver_allocs = self.num_driver_frees = self.num_oom_retries = 0
        self.active_blocks = 0

    def allocate(self, nbytes: int) -> Block:
        """A block of at least ``nbytes`` bytes, from the cache when one of its size class is free."""
        size = size_class(nbytes)
        with self._lock:
            cached = self._free_lists.get(size)
            if cached:
                block = cached.pop()
                self.num_cache_hits += 1
            else:
                block = Block(size, self._driver_alloc(size))
            block.requested = nbytes
            self.num_allocs += 1
            self.active_blocks += 1
            self.allocated += size
            self.requested += nbytes
            self.peak_allocated = max(self.peak_allocated, self.allocated)
            self.peak_requested = max(self.peak_requested, self.requested)
            return block

    def free(self, block: Block) -> None:
        """Give ``block`` back: it joins its size class's free list (the driver keeps the memory)."""
        with self._lock:
            self.num_frees += 1
            self.active_blocks -= 1
            self.allocated -= block.size
            self.requested -= block.requested
            self._free_lists.setdefault(block.size, []).append(block)

    def release_cached(self) -> int:
        """Return every cached (free) block to the driver; the number of bytes released."""
        with self._lock:
            released = 0
            for blocks in self._free_lists.values():
                for block in blocks:
                    self._free(block.handle)
                    released += block.size
                self.num_driver_frees += len(blocks)
            self._free_lists.clear()
            self.reserved -= released
            return released

    def cached_bytes(self) -> int:
        """Bytes held in free lists, ready for reuse."""
        with self._lock:
            return sum(b.size for blocks in self._free_lists.values() for b in blocks)

    def reset_peaks(self) -> None:
        """Peaks restart from the current values (``reset_peak_memory_stats``)."""
        with self._lock:
            self.peak_allocated, self.peak_reserved = self.allocated, self.reserved
            self.peak_requested = self.requested

    def stats(self) -> dict[str, int]:
        """torch-style ``memory_stats`` keys for this pool."""
        with self._lock:
            return {
                "allocated_bytes.all.current": self.allocated,
                "allocated_bytes.all.peak": self.peak_allocated,
                "reserved_bytes.all.current": self.reserved,
                "reserved_bytes.all.peak": self.peak_reserved,
                "requested_bytes.all.current": self.requested,
                "requested_bytes.all.peak": self.peak_requested,
                "inactive_split_bytes.all.current": self.reserved - self.allocated,
                "active.all.current": self.active_blocks,
                "allocation.all.allocated": self.num_allocs,
                "allocation.all.freed": self.num_frees,
                "num_cache_hits": self.num_cache_hits,
                "num_device_alloc": self.num_driver_allocs,
                "num_device_free": self.num_driver_frees,
                "num_alloc_retries": self.num_oom_retries,
            }

    def _driver_alloc(self, size: int) -> Any:
        try:
            handle = self._alloc(size)
        except OutOfMemoryError:
            self.num_oom_retries += 1
            self.release_cached()
            try:
                handle = self._alloc(size)
            except OutOfMemoryError as exc:
                raise OutOfMemoryError(
                    f"CUDA out of memory. Tried to allocate {format_bytes(size)}; ember's caching allocator holds "
                    f"{format_bytes(self.allocated)} allocated and {format_bytes(self.reserved)} reserved "
                    "(cache emptied)"
                ) from exc
        self.num_driver_allocs += 1
        self.reserved += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return handle


# ---------------------------------------------------------------------------------------------- pools per device
_pools: dict[int, CachingPool] = {}
_pools_lock = threading.Lock()


def existing_pools() -> dict[int, CachingPool]:
    """The pools created so far, by device index (none before the first CUDA allocation)."""
    return dict(_pools)


def pool(device_index: int = 0) -> CachingPool:
    """The pool of one device, created on first use with the backing that fits this machine."""
    found = _pools.get(device_index)
    if found is not None:
        return found
    with _pools_lock:
        if device_index not in _pools:
            if _simulated():
                _pools[device_index] = CachingPool(_host_bytes, _drop)
            else:
                _pools[device_index] = CachingPool(*_driver_backing())
        return _pools[device_index]


def _simulated() -> bool:
    from numba.cuda.core import config

    return bool(config.ENABLE_CUDASIM)


def _host_bytes(size: int) -> np.ndarray:
    return np.empty(size, dtype=np.uint8)


def _drop(handle: Any) -> None:
    """Simulated device memory is a NumPy array: the garbage collector frees it."""


def _driver_backing() -> tuple[Callable[[int], Any], Callable[[Any], None]]:
    from numba.cuda.cudadrv import driver as drv
    from numba.cuda.cudadrv.driver import CudaAPIError, binding

    def alloc(size: int) -> Any:
        try:
            return drv.driver.cuMemAlloc(size)
        except CudaAPIError as exc:
            if exc.code == binding.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
                raise OutOfMemoryError(str(exc)) from exc
            raise

    return alloc, drv.driver.cuMemFree


# ------------------------------------------------------------------------------------------------- front ends
def device_empty(count: int, dtype: Any, device_index: int = 0) -> Any:
    """An uninitialised flat device array of ``count`` elements of ``dtype``, served by the caching pool."""
    from numba import cuda

    dtype = np.dtype(dtype)
    if count < 0:
        raise ValueError(f"device_empty: negative element count {count}")
    if not _simulated() or count == 0:
        return cuda.device_array(count, dtype=dtype)
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    nbytes = count * dtype.itemsize
    owner = pool(device_index)
    block = owner.allocate(nbytes)
    # frombuffer over a memoryview gives an array whose views all keep *it* (not the block) alive, so the
    # finalizer below runs only when the last view is gone.
    flat = np.frombuffer(memoryview(block.handle[:nbytes]), dtype=dtype, count=count)
    weakref.finalize(flat, owner.free, block)
    return FakeCUDAArray(flat)


_SUPPORTED_INTERFACE_VERSION = 1


@functools.lru_cache(maxsize=None)
def plugin_class() -> type:
    """The Numba EMM plugin class (real CUDA driver only): a thin adapter from ``memalloc`` to the device's pool."""
    from numba.cuda.cudadrv import driver as drv

    class EmberCachingMemoryManager(drv.GetIpcHandleMixin, drv.HostOnlyCUDAMemoryManager):
        """Numba device allocations served by ember's ``CachingPool`` (host/pinned memory stays Numba's)."""

        def initialize(self) -> None:
            self._pool = pool(self.context.device.id)

        def memalloc(self, size: int) -> Any:
            block = self._pool.allocate(size)
            release = functools.partial(self._pool.free, block)  # must not reference the pointer itself
            return drv.MemoryPointer(weakref.proxy(self.context), block.handle, size, finalizer=release)

        def get_memory_info(self) -> Any:
            free, total = drv.driver.cuMemGetInfo()
            return drv.MemoryInfo(free=free, total=total)

        def reset(self) -> None:
            super().reset()
            self._pool.release_cached()

        @property
        def interface_version(self) -> int:
            return _SUPPORTED_INTERFACE_VERSION

    return EmberCachingMemoryManager


def install_plugin() -> bool:
    """Make ember's pool Numba's device memory manager, unless the simulator runs, the user chose another
    manager (``NUMBA_CUDA_MEMORY_MANAGER``), one is already active, or ``EMBER_NO_CUDA_MEMORY_CACHING=1``.
    Must run before the first CUDA context is created; returns whether the plugin is in use."""
    import os

    if _simulated() or os.environ.get("EMBER_NO_CUDA_MEMORY_CACHING", "0") not in ("", "0"):
        return False
    from numba.cuda.core import config
    from numba.cuda.cudadrv import driver as drv

    cls = plugin_class()
    current = getattr(drv, "_memory_manager", None)
    if current is cls:
        return True
    if current is not None or config.CUDA_MEMORY_MANAGER != "default":
        return False
    drv.set_memory_manager(cls)
    return True


__all__ = [
    "Block", "CachingPool", "OutOfMemoryError", "size_class", "pool", "existing_pools", "device_empty",
    "plugin_class", "install_plugin",
]
