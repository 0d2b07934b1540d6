"""The multi-tensor (``foreach``) path of the fused optimizers: one kernel launch per group and dtype on the GPU.

A CUDA launch costs tens of microseconds of host time, so updating a model's
parameters one launch each costs that many times per step. ``MultiTensorStep``
collects a param group's parameters that take the fast path as they are (CUDA,
C-contiguous, one float32/float64 dtype for parameter, gradient and state),
buckets them by device, dtype and step scalars (equal unless parameters joined the
optimizer at different steps), and updates each bucket with one launch of the
rule's ``many`` kernel (``ember.cuda_kernels.optim_updates.update_many``). The
per-element arithmetic is the per-parameter kernel's, so results agree bit for
bit. The CPU keeps its per-parameter calls: a Numba call there costs ~3.5 us of
dispatch, not a launch (measured: ~12 us per small parameter in all, most of it
turning the hyper-parameters into dtype scalars), so one call per tensor is no
bottleneck there.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tensor.tensor import Tensor
from ..tensor._dispatch import family
from ._fused import apply_update, bump_versions, on_fast_path

__all__ = ["MultiTensorStep"]

_Row = tuple[Tensor, Tensor, Sequence[Tensor | None]]


class MultiTensorStep:
    """The pending fast-path updates of one param group, run by ``flush`` in one launch per bucket."""

    def __init__(self, kernel: Callable[..., None]) -> None:
        self._kernel = kernel  # the CPU entry point; its name selects the device rule
        self._buckets: dict[tuple, list[_Row]] = {}

    def add(self, param: Tensor, grad: Tensor, buffers: Sequence[Tensor | None], scalars: tuple) -> bool:
        """Queue ``param``'s update with ``scalars``; False (nothing queued) when it is not on this path."""
        p = param._array
        if type(p) is np.ndarray or not on_fast_path(p, grad._array, buffers):
            return False
        self._buckets.setdefault((p.device_index, p.dtype, scalars), []).append((param, grad, buffers))
        return True

    def flush(self) -> None:
        """Run the queued updates: one launch per bucket (a lone parameter takes the per-parameter kernel)."""
        for (*_, scalars), rows in self._buckets.items():
            if len(rows) == 1:
                apply_update(self._kernel, *rows[0], *scalars)
                continue
            device = family("optim_updates", rows[0][0]._array)
            device.update_many(self._kernel.__name__, [_arrays(*row) for row in rows], *scalars)
            for param, _, buffers in rows:
                bump_versions(param, buffers)
        self._buckets.clear()


def _arrays(param: Tensor, grad: Tensor, buffers: Sequence[Tensor | None]) -> tuple[Any, ...]:
    return (param._array, grad._array, *[None if b is None else b._array for b in buffers])
