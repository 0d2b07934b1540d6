"""Fused gate kernels of the recurrent cells (LSTM, GRU): one call per time step does every gate.

The recurrent matrix products stay in BLAS (NumPy); these kernels do the elementwise part that would
otherwise be a dozen separate ops per step. Gate order follows torch: LSTM (i, f, g, o), GRU (r, z, n).
All arrays are C-contiguous 2-D float32 or float64 of ``rows`` rows (the batch of one time step).

tanh and sigmoid are computed by ``ember.kernels.common.recurrent.gate_tanh`` rather than libm: libm's
scalar tanh/exp do not vectorise and cost ~50 ns each here, which made the gates slower than the matrix products.
"""
from __future__ import annotations

import numba

from ..common.recurrent import gate_tanh

__all__ = ["lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"]

# "contract" lets LLVM fuse multiply-adds; no flag that changes NaN/inf semantics.
_FLAGS = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@numba.njit(inline="always", **_FLAGS)
def _sigmoid(v):
    return 0.5 + 0.5 * gate_tanh(0.5 * v)


@numba.njit(**_FLAGS)
def lstm_cell_forward(xw, hh, bias, gates, c_prev, c_new, tanh_c, h_new):
    """One LSTM step from the input part ``xw``, the hidden part ``hh = h @ W_hh^T`` and ``bias`` (b_ih + b_hh).

    Writes the activated (i, f, g, o) to ``gates``, the new cell ``c_new``, its ``tanh_c`` (kept for
    the backward) and ``h_new``. Two simple loops rather than one: a loop that writes many arrays
    needs more run-time overlap checks than LLVM makes, and then it does not vectorise.
    """
    rows, hidden = c_new.shape
    for b in range(rows):
        for q in range(4):  # sigmoid(v) = 0.5 + 0.5 * tanh(v / 2) for i, f, o; tanh for g
            scale = 1.0 if q == 2 else 0.5
            shift = 0.0 if q == 2 else 0.5
            for k in range(q * hidden, (q + 1) * hidden):
                gates[b, k] = shift + scale * gate_tanh(scale * (hh[b, k] + xw[b, k] + bias[k]))
    for b in range(rows):
        for j in range(hidden):
            c = gates[b, hidden + j] * c_prev[b, j] + gates[b, j] * gates[b, 2 * hidden + j]
            tc = gate_tanh(c)
            c_new[b, j] = c
            tanh_c[b, j] = tc
            h_new[b, j] = gates[b, 3 * hidden + j] * tc


@numba.njit(**_FLAGS)
def lstm_cell_backward(dh, dc, gates, tanh_c, c_prev, dgates):
    """Gradients of one LSTM step: ``dgates`` gets d(pre-activations); ``dc`` becomes d(c_prev) in place."""
    rows, hidden = tanh_c.shape
    for b in range(rows):
        for j in range(hidden):
            i = gates[b, j]
            f = gates[b, hidden + j]
            g = gates[b, 2 * hidden + j]
            o = gates[b, 3 * hidden + j]
            tc = tanh_c[b, j]
            dcell = dc[b, j] + dh[b, j] * o * (1.0 - tc * tc)
            dgates[b, j] = dcell * g * i * (1.0 - i)
            dgates[b, hidden + j] = dcell * c_prev[b, j] * f * (1.0 - f)
            dgates[b, 2 * hidden + j] = dcell * i * (1.0 - g * g)
            dgates[b, 3 * hidden + j] = dh[b, j] * tc * o * (1.0 - o)
            dc[b, j] = dcell * f


@numba.njit(**_FLAGS)
def gru_cell_forward(xw, bias, gh, h_prev, gates, h_new):
    """One GRU step from the input part ``xw + bias`` (b_ih) and the hidden part ``gh = h_prev @ W_hh^T + b_hh``.

    Writes the activated (r, z, n) to ``gates`` and ``h_new = (1 - z) * n + z * h_prev`` (loops split
    as in ``lstm_cell_forward``).
    """
    rows, hidden = h_new.shape
    for b in range(rows):
        for k in range(2 * hidden):
            gates[b, k] = 0.5 + 0.5 * gate_tanh(0.5 * (xw[b, k] + bias[k] + gh[b, k]))
    for b in range(rows):
        for j in range(hidden):
            k = 2 * hidden + j
            gates[b, k] = gate_tanh(xw[b, k] + bias[k] + gates[b, j] * gh[b, k])
    for b in range(rows):
        for j in range(hidden):
            z = gates[b, hidden + j]
            h_new[b, j] = (1.0 - z) * gates[b, 2 * hidden + j] + z * h_prev[b, j]


@numba.njit(**_FLAGS)
def gru_cell_backward(dh, gates, gh, h_prev, dxw, dgh, dh_prev):
    """Gradients of one GRU step: d(input part) ``dxw``, d(hidden part) ``dgh`` and the direct d(h_prev)."""
    rows, hidden = dh.shape
    for b in range(rows):
        for j in range(hidden):
            r = gates[b, j]
            z = gates[b, hidden + j]
            n = gates[b, 2 * hidden + j]
            d = dh[b, j]
            dn = d * (1.0 - z) * (1.0 - n * n)
            dz = d * (h_prev[b, j] - n) * z * (1.0 - z)
            dr = dn * gh[b, 2 * hidden + j] * r * (1.0 - r)
            dxw[b, j] = dr
            dxw[b, hidden + j] = dz
            dxw[b, 2 * hidden + j] = dn
            dgh[b, j] = dr
            dgh[b, hidden + j] = dz
            dgh[b, 2 * hidden + j] = dn * r
            dh_prev[b, j] = d * z
