"""Window functions for spectral analysis: hann, hamming, blackman, bartlett and kaiser, as torch makes them.

A periodic window (the default) of length N is the symmetric window of length N + 1 without its last point (what
an FFT of N points wants). The values are computed on the host in the requested floating dtype and placed on the
device (``device=``, else the default device, as ember's other creation functions).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from scipy import special

from . import dtypes
from .creation import _finish
from .device import factory_device
from .tensor import Tensor


def _window(name: str, window_length: int, periodic: bool, values: Callable[[np.ndarray, int], np.ndarray],
            dtype: Any, device: Any, requires_grad: bool, pin_memory: bool) -> Tensor:
    """The window ``values(n, m)`` of the sample positions ``n = 0..m-1`` of a symmetric window of length ``m``."""
    if not isinstance(window_length, (int, np.integer)) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{dtypes.CPP_TYPE_NAMES[dt.name]})")
    dev = factory_device(device)
    if window_length <= 1:
        array = np.ones(window_length, dt.np)
    else:
        m = window_length + 1 if periodic else window_length
        work = dt.compute.np
        array = values(np.arange(m, dtype=work), m)[:window_length].astype(dt.np)
    return _finish(array, requires_grad, dev, pin_memory)


def _cosine_sum(*coefficients: float) -> Callable[[np.ndarray, int], np.ndarray]:
    """``a0 - a1 cos(2 pi n / (m - 1)) + a2 cos(4 pi n / (m - 1)) - ...``: hann, hamming and blackman."""
    def values(n: np.ndarray, m: int) -> np.ndarray:
        phase = n * n.dtype.type(2 * math.pi / (m - 1))
        total = np.full_like(n, coefficients[0])
        for k, a in enumerate(coefficients[1:], start=1):
            total = total + n.dtype.type((-1) ** k * a) * np.cos(phase * k)
        return total
    return values


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))`` (``layout`` has no effect: ember is strided only)."""
    return _window("hann_window", window_length, periodic, _cosine_sum(0.5, 0.5), dtype, device, requires_grad,
                   pin_memory)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """The generalised Hamming window ``alpha - beta cos(2 pi n / (N - 1))`` (``layout`` has no effect)."""
    return _window("hamming_window", window_length, periodic, _cosine_sum(alpha, beta), dtype, device,
                   requires_grad, pin_memory)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))`` (``layout`` has no
    effect)."""
    return _window("blackman_window", window_length, periodic, _cosine_sum(0.42, 0.5, 0.08), dtype, device,
                   requires_grad, pin_memory)


def _triangle(n: np.ndarray, m: int) -> np.ndarray:
    ramp = n * n.dtype.type(2.0 / (m - 1))
    return np.where(n <= (m - 1) // 2, ramp, 2 - ramp).astype(n.dtype)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, layout: Any = None,
                    device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Bartlett (triangular) window ``1 - |2n / (N - 1) - 1|`` (``layout`` has no effect)."""
    return _window("bartlett_window", window_length, periodic, _triangle, dtype, device, requires_grad,
                   pin_memory)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  layout: Any = None, device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)`` (``layout`` has no effect)."""
    def values(n: np.ndarray, m: int) -> np.ndarray:
        centred = n * n.dtype.type(2.0 / (m - 1)) - 1
        return (special.i0(beta * np.sqrt(np.clip(1 - centred * centred, 0, None))) / special.i0(beta)).astype(n.dtype)
    return _window("kaiser_window", window_length, periodic, values, dtype, device, requires_grad, pin_memory)


__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
