"""CUDA im2col / col2im against the CPU kernels, on tiny shapes (runs under NUMBA_ENABLE_CUDASIM=1)."""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember.kernels.common.conv import geometry_array  # noqa: E402
from ember.kernels.cpu import conv as cpu  # noqa: E402
from ember.kernels.cuda import conv as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage, c_strides  # noqa: E402

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}


def _out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _geometry(image_size, kernel, stride, padding, dilation):
    out = tuple(_out(*t) for t in zip(image_size, kernel, stride, padding, dilation))
    return geometry_array(kernel, stride, padding, dilation, out), out


def _at_offset(a: np.ndarray, shift: int) -> DeviceStorage:
    """A device copy of ``a`` that starts ``shift`` elements into a larger buffer (garbage before and after)."""
    flat = np.concatenate([np.full(shift, 7.0, a.dtype), a.reshape(-1), np.full(3, -7.0, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, c_strides(a.shape), offset=shift)


# (image D, H, W), kernel, stride, padding, dilation
CASES = {
    "1d": ((1, 1, 9), (1, 1, 3), (1, 1, 2), (0, 0, 1), (1, 1, 1)),
    "2d_overlap": ((1, 5, 6), (1, 3, 2), (1, 1, 1), (0, 1, 0), (1, 1, 1)),
    "2d_dilated_strided": ((1, 7, 6), (1, 2, 3), (1, 2, 2), (0, 2, 1), (1, 2, 2)),
    "3d": ((3, 4, 4), (2, 2, 3), (1, 2, 1), (1, 0, 1), (1, 1, 1)),
    "padding_only_windows": ((1, 2, 2), (1, 3, 3), (1, 3, 3), (0, 3, 3), (1, 1, 1)),
}


def _layout(kind, n, c, taps, length):
    """(col size, batch_stride, row_stride) of the conv (C*taps, N*L) or the unfold (N, C*taps, L) layout."""
    if kind == "conv":
        return c * taps * n * length, length, n * length
    return c * taps * n * length, c * taps * length, length


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["conv", "unfold"])
@pytest.mark.parametrize("case", list(CASES))
def test_im2col_and_col2im_match_cpu(case, kind, dtype):
    size, kernel, stride, padding, dilation = CASES[case]
    rng = np.random.default_rng(len(case) * 7 + (kind == "conv"))
    n, c = 2, 3
    geom, out = _geometry(size, kernel, stride, padding, dilation)
    taps, length = math.prod(kernel), math.prod(out)
    total, batch_stride, row_stride = _layout(kind, n, c, taps, length)
    image = rng.standard_normal((n, c) + size).astype(dtype)

    want_col = np.full(total, np.nan, dtype)
    cpu.im2col(image, want_col, geom, batch_stride, row_stride)
    col = DeviceStorage.from_numpy(np.full(total, np.nan, dtype))
    dev.im2col(DeviceStorage.from_numpy(image), col, geom, batch_stride, row_stride)
    got_col = col.to_numpy()
    assert not np.isnan(got_col).any()
    np.testing.assert_array_equal(got_col, want_col)  # pure data movement: exact

    cols = rng.standard_normal(total).astype(dtype)
    want_image = np.full(image.shape, np.nan, dtype)
    cpu.col2im(cols, want_image, geom, batch_stride, row_stride)
    got = DeviceStorage.from_numpy(np.full(image.shape, np.nan, dtype))
    dev.col2im(DeviceStorage.from_numpy(cols), got, geom, batch_stride, row_stride)
    np.testing.assert_allclose(got.to_numpy(), want_image, **TOL[dtype])


def test_col2im_sums_overlaps_in_cpu_order_exactly():
    """The gather adds the taps in the CPU kernel's order, so even float32 sums agree bit for bit."""
    size, kernel, stride, padding, dilation = (1, 6, 6), (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1)
    geom, out = _geometry(size, kernel, stride, padding, dilation)
    n, c, taps, length = 1, 2, 9, math.prod(out)
    cols = np.random.default_rng(3).standard_normal(c * taps * n * length).astype(np.float32) * 1e3
    want = np.empty((n, c) + size, np.float32)
    cpu.col2im(cols, want, geom, length, n * length)
    got = DeviceStorage.empty(want.shape, np.float32)
    dev.col2im(DeviceStorage.from_numpy(cols), got, geom, length, n * length)
    np.testing.assert_array_equal(got.to_numpy(), want)
    # an interior element is covered by all 9 taps: the sum is the 9 column values it fed
    ones = np.ones_like(cols)
    dev.col2im(DeviceStorage.from_numpy(ones), got, geom, length, n * length)
    counts = got.to_numpy()
    assert counts[0, 0, 0, 2, 2] == 9 and counts[0, 0, 0, 0, 0] == 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nonzero_offsets(dtype):
    size, kernel, stride, padding, dilation = CASES["3d"]
    geom, out = _geometry(size, kernel, stride, padding, dilation)
    n, c, taps, length = 2, 2, math.prod(kernel), math.prod(out)
    rng = np.random.default_rng(11)
    image = rng.standard_normal((n, c) + size).astype(dtype)
    total, batch_stride, row_stride = _layout("conv", n, c, taps, length)

    want_col = np.empty(total, dtype)
    cpu.im2col(image, want_col, geom, batch_stride, row_stride)
    col = _at_offset(np.zeros(total, dtype), 5)
    dev.im2col(_at_offset(image, 3), col, geom, batch_stride, row_stride)
    np.testing.assert_array_equal(col.to_numpy(), want_col)
    host = col.buffer.copy_to_host()
    assert (host[:5] == 7).all() and (host[-3:] == -7).all()  # nothing written outside the view

    want_image = np.empty(image.shape, dtype)
    cpu.col2im(want_col, want_image, geom, batch_stride, row_stride)
    got = _at_offset(np.zeros(image.shape, dtype), 4)
    dev.col2im(col, got, geom, batch_stride, row_stride)
    np.testing.assert_allclose(got.to_numpy(), want_image, **TOL[dtype])
    host = got.buffer.copy_to_host()
    assert (host[:4] == 7).all() and (host[-3:] == -7).all()


def test_empty_inputs():
    geom, _ = _geometry((1, 2, 2), (1, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1))  # no output position fits
    image = DeviceStorage.from_numpy(np.full((1, 2, 1, 2, 2), 5.0))
    dev.im2col(image, DeviceStorage.empty((0,), np.float64), geom, 0, 0)  # no launch, no error
    dev.col2im(DeviceStorage.empty((0,), np.float64), image, geom, 0, 0)
    np.testing.assert_array_equal(image.to_numpy(), np.zeros((1, 2, 1, 2, 2)))  # as the CPU: zeros
    empty = DeviceStorage.empty((0, 2, 1, 3, 3), np.float64)
    geom, _ = _geometry((1, 3, 3), (1, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1))
    dev.col2im(DeviceStorage.empty((0,), np.float64), empty, geom, 4, 0)
    assert empty.to_numpy().shape == (0, 2, 1, 3, 3)


def test_too_small_columns_are_refused():
    geom, _ = _geometry((1, 3, 3), (1, 2, 2), (1, 1, 1), (0, 0, 0), (1, 1, 1))
    image = DeviceStorage.from_numpy(np.ones((1, 1, 1, 3, 3)))
    with pytest.raises(ValueError, match="too small"):
        dev.im2col(image, DeviceStorage.empty((10,), np.float64), geom, 4, 4)
