"""The key order both backends sort by: NaN is the largest key, as in torch.

``before`` is inlined by the CPU's merge sort and built as a device function
by the GPU's bitonic sort, so both order NaN (and everything else) the same.
"""
from __future__ import annotations

from numba import njit

__all__ = ["before"]


@njit(inline="always")
def before(a, b, descending):
    """Whether key ``a`` goes strictly before key ``b`` (NaN is the largest key)."""
    if descending:
        return a > b or (a != a and b == b)
    return a < b or (b != b and a == a)
