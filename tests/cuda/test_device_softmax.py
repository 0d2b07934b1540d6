"""CUDA softmax / log-softmax kernels against the CPU kernels, on tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import softmax as cpu  # noqa: E402
from ember.kernels.cuda import softmax as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}


def _offset_storage(a: np.ndarray, k: int = 3) -> DeviceStorage:
    """``a`` on the device at element offset ``k`` of a larger buffer (padding filled with junk)."""
    flat = np.concatenate([np.full(k, 7, a.dtype), a.reshape(-1), np.full(2, 7, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, DeviceStorage.from_numpy(a).strides, k)


def _forward(x, log, offset):
    want = np.empty_like(x)
    cpu.softmax_forward(x, want, log)
    xs = _offset_storage(x) if offset else DeviceStorage.from_numpy(x)
    out = _offset_storage(np.zeros_like(x), 5) if offset else DeviceStorage.empty(x.shape, x.dtype)
    dev.softmax_forward(xs, out, log)
    return out.to_numpy(), want, out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(3, 5), (2, 37), (1, 1), (6, 2)])
def test_forward_matches_cpu(dtype, log, shape):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    got, want, _ = _forward(x, log, offset=shape == (2, 37))
    np.testing.assert_allclose(got, want, **TOL[dtype])
    if not log:
        np.testing.assert_allclose(got.sum(1), 1.0, rtol=1e-5)


def test_forward_offset_leaves_padding_alone():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    got, want, out = _forward(x, False, offset=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    buf = out.buffer.copy_to_host()
    assert (buf[:5] == 7).all() and (buf[5 + 12:] == 7).all()


@pytest.mark.parametrize("log", [False, True])
def test_forward_large_logits_and_nan_rows(log):
    x = np.array([[1e4, 1e4 - 1, -1e4, 0.0], [1.0, np.nan, 2.0, 3.0], [-np.inf, 0.0, 1.0, 2.0]])
    got, want, _ = _forward(x, log, offset=False)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[1]).all()
    assert np.isfinite(got[0]).all()


def test_empty_rows_is_no_launch():
    x = DeviceStorage.empty((0, 4), np.float32)
    out = DeviceStorage.empty((0, 4), np.float32)
    dev.softmax_forward(x, out, False)
    dev.softmax_backward(x, x, out, True)
    assert out.to_numpy().shape == (0, 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(3, 5), (2, 37)])
def test_backward_matches_cpu(dtype, log, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    y = np.empty_like(x)
    cpu.softmax_forward(x, y, log)
    want = np.empty_like(x)
    cpu.softmax_backward(y, g, want, log)
    offset = shape == (2, 37)
    ys = _offset_storage(y, 2) if offset else DeviceStorage.from_numpy(y)
    gs = _offset_storage(g, 4) if offset else DeviceStorage.from_numpy(g)
    out = _offset_storage(np.zeros_like(x), 1) if offset else DeviceStorage.empty(shape, dtype)
    dev.softmax_backward(ys, gs, out, log)
    np.testing.assert_allclose(out.to_numpy(), want, **TOL[dtype])


def test_signatures_match_cpu(assert_same_api):
    assert_same_api(dev, cpu)
