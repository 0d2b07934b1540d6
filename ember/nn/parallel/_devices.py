"""The CUDA devices data parallelism may use, named as torch names them (an index, "cuda:N" or a device)."""
from __future__ import annotations

from typing import Any

from ...cuda._state import _device_index, device_count, is_available


def available_device_type() -> str | None:
    """``"cuda"`` when a CUDA device (or Numba's simulator) can be used, else None (the module just runs)."""
    return "cuda" if is_available() else None


def all_device_indices() -> list[int]:
    """Every visible CUDA device's index."""
    return list(range(device_count()))


def device_index(device: Any) -> int:
    """The CUDA index of ``device`` (None or a bare "cuda": the current device)."""
    return _device_index(device)
