"""Memory statistics and cache control (``torch.cuda.memory_allocated``, ``empty_cache``, ``memory_summary``, ...).

The numbers come from ember's caching allocator (``ember.kernels.cuda.allocator``); before the first CUDA
allocation, or without CUDA, they are all zero, as in torch. Nothing here initialises CUDA or imports the CUDA
kernels: the allocator's pools are read only if CUDA use has already loaded it (``format_bytes`` is
``ember.kernels.memory``'s, which needs no CUDA).
"""
from __future__ import annotations

import sys
from typing import Any

from ..kernels.memory import format_bytes
from ._state import _device_index


def _pools() -> dict[int, Any]:
    allocator = sys.modules.get("ember.kernels.cuda.allocator")
    return {} if allocator is None else allocator.existing_pools()


def _pool(device: Any) -> Any:
    pools = _pools()
    if not pools:
        return None
    return pools.get(_device_index(device))


def memory_stats(device: Any = None) -> dict[str, int]:
    """torch-style counters of the device's caching allocator (an empty dict before any allocation)."""
    found = _pool(device)
    return {} if found is None else dict(sorted(found.stats().items()))


def _stat(device: Any, key: str) -> int:
    return memory_stats(device).get(key, 0)


def memory_allocated(device: Any = None) -> int:
    """Bytes in device blocks currently in use by tensors (rounded to the allocator's size classes)."""
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device: Any = None) -> int:
    """Peak of ``memory_allocated`` since the start or the last ``reset_peak_memory_stats``."""
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device: Any = None) -> int:
    """Bytes the allocator holds from the driver: in use plus cached for reuse."""
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device: Any = None) -> int:
    """Peak of ``memory_reserved`` since the start or the last ``reset_peak_memory_stats``."""
    return _stat(device, "reserved_bytes.all.peak")


memory_cached = memory_reserved  # torch's old names
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peak counters from the current values."""
    found = _pool(device)
    if found is not None:
        found.reset_peaks()


def reset_max_memory_allocated(device: Any = None) -> None:
    """torch's older spelling of ``reset_peak_memory_stats``."""
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Return every cached (unused) block of every device to the driver; memory in use is untouched."""
    for found in _pools().values():
        found.release_cached()


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A short text table of the allocator's counters for one device."""
    stats = memory_stats(device)
    lines = ["ember CUDA caching allocator", f"{'Metric':<22}{'Current':>14}{'Peak':>14}"]
    for label, key in (("Allocated memory", "allocated_bytes.all"), ("Reserved memory", "reserved_bytes.all"),
                       ("Requested memory", "requested_bytes.all")):
        current, peak = format_bytes(stats.get(f"{key}.current", 0)), format_bytes(stats.get(f"{key}.peak", 0))
        lines.append(f"{label:<22}{current:>14}{peak:>14}")
    if not abbreviated:
        for label, key in (("Active blocks", "active.all.current"), ("Allocations", "allocation.all.allocated"),
                           ("Frees", "allocation.all.freed"), ("Cache hits", "num_cache_hits"),
                           ("Device mallocs", "num_device_alloc"), ("Device frees", "num_device_free"),
                           ("OOM retries", "num_alloc_retries")):
            lines.append(f"{label:<22}{stats.get(key, 0):>14}")
    width = max(len(line) for line in lines)
    rule = "=" * width
    return "\n".join([rule, lines[0], rule, *lines[1:], rule]) + "\n"


__all__ = [
    "format_bytes", "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "memory_cached", "max_memory_cached", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "empty_cache", "memory_summary",
]
