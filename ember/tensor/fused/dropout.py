"""Dropout ops on the fused dropout kernels: draw, compare and scale in one pass, and the noise of channel dropout.

Masks come from 32 random bits per element (or per channel) drawn on the input's
device: from ember's default Generator on the CPU, from the device's CUDA
generator (Philox, ``random_bits_``) for CUDA inputs, never through the host;
``ember.manual_seed`` replays both. The gradient of elementwise dropout,
``g * mask * scale``, is a Function of its own, differentiable again.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator

import numpy as np

from ..._cuda_runtime.generators import generator_state
from ...autograd.function import NO_RECORD, Function, must_apply
from .. import dtypes
from .._dispatch import ascontiguous, backend, compute_dtype, flat_views
from ..device import device
from ..random import capture_rng_states, default_generator, restore_rng_states
from ..tensor import Tensor

__all__ = ["channel_noise", "dropout"]


def _random_bits(n: int, dev: device) -> np.ndarray:
    """``n`` uint32 values of fresh random bits on ``dev``, from that device's default generator."""
    if dev.type == "cuda":
        return generator_state(dev.index).draws().bits(n)
    raw = default_generator._np.bit_generator.random_raw((n + 1) // 2)
    return raw.view(np.uint32)[:n]


def _keep_threshold(p: float) -> int:
    """Bits at or above this are kept: a fraction 1 - p of the 2**32 values."""
    return min(round(p * 2.0 ** 32), 2 ** 32)


class _Dropout(Function):
    """``x * mult + add`` with (mult, add) = (scale, keep_add) where kept and (0, drop_value) where dropped."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float, scale: float, keep_add: float, drop_value: float) -> tuple:
        cdt = compute_dtype(x.dtype).np
        (flat_x,), out, flat_out = flat_views([x._array], cdt)
        mask = np.empty(out.shape, np.bool_, like=out)
        bits = _random_bits(out.size, x.device)
        backend(out).dropout.dropout_forward(flat_x, bits, _keep_threshold(p), scale, keep_add, drop_value,
                                               flat_out, mask.reshape(-1))
        if ctx.needs_input_grad:
            ctx.mask, ctx.scale = mask, scale
        return out if cdt == x.dtype.np else out.astype(x.dtype.np)

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple:
        return _MaskedScale.apply(g, ctx.mask, ctx.scale), None, None, None, None

    @classmethod
    def jvp_rule(cls, args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: ``y = x * mult + add`` with random ``mult``, so the tangent is ``t * mult`` (the same
        draws, which ``jvp_rewinder`` replays, and no ``add``)."""
        _, p, scale, _, _ = args
        return cls.apply(tangents[0], p, scale, 0.0, 0.0)

    @staticmethod
    def jvp_rewinder(args: tuple) -> contextlib.AbstractContextManager:
        """Forward mode: called before the op runs; inside the context it returns, the generators are back
        where the op started drawing (and, on leaving, where the op left them)."""
        before = capture_rng_states()

        @contextlib.contextmanager
        def replay() -> Iterator[None]:
            after = capture_rng_states()
            restore_rng_states(before)
            try:
                yield
            finally:
                restore_rng_states(after)

        return replay()


class _MaskedScale(Function):
    """``g * (scale if mask else 0)``: linear in g, so its gradient is itself."""

    @staticmethod
    def forward(ctx, g: Tensor, mask: np.ndarray, scale: float) -> np.ndarray:
        if ctx.needs_input_grad:
            ctx.mask, ctx.scale = mask, scale
        cdt = compute_dtype(g.dtype).np
        garr = ascontiguous(np.broadcast_to(g._array, mask.shape), dtype=cdt)
        out = np.empty(mask.shape, cdt, like=mask)
        if out.size:
            backend(out).dropout.masked_scale(garr.reshape(-1), ascontiguous(mask).reshape(-1), scale,
                                                out.reshape(-1))
        return out if cdt == g.dtype.np else out.astype(g.dtype.np)

    @staticmethod
    def backward(ctx, gg: Tensor) -> tuple:
        return _MaskedScale.apply(gg, ctx.mask, ctx.scale), None, None


def dropout(x: Tensor, p: float, scale: float, keep_add: float, drop_value: float) -> Tensor:
    """``x * scale + keep_add`` where an element is kept (probability ``1 - p``), ``drop_value`` where dropped."""
    if must_apply(x):
        return _Dropout.apply(x, p, scale, keep_add, drop_value)
    return Tensor._make(_Dropout.forward(NO_RECORD, x, p, scale, keep_add, drop_value))


def channel_noise(shape: tuple[int, ...], p: float, scale: float, keep_add: float, drop_value: float,
                  dt: dtypes.dtype, dev: device, affine: bool) -> tuple[Tensor, Tensor | None]:
    """(mult, add) tensors of ``shape`` on ``dev`` from one draw per element: (``scale``, ``keep_add``) where kept
    (probability ``1 - p``), (0, ``drop_value``) where dropped; ``add`` is None unless ``affine``."""
    bits = _random_bits(math.prod(shape), dev).reshape(shape)
    keep = bits >= np.int64(_keep_threshold(p))  # int64: 2**32 (p = 1) is not a uint32
    mult = Tensor._make(np.where(keep, scale, 0.0).astype(dt.np))
    return mult, (Tensor._make(np.where(keep, keep_add, drop_value).astype(dt.np)) if affine else None)
