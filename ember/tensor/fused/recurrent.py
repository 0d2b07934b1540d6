"""Recurrent scans on the fused gate kernels: one direction of one layer over a whole (packed) sequence as one op.

Sequences are time-major and packed: step ``t`` owns rows ``start[t] : start[t] + batch_sizes[t]`` of a
2-D array (a padded batch is the special case of equal batch sizes). Batch sizes never grow along
time, so the rows of a step are a prefix of the hidden state: sequences that have ended keep their
last state (that is ``h_n``), and in the reverse direction sequences join from ``h0`` as they start.

The input projection of the whole sequence is one matrix product done outside (``x @ W_ih^T``);
``_Scan`` then runs the recurrence, biases included, with one BLAS product and one fused gate kernel
per step, forward and backward. A backward that must itself be differentiated (``create_graph=True``) replays the
recurrence in tensor ops (``scan_reference``) and differentiates that.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...autograd import grad as autograd_grad
from ...autograd.function import Function
from ...autograd.grad_mode import enable_grad, is_grad_enabled
from .._dispatch import ascontiguous, backend
from ..joins import cat
from ..tensor import Tensor

__all__ = ["scan", "scan_reference"]


def _steps(batch_sizes: Sequence[int], reverse: bool) -> list[tuple[int, int]]:
    """(first row, batch size) of every time step, in the order the recurrence visits them."""
    steps, start = [], 0
    for bs in batch_sizes:
        steps.append((start, int(bs)))
        start += int(bs)
    return steps[::-1] if reverse else steps


def _arr(t: Tensor | None, dtype: np.dtype) -> np.ndarray | None:
    return None if t is None else ascontiguous(t._array, dtype=dtype)


# ---- NumPy recurrences (forward saves what the backward reads) --------------------------------------------------
def _forward_steps(h: np.ndarray, h_prev: np.ndarray, steps: list[tuple[int, int]]):
    """Each step's (rows, incoming state ``h[:bs]``), the state saved to ``h_prev[rows]`` first; the caller
    overwrites the yielded view with the step's new state."""
    for start, bs in steps:
        rows = slice(start, start + bs)
        h_prev[rows] = h[:bs]
        yield rows, h[:bs]


# Each backward returns (d xw, d h0, d c0, d W_hh, d b_ih, d b_hh, d W_hr), None where there is no input.

def _lstm_forward(x, h0, c0, w_hh, bias, w_hr, steps):
    n, hidden = x.shape[0], c0.shape[1]
    kernels = backend(x).recurrent
    out = np.empty((n, h0.shape[1]), x.dtype, like=x)
    raw = np.empty((n, hidden), x.dtype, like=x) if w_hr is not None else out
    gates, tanh_c = np.empty((n, 4 * hidden), x.dtype, like=x), np.empty((n, hidden), x.dtype, like=x)
    h_prev, c_prev = np.empty_like(out), np.empty_like(tanh_c)
    hh = np.empty((h0.shape[0], 4 * hidden), x.dtype, like=x)
    h, c = h0.copy(), c0.copy()
    w_t = w_hh.T
    for rows, hp in _forward_steps(h, h_prev, steps):
        cp, product = c[:len(hp)], hh[:len(hp)]
        c_prev[rows] = cp
        np.matmul(hp, w_t, out=product)
        kernels.lstm_cell_forward(x[rows], product, bias, gates[rows], c_prev[rows], cp, tanh_c[rows], raw[rows])
        if w_hr is not None:
            np.matmul(raw[rows], w_hr.T, out=out[rows])
        hp[...] = out[rows]
    return (out, h, c), (gates, tanh_c, c_prev, h_prev, raw)


def _lstm_backward(saved, dout, dhn, dcn, w_hh, w_hr, steps):
    gates, tanh_c, c_prev, h_prev, raw = saved
    kernels = backend(gates).recurrent
    dgates = np.empty_like(gates)
    dh_state, dc_state = dhn.copy(), dcn.copy()
    dh_all = np.empty_like(dout) if w_hr is not None else None
    for start, bs in reversed(steps):
        rows = slice(start, start + bs)
        dh = dout[rows] + dh_state[:bs]
        if w_hr is not None:
            dh_all[rows] = dh
            dh = dh @ w_hr
        dg = dgates[rows]
        kernels.lstm_cell_backward(dh, dc_state[:bs], gates[rows], tanh_c[rows], c_prev[rows], dg)
        np.matmul(dg, w_hh, out=dh_state[:bs])
    dw_hr = dh_all.T @ raw if w_hr is not None else None
    dbias = dgates.sum(0)
    return dgates, dh_state, dc_state, dgates.T @ h_prev, dbias, dbias, dw_hr


