"""Numba kernels for torch.special's orthogonal polynomials, which scipy.special has no twin of at torch's
conventions (an integer degree truncated from a float tensor, 0 for a negative degree, exact values at the ends of
the interval, and the trigonometric form for high degrees inside it, as ATen computes them).

Each kernel takes flat float64 ``x`` and int64 ``n`` arrays of one length and fills ``out``; they compile on first
use, so ``import ember`` pays nothing for them.
"""
from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=False, nogil=True)
def _chebyshev_t(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        return 1.0 if (x > 0.0 or n % 2 == 0) else -1.0
    if n > 6 and abs(x) < 1.0:
        return math.cos(n * math.acos(x))
    if n == 0:
        return 1.0
    p, q = 1.0, x
    for _ in range(2, n + 1):
        p, q = q, (x + x) * q - p
    return q


@numba.njit(cache=False, nogil=True)
def _chebyshev_u(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        return float(n + 1) if (x > 0.0 or n % 2 == 0) else -float(n + 1)
    if n > 8 and abs(x) < 1.0:
        theta = math.acos(x)
        if math.sin(theta) != 0.0:
            return math.sin((n + 1) * theta) / math.sin(theta)
        return (n + 1) * math.cos((n + 1) * theta) / x
    if n == 0:
        return 1.0
    p, q = 1.0, x + x
    for _ in range(2, n + 1):
        p, q = q, (x + x) * q - p
    return q


@numba.njit(cache=False, nogil=True)
def _chebyshev_v(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    odd_end = float(n + n + 1) if n % 2 == 0 else -float(n + n + 1)
    if abs(x) == 1.0:
        return 1.0 if x > 0.0 else odd_end
    if n > 8 and abs(x) < 1.0:
        theta = math.acos(x)
        if math.sin(theta / 2) != 1.0:
            return math.cos((n + 0.5) * theta) / math.cos(theta / 2)
        return odd_end
    if n == 0:
        return 1.0
    p, q = 1.0, x + x - 1.0
    for _ in range(2, n + 1):
        p, q = q, (x + x) * q - p
    return q


@numba.njit(cache=False, nogil=True)
def _chebyshev_w(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    sign_end = 1.0 if n % 2 == 0 else -1.0
    if abs(x) == 1.0:
        return float(n + n + 1) if x > 0.0 else sign_end
    if n > 8 and abs(x) < 1.0:
        theta = math.acos(x)
        if math.cos(theta / 2) != 1.0:
            return math.sin((n + 0.5) * theta) / math.sin(theta / 2)
        return float(n + n + 1) if x > 0.0 else sign_end
    if n == 0:
        return 1.0
    p, q = 1.0, x + x + 1.0
    for _ in range(2, n + 1):
        p, q = q, (x + x) * q - p
    return q


@numba.njit(cache=False, nogil=True)
def _hermite_h(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if n == 0:
        return 1.0
    p, q = 1.0, x + x
    for k in range(1, n):
        p, q = q, (x + x) * q - 2.0 * k * p
    return q


@numba.njit(cache=False, nogil=True)
def _hermite_he(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if n == 0:
        return 1.0
    p, q = 1.0, x
    for k in range(1, n):
        p, q = q, x * q - k * p
    return q


@numba.njit(cache=False, nogil=True)
def _laguerre_l(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if x == 0.0 or n == 0:
        return 1.0
    p, q = 1.0, 1.0 - x
    for k in range(1, n):
        p, q = q, ((k + k + 1.0 - x) * q - k * p) / (k + 1)
    return q


@numba.njit(cache=False, nogil=True)
def _legendre_p(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        return 1.0 if (x > 0.0 or n % 2 == 0) else -1.0
    if n == 0:
        return 1.0
    p, q = 1.0, x
    for k in range(1, n):
        p, q = q, ((k + k + 1) * x * q - k * p) / (k + 1)
    return q


def _elementwise(scalar_kernel, shifted: bool):
    """The array kernel of ``scalar_kernel``; a ``shifted`` one evaluates it at ``2x - 1`` (torch's shifted
    Chebyshev polynomials live on [0, 1])."""

    @numba.njit(cache=False, nogil=True)
    def kernel(x: np.ndarray, n: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            xi = x[i] + x[i] - 1.0 if shifted else x[i]
            out[i] = scalar_kernel(xi, n[i])

    return kernel


_SCALAR = {"chebyshev_polynomial_t": _chebyshev_t, "chebyshev_polynomial_u": _chebyshev_u,
           "chebyshev_polynomial_v": _chebyshev_v, "chebyshev_polynomial_w": _chebyshev_w,
           "hermite_polynomial_h": _hermite_h, "hermite_polynomial_he": _hermite_he,
           "laguerre_polynomial_l": _laguerre_l, "legendre_polynomial_p": _legendre_p}
KERNELS = {name: _elementwise(k, False) for name, k in _SCALAR.items()}
KERNELS.update({"shifted_" + name: _elementwise(_SCALAR[name], True)
                for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                             "chebyshev_polynomial_w")})


def polynomial(name: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The polynomial ``name`` of degree ``n`` (float, truncated toward zero as torch's int64 cast does) at ``x``
    (broadcast together), in float64."""
    x, n = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(n, np.float64))
    degree = np.where(np.isfinite(n), n, 0).astype(np.int64).ravel()
    out = np.empty(x.size, np.float64)
    KERNELS[name](np.ascontiguousarray(x).ravel(), degree, out)
    return out.reshape(x.shape)
