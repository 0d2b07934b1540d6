"""Glue between optimizer state (Tensors) and the fused update kernels (flat arrays).

The kernels want 1-D C-contiguous float32/float64 arrays of one dtype. Parameters
and state almost always are, so the common path hands over reshaped views and
the update lands in place. Anything else (float16, non-contiguous storage) is
copied into float32/float64 work arrays and copied back after the kernel.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tensor.dtypes import get_default_dtype
from ..tensor.tensor import Tensor
from ..tensor._dispatch import ascontiguous, family

__all__ = ["apply_update", "on_fast_path", "bump_versions", "advance_step", "new_step", "zeros_state", "to_scalar",
           "EMPTY"]

_FAST = (np.dtype(np.float32), np.dtype(np.float64))
_F32 = np.dtype(np.float32)

# Placeholder for a state buffer an option does not use (same dtype keeps one kernel signature).
EMPTY = {np.dtype(np.float32): np.empty(0, np.float32), np.dtype(np.float64): np.empty(0, np.float64)}


def _work_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype in _FAST else _F32


def apply_update(kernel: Callable[..., None], param: Tensor, grad: Tensor, buffers: Sequence[Tensor | None],
                 *scalars: Any) -> None:
    """Run ``kernel(param, grad, *buffers, *scalars)`` over flat arrays, in place on the tensors' storage.

    ``buffers`` are state Tensors, or ``None`` for an unused optional buffer.
    """
    p = param._array
    g = grad._array
    if type(p) is not np.ndarray:  # the same update from the parameter's backend
        kernel = getattr(family("optim_updates", p), kernel.__name__)
    if on_fast_path(p, g, buffers):
        empty = EMPTY[p.dtype]
        kernel(p.reshape(-1), g.reshape(-1), *[empty if b is None else b._array.reshape(-1) for b in buffers],
               *scalars)
    else:
        _apply_slow(kernel, p, g, buffers, scalars)
    bump_versions(param, buffers)


def on_fast_path(p: Any, g: Any, buffers: Sequence[Tensor | None]) -> bool:
    """Whether parameter array ``p``, gradient array ``g`` and the state ``buffers`` go to a kernel as they are:
    one float32/float64 dtype, all C-contiguous. Raises when a gradient or state shape is not the parameter's."""
    shape = p.shape
    dtype = p.dtype
    fast = dtype in _FAST and _c_contiguous(p) and g.dtype == dtype and _c_contiguous(g)
    matches = g.shape == shape
    for b in buffers:
        if b is not None:
            a = b._array
            matches = matches and a.shape == shape
            fast = fast and a.dtype == dtype and _c_contiguous(a)
    if not matches:
        raise RuntimeError(
            f"optimizer step: gradient {tuple(g.shape)} or state "
            f"{[tuple(b._array.shape) for b in buffers if b is not None]} does not match the parameter's shape "
            f"{tuple(shape)}"
        )
    return fast


def _c_contiguous(a: Any) -> bool:
    # device storage answers directly (its ``flags`` builds a namespace on every read)
    return a.flags.c_contiguous if type(a) is np.ndarray else a.is_contiguous


def bump_versions(param: Tensor, buffers: Sequence[Tensor | None]) -> None:
    """Mark the parameter and the state buffers as modified in place."""
    param._version.value += 1
    for b in buffers:
        if b is not None:
            b._version.value += 1


def _apply_slow(kernel: Callable[..., None], p: np.ndarray, g: np.ndarray, buffers: tuple, scalars: tuple) -> None:
    """Copy into contiguous work arrays of the compute dtype, run, copy the results back."""
    work_dtype = _work_dtype(p.dtype)
    targets = [p] + [b._array for b in buffers if b is not None]
    works = [ascontiguous(a, dtype=work_dtype).reshape(-1) for a in targets]
    flat_buffers, it = [], iter(works[1:])
    for b in buffers:
        flat_buffers.append(EMPTY[work_dtype] if b is None else next(it))
    flat_grad = ascontiguous(g, dtype=work_dtype).reshape(-1)
    kernel(works[0], flat_grad, *flat_buffers, *scalars)
    for target, work in zip(targets, works):
        if not np.shares_memory(target, work):
            np.copyto(target, work.reshape(target.shape), casting="unsafe")


def zeros_state(param: Tensor, fill: float = 0.0) -> Tensor:
    """A state buffer shaped and typed like ``param`` (C-contiguous), filled with ``fill``."""
    return Tensor._make(np.full(param._array.shape, fill, dtype=param._array.dtype, like=param._array))


def new_step(value: float = 0.0) -> Tensor:
    """The 0-d ``step`` counter torch keeps in optimizer state (default float dtype)."""
    return Tensor._make(np.array(value, dtype=get_default_dtype().np))


def advance_step(step: Tensor) -> float:
    """``step += 1`` in place; the new count as a Python float."""
    a = step._array
    value = float(a) + 1.0
    a[()] = value
    step._version.value += 1
    return value


def to_scalar(x: Any) -> Any:
    """A one-element Tensor hyper-parameter (e.g. ``lr``) as a Python number; others unchanged."""
    return x.item() if isinstance(x, Tensor) else x
