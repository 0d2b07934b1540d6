"""Fused gate kernels of the recurrent cells (LSTM, GRU) on the GPU: one launch per time step does every gate.

Arguments and arithmetic are ``ember.kernels.cpu.recurrent``'s: 2-D C-contiguous float32/float64
``DeviceStorage``s of ``rows`` rows (row slices of a bigger array, so any ``offset``), gate order
(i, f, g, o) and (r, z, n), and the CPU's own tanh (``common.recurrent.gate_tanh``, built as a device
function, ``_tanh`` here), so the activations agree to rounding. One thread handles one (row, hidden
unit) pair and all of its gates, grid-striding over ``rows * hidden``.

Precision follows the CPU's typing exactly: a gate is stored in the data dtype and read back before
it is used (the CPU's second loop reads the stored gates), ``_tanh`` runs in float64 (its clamp
promotes a float32 argument), and wherever the CPU mixes a float literal (``1.0 - z``) the
expression is float64. The literals are float64 scalars here, so the simulator, which follows NumPy's
scalar rules, promotes the same way the device does.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float64

from ..common.recurrent import gate_tanh
from .device_functions import device_function
from .launch import grid
from .storage import DeviceStorage

__all__ = ["lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"]

_tanh = device_function(gate_tanh)
_ONE = np.float64(1.0)
_HALF = np.float64(0.5)


@cuda.jit(device=True)
def _sigmoid(v):
    """The CPU's ``shift + scale * _tanh(scale * v)`` with scale = shift = 0.5, in float64."""
    return _HALF + _HALF * _tanh(_HALF * float64(v))


@cuda.jit(device=True)
def _store(a, i, v):
    """``a[i] = v`` and the stored (dtype-rounded) value, as the CPU reads it back."""
    a[i] = v
    return a[i]


@cuda.jit(device=True)
def _unit(e, H, gates):
    """Hidden unit ``j`` of element ``e`` of a (rows, H) array and the column of its first gate in the same row of
    a (rows, gates * H) array, where gate ``k`` of unit ``j`` sits at column ``k * H + j``."""
    b = e // H
    j = e - b * H
    return j, b * gates * H + j


@cuda.jit
def _lstm_forward(n, H, xw, oxw, hh, ohh, bias, ob, gates, og, c_prev, ocp, c_new, ocn, tanh_c, otc, h_new, ohn):
    for e in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, wide = _unit(e, H, 4)
        i = _store(gates, og + wide, _sigmoid(hh[ohh + wide] + xw[oxw + wide] + bias[ob + j]))
        k = wide + H
        f = _store(gates, og + k, _sigmoid(hh[ohh + k] + xw[oxw + k] + bias[ob + H + j]))
        k += H
        g = _store(gates, og + k, _tanh(float64(hh[ohh + k] + xw[oxw + k] + bias[ob + 2 * H + j])))
        k += H
        o = _store(gates, og + k, _sigmoid(hh[ohh + k] + xw[oxw + k] + bias[ob + 3 * H + j]))
        c = f * c_prev[ocp + e] + i * g
        tc = _tanh(float64(c))
        c_new[ocn + e] = c
        tanh_c[otc + e] = tc
        h_new[ohn + e] = o * tc


@cuda.jit
def _lstm_backward(n, H, dh, odh, dc, odc, gates, og, tanh_c, otc, c_prev, ocp, dgates, odg):
    for e in range(cuda.grid(1), n, cuda.gridsize(1)):
        _, wide = _unit(e, H, 4)
        i = gates[og + wide]
        f = gates[og + wide + H]
        g = gates[og + wide + 2 * H]
        o = gates[og + wide + 3 * H]
        tc = tanh_c[otc + e]
        d = dh[odh + e]
        dcell = dc[odc + e] + d * o * (_ONE - tc * tc)
        dgates[odg + wide] = dcell * g * i * (_ONE - i)
        dgates[odg + wide + H] = dcell * c_prev[ocp + e] * f * (_ONE - f)
        dgates[odg + wide + 2 * H] = dcell * i * (_ONE - g * g)
        dgates[odg + wide + 3 * H] = d * tc * o * (_ONE - o)
        dc[odc + e] = dcell * f


@cuda.jit
def _gru_forward(n, H, xw, oxw, bias, ob, gh, ogh, h_prev, ohp, gates, og, h_new, ohn):
    for e in range(cuda.grid(1), n, cuda.gridsize(1)):
        j, wide = _unit(e, H, 3)
        r = _store(gates, og + wide, _sigmoid(xw[oxw + wide] + bias[ob + j] + gh[ogh + wide]))
        k = wide + H
        z = _store(gates, og + k, _sigmoid(xw[oxw + k] + bias[ob + H + j] + gh[ogh + k]))
        k += H
        nn = _store(gates, og + k, _tanh(float64(xw[oxw + k] + bias[ob + 2 * H + j] + r * gh[ogh + k])))
        h_new[ohn + e] = (_ONE - z) * nn + z * h_prev[ohp + e]


