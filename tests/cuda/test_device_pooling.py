"""CUDA pooling kernels against the CPU kernels, on tiny shapes (runs under NUMBA_ENABLE_CUDASIM=1).

Windows come from the layer code's own builders, so every flavour the layers use is covered: padded, dilated,
ceil mode (with a window that is all padding), count_include_pad, divisor_override, adaptive.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember.kernels.cpu import pooling as cpu  # noqa: E402
from ember.kernels.cuda import pooling as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage, c_strides  # noqa: E402
from ember.nn.functional.pooling import _adaptive_windows, _sliding_windows  # noqa: E402

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}

# in_size, kernel, stride, pad, dilation, ceil_mode (3-d sizes; 1-d and 2-d use unit leading dims)
MAX_CASES = {
    "1d": ((1, 1, 9), (1, 1, 3), (1, 1, 2), (0, 0, 1), (1, 1, 1), False),
    "2d_overlap_padded": ((1, 5, 6), (1, 3, 3), (1, 1, 2), (0, 1, 1), (1, 1, 1), False),
    "2d_dilated_ceil": ((1, 7, 6), (1, 2, 3), (1, 2, 2), (0, 1, 1), (1, 2, 2), True),
    "3d": ((3, 4, 5), (2, 2, 2), (1, 2, 2), (1, 1, 0), (1, 1, 1), True),
}
# in_size, kernel, stride, pad, ceil_mode, include_pad, override
AVG_CASES = {
    "1d": ((1, 1, 8), (1, 1, 3), (1, 1, 2), (0, 0, 1), False, True, 0),
    "2d_exclude_pad_ceil": ((1, 5, 6), (1, 3, 2), (1, 2, 2), (0, 1, 1), True, False, 0),
    "2d_override": ((1, 6, 5), (1, 3, 3), (1, 1, 1), (0, 1, 1), False, True, 5),
    "3d": ((3, 4, 4), (2, 3, 2), (1, 1, 2), (1, 1, 0), False, True, 0),
}
ADAPTIVE = {"2d": ((1, 7, 5), (1, 3, 4)), "3d": ((5, 3, 4), (2, 3, 3)), "grow": ((1, 3, 2), (1, 5, 3))}


def _max_windows(case):
    size, k, s, p, d, ceil = MAX_CASES[case]
    return _sliding_windows("max", size, k, s, p, d, ceil, False, 0)


def _avg_windows(case):
    size, k, s, p, ceil, include, override = AVG_CASES[case]
    return _sliding_windows("avg", size, k, s, p, (1, 1, 1), ceil, include, override)


def _at_offset(a: np.ndarray, shift: int) -> DeviceStorage:
    """A device copy of ``a`` that starts ``shift`` elements into a larger buffer (sentinels around it)."""
    flat = np.concatenate([np.full(shift, 7, a.dtype), a.reshape(-1), np.full(3, -7, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, c_strides(a.shape), offset=shift)


def _untouched(s: DeviceStorage, shift: int) -> bool:
    host = s.buffer.copy_to_host()
    return bool((host[:shift] == 7).all() and (host[-3:] == -7).all())


def _run_max(win, x, shift=0):
    """(CPU out, CPU indices, device out, device indices) of max_pool over ``x``."""
    p = x.shape[0]
    out = np.empty((p,) + win.out_size, x.dtype)
    idx = np.empty(out.shape, np.int64)
    cpu.max_pool(x, out, idx, win.starts, win.counts, win.steps)
    d_out = _at_offset(np.zeros(out.shape, x.dtype), shift)
    d_idx = _at_offset(np.zeros(out.shape, np.int64), shift)
    dev.max_pool(_at_offset(x, shift), d_out, d_idx, win.starts, win.counts, win.steps)
    if shift:
        assert _untouched(d_out, shift) and _untouched(d_idx, shift)
    return out, idx, d_out.to_numpy(), d_idx.to_numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(MAX_CASES))
def test_max_pool_and_backward_match_cpu(case, dtype):
    win = _max_windows(case)
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal((3,) + win.in_size).astype(dtype)
    x[0, 0, 0, :2] = 1.0  # a tie: the first position wins
    out, idx, got, got_idx = _run_max(win, x, shift=5 if dtype == np.float64 else 0)
    np.testing.assert_array_equal(got, out)
    np.testing.assert_array_equal(got_idx, idx)

    grad = rng.standard_normal(out.shape).astype(dtype)
    size = int(np.prod(win.in_size))
    g2 = grad.reshape(3, -1)
    want = np.full((3, size), np.nan, dtype)
    cpu.max_pool_backward(g2, idx.reshape(3, -1), want)
    gi = _at_offset(np.full((3, size), np.nan, dtype), 2)
    dev.max_pool_backward(_at_offset(g2, 4), _at_offset(idx.reshape(3, -1), 1), gi)
    np.testing.assert_allclose(gi.to_numpy(), want, **TOL[dtype])
    assert _untouched(gi, 2)


def test_max_pool_nan_and_empty_windows():
    """Hand-made windows along W: NaN propagates (the last NaN's position wins, as on the CPU), an empty window
    (all padding) gives -inf and its first position, which may lie outside the plane."""
    starts = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 2, 4]])
    counts = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [3, 2, 2, 0]])
    win = type("Win", (), dict(starts=starts, counts=counts, steps=np.array([1, 1, 1]), out_size=(1, 1, 4)))
    x = np.array([[[[1.0, np.nan, 3.0, np.nan]]], [[[-1.0, -2.0, -3.0, -4.0]]]])
    out, idx, got, got_idx = _run_max(win, x)
    np.testing.assert_array_equal(got, out)
    np.testing.assert_array_equal(got_idx, idx)
    np.testing.assert_array_equal(got_idx[:, 0, 0], [[1, 1, 3, 4], [0, 1, 2, 4]])
    assert np.isnan(got[0, 0, 0, :3]).all() and got[0, 0, 0, 3] == -np.inf
    # the backward skips the out-of-plane position of the empty window
    want = np.empty((2, 4))
    grad = np.ones((2, 4))
    cpu.max_pool_backward(grad, idx.reshape(2, 4), want)
    gi = DeviceStorage.empty((2, 4), np.float64)
    dev.max_pool_backward(DeviceStorage.from_numpy(grad), DeviceStorage.from_numpy(idx.reshape(2, 4)), gi)
    np.testing.assert_array_equal(gi.to_numpy(), want)
    np.testing.assert_array_equal(want, [[0, 2, 0, 1], [1, 1, 1, 0]])


def test_max_pool_dilated_empty_window_from_the_builder():
    win = _sliding_windows("max", (1, 1, 2), (1, 1, 2), (1, 1, 1), (0, 0, 1), (1, 1, 3), False, False, 0)
    assert win.counts[2, 0] == 0
    x = np.arange(4.0).reshape(2, 1, 1, 2)
    out, idx, got, got_idx = _run_max(win, x)
    np.testing.assert_array_equal(got, out)
    np.testing.assert_array_equal(got_idx, idx)


def test_max_pool_backward_accumulates_shared_argmax():
    """Overlapping windows choosing the same input add up there; out-of-plane positions are skipped."""
    grad = np.array([[1.0, 2.0, 4.0, 8.0], [0.5, 0.25, 0.125, 1.0]])
    idx = np.array([[2, 2, 2, 0], [1, 1, 5, 3]])  # 5 lies outside a plane of 4 (an empty window's position)
    want = np.empty((2, 4))
    cpu.max_pool_backward(grad, idx, want)
    got = DeviceStorage.from_numpy(np.full((2, 4), np.nan))
    dev.max_pool_backward(DeviceStorage.from_numpy(grad), DeviceStorage.from_numpy(idx), got)
    np.testing.assert_array_equal(got.to_numpy(), want)
    np.testing.assert_array_equal(got.to_numpy(), [[8.0, 0.0, 7.0, 0.0], [0.0, 0.75, 0.0, 1.0]])


def _check_avg(win, x, shift=0):
    dtype, p = x.dtype.type, x.shape[0]
    out = np.empty((p,) + win.out_size, x.dtype)
    cpu.avg_pool(x, out, win.starts, win.counts, win.divisors, win.override)
    d_out = _at_offset(np.zeros(out.shape, x.dtype), shift)
    dev.avg_pool(_at_offset(x, shift), d_out, win.starts, win.counts, win.divisors, win.override)
    np.testing.assert_allclose(d_out.to_numpy(), out, **TOL[dtype])

    grad = np.random.default_rng(5).standard_normal(out.shape).astype(x.dtype)
    want = np.full(x.shape, np.nan, x.dtype)
    cpu.avg_pool_backward(grad, want, win.starts, win.counts, win.divisors, win.override)
    got = _at_offset(np.full(x.shape, np.nan, x.dtype), shift + 1)
    dev.avg_pool_backward(_at_offset(grad, shift), got, win.starts, win.counts, win.divisors, win.override)
    np.testing.assert_allclose(got.to_numpy(), want, **TOL[dtype])
    if shift:
        assert _untouched(d_out, shift) and _untouched(got, shift + 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(AVG_CASES))
def test_avg_pool_and_backward_match_cpu(case, dtype):
    win = _avg_windows(case)
    x = np.random.default_rng(len(case) + 1).standard_normal((2,) + win.in_size).astype(dtype)
    _check_avg(win, x, shift=3 if dtype == np.float32 else 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(ADAPTIVE))
def test_adaptive_pooling_matches_cpu(case, dtype):
    win = _adaptive_windows(*ADAPTIVE[case])
    x = np.random.default_rng(9).standard_normal((2,) + win.in_size).astype(dtype)
    _check_avg(win, x)
    out, idx, got, got_idx = _run_max(win, x)
    np.testing.assert_array_equal(got, out)
    np.testing.assert_array_equal(got_idx, idx)


def test_empty_inputs():
    win = _max_windows("1d")
    x = DeviceStorage.empty((0,) + win.in_size, np.float64)
    out = DeviceStorage.empty((0,) + win.out_size, np.float64)
    dev.max_pool(x, out, DeviceStorage.empty(out.shape, np.int64), win.starts, win.counts, win.steps)
    dev.avg_pool(x, out, win.starts, win.counts, win.divisors, 0)
    dev.avg_pool_backward(out, x, win.starts, win.counts, win.divisors, 0)
    dev.max_pool_backward(DeviceStorage.empty((0, 4), np.float64), DeviceStorage.empty((0, 4), np.int64),
                          DeviceStorage.empty((0, 9), np.float64))
    # no outputs but a non-empty input: the gradient is all zeros, as on the CPU
    gi = DeviceStorage.from_numpy(np.full((2, 3), np.nan))
    dev.max_pool_backward(DeviceStorage.empty((2, 0), np.float64), DeviceStorage.empty((2, 0), np.int64), gi)
    np.testing.assert_array_equal(gi.to_numpy(), np.zeros((2, 3)))
