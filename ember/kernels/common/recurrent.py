"""The recurrent cells' tanh, shared so the CPU and GPU gates agree to rounding.

The CPU gate loops (``ember.kernels.cpu.recurrent``) inline ``gate_tanh``, where
it vectorises (libm's scalar tanh does not); the GPU gate kernels call its
device build, so both compute the same float64 rational approximation.
"""
from __future__ import annotations

import numba

__all__ = ["gate_tanh"]


# "contract" lets LLVM fuse multiply-adds; no flag that changes NaN/inf semantics.
@numba.njit(inline="always", cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def gate_tanh(v):
    """tanh to ~2 ulp in float64, branch-free so loops over it vectorise (NaN propagates).

    tanh(v / 32) from the [7/6] convergent of Lambert's continued fraction (exact to rounding for
    |v / 32| <= 0.625), then five doublings tanh(2y) = 2t / (1 + t^2). |v| > 20 is already +-1.
    """
    y = (20.0 if v > 20.0 else (-20.0 if v < -20.0 else v)) * 0.03125
    y2 = y * y
    t = y * (135135.0 + y2 * (17325.0 + y2 * (378.0 + y2))) / (135135.0 + y2 * (62370.0 + y2 * (3150.0 + y2 * 28.0)))
    for _ in range(5):
        t = 2.0 * t / (1.0 + t * t)
    return t