def _gru_forward(x, h0, w_hh, b_ih, b_hh, steps):
    n, hidden = x.shape[0], h0.shape[1]
    kernels = backend(x).recurrent
    out, h_prev = np.empty((n, hidden), x.dtype, like=x), np.empty((n, hidden), x.dtype, like=x)
    gates, gh = np.empty((n, 3 * hidden), x.dtype, like=x), np.empty((n, 3 * hidden), x.dtype, like=x)
    h = h0.copy()
    w_t = w_hh.T
    for rows, hp in _forward_steps(h, h_prev, steps):
        g = gh[rows]
        np.matmul(hp, w_t, out=g)
        if b_hh is not None:
            g += b_hh
        kernels.gru_cell_forward(x[rows], b_ih, g, h_prev[rows], gates[rows], out[rows])
        hp[...] = out[rows]
    return (out, h), (gates, gh, h_prev)


def _gru_backward(saved, dout, dhn, w_hh, steps):
    gates, gh, h_prev = saved
    kernels = backend(gates).recurrent
    dxw, dgh = np.empty_like(gates), np.empty_like(gates)
    dh_state = dhn.copy()
    for start, bs in reversed(steps):
        rows = slice(start, start + bs)
        dh = dout[rows] + dh_state[:bs]
        kernels.gru_cell_backward(dh, gates[rows], gh[rows], h_prev[rows], dxw[rows], dgh[rows], dh_state[:bs])
        dh_state[:bs] += dgh[rows] @ w_hh
    return dxw, dh_state, None, dgh.T @ h_prev, dxw.sum(0), dgh.sum(0), None


def _rnn_forward(x, h0, w_hh, bias, relu, steps):
    out = np.empty((x.shape[0], h0.shape[1]), x.dtype, like=x)
    h_prev = np.empty_like(out)
    h = h0.copy()
    w_t = w_hh.T
    for rows, hp in _forward_steps(h, h_prev, steps):
        o = out[rows]
        np.matmul(hp, w_t, out=o)
        o += x[rows]
        o += bias
        if relu:
            np.maximum(o, 0, out=o)
        else:
            np.tanh(o, out=o)
        hp[...] = o
    return (out, h), (out, h_prev)


def _rnn_backward(saved, dout, dhn, w_hh, relu, steps):
    out, h_prev = saved
    dpre = np.empty_like(out)
    dh_state = dhn.copy()
    for start, bs in reversed(steps):
        rows = slice(start, start + bs)
        h, d = out[rows], dpre[rows]
        np.add(dout[rows], dh_state[:bs], out=d)
        if relu:
            d *= h > 0
        else:
            d *= 1 - h * h
        np.matmul(d, w_hh, out=dh_state[:bs])
    dbias = dpre.sum(0)
    return dpre, dh_state, None, dpre.T @ h_prev, dbias, dbias, None


class _Scan(Function):
    """One direction of one recurrent layer: (xw, h0, c0, W_hh, b_ih, b_hh, W_hr) -> (out, h_n[, c_n]).

    ``xw`` is the input projection ``x @ W_ih^T`` (N, gates * hidden) without bias; absent inputs are None.
    """

    @staticmethod
    def forward(ctx, xw, h0, c0, w_hh, b_ih, b_hh, w_hr, mode, batch_sizes, reverse):
        dtype = xw.dtype.compute.np
        x, h, w = _arr(xw, dtype), _arr(h0, dtype), _arr(w_hh, dtype)
        bi, bh = _arr(b_ih, dtype), _arr(b_hh, dtype)
        if bi is None:
            bi = np.zeros(x.shape[1], dtype, like=x)
        steps = _steps(batch_sizes, reverse)
        if mode == "LSTM":
            outs, saved = _lstm_forward(x, h, _arr(c0, dtype), w, bi + bh if bh is not None else bi,
                                        _arr(w_hr, dtype), steps)
        elif mode == "GRU":
            outs, saved = _gru_forward(x, h, w, bi, bh, steps)
        else:
            outs, saved = _rnn_forward(x, h, w, bi + bh if bh is not None else bi, mode == "RNN_RELU", steps)
        if ctx.needs_input_grad:
            ctx.save_for_backward(xw, h0, c0, w_hh, b_ih, b_hh, w_hr)
            ctx.arrays, ctx.steps, ctx.mode = saved, steps, mode
            ctx.batch_sizes, ctx.reverse = batch_sizes, reverse
        return tuple(o.astype(xw._array.dtype, copy=False) for o in outs)

    @staticmethod
    def backward(ctx, dout, dhn, dcn=None):
        inputs = ctx.saved_tensors
        if is_grad_enabled():
            grads = _replayed_grads(inputs, (dout, dhn, dcn), ctx.mode, ctx.batch_sizes, ctx.reverse,
                                    ctx.needs_input_grad)
        else:
            grads = _fused_grads(ctx, inputs, dout, dhn, dcn)
        return (*grads, None, None, None)


