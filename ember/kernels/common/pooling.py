"""The max-pooling window scan both backends run, so they pick the same maximum and position.

Windows are described as in ``ember.kernels.cpu.pooling``: per dim the first
input index (``starts``), the count (``counts``) and the step (``steps``) of
each output's window. The CPU inlines ``window_max``; the GPU builds it as a
device function.
"""
from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["window_max"]


# Flat arrays are indexed with unsigned offsets: signed indices make Numba test every access for
# wrap-around, which stops vectorisation.
@numba.njit(inline="always")
def window_max(src, base, starts, counts, steps, z, y, w, height, width, lanes):
    """Maximum of output (z, y, w)'s window over the plane at ``base`` of flat ``src`` and its flat in-plane position.

    The plane's elements lie ``lanes`` apart (1 for planes of their own, C for a channels-last image).

    NaN wins and propagates, as in torch; an empty window (all padding) gives -inf and the window's first position,
    as torch reports it.
    """
    sz, sy, sx = steps[0], steps[1], steps[2]
    best = -math.inf
    where = (starts[0, z] * height + starts[1, y]) * width + starts[2, w]
    for a in range(counts[0, z]):
        zi = starts[0, z] + a * sz
        for b in range(counts[1, y]):
            row = (zi * height + starts[1, y] + b * sy) * width + starts[2, w]
            for e in range(counts[2, w]):
                at = row + e * sx
                v = src[np.uint64(base + at * lanes)]
                if v > best or math.isnan(v):
                    best = v
                    where = at
    return best, where
