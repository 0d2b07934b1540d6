"""CUDA normalization kernels against the CPU kernels (ember.kernels.cpu.normalization), on tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import normalization as cpu  # noqa: E402
from ember.kernels.cuda import launch, normalization as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage, c_strides  # noqa: E402

RNG = np.random.default_rng(7)
PAD = 3  # elements of padding either side of every device array: a stray write would show there
TOL = {np.float32: dict(rtol=2e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


def _dev(a: np.ndarray) -> DeviceStorage:
    """A device copy of ``a`` at a nonzero offset into a padded buffer (padding filled with a sentinel)."""
    a = np.ascontiguousarray(a)
    buf = np.concatenate([np.full(PAD, 7, a.dtype), a.reshape(-1), np.full(PAD, 7, a.dtype)])
    return DeviceStorage(cuda.to_device(buf), a.shape, c_strides(a.shape), offset=PAD)


def _host(s: DeviceStorage) -> np.ndarray:
    """The storage's elements, after checking its padding is untouched."""
    buf = s.buffer.copy_to_host()
    np.testing.assert_array_equal(buf[:PAD], 7)
    np.testing.assert_array_equal(buf[PAD + s.numel:], 7)
    return s.to_numpy()


def _data(shape, dtype, shift=0.0):
    return (RNG.standard_normal(shape) * 2.0 + shift).astype(dtype)


