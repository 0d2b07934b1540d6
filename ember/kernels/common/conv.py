"""The geometry array of the im2col/col2im kernels, which both backends take in the same form.

``geom`` is an int64 array of 15 numbers: kernel size, stride, padding before the first element and dilation
(3 each, depth/height/width), then the number of output positions along each dim. It stays on the host: the
GPU uploads it once per distinct geometry.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["geometry_array"]


def geometry_array(kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                   out_size: Sequence[int]) -> np.ndarray:
    """Pack five 3-tuples into the ``geom`` array the conv kernels take."""
    return np.array([*kernel, *stride, *padding, *dilation, *out_size], dtype=np.int64)
