"""Fused normalization kernels: layer/group norm over rows, batch/instance norm over channels.

Two layouts cover every normalization layer:

- rows: ``x`` is a flat C-contiguous ``(R, K * S)`` block, one statistic per row
  (layer norm: ``K = N, S = 1``; group norm: ``K = C / G`` channels of ``S``
  elements per group). Row ``r`` belongs to group ``g = r % G`` and its
  ``k``-th run of ``S`` elements to channel ``c = g * K + k``, the index of the
  affine weight and bias.
- channels: ``x`` is a flat C-contiguous ``(A, C, S)`` block, one statistic per
  channel ``c`` over ``A * S`` elements (batch norm; instance norm is batch norm
  of the ``(1, N * C, S)`` view).

Moments are one pass over the data: sums of ``x - x0`` and its square, where the
shift ``x0`` is an element of the same row or channel, accumulated in float64.
Because the shift is a data point, the cancellation in ``E[d^2] - E[d]^2`` is
bounded (relative error at most ``n * eps64``) and a constant row gives exactly
zero variance. Statistics (mean, rstd, sums) are float64 arrays; data arrays
are float32 or float64 (float16 is computed in float32 by the caller).

Every kernel has a serial and a ``parallel=True`` twin sharing one inline body;
the entry points pick the parallel one when ``parallel_pays``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .parallelism import parallel_pays

__all__ = ["rows_norm_forward", "rows_norm_backward", "rows_norm_affine_grads", "channel_moments",
           "channel_fma", "channel_grad_sums"]

inline = njit(inline="always")
kernel = njit(cache=True, nogil=True)
parallel_kernel = njit(cache=True, nogil=True, parallel=True)


# ------------------------------------------------------------------ rows (layer norm, group norm)
@inline
def _variance_in_data_range(mu, var, limit):
    """torch computes ``E[x^2] - E[x]^2`` in the data's dtype: past its range (``limit``) that is inf - inf (NaN)
    when the squared mean overflows, else inf (so rstd is 0)."""
    mean_sq = mu * mu
    if mean_sq > limit:
        return math.nan
    if var + mean_sq > limit:
        return math.inf
    return var


@inline
def _row_forward(x, w, b, G, K, S, eps, limit, y, mean, rstd, r):
    n = K * S
    base = r * n
    x0 = np.float64(x[base])
    s1 = 0.0
    s2 = 0.0
    for j in range(n):
        d = np.float64(x[base + j]) - x0
        s1 += d
        s2 += d * d
    m = s1 / n
    mu = x0 + m
    var = _variance_in_data_range(mu, max(s2 / n - m * m, 0.0), limit)
    rs = 1.0 / math.sqrt(var + eps)
    mean[r] = mu
    rstd[r] = rs
    g = r % G
    for k in range(K):
        c = g * K + k
        scale = rs * w[c] if w.size else rs
        shift = (b[c] if b.size else 0.0) - mu * scale
        start = base + k * S
        for s in range(S):
            y[start + s] = x[start + s] * scale + shift


@kernel
def _rows_forward_serial(x, w, b, G, K, S, eps, limit, y, mean, rstd):
    for r in range(mean.size):
        _row_forward(x, w, b, G, K, S, eps, limit, y, mean, rstd, r)


@parallel_kernel
def _rows_forward_parallel(x, w, b, G, K, S, eps, limit, y, mean, rstd):
    for r in prange(mean.size):
        _row_forward(x, w, b, G, K, S, eps, limit, y, mean, rstd, r)


def rows_norm_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray, groups: int, k: int, s: int, eps: float,
                      y: np.ndarray, mean: np.ndarray, rstd: np.ndarray) -> None:
    """Normalize each row of flat ``x`` to ``y`` (affine by ``w``/``b``, empty when absent); fill float64
    ``mean``/``rstd`` (one per row). Statistics past the data dtype's range follow torch (see
    ``_variance_in_data_range``)."""
    run = _rows_forward_parallel if parallel_pays(x.size) and mean.size > 1 else _rows_forward_serial
    run(x, w, b, groups, k, s, eps, float(np.finfo(x.dtype).max), y, mean, rstd)


@inline
def _row_backward(dy, x, mean, rstd, w, G, K, S, dx, r):
    n = K * S
    base = r * n
    mu = mean[r]
    rs = rstd[r]
    g = r % G
    sg = 0.0
    sgx = 0.0
    for k in range(K):
        wc = np.float64(w[g * K + k]) if w.size else 1.0
        start = base + k * S
        for s in range(S):
            gi = dy[start + s] * wc
            sg += gi
            sgx += gi * (x[start + s] - mu)
    a = sg / n
    bb = sgx * rs * rs / n
    for k in range(K):
        wc = np.float64(w[g * K + k]) if w.size else 1.0
        start = base + k * S
        for s in range(S):
            i = start + s
            dx[i] = rs * (dy[i] * wc - a - (x[i] - mu) * bb)


@kernel
def _rows_backward_serial(dy, x, mean, rstd, w, G, K, S, dx):
    for r in range(mean.size):
        _row_backward(dy, x, mean, rstd, w, G, K, S, dx, r)


@parallel_kernel
def _rows_backward_parallel(dy, x, mean, rstd, w, G, K, S, dx):
    for r in prange(mean.size):
        _row_backward(dy, x, mean, rstd, w, G, K, S, dx, r)


def rows_norm_backward(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, w: np.ndarray,
                       groups: int, k: int, s: int, dx: np.ndarray) -> None:
    """Input gradient of ``rows_norm_forward`` (``w`` empty when there is no weight)."""
    run = _rows_backward_parallel if parallel_pays(x.size) and mean.size > 1 else _rows_backward_serial
    run(dy, x, mean, rstd, w, groups, k, s, dx)


@kernel
def _rows_affine_grads_serial(dy, x, mean, rstd, G, K, S, dw, db):
    n = K * S
    for r in range(mean.size):
        mu = mean[r]
        rs = rstd[r]
        g = r % G
        for k in range(K):
            c = g * K + k
            start = r * n + k * S
            tw = 0.0
            tb = 0.0
            for s in range(S):
                d = np.float64(dy[start + s])
                tw += d * (x[start + s] - mu) * rs
                tb += d
            dw[c] += tw
            db[c] += tb


@parallel_kernel
def _rows_affine_grads_parallel(dy, x, mean, rstd, G, K, S, dw, db):
    n = K * S
    A = mean.size // G
    for c in prange(G * K):
        g = c // K
        k = c % K
        tw = 0.0
        tb = 0.0
        for a in range(A):
            r = a * G + g
            mu = mean[r]
            rs = rstd[r]
            start = r * n + k * S
            for s in range(S):
                d = np.float64(dy[start + s])
                tw += d * (x[start + s] - mu) * rs
                tb += d
        dw[c] = tw
        db[c] = tb


def rows_norm_affine_grads(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, groups: int, k: int,
                           s: int, dw: np.ndarray, db: np.ndarray) -> None:
    """Weight and bias gradients of ``rows_norm_forward`` into zeroed float64 ``dw``/``db`` (one per channel)."""
    run = _rows_affine_grads_parallel if parallel_pays(x.size) and dw.size > 1 else _rows_affine_grads_serial
    run(dy, x, mean, rstd, groups, k, s, dw, db)


# ------------------------------------------------------------------ channels (batch norm, instance norm)
@inline
def _channel_moments(x, A, C, S, mean, var, c):
    x0 = np.float64(x[c * S])
    s1 = 0.0
    s2 = 0.0
    for a in range(A):
        start = (a * C + c) * S
        for s in range(S):
            d = np.float64(x[start + s]) - x0
            s1 += d
            s2 += d * d
    n = A * S
    m = s1 / n
    mean[c] = x0 + m
    var[c] = max(s2 / n - m * m, 0.0)


@kernel
def _channel_moments_serial(x, A, C, S, mean, var):
    for c in range(C):
        _channel_moments(x, A, C, S, mean, var, c)


@parallel_kernel
def _channel_moments_parallel(x, A, C, S, mean, var):
    for c in prange(C):
        _channel_moments(x, A, C, S, mean, var, c)


def channel_moments(x: np.ndarray, a: int, c: int, s: int, mean: np.ndarray, var: np.ndarray) -> None:
    """Per-channel mean and biased variance of flat ``(a, c, s)`` ``x`` into float64 ``mean``/``var``."""
    run = _channel_moments_parallel if parallel_pays(x.size) and c > 1 else _channel_moments_serial
    run(x, a, c, s, mean, var)


@inline
def _channel_fma(u, v, p, q, t, C, S, out, ac):
    c = ac % C
    pc = p[c]
    qc = q[c]
    tc = t[c]
    start = ac * S
    for s in range(S):
        out[start + s] = u[start + s] * pc + v[start + s] * qc + tc


@kernel
def _channel_fma_serial(u, v, p, q, t, C, S, out):
    for ac in range(out.size // S):
        _channel_fma(u, v, p, q, t, C, S, out, ac)


@parallel_kernel
def _channel_fma_parallel(u, v, p, q, t, C, S, out):
    for ac in prange(out.size // S):
        _channel_fma(u, v, p, q, t, C, S, out, ac)


def channel_fma(u: np.ndarray, v: np.ndarray, p: np.ndarray, q: np.ndarray, t: np.ndarray, c: int, s: int,
                out: np.ndarray) -> None:
    """``out = u * p[c] + v * q[c] + t[c]`` over flat ``(a, c, s)`` arrays (float64 ``p``, ``q``, ``t``).

    Batch norm's forward (``u = v = x``, ``q = 0``) and its input gradient (``u = dy``, ``v = x``) are both
    this per-channel linear map.
    """
    if out.size == 0:
        return
    run = _channel_fma_parallel if parallel_pays(out.size) else _channel_fma_serial
    run(u, v, p, q, t, c, s, out)


@inline
def _channel_grad_sums(dy, x, mean, A, C, S, sum_dy, sum_dy_xmu, c):
    mu = mean[c]
    t1 = 0.0
    t2 = 0.0
    for a in range(A):
        start = (a * C + c) * S
        for s in range(S):
            d = np.float64(dy[start + s])
            t1 += d
            t2 += d * (x[start + s] - mu)
    sum_dy[c] = t1
    sum_dy_xmu[c] = t2


@kernel
def _channel_grad_sums_serial(dy, x, mean, A, C, S, sum_dy, sum_dy_xmu):
    for c in range(C):
        _channel_grad_sums(dy, x, mean, A, C, S, sum_dy, sum_dy_xmu, c)


@parallel_kernel
def _channel_grad_sums_parallel(dy, x, mean, A, C, S, sum_dy, sum_dy_xmu):
    for c in prange(C):
        _channel_grad_sums(dy, x, mean, A, C, S, sum_dy, sum_dy_xmu, c)


def channel_grad_sums(dy: np.ndarray, x: np.ndarray, mean: np.ndarray, a: int, c: int, s: int,
                      sum_dy: np.ndarray, sum_dy_xmu: np.ndarray) -> None:
    """Per-channel ``sum(dy)`` and ``sum(dy * (x - mean))`` over flat ``(a, c, s)`` arrays, into float64 arrays."""
    run = _channel_grad_sums_parallel if parallel_pays(x.size) and c > 1 else _channel_grad_sums_serial
    run(dy, x, mean, a, c, s, sum_dy, sum_dy_xmu)