# ------------------------------------------------------------------ rows
ROWS_CASES = [  # (rows, groups, k, s, affine)
    (3, 1, 37, 1, True),     # layer norm, a row longer than a block
    (4, 2, 3, 5, True),      # group norm: 2 samples x 2 groups of 3 channels x 5
    (2, 1, 5, 1, False),     # no affine
    (6, 3, 1, 4, True),      # one channel per group (instance-norm-like)
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows,groups,k,s,affine", ROWS_CASES)
def test_rows_forward_backward_and_affine_grads(dtype, rows, groups, k, s, affine):
    n = rows * k * s
    x = _data(n, dtype, shift=100.0)  # a large mean: the shifted moments must not cancel
    w = _data(groups * k, dtype) if affine else np.empty(0, dtype)
    b = _data(groups * k, dtype) if affine else np.empty(0, dtype)
    eps = 1e-5
    y, mean, rstd = np.empty_like(x), np.empty(rows), np.empty(rows)
    cpu.rows_norm_forward(x, w, b, groups, k, s, eps, y, mean, rstd)
    dx_, dy_, dmean, drstd = _dev(x), _dev(np.zeros_like(x)), _dev(np.zeros(rows)), _dev(np.zeros(rows))
    dw_ = _dev(w) if affine else None
    db_ = _dev(b) if affine else DeviceStorage.empty((0,), dtype)
    dev.rows_norm_forward(dx_, dw_, db_, groups, k, s, eps, dy_, dmean, drstd)
    np.testing.assert_allclose(_host(dmean), mean, rtol=1e-13)
    np.testing.assert_allclose(_host(drstd), rstd, rtol=1e-10)
    got_y = _host(dy_)
    assert got_y.dtype == dtype
    np.testing.assert_allclose(got_y, y, **TOL[dtype])

    gy = _data(n, dtype)
    dx = np.empty_like(x)
    cpu.rows_norm_backward(gy, x, mean, rstd, w, groups, k, s, dx)
    dgx = _dev(np.zeros_like(x))
    dev.rows_norm_backward(_dev(gy), dx_, dmean, drstd, dw_, groups, k, s, dgx)
    np.testing.assert_allclose(_host(dgx), dx, **TOL[dtype])

    dw, db = np.zeros(groups * k), np.zeros(groups * k)
    cpu.rows_norm_affine_grads(gy, x, mean, rstd, groups, k, s, dw, db)
    ddw, ddb = _dev(np.zeros(groups * k)), _dev(np.zeros(groups * k))
    dev.rows_norm_affine_grads(_dev(gy), dx_, dmean, drstd, groups, k, s, ddw, ddb)
    np.testing.assert_allclose(_host(ddw), dw, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(_host(ddb), db, rtol=1e-11, atol=1e-12)


def test_rows_constant_row_has_zero_variance_and_nan_propagates():
    x = np.array([3.25] * 6 + [1.0, np.nan, 2.0, 0.5, 4.0, -1.0])
    y, mean, rstd = np.empty_like(x), np.empty(2), np.empty(2)
    empty = np.empty(0)
    cpu.rows_norm_forward(x, empty, empty, 1, 6, 1, 1e-5, y, mean, rstd)
    dy_, dmean, drstd = _dev(np.zeros(12)), _dev(np.zeros(2)), _dev(np.zeros(2))
    dev.rows_norm_forward(_dev(x), None, None, 1, 6, 1, 1e-5, dy_, dmean, drstd)
    got_mean, got_rstd, got_y = _host(dmean), _host(drstd), _host(dy_)
    assert got_mean[0] == 3.25 and got_rstd[0] == 1.0 / np.sqrt(1e-5)
    np.testing.assert_array_equal(got_y[:6], 0.0)
    assert np.isnan(got_mean[1]) and np.isnan(got_y[6:]).all()
    np.testing.assert_array_equal(got_mean, mean)
    np.testing.assert_array_equal(np.isnan(got_rstd), np.isnan(rstd))


def test_rows_accept_host_statistics_and_skip_empty():
    x, gy = _data(8, np.float64), _data(8, np.float64)
    y, mean, rstd = np.empty(8), np.empty(2), np.empty(2)
    cpu.rows_norm_forward(x, np.empty(0), np.empty(0), 1, 4, 1, 1e-5, y, mean, rstd)
    dx = np.empty(8)
    cpu.rows_norm_backward(gy, x, mean, rstd, np.empty(0), 1, 4, 1, dx)
    out = _dev(np.zeros(8))
    dev.rows_norm_backward(_dev(gy), _dev(x), mean, rstd, None, 1, 4, 1, out)  # host mean/rstd are uploaded
    np.testing.assert_allclose(_host(out), dx, rtol=1e-12, atol=1e-13)
    # no rows: nothing launched, nothing written
    untouched = _dev(np.full(3, 5.0))
    dev.rows_norm_affine_grads(_dev(np.empty(0)), _dev(np.empty(0)), _dev(np.empty(0)), _dev(np.empty(0)), 1, 3, 1,
                               untouched, untouched)
    np.testing.assert_array_equal(_host(untouched), 5.0)
    with pytest.raises(ValueError):
        dev.rows_norm_backward(_dev(gy[:7]), _dev(x), mean, rstd, None, 1, 4, 1, out)


# ------------------------------------------------------------------ channels
CHANNEL_CASES = [(3, 2, 5), (1, 3, 1), (2, 1, 21)]  # (a, c, s): the last has more elements than a block's threads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a,c,s", CHANNEL_CASES)
def test_channel_moments_fma_and_grad_sums(dtype, a, c, s):
    n = a * c * s
    x, gy = _data(n, dtype, shift=-50.0), _data(n, dtype)
    mean, var = np.zeros(c), np.zeros(c)
    cpu.channel_moments(x, a, c, s, mean, var)
    dmean, dvar = _dev(np.zeros(c)), _dev(np.zeros(c))
    x_ = _dev(x)
    dev.channel_moments(x_, a, c, s, dmean, dvar)
    np.testing.assert_allclose(_host(dmean), mean, rtol=1e-13)
    np.testing.assert_allclose(_host(dvar), var, rtol=1e-9, atol=1e-12)

    scale, shift = _data(c, np.float64), _data(c, np.float64)
    y = np.empty_like(x)
    cpu.channel_fma(x, x, scale, np.zeros(c), shift, c, s, y)
    dy_ = _dev(np.zeros_like(x))
    dev.channel_fma(x_, x_, _dev(scale), _dev(np.zeros(c)), _dev(shift), c, s, dy_)
    got = _host(dy_)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, y, **TOL[dtype])

    sum_dy, sum_dy_xmu = np.zeros(c), np.zeros(c)
    cpu.channel_grad_sums(gy, x, mean, a, c, s, sum_dy, sum_dy_xmu)
    dsd, dsx = _dev(np.zeros(c)), _dev(np.zeros(c))
    gy_ = _dev(gy)
    dev.channel_grad_sums(gy_, x_, dmean, a, c, s, dsd, dsx)
    np.testing.assert_allclose(_host(dsd), sum_dy, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(_host(dsx), sum_dy_xmu, rtol=1e-11, atol=1e-11)

    p, q, t = _data(c, np.float64), _data(c, np.float64), _data(c, np.float64)
    dx = np.empty_like(x)
    cpu.channel_fma(gy, x, p, q, t, c, s, dx)
    ddx = _dev(np.zeros_like(x))
    dev.channel_fma(gy_, x_, p, q, t, c, s, ddx)  # host per-channel vectors are uploaded
    np.testing.assert_allclose(_host(ddx), dx, **TOL[dtype])


def test_channel_edge_cases():
    # a constant channel has exactly zero variance; a NaN poisons only its channel
    x = np.array([2.5, 2.5, 1.0, np.nan, 2.5, 2.5, 3.0, 4.0])  # (a=2, c=2, s=2)
    mean, var = np.zeros(2), np.zeros(2)
    cpu.channel_moments(x, 2, 2, 2, mean, var)
    dmean, dvar = _dev(np.zeros(2)), _dev(np.zeros(2))
    dev.channel_moments(_dev(x), 2, 2, 2, dmean, dvar)
    got_mean, got_var = _host(dmean), _host(dvar)
    assert got_mean[0] == 2.5 and got_var[0] == 0.0
    assert np.isnan(got_mean[1]) and np.isnan(got_var[1])
    np.testing.assert_array_equal(got_mean, mean)
    np.testing.assert_array_equal(got_var, var)
    # an empty batch: moments launch nothing; gradient sums are zero per channel, as on the CPU
    sd, sx = np.full(3, 9.0), np.full(3, 9.0)
    cpu.channel_grad_sums(np.empty(0), np.empty(0), np.zeros(3), 0, 3, 4, sd, sx)
    dsd, dsx = _dev(np.full(3, 9.0)), _dev(np.full(3, 9.0))
    dev.channel_grad_sums(_dev(np.empty(0)), _dev(np.empty(0)), _dev(np.zeros(3)), 0, 3, 4, dsd, dsx)
    np.testing.assert_array_equal(_host(dsd), sd)
    np.testing.assert_array_equal(_host(dsx), sx)
    untouched = _dev(np.full(3, 5.0))
    dev.channel_moments(_dev(np.empty(0, np.float32)), 0, 3, 4, untouched, untouched)
    dev.channel_fma(*(_dev(np.empty(0)),) * 2, *(_dev(np.zeros(3)),) * 3, 3, 4, _dev(np.empty(0)))
    np.testing.assert_array_equal(_host(untouched), 5.0)


def test_more_channels_than_blocks():
    a, c, s = 2, launch.MAX_BLOCKS + 3, 3  # blocks grid-stride over the channels
    x = _data(a * c * s, np.float64, shift=10.0)
    mean, var = np.zeros(c), np.zeros(c)
    cpu.channel_moments(x, a, c, s, mean, var)
    dmean, dvar = _dev(np.zeros(c)), _dev(np.zeros(c))
    dev.channel_moments(_dev(x), a, c, s, dmean, dvar)
    np.testing.assert_allclose(_host(dmean), mean, rtol=1e-13)
    np.testing.assert_allclose(_host(dvar), var, rtol=1e-10)
