"""Tensors as MPI buffers: the NumPy array itself when it is contiguous host memory (zero-copy), a contiguous
copy written back afterwards otherwise (strided views, device tensors); types MPI has no name for travel as
their bytes, and reduce in float32."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import no_grad
from ..tensor.tensor import Tensor

_HALF_KINDS = ("bfloat16", "float16")


class TensorBuffer:
    """The contiguous host array MPI reads and writes for one tensor, and how to put results back into it."""

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor
        array = tensor._array
        self.direct = type(array) is np.ndarray and array.flags.c_contiguous
        self.array = array if self.direct else np.ascontiguousarray(tensor.detach().cpu().numpy())

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def raw(self) -> np.ndarray:
        """The array in a type MPI can move (half types as their 16-bit patterns)."""
        return as_transferable(self.array)

    def commit(self) -> None:
        """Publish what MPI wrote: copy back when MPI worked on a copy; bump the version counter."""
        if self.direct:
            self.tensor._version.value += 1
            return
        with no_grad():
            self.tensor.copy_(Tensor._make(self.array))


def as_transferable(array: np.ndarray) -> np.ndarray:
    """``array`` viewed as a type mpi4py understands (bfloat16 and float16 as uint16)."""
    if array.dtype.name in _HALF_KINDS:
        return array.view(np.uint16)
    return array


def needs_float32_reduction(array: np.ndarray) -> bool:
    """Half types reduce through float32 copies (MPI has no arithmetic on them)."""
    return array.dtype.name in _HALF_KINDS
