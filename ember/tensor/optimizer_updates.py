"""Fused optimizer updates on tensors: the op through which ``ember.optim`` reaches the backends' update kernels.

An update rule is named by its entry point in the ``optim_updates`` kernel family (``"adam_update"``, ...; see
``ember.kernels.contract.KERNEL_FAMILIES``); ``FusedUpdate`` applies it to a parameter, its gradient and its
state tensors on whichever backend they live on, in place and outside autograd.

The kernels want 1-D C-contiguous float32/float64 arrays of one dtype. Parameters and state almost always are,
so the common path hands over reshaped views and the update lands in place. Anything else (float16,
non-contiguous storage) is copied into float32/float64 work arrays and copied back after the kernel.

A CUDA launch costs tens of microseconds of host time, so updating a model's parameters one launch each costs
that many times per step. ``UpdateBatch`` collects a param group's parameters that take the fast path as they
are on a backend with a multi-tensor form (``update_many``: CUDA), buckets them by device, dtype and step
scalars (equal unless parameters joined the optimizer at different steps), and updates each bucket with one
launch; the per-element arithmetic is the per-parameter kernel's, so results agree bit for bit. The CPU keeps
its per-parameter calls: a Numba call there costs ~3.5 us of dispatch, not a launch, so one call per tensor is
no bottleneck there.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels.contract import KERNEL_FAMILIES
from ._dispatch import ascontiguous, backend, is_c_contiguous
from .tensor import Tensor

__all__ = ["FusedUpdate", "UpdateBatch", "updates_in_batches"]

_FAST = (np.dtype(np.float32), np.dtype(np.float64))
_F32 = np.dtype(np.float32)

# Placeholder for a state buffer an option does not use (same dtype keeps one kernel signature).
_EMPTY = {np.dtype(np.float32): np.empty(0, np.float32), np.dtype(np.float64): np.empty(0, np.float64)}

Buffers = Sequence[Tensor | None]


class FusedUpdate:
    """One update rule of the ``optim_updates`` kernel family, applied in place to tensors on their backend."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if name not in KERNEL_FAMILIES["optim_updates"]:
            raise ValueError(f"{name!r} is not an update rule of the optim_updates kernel family")
        self.name = name

    def __call__(self, param: Tensor, grad: Tensor, buffers: Buffers, *scalars: Any) -> None:
        """Update ``param`` and its state ``buffers`` (None for an unused optional buffer) from ``grad``, with the
        rule's scalar arguments ``scalars`` (hyper-parameters as Python floats and bools)."""
        p = param._array
        g = grad._array
        kernel = getattr(backend(p).optim_updates, self.name)
        if _on_fast_path(p, g, buffers):
            empty = _EMPTY[p.dtype]
            kernel(p.reshape(-1), g.reshape(-1), *[empty if b is None else b._array.reshape(-1) for b in buffers],
                   *scalars)
        else:
            _apply_slow(kernel, p, g, buffers, scalars)
        _bump_versions(param, buffers)


class UpdateBatch:
    """The updates of one param group by one rule: ``add`` queues those a multi-tensor launch can take and runs the rest at
    once; ``flush`` runs the queue, one launch per bucket of device, dtype and scalars."""

    def __init__(self, update: FusedUpdate) -> None:
        self._update = update
        self._buckets: dict[tuple, list[tuple[Tensor, Tensor, Buffers]]] = {}

    def add(self, param: Tensor, grad: Tensor, buffers: Buffers, scalars: tuple) -> None:
        """Queue ``param``'s update with ``scalars`` for ``flush``, or run it now where it cannot be batched."""
        p = param._array
        if not updates_in_batches(param) or not _on_fast_path(p, grad._array, buffers):
            self._update(param, grad, buffers, *scalars)
        else:
            self._buckets.setdefault((param.device, p.dtype, scalars), []).append((param, grad, buffers))

    def flush(self) -> None:
        """Run the queued updates: one launch per bucket (a lone parameter takes the per-parameter kernel)."""
        for (*_, scalars), rows in self._buckets.items():
            if len(rows) == 1:
                self._update(*rows[0], *scalars)
                continue
            kernels = backend(rows[0][0]._array).optim_updates
            kernels.update_many(self._update.name, [_arrays(*row) for row in rows], *scalars)
            for param, _, buffers in rows:
                _bump_versions(param, buffers)
        self._buckets.clear()


def updates_in_batches(t: Tensor) -> bool:
    """Whether ``t``'s backend updates many tensors in one launch (as torch's foreach kernels, on CUDA; the CPU's
    per-tensor calls cost no launch)."""
    return hasattr(backend(t).optim_updates, "update_many")


def _arrays(param: Tensor, grad: Tensor, buffers: Buffers) -> tuple[Any, ...]:
    return (param._array, grad._array, *[None if b is None else b._array for b in buffers])


def _on_fast_path(p: Any, g: Any, buffers: Buffers) -> bool:
    """Whether parameter array ``p``, gradient array ``g`` and the state ``buffers`` go to a kernel as they are:
    one float32/float64 dtype, all C-contiguous. Raises when a gradient or state shape is not the parameter's."""
    shape = p.shape
    dtype = p.dtype
    fast = dtype in _FAST and is_c_contiguous(p) and g.dtype == dtype and is_c_contiguous(g)
    matches = g.shape == shape
    for b in buffers:
        if b is not None:
            a = b._array
            matches = matches and a.shape == shape
            fast = fast and a.dtype == dtype and is_c_contiguous(a)
    if not matches:
        raise RuntimeError(
            f"optimizer step: gradient {tuple(g.shape)} or state "
            f"{[tuple(b._array.shape) for b in buffers if b is not None]} does not match the parameter's shape "
            f"{tuple(shape)}"
        )
    return fast


def _bump_versions(param: Tensor, buffers: Buffers) -> None:
    """Mark the parameter and the state buffers as modified in place."""
    param._version.value += 1
    for b in buffers:
        if b is not None:
            b._version.value += 1


def _apply_slow(kernel: Any, p: Any, g: Any, buffers: Buffers, scalars: tuple) -> None:
    """Copy into contiguous work arrays of the compute dtype, run, copy the results back."""
    work_dtype = p.dtype if p.dtype in _FAST else _F32
    targets = [p] + [b._array for b in buffers if b is not None]
    works = [ascontiguous(a, dtype=work_dtype).reshape(-1) for a in targets]
    flat_buffers, it = [], iter(works[1:])
    for b in buffers:
        flat_buffers.append(_EMPTY[work_dtype] if b is None else next(it))
    flat_grad = ascontiguous(g, dtype=work_dtype).reshape(-1)
    kernel(works[0], flat_grad, *flat_buffers, *scalars)
    for target, work in zip(targets, works):
        if not np.shares_memory(target, work):
            np.copyto(target, work.reshape(target.shape), casting="unsafe")