@cuda.jit
def _gru_backward(n, H, dh, odh, gates, og, gh, ogh, h_prev, ohp, dxw, odx, dgh, odg, dh_prev, odp):
    for e in range(cuda.grid(1), n, cuda.gridsize(1)):
        _, wide = _unit(e, H, 3)
        r = gates[og + wide]
        z = gates[og + wide + H]
        nn = gates[og + wide + 2 * H]
        d = dh[odh + e]
        dn = d * (_ONE - z) * (_ONE - nn * nn)
        dz = d * (h_prev[ohp + e] - nn) * z * (_ONE - z)
        dr = dn * gh[ogh + wide + 2 * H] * r * (_ONE - r)
        dxw[odx + wide] = dr
        dxw[odx + wide + H] = dz
        dxw[odx + wide + 2 * H] = dn
        dgh[odg + wide] = dr
        dgh[odg + wide + H] = dz
        dgh[odg + wide + 2 * H] = dn * r
        dh_prev[odp + e] = d * z


def _launch(kernel, name: str, rows: int, hidden: int, *pairs) -> None:
    """Launch ``kernel`` over the ``rows * hidden`` (row, unit) pairs on the buffers and offsets of the
    (storage, columns) ``pairs``, each checked to be C-contiguous ``(rows, columns)`` (1-D ``(columns,)`` for a
    bias) within its buffer. Nothing to do, nothing checked."""
    n = rows * hidden
    if n == 0:
        return
    args = []
    for s, cols in pairs:
        shape = (cols,) if s.ndim == 1 else (rows, cols)
        if s.shape != shape or not s.is_contiguous or s.offset < 0 or s.offset + s.numel > s.buffer.size:
            raise ValueError(f"{name}: expected a C-contiguous {shape} storage, got {s}")
        args += [s.buffer, s.offset]
    kernel[grid(n)](n, hidden, *args)


def lstm_cell_forward(xw: DeviceStorage, hh: DeviceStorage, bias: DeviceStorage, gates: DeviceStorage,
                      c_prev: DeviceStorage, c_new: DeviceStorage, tanh_c: DeviceStorage,
                      h_new: DeviceStorage) -> None:
    """One LSTM step from the input part ``xw``, the hidden part ``hh = h @ W_hh^T`` and ``bias`` (b_ih + b_hh).

    Writes the activated (i, f, g, o) to ``gates``, the new cell ``c_new``, its ``tanh_c`` and ``h_new``.
    """
    rows, hidden = c_new.shape
    w = 4 * hidden
    _launch(_lstm_forward, "lstm_cell_forward", rows, hidden, (xw, w), (hh, w), (bias, w), (gates, w),
            (c_prev, hidden), (c_new, hidden), (tanh_c, hidden), (h_new, hidden))


def lstm_cell_backward(dh: DeviceStorage, dc: DeviceStorage, gates: DeviceStorage, tanh_c: DeviceStorage,
                       c_prev: DeviceStorage, dgates: DeviceStorage) -> None:
    """Gradients of one LSTM step: ``dgates`` gets d(pre-activations); ``dc`` becomes d(c_prev) in place."""
    rows, hidden = tanh_c.shape
    w = 4 * hidden
    _launch(_lstm_backward, "lstm_cell_backward", rows, hidden, (dh, hidden), (dc, hidden), (gates, w),
            (tanh_c, hidden), (c_prev, hidden), (dgates, w))


def gru_cell_forward(xw: DeviceStorage, bias: DeviceStorage, gh: DeviceStorage, h_prev: DeviceStorage,
                     gates: DeviceStorage, h_new: DeviceStorage) -> None:
    """One GRU step from the input part ``xw + bias`` (b_ih) and the hidden part ``gh = h_prev @ W_hh^T + b_hh``.

    Writes the activated (r, z, n) to ``gates`` and ``h_new = (1 - z) * n + z * h_prev``.
    """
    rows, hidden = h_new.shape
    w = 3 * hidden
    _launch(_gru_forward, "gru_cell_forward", rows, hidden, (xw, w), (bias, w), (gh, w), (h_prev, hidden),
            (gates, w), (h_new, hidden))


def gru_cell_backward(dh: DeviceStorage, gates: DeviceStorage, gh: DeviceStorage, h_prev: DeviceStorage,
                      dxw: DeviceStorage, dgh: DeviceStorage, dh_prev: DeviceStorage) -> None:
    """Gradients of one GRU step: d(input part) ``dxw``, d(hidden part) ``dgh`` and the direct d(h_prev)."""
    rows, hidden = dh.shape
    w = 3 * hidden
    _launch(_gru_backward, "gru_cell_backward", rows, hidden, (dh, hidden), (gates, w), (gh, w),
            (h_prev, hidden), (dxw, w), (dgh, w), (dh_prev, hidden))
