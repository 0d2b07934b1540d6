"""The embedding-bag op on the embedding kernels: which row each bag's max mode picks."""
from __future__ import annotations

import numpy as np

from .._dispatch import as_array, backend, compute_dtype
from ..device import CPU, place
from ..tensor import Tensor

__all__ = ["bag_argmax"]


def bag_argmax(rows: Tensor, bags: np.ndarray, n_bags: int) -> np.ndarray:
    """For each of ``n_bags`` bags and each column of ``rows`` (K, D), the row of the bag's largest value (-1 for
    an empty bag), as a host (n_bags, D) int64 array; ``bags`` is the host bag index of each row."""
    arg = np.full((n_bags, rows.shape[1]), -1, np.int64, like=rows._array)
    values = as_array(rows, compute_dtype(rows.dtype))  # float16 compared widened (exact), as every kernel
    backend(rows).embedding.bag_argmax(values, place(bags, rows.device), arg)
    return place(arg, CPU)