def _fused_grads(ctx, inputs, dout, dhn, dcn) -> tuple:
    w_hh, w_hr = inputs[3], inputs[6]
    dtype = ctx.arrays[0].dtype
    w = _arr(w_hh, dtype)
    d_out, d_hn = _arr(dout, dtype), _arr(dhn, dtype)
    if ctx.mode == "LSTM":
        raw = _lstm_backward(ctx.arrays, d_out, d_hn, _arr(dcn, dtype), w, _arr(w_hr, dtype), ctx.steps)
    elif ctx.mode == "GRU":
        raw = _gru_backward(ctx.arrays, d_out, d_hn, w, ctx.steps)
    else:
        raw = _rnn_backward(ctx.arrays, d_out, d_hn, w, ctx.mode == "RNN_RELU", ctx.steps)
    return tuple(
        Tensor._make(g.astype(t._array.dtype, copy=False)) if g is not None and need else None
        for g, t, need in zip(raw, inputs, ctx.needs_input_grad)
    )


class _Alias(Function):
    """Identity with its own graph node: where a replayed backward captures its input gradients."""

    @staticmethod
    def forward(ctx, x):
        return Tensor._make(x._array)

    @staticmethod
    def backward(ctx, g):
        return g


def _replayed_grads(inputs, grad_outputs, mode, batch_sizes, reverse, needs) -> tuple:
    """Input gradients as differentiable tensor ops: the recurrence replayed and differentiated."""
    with enable_grad():
        aliases = [_Alias.apply(t) if t is not None and need else t for t, need in zip(inputs, needs)]
        outs = scan_reference(*aliases, mode, batch_sizes, reverse)
        wanted = [a for a, need in zip(aliases, needs) if a is not None and need]
        pairs = [(o, g) for o, g in zip(outs, grad_outputs) if o.requires_grad and g is not None]
        found = iter(autograd_grad([o for o, _ in pairs], wanted, [g for _, g in pairs], create_graph=True,
                                   allow_unused=True, materialize_grads=True))
    return tuple(next(found) if a is not None and need else None for a, need in zip(aliases, needs))


def scan(xw: Tensor, h0: Tensor, c0: Tensor | None, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
         w_hr: Tensor | None, mode: str, batch_sizes: Sequence[int], reverse: bool = False) -> tuple:
    """Run one direction of a recurrent layer over packed input projections ``xw`` (fused kernels)."""
    return _Scan.apply(xw, h0, c0, w_hh, b_ih, b_hh, w_hr, mode, tuple(batch_sizes), reverse)


def scan_reference(xw: Tensor, h0: Tensor, c0: Tensor | None, w_hh: Tensor, b_ih: Tensor | None,
                   b_hh: Tensor | None, w_hr: Tensor | None, mode: str, batch_sizes: Sequence[int],
                   reverse: bool = False) -> tuple:
    """The same recurrence as ``scan`` written step by step in tensor ops (differentiable to any order)."""
    if b_ih is not None:
        xw = xw + b_ih if mode == "GRU" else xw + (b_ih + b_hh)
    h, c = h0, c0
    by_start = {}
    for start, bs in _steps(batch_sizes, reverse):
        x, hp = xw[start:start + bs], h[:bs]
        gh = hp.matmul(w_hh.t())
        if mode == "LSTM":
            i, f, g, o = (x + gh).chunk(4, 1)
            c_new = f.sigmoid() * c[:bs] + i.sigmoid() * g.tanh()
            h_new = o.sigmoid() * c_new.tanh()
            if w_hr is not None:
                h_new = h_new.matmul(w_hr.t())
            c = c_new if bs == c.shape[0] else cat([c_new, c[bs:]])
        elif mode == "GRU":
            if b_hh is not None:
                gh = gh + b_hh
            xr, xz, xn = x.chunk(3, 1)
            hr, hz, hn = gh.chunk(3, 1)
            r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
            n = (xn + r * hn).tanh()
            h_new = (1 - z) * n + z * hp
        else:
            h_new = (x + gh).relu() if mode == "RNN_RELU" else (x + gh).tanh()
        h = h_new if bs == h.shape[0] else cat([h_new, h[bs:]])
        by_start[start] = h_new
    out = cat([by_start[s] for s in sorted(by_start)]) if by_start else xw.new_zeros((0, h0.shape[1]))
    return (out, h, c) if mode == "LSTM" else (out, h)
