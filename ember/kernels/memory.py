"""What the device allocator raises and how it prints sizes, importable without numba-cuda.

``ember.kernels.cuda.allocator`` raises ``OutOfMemoryError`` with sizes written
by ``format_bytes``; ``ember.cuda`` re-exports both (``torch.cuda.OutOfMemoryError``,
the memory summary). Defined here, below both and beside no CUDA import, so
``except ember.cuda.OutOfMemoryError`` works on a machine without numba-cuda.
"""
from __future__ import annotations

__all__ = ["OutOfMemoryError", "format_bytes"]


class OutOfMemoryError(RuntimeError):
    """``torch.cuda.OutOfMemoryError``: the device has no room for a request, even after emptying the cache."""


def format_bytes(nbytes: float) -> str:
    """``1536`` -> ``"1.50 KiB"`` (bytes below 1 KiB stay whole)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            break
        nbytes /= 1024
    return f"{nbytes:.2f} {unit}" if unit != "B" else f"{int(nbytes)} B"
