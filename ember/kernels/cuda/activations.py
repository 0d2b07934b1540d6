"""Fused activation kernels on the device: the value and the input gradient, one grid-stride pass each.

The scalar functions are the shared ones (``ember.kernels.common.activations``),
built as device functions by ``device_functions.device_function``, so the GPU
computes exactly the CPU's formulas. A kernel is specialised per (activation,
direction) by closing over the device function, built on first use and cached.
"""
from __future__ import annotations

import functools

from numba import cuda

from ..common import activations as shared
from ..common.activations import ACTIVATIONS, scalar_params
from .device_functions import device_function
from .launch import grid
from .storage import DeviceStorage

__all__ = ["activation_forward", "activation_backward", "ACTIVATIONS"]


def activation_function(name: str):
    """The device function of shared activation scalar function ``name`` (``gelu``, ``gelu_grad``, ...)."""
    return device_function(getattr(shared, name))


def _make_kernel(f, backward: bool):
    if backward:
        def kernel(n, x, ox, g, og, out, oo, a, b, c):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(x[ox + i], g[og + i], a, b, c)
    else:
        def kernel(n, x, ox, out, oo, a, b, c):
            for i in range(cuda.grid(1), n, cuda.gridsize(1)):
                out[oo + i] = f(x[ox + i], a, b, c)
    return cuda.jit(kernel)


@functools.cache
def _kernel(name: str, backward: bool):
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of {ACTIVATIONS}")
    return _make_kernel(activation_function(name + "_grad" if backward else name), backward)


def activation_forward(name: str, x: DeviceStorage, out: DeviceStorage, params: tuple = ()) -> None:
    """``out = f(x)`` for activation ``name`` (one of ``ACTIVATIONS``); 1-D contiguous float32/float64."""
    kernel = _kernel(name, False)
    n = x.numel
    if n == 0:
        return
    blocks, threads = grid(n)
    kernel[blocks, threads](n, x.buffer, x.offset, out.buffer, out.offset, *scalar_params(x, params))


def activation_backward(name: str, x: DeviceStorage, g: DeviceStorage, out: DeviceStorage,
                        params: tuple = ()) -> None:
    """``out = g * f'(x)`` for activation ``name``; all 1-D contiguous, one float32/float64 dtype."""
    kernel = _kernel(name, True)
    n = x.numel
    if n == 0:
        return
    blocks, threads = grid(n)
    kernel[blocks, threads](n, x.buffer, x.offset, g.buffer, g.offset, out.buffer, out.offset,
                            *scalar_params(x, params))
