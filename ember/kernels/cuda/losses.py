"""Loss kernels on the device: fused class-index cross-entropy / NLL, and CTC.

Semantics, shapes and formulas are the CPU's (``ember.kernels.cpu.losses``,
whose docstring derives them). The class-index kernels run one block per row
(n, s) of the (N, C, S) input: the log-sum-exp (a shared-memory max, then a
sum of exp(x - max)), the weighted smoothing terms and the gather happen in
one kernel, in float64. CTC's alpha and beta recursions are sequential over
time and states, so each batch item is one thread; beta's two live rows and
the per-class posterior sums go to a float64 device scratch.

``target``/``weight`` (class NLL) and ``targets``/``input_lengths``/
``target_lengths`` (CTC) may be DeviceStorage or host NumPy arrays (the layer
code builds them on the host); host arrays are copied up once per call.

``class_nll_forward`` returns the summed row weight as a Python float, as the
CPU contract does: the per-row weights are summed on the device and that one
number is the call's only device-to-host transfer.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from ... import opcodes as op
from . import launch
from .launch import grid
from .reductions import reduce
from .softmax import block_max, block_sum
from .storage import DeviceStorage

__all__ = ["class_nll_forward", "class_nll_backward", "ctc_forward", "ctc_backward"]

_T = launch.REDUCE_THREADS


def _operand(a, dtype) -> tuple:
    """(buffer, offset) of a DeviceStorage, or of a host array copied to the device as ``dtype``."""
    if isinstance(a, DeviceStorage):
        return a.buffer, a.offset
    return cuda.to_device(np.ascontiguousarray(a, dtype).reshape(-1)), 0


# ---- cross-entropy / NLL over class indices ----------------------------------------------------------------------

@cuda.jit
def _class_forward_kernel(n_rows, n_classes, inner, x, ox, target, ot, weight, ow, ignore_index, smoothing,
                          from_logits, loss, ol, lse, oe, row_weight):
    shared = cuda.shared.array(_T, float64)
    tid = cuda.threadIdx.x
    for row in range(cuda.blockIdx.x, n_rows, cuda.gridDim.x):
        t = target[ot + row]
        if t == ignore_index:  # the whole block takes this branch
            if tid == 0:
                loss[ol + row] = 0.0
                lse[oe + row] = 0.0
                row_weight[row] = 0.0
            continue
        n = row // inner
        base = ox + n * n_classes * inner + (row - n * inner)  # x[n, 0, s]
        log_norm = 0.0
        if from_logits:
            peak = -math.inf
            for c in range(tid, n_classes, _T):
                v = float64(x[base + c * inner])
                if v > peak:
                    peak = v
            peak = block_max(shared, tid, peak)
            total = 0.0
            for c in range(tid, n_classes, _T):
                total += math.exp(float64(x[base + c * inner]) - peak)
            total = block_sum(shared, tid, total)
            log_norm = peak + math.log(total)
        wt = float64(weight[ow + t])
        value = (1.0 - smoothing) * wt * (log_norm - float64(x[base + t * inner]))
        if smoothing > 0.0:
            dot = 0.0
            weight_sum = 0.0
            for c in range(tid, n_classes, _T):
                w = float64(weight[ow + c])
                dot += w * float64(x[base + c * inner])
                weight_sum += w
            dot = block_sum(shared, tid, dot)
            weight_sum = block_sum(shared, tid, weight_sum)
            value += smoothing / n_classes * (log_norm * weight_sum - dot)
        if tid == 0:
            loss[ol + row] = value
            lse[oe + row] = log_norm
            row_weight[row] = wt


@cuda.jit
def _class_backward_kernel(n_rows, n_classes, inner, x, ox, target, ot, weight, ow, lse, oe, grad_row, og,
                           ignore_index, smoothing, from_logits, grad, ogr):
    shared = cuda.shared.array(_T, float64)
    tid = cuda.threadIdx.x
    for row in range(cuda.blockIdx.x, n_rows, cuda.gridDim.x):
        n = row // inner
        rel = n * n_classes * inner + (row - n * inner)  # [n, 0, s] relative to a (N, C, S) start
        t = target[ot + row]
        if t == ignore_index:
            for c in range(tid, n_classes, _T):
                grad[ogr + rel + c * inner] = 0.0
            continue
        g = float64(grad_row[og + row])
        share = smoothing / n_classes
        hit = (1.0 - smoothing) * float64(weight[ow + t])
        if from_logits:
            weight_sum = 0.0
            if smoothing > 0.0:
                for c in range(tid, n_classes, _T):
                    weight_sum += float64(weight[ow + c])
                weight_sum = block_sum(shared, tid, weight_sum)
            total = hit + share * weight_sum
            log_norm = float64(lse[oe + row])
            for c in range(tid, n_classes, _T):
                p = math.exp(float64(x[ox + rel + c * inner]) - log_norm)
                v = g * (total * p - share * float64(weight[ow + c]))
                if c == t:
                    v -= g * hit
                grad[ogr + rel + c * inner] = v
        else:
            for c in range(tid, n_classes, _T):
                v = -g * share * float64(weight[ow + c])
                if c == t:
                    v -= g * hit
                grad[ogr + rel + c * inner] = v


def class_nll_forward(x: DeviceStorage, target, weight, ignore_index: int, smoothing: float, from_logits: bool,
                      loss: DeviceStorage, lse: DeviceStorage) -> float:
    """Per-row losses of (N, C, S) ``x`` against (N, S) int64 ``target``; returns the summed weight w[t].

    ``x`` and ``weight`` (C,) share a float dtype, everything C-contiguous, every
    target is ``ignore_index`` or in ``[0, C)``. Fills ``loss`` and ``lse`` (N, S)
    of ``x``'s dtype (``lse`` is 0 when ``from_logits`` is False).
    """
    n, n_classes, inner = x.shape
    n_rows = n * inner
    if n_rows == 0:
        return 0.0
    t_buf, t_off = _operand(target, np.int64)
    w_buf, w_off = _operand(weight, x.dtype)
    row_weight = DeviceStorage.empty((n_rows,), np.float64)
    _class_forward_kernel[min(launch.MAX_BLOCKS, n_rows), _T](
        n_rows, n_classes, inner, x.buffer, x.offset, t_buf, t_off, w_buf, w_off, int(ignore_index),
        float(smoothing), bool(from_logits), loss.buffer, loss.offset, lse.buffer, lse.offset, row_weight.buffer)
    total = DeviceStorage.empty((1,), np.float64)
    reduce(op.R_SUM, row_weight, (0,), total)
    return float(total.to_numpy()[0])


def class_nll_backward(x: DeviceStorage, target, weight, lse: DeviceStorage, grad_row: DeviceStorage,
                       ignore_index: int, smoothing: float, from_logits: bool, grad: DeviceStorage) -> None:
    """Fill (N, C, S) ``grad`` with d(sum_rows grad_row * loss)/dx for the forward of ``class_nll_forward``."""
    n, n_classes, inner = x.shape
    n_rows = n * inner
    if n_rows == 0 or n_classes == 0:
        return
    t_buf, t_off = _operand(target, np.int64)
    w_buf, w_off = _operand(weight, x.dtype)
    _class_backward_kernel[min(launch.MAX_BLOCKS, n_rows), _T](
        n_rows, n_classes, inner, x.buffer, x.offset, t_buf, t_off, w_buf, w_off, lse.buffer, lse.offset,
        grad_row.buffer, grad_row.offset, int(ignore_index), float(smoothing), bool(from_logits), grad.buffer,
        grad.offset)


# ---- CTC ---------------------------------------------------------------------------------------------------------

@cuda.jit(device=True)
def _log_add(a, b):
    """log(exp(a) + exp(b)) without overflow; exact when either side is -inf."""
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@cuda.jit(device=True)
def _label(targets, tb, s, blank):
    """Class of state ``s`` of the blank-extended label sequence of the item whose targets start at ``tb``."""
    if s % 2 == 0:
        return blank
    return targets[tb + s // 2]


@cuda.jit(device=True)
def _can_skip(targets, tb, s):
    """Whether state ``s`` may be reached from ``s - 2`` (a label differing from the previous label)."""
    return s >= 2 and s % 2 == 1 and targets[tb + s // 2] != targets[tb + s // 2 - 1]


@cuda.jit
def _ctc_forward_kernel(batch, max_steps, n_classes, max_labels, width, lp, olp, targets, otg, in_len, oil, tg_len,
                        otl, blank, alpha, oa, nll, on):
    for b in range(cuda.grid(1), batch, cuda.gridsize(1)):
        steps = in_len[oil + b]
        states = 2 * tg_len[otl + b] + 1
        ab = oa + b * max_steps * width  # log_alpha[b, 0, 0]
        tb = otg + b * max_labels        # targets[b, 0]
        for i in range(max_steps * width):
            alpha[ab + i] = -math.inf
        if steps == 0:
            nll[on + b] = 0.0 if states == 1 else math.inf
            continue
        row = olp + b * n_classes  # log_probs[0, b, 0]; step t adds t * batch * n_classes
        alpha[ab] = lp[row + blank]
        if states > 1:
            alpha[ab + 1] = lp[row + targets[tb]]
        for t in range(1, steps):
            cur = ab + t * width
            prev = cur - width
            lpt = row + t * batch * n_classes
            for s in range(states):
                acc = alpha[prev + s]
                if s >= 1:
                    acc = _log_add(acc, alpha[prev + s - 1])
                if _can_skip(targets, tb, s):
                    acc = _log_add(acc, alpha[prev + s - 2])
                if acc != -math.inf:
                    acc += lp[lpt + _label(targets, tb, s, blank)]
                alpha[cur + s] = acc
        last = ab + (steps - 1) * width + states - 1
        end = alpha[last]
        if states > 1:
            end = _log_add(end, alpha[last - 1])
        nll[on + b] = -end


@cuda.jit
def _ctc_backward_kernel(batch, max_steps, n_classes, max_labels, width, lp, olp, targets, otg, in_len, oil, tg_len,
                         otl, blank, alpha, oa, nll, on, grad_out, ogo, zero_infinity, beta, pair, grad, og):
    for b in range(cuda.grid(1), batch, cuda.gridsize(1)):
        steps = in_len[oil + b]
        states = 2 * tg_len[otl + b] + 1
        loss = float64(nll[on + b])
        g = float64(grad_out[ogo + b])
        stride = batch * n_classes  # one time step of log_probs / grad
        for t in range(max_steps):
            for c in range(n_classes):
                grad[og + t * stride + b * n_classes + c] = 0.0
        if steps == 0 or (zero_infinity and loss == math.inf):
            continue
        tb = otg + b * max_labels
        bb = b * 2 * width  # beta scratch rows (2, width) of this item: row t % 2 is step t
        pb = b * n_classes
        for t in range(steps - 1, -1, -1):
            now = bb + (t % 2) * width
            nxt = bb + (1 - t % 2) * width
            lpt = olp + t * stride + b * n_classes
            for s in range(states):
                if t == steps - 1:
                    acc = 0.0 if s >= states - 2 else -math.inf
                else:
                    acc = beta[nxt + s]
                    if s + 1 < states:
                        acc = _log_add(acc, beta[nxt + s + 1])
                    if s + 2 < states and _can_skip(targets, tb, s + 2):
                        acc = _log_add(acc, beta[nxt + s + 2])
                if acc != -math.inf:
                    acc += float64(lp[lpt + _label(targets, tb, s, blank)])
                beta[now + s] = acc
            for c in range(n_classes):
                pair[pb + c] = -math.inf
            at = oa + (b * max_steps + t) * width
            for s in range(states):
                c = _label(targets, tb, s, blank)
                pair[pb + c] = _log_add(pair[pb + c], float64(alpha[at + s]) + beta[now + s])
            gt = og + t * stride + b * n_classes
            for c in range(n_classes):
                v = float64(lp[lpt + c])
                grad[gt + c] = (math.exp(v) - math.exp(pair[pb + c] + loss - v)) * g


def ctc_forward(log_probs: DeviceStorage, targets, input_lengths, target_lengths, blank: int,
                log_alpha: DeviceStorage, nll: DeviceStorage) -> None:
    """Negative log-likelihood of each batch item under CTC, with the alphas kept for ``ctc_backward``.

    ``log_probs`` (T, N, C) float32/float64; ``targets`` (N, L) int64 padded
    labels; ``input_lengths`` / ``target_lengths`` (N,) int64. Fills
    ``log_alpha`` (N, T, 2L + 1) and ``nll`` (N,), of ``log_probs``'s dtype.
    """
    max_steps, batch, n_classes = log_probs.shape
    if batch == 0:
        return
    width = log_alpha.shape[2]
    tg, otg = _operand(targets, np.int64)
    il, oil = _operand(input_lengths, np.int64)
    tl, otl = _operand(target_lengths, np.int64)
    blocks, threads = grid(batch)
    _ctc_forward_kernel[blocks, threads](batch, max_steps, n_classes, targets.shape[1], width, log_probs.buffer,
                                         log_probs.offset, tg, otg, il, oil, tl, otl, int(blank), log_alpha.buffer,
                                         log_alpha.offset, nll.buffer, nll.offset)


def ctc_backward(log_probs: DeviceStorage, targets, input_lengths, target_lengths, blank: int,
                 log_alpha: DeviceStorage, nll: DeviceStorage, grad_out: DeviceStorage, zero_infinity: bool,
                 grad: DeviceStorage) -> None:
    """Fill (T, N, C) ``grad`` with ``grad_out[n] * (exp(log_probs) - posterior)`` as torch's CTC backward does.

    Steps past an item's input length get 0, as do items with infinite loss when ``zero_infinity``.
    """
    max_steps, batch, n_classes = log_probs.shape
    if batch == 0 or max_steps == 0 or n_classes == 0:
        return
    width = log_alpha.shape[2]
    tg, otg = _operand(targets, np.int64)
    il, oil = _operand(input_lengths, np.int64)
    tl, otl = _operand(target_lengths, np.int64)
    beta = cuda.device_array(batch * 2 * width, np.float64)
    pair = cuda.device_array(batch * n_classes, np.float64)
    blocks, threads = grid(batch)
    _ctc_backward_kernel[blocks, threads](batch, max_steps, n_classes, targets.shape[1], width, log_probs.buffer,
                                          log_probs.offset, tg, otg, il, oil, tl, otl, int(blank), log_alpha.buffer,
                                          log_alpha.offset, nll.buffer, nll.offset, grad_out.buffer, grad_out.offset,
                                          bool(zero_infinity), beta, pair, grad.buffer, grad.offset)
