"""CUDA LSTM/GRU gate kernels against the CPU kernels (ember.kernels.cpu.recurrent), on tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import recurrent as cpu  # noqa: E402
from ember.kernels.cuda import recurrent as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage, c_strides  # noqa: E402

RNG = np.random.default_rng(11)
PAD = 2
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}


def _dev(a: np.ndarray, pad: int = PAD) -> DeviceStorage:
    """A device copy of ``a`` at offset ``pad`` into a buffer padded with a sentinel on both sides."""
    a = np.ascontiguousarray(a)
    buf = np.concatenate([np.full(pad, 7, a.dtype), a.reshape(-1), np.full(PAD, 7, a.dtype)])
    return DeviceStorage(cuda.to_device(buf), a.shape, c_strides(a.shape), offset=pad)


def _host(s: DeviceStorage) -> np.ndarray:
    """The storage's elements, after checking its padding is untouched."""
    buf = s.buffer.copy_to_host()
    np.testing.assert_array_equal(buf[:s.offset], 7)
    np.testing.assert_array_equal(buf[s.offset + s.numel:], 7)
    return s.to_numpy()


def _data(shape, dtype, scale=1.5):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def _close(got: np.ndarray, want: np.ndarray, dtype) -> None:
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **TOL[dtype])


SHAPES = [(3, 5), (1, 40)]  # (rows, hidden): the second has more elements than one launch's threads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows,hidden", SHAPES)
def test_lstm_cell_forward_and_backward(dtype, rows, hidden):
    xw, hh = _data((rows, 4 * hidden), dtype), _data((rows, 4 * hidden), dtype)
    bias, c_prev = _data(4 * hidden, dtype), _data((rows, hidden), dtype)
    xw[0, :3] = [30.0, -30.0, 0.0]  # saturated and zero pre-activations
    gates = np.empty((rows, 4 * hidden), dtype)
    c_new, tanh_c, h_new = (np.empty((rows, hidden), dtype) for _ in range(3))
    cpu.lstm_cell_forward(xw, hh, bias, gates, c_prev, c_new, tanh_c, h_new)
    d = {name: _dev(np.zeros_like(a)) for name, a in
         (("gates", gates), ("c_new", c_new), ("tanh_c", tanh_c), ("h_new", h_new))}
    c_prev_ = _dev(c_prev, pad=5)
    dev.lstm_cell_forward(_dev(xw), _dev(hh, pad=1), _dev(bias), d["gates"], c_prev_, d["c_new"], d["tanh_c"],
                          d["h_new"])
    for name, want in (("gates", gates), ("c_new", c_new), ("tanh_c", tanh_c), ("h_new", h_new)):
        _close(_host(d[name]), want, dtype)

    dh, dc = _data((rows, hidden), dtype), _data((rows, hidden), dtype)
    dc_ = _dev(dc)
    dgates = np.empty_like(gates)
    cpu.lstm_cell_backward(dh, dc, gates, tanh_c, c_prev, dgates)  # dc becomes d(c_prev) in place
    ddg = _dev(np.zeros_like(gates))
    dev.lstm_cell_backward(_dev(dh), dc_, _dev(gates), _dev(tanh_c), c_prev_, ddg)
    _close(_host(ddg), dgates, dtype)
    _close(_host(dc_), dc, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows,hidden", SHAPES)
def test_gru_cell_forward_and_backward(dtype, rows, hidden):
    xw, gh = _data((rows, 3 * hidden), dtype), _data((rows, 3 * hidden), dtype)
    bias, h_prev = _data(3 * hidden, dtype), _data((rows, hidden), dtype)
    xw[0, :2] = [-40.0, 25.0]
    gates, h_new = np.empty((rows, 3 * hidden), dtype), np.empty((rows, hidden), dtype)
    cpu.gru_cell_forward(xw, bias, gh, h_prev, gates, h_new)
    dgates, dh_new = _dev(np.zeros_like(gates), pad=4), _dev(np.zeros_like(h_new))
    h_prev_, gh_ = _dev(h_prev), _dev(gh, pad=3)
    dev.gru_cell_forward(_dev(xw), _dev(bias), gh_, h_prev_, dgates, dh_new)
    _close(_host(dgates), gates, dtype)
    _close(_host(dh_new), h_new, dtype)

    dh = _data((rows, hidden), dtype)
    dxw, dgh, dh_prev = np.empty_like(gates), np.empty_like(gates), np.empty_like(h_prev)
    cpu.gru_cell_backward(dh, gates, gh, h_prev, dxw, dgh, dh_prev)
    d = [_dev(np.zeros_like(a)) for a in (dxw, dgh, dh_prev)]
    dev.gru_cell_backward(_dev(dh), dgates, gh_, h_prev_, *d)
    for got, want in zip(d, (dxw, dgh, dh_prev)):
        _close(_host(got), want, dtype)


def test_nan_propagates_and_row_views():
    """A NaN pre-activation poisons only its own unit; a row slice of a bigger array (offset) is honoured."""
    rows, hidden = 4, 3
    xw = _data((rows, 4 * hidden), np.float64)
    xw[1, 2] = np.nan  # input gate of row 1, unit 2
    hh, bias, c_prev = _data((rows, 4 * hidden), np.float64), _data(4 * hidden, np.float64), \
        _data((rows, hidden), np.float64)
    gates = np.empty((rows, 4 * hidden))
    c_new, tanh_c, h_new = (np.empty((rows, hidden)) for _ in range(3))
    cpu.lstm_cell_forward(xw[1:3], hh[1:3], bias, gates[1:3], c_prev[1:3], c_new[1:3], tanh_c[1:3], h_new[1:3])
    whole = {name: DeviceStorage.from_numpy(np.full(a.shape, 5.0)) for name, a in
             (("gates", gates), ("c_new", c_new), ("tanh_c", tanh_c), ("h_new", h_new))}
    rows_of = {name: s.slice(0, 1, 3) for name, s in whole.items()}
    ins = [DeviceStorage.from_numpy(a).slice(0, 1, 3) for a in (xw, hh)]
    dev.lstm_cell_forward(*ins, DeviceStorage.from_numpy(bias), rows_of["gates"],
                          DeviceStorage.from_numpy(c_prev).slice(0, 1, 3), rows_of["c_new"], rows_of["tanh_c"],
                          rows_of["h_new"])
    got_h = whole["h_new"].to_numpy()
    np.testing.assert_array_equal(got_h[[0, 3]], 5.0)  # rows outside the view untouched
    assert np.isnan(got_h[0 + 1, 2]) and np.isfinite(np.delete(got_h[1:3].ravel(), 2)).all()
    np.testing.assert_allclose(got_h[1:3], h_new[1:3], rtol=1e-12)
    np.testing.assert_allclose(whole["gates"].to_numpy()[1:3], gates[1:3], rtol=1e-12)


def test_empty_batch_launches_nothing_and_shapes_are_checked():
    hidden = 3
    empty = DeviceStorage.empty((0, hidden), np.float32)
    wide = DeviceStorage.empty((0, 3 * hidden), np.float32)
    dev.gru_cell_forward(wide, DeviceStorage.empty((3 * hidden,), np.float32), wide, empty, wide, empty)
    z = np.zeros((2, hidden), np.float32)
    z3 = np.zeros((2, 3 * hidden), np.float32)
    with pytest.raises(ValueError):  # gates two units short
        dev.gru_cell_backward(_dev(z), _dev(np.zeros((2, 2 * hidden), np.float32)), _dev(z3), _dev(z), _dev(z3),
                              _dev(z3), _dev(z))
