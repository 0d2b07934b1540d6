"""Fused normalization kernels on the GPU: layer/group norm over rows, batch/instance norm over channels.

The layouts, arguments and arithmetic are ``ember.kernels.cpu.normalization``'s (read its docstring):
data arrays are flat C-contiguous float32/float64 ``DeviceStorage``s, statistics are float64.

One block owns one row (or channel) at a time and blocks grid-stride over them: the block's threads
stride over the row, each accumulating float64 sums of ``x - x0`` (``x0`` the row's first element, the
CPU's shift) and of its square, then combine them in a shared-memory tree. Every thread then reads
the totals, derives the statistics itself (no extra broadcast step) and writes its share of the
outputs in the same launch. Expressions keep the CPU's operand order and float64 promotions; values
that are float64 on the CPU are cast explicitly, so the simulator (NumPy scalar rules) computes in
the same precision as the device.

Absent affine ``w``/``b`` may be ``None`` or empty. The per-channel float64 vectors ``p``/``q``/``t``
of ``channel_fma`` and the statistics (``mean``/``rstd``) are ``DeviceStorage``s, or host NumPy arrays,
which are uploaded (the CPU layer code builds some of them on the host).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from . import launch
from .storage import DeviceStorage

__all__ = ["rows_norm_forward", "rows_norm_backward", "rows_norm_affine_grads", "channel_moments",
           "channel_fma", "channel_grad_sums"]

# Threads per block of the per-row kernels: a power of two, the size of the shared-memory tree.
_T = launch.REDUCE_THREADS
_ONE = np.float64(1.0)


@cuda.jit(device=True)
def _block_sums(t1, t2):
    """Totals of every thread's ``t1`` and ``t2`` over the block, returned to every thread (a shared-memory tree).

    Every thread of the block must call it; its shared arrays are free for the next call on return.
    """
    s1 = cuda.shared.array(_T, float64)
    s2 = cuda.shared.array(_T, float64)
    tid = cuda.threadIdx.x
    s1[tid] = t1
    s2[tid] = t2
    cuda.syncthreads()
    s = _T // 2
    while s > 0:
        if tid < s:
            s1[tid] += s1[tid + s]
            s2[tid] += s2[tid + s]
        cuda.syncthreads()
        s //= 2
    total1 = s1[0]
    total2 = s2[0]
    cuda.syncthreads()
    return total1, total2


# ------------------------------------------------------------------ rows (layer norm, group norm)
@cuda.jit
def _rows_forward(R, G, K, S, eps, x, ox, w, ow, has_w, b, ob, has_b, y, oy, mean, om, rstd, ors):
    tid = cuda.threadIdx.x
    n = K * S
    for r in range(cuda.blockIdx.x, R, cuda.gridDim.x):
        base = r * n
        x0 = float64(x[ox + base])
        t1 = float64(0.0)
        t2 = float64(0.0)
        for j in range(tid, n, _T):
            d = float64(x[ox + base + j]) - x0
            t1 += d
            t2 += d * d
        sum1, sum2 = _block_sums(t1, t2)
        m = sum1 / n
        var = sum2 / n - m * m
        if var < 0.0:  # max(var, 0.0): NaN stays NaN
            var = 0.0
        mu = x0 + m
        rs = _ONE / math.sqrt(var + eps)
        if tid == 0:
            mean[om + r] = mu
            rstd[ors + r] = rs
        g = r % G
        for j in range(tid, n, _T):
            c = g * K + j // S
            scale = rs * float64(w[ow + c]) if has_w else rs
            shift = (float64(b[ob + c]) if has_b else 0.0) - mu * scale
            y[oy + base + j] = x[ox + base + j] * scale + shift


@cuda.jit
def _rows_backward(R, G, K, S, dy, ody, x, ox, mean, om, rstd, ors, w, ow, has_w, dx, odx):
    tid = cuda.threadIdx.x
    n = K * S
    for r in range(cuda.blockIdx.x, R, cuda.gridDim.x):
        base = r * n
        mu = mean[om + r]
        rs = rstd[ors + r]
        g = r % G
        t1 = float64(0.0)
        t2 = float64(0.0)
        for j in range(tid, n, _T):
            wc = float64(w[ow + g * K + j // S]) if has_w else _ONE
            gi = dy[ody + base + j] * wc
            t1 += gi
            t2 += gi * (x[ox + base + j] - mu)
        sum1, sum2 = _block_sums(t1, t2)
        a = sum1 / n
        bb = sum2 * rs * rs / n
        for j in range(tid, n, _T):
            wc = float64(w[ow + g * K + j // S]) if has_w else _ONE
            i = base + j
            dx[odx + i] = rs * (dy[ody + i] * wc - a - (x[ox + i] - mu) * bb)


@cuda.jit
def _rows_affine_grads(R, G, K, S, dy, ody, x, ox, mean, om, rstd, ors, dw, odw, db, odb):
    tid = cuda.threadIdx.x
    n = K * S
    per_channel = (R // G) * S
    for c in range(cuda.blockIdx.x, G * K, cuda.gridDim.x):
        g = c // K
        k = c - g * K
        tw = float64(0.0)
        tb = float64(0.0)
        for idx in range(tid, per_channel, _T):
            a = idx // S
            r = a * G + g
            i = r * n + k * S + (idx - a * S)
            d = float64(dy[ody + i])
            tw += d * (x[ox + i] - mean[om + r]) * rstd[ors + r]
            tb += d
        sum_w, sum_b = _block_sums(tw, tb)
        if tid == 0:
            dw[odw + c] = sum_w
            db[odb + c] = sum_b


# ------------------------------------------------------------------ channels (batch norm, instance norm)
@cuda.jit
def _channel_moments(A, C, S, x, ox, mean, om, var, ov):
    tid = cuda.threadIdx.x
    n = A * S
    for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
        x0 = float64(x[ox + c * S])
        t1 = float64(0.0)
        t2 = float64(0.0)
        for idx in range(tid, n, _T):
            a = idx // S
            d = float64(x[ox + (a * C + c) * S + (idx - a * S)]) - x0
            t1 += d
            t2 += d * d
        sum1, sum2 = _block_sums(t1, t2)
        if tid == 0:
            m = sum1 / n
            v = sum2 / n - m * m
            if v < 0.0:
                v = 0.0
            mean[om + c] = x0 + m
            var[ov + c] = v


@cuda.jit
def _channel_grad_sums(A, C, S, dy, ody, x, ox, mean, om, sum_dy, osd, sum_dy_xmu, osx):
    tid = cuda.threadIdx.x
    n = A * S
    for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
        mu = mean[om + c]
        t1 = float64(0.0)
        t2 = float64(0.0)
        for idx in range(tid, n, _T):
            a = idx // S
            i = (a * C + c) * S + (idx - a * S)
            d = float64(dy[ody + i])
            t1 += d
            t2 += d * (x[ox + i] - mu)
        sum1, sum2 = _block_sums(t1, t2)
        if tid == 0:
            sum_dy[osd + c] = sum1
            sum_dy_xmu[osx + c] = sum2


@cuda.jit
def _channel_fma(N, C, S, u, ou, v, ov, p, op, q, oq, t, ot, out, oo):
    for i in range(cuda.grid(1), N, cuda.gridsize(1)):
        c = (i // S) % C
        out[oo + i] = u[ou + i] * p[op + c] + v[ov + i] * q[oq + c] + t[ot + c]


# ------------------------------------------------------------------ host side
def _numel(s) -> int:
    return s.size if isinstance(s, np.ndarray) else s.numel


def _arg(s, name: str, size: int, host_ok: bool = False) -> tuple:
    """(buffer, offset) of contiguous ``s`` holding ``size`` elements; an input may be a host NumPy array
    (``host_ok``), uploaded here."""
    if isinstance(s, np.ndarray):
        if not host_ok:
            raise TypeError(f"{name}: expected a DeviceStorage, got a host array")
        s = DeviceStorage.from_numpy(s)
    if s.numel != size:
        raise ValueError(f"{name}: expected {size} elements, got {s.numel} (shape {s.shape})")
    if not s.is_contiguous or s.offset < 0 or s.offset + size > s.buffer.size:
        raise ValueError(f"{name}: storage {s} is not contiguous within its buffer")
    return s.buffer, s.offset


def _optional(s, name: str, size: int, dummy) -> tuple:
    """(buffer, offset, present) of an affine parameter that may be None or empty (``dummy`` stands in)."""
    if s is None or _numel(s) == 0:
        return dummy, 0, False
    return (*_arg(s, name, size, True), True)


def _blocks(n: int) -> tuple[int, int]:
    return min(launch.MAX_BLOCKS, n), _T


def rows_norm_forward(x: DeviceStorage, w: DeviceStorage | None, b: DeviceStorage | None, groups: int, k: int,
                      s: int, eps: float, y: DeviceStorage, mean: DeviceStorage, rstd: DeviceStorage) -> None:
    """Normalize each row of flat ``x`` to ``y`` (affine by ``w``/``b``, None or empty when absent); fill float64
    ``mean``/``rstd`` (one per row)."""
    rows, n = mean.numel, k * s
    if rows == 0 or n == 0:
        return
    size = rows * n
    xb = _arg(x, "rows_norm_forward x", size)
    args = (*xb, *_optional(w, "rows_norm_forward w", groups * k, xb[0]),
            *_optional(b, "rows_norm_forward b", groups * k, xb[0]), *_arg(y, "rows_norm_forward y", size),
            *_arg(mean, "rows_norm_forward mean", rows), *_arg(rstd, "rows_norm_forward rstd", rows))
    _rows_forward[_blocks(rows)](rows, groups, k, s, float(eps), *args)


def rows_norm_backward(dy: DeviceStorage, x: DeviceStorage, mean: DeviceStorage, rstd: DeviceStorage,
                       w: DeviceStorage | None, groups: int, k: int, s: int, dx: DeviceStorage) -> None:
    """Input gradient of ``rows_norm_forward`` (``w`` None or empty when there is no weight)."""
    rows, n = _numel(mean), k * s
    if rows == 0 or n == 0:
        return
    size = rows * n
    xb = _arg(x, "rows_norm_backward x", size)
    _rows_backward[_blocks(rows)](
        rows, groups, k, s, *_arg(dy, "rows_norm_backward dy", size), *xb,
        *_arg(mean, "rows_norm_backward mean", rows, True), *_arg(rstd, "rows_norm_backward rstd", rows, True),
        *_optional(w, "rows_norm_backward w", groups * k, xb[0]), *_arg(dx, "rows_norm_backward dx", size))


def rows_norm_affine_grads(dy: DeviceStorage, x: DeviceStorage, mean: DeviceStorage, rstd: DeviceStorage,
                           groups: int, k: int, s: int, dw: DeviceStorage, db: DeviceStorage) -> None:
    """Weight and bias gradients of ``rows_norm_forward`` into float64 ``dw``/``db`` (one per channel).

    Each channel's sums are written (not added), like the CPU's parallel path; with the CPU contract's zeroed
    ``dw``/``db`` that is the same result. No rows: nothing is written.
    """
    rows, n = _numel(mean), k * s
    channels = groups * k
    if rows == 0 or n == 0 or channels == 0:
        return
    size = rows * n
    _rows_affine_grads[_blocks(channels)](
        rows, groups, k, s, *_arg(dy, "rows_norm_affine_grads dy", size), *_arg(x, "rows_norm_affine_grads x", size),
        *_arg(mean, "rows_norm_affine_grads mean", rows, True), *_arg(rstd, "rows_norm_affine_grads rstd", rows, True),
        *_arg(dw, "rows_norm_affine_grads dw", channels), *_arg(db, "rows_norm_affine_grads db", channels))


def channel_moments(x: DeviceStorage, a: int, c: int, s: int, mean: DeviceStorage, var: DeviceStorage) -> None:
    """Per-channel mean and biased variance of flat ``(a, c, s)`` ``x`` into float64 ``mean``/``var``.

    An empty ``x`` launches nothing (the CPU kernel must not be called with one either).
    """
    if a * c * s == 0:
        return
    _channel_moments[_blocks(c)](a, c, s, *_arg(x, "channel_moments x", a * c * s),
                                 *_arg(mean, "channel_moments mean", c), *_arg(var, "channel_moments var", c))


def channel_fma(u: DeviceStorage, v: DeviceStorage, p: DeviceStorage, q: DeviceStorage, t: DeviceStorage, c: int,
                s: int, out: DeviceStorage) -> None:
    """``out = u * p[c] + v * q[c] + t[c]`` over flat ``(a, c, s)`` arrays (float64 ``p``, ``q``, ``t``).

    Batch norm's forward (``u = v = x``, ``q = 0``) and its input gradient (``u = dy``, ``v = x``).
    """
    size = out.numel
    if size == 0:
        return
    _channel_fma[launch.grid(size)](
        size, c, s, *_arg(u, "channel_fma u", size), *_arg(v, "channel_fma v", size),
        *_arg(p, "channel_fma p", c, True), *_arg(q, "channel_fma q", c, True), *_arg(t, "channel_fma t", c, True),
        *_arg(out, "channel_fma out", size))


def channel_grad_sums(dy: DeviceStorage, x: DeviceStorage, mean: DeviceStorage, a: int, c: int, s: int,
                      sum_dy: DeviceStorage, sum_dy_xmu: DeviceStorage) -> None:
    """Per-channel ``sum(dy)`` and ``sum(dy * (x - mean))`` over flat ``(a, c, s)`` arrays, into float64 arrays.

    Channels with no elements get zeros, as on the CPU.
    """
    if c == 0:
        return
    size = a * c * s
    _channel_grad_sums[_blocks(c)](
        a, c, s, *_arg(dy, "channel_grad_sums dy", size), *_arg(x, "channel_grad_sums x", size),
        *_arg(mean, "channel_grad_sums mean", c, True), *_arg(sum_dy, "channel_grad_sums sum_dy", c),
        *_arg(sum_dy_xmu, "channel_grad_sums sum_dy_xmu", c))
