"""When a CPU kernel runs its parallel variant: the one threshold every kernel family shares.

Every family compiles a serial and a ``parallel=True`` variant of its loops; below ``PARALLEL_MIN`` elements of
work the thread launch costs more than it saves, and with one thread there is nothing to gain.
"""
from __future__ import annotations

import numba

__all__ = ["PARALLEL_MIN", "parallel_pays"]

# Below this many elements a parallel launch costs more than it saves.
PARALLEL_MIN = 1 << 16


def parallel_pays(n: int) -> bool:
    """Whether ``n`` elements of work are worth a parallel launch (and there are threads to launch on)."""
    return n >= PARALLEL_MIN and numba.get_num_threads() > 1
