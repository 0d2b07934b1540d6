"""torch's seed rules, shared by the CPU generators (``ember.tensor.random``) and the CUDA generators' state
(``ember._cuda_runtime.generators``): the seed a fresh process starts from, and how a seed is checked and wrapped.

This module imports nothing of ember.
"""
from __future__ import annotations

from typing import Any

import numpy as np

# torch's default_rng_seed_val: the seed every fresh process starts from.
DEFAULT_SEED = 67280421310721

_SEED_MIN = -0x8000_0000_0000_0000
_SEED_MAX = 0xFFFF_FFFF_FFFF_FFFF


def seed_value(seed: Any) -> int:
    """Check a seed as torch does and wrap it to its unsigned 64-bit value."""
    if isinstance(seed, (float, np.floating)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    try:
        value = int(seed.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"manual_seed expected an int seed, but got {type(seed).__name__}") from None
    if not _SEED_MIN <= value <= _SEED_MAX:
        raise ValueError(
            f"Overflow when unpacking long long: seed {value} is outside "
            "[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]"
        )
    return value & _SEED_MAX


__all__ = ["DEFAULT_SEED", "seed_value"]
