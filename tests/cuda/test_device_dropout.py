"""CUDA dropout kernels against the CPU kernels, on tiny arrays."""
from __future__ import annotations

import math

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import dropout as cpu  # noqa: E402
from ember.kernels.cuda import dropout as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

# The simulator runs device code on NumPy scalars, which warn where the GPU silently makes the NaN (0 * inf).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
N = 70


def _bits(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2 ** 32, n, dtype=np.uint32)


def _device_bits(bits: np.ndarray, k: int = 0) -> DeviceStorage:
    """A uint32 storage (``from_numpy`` refuses uint32) at element offset ``k``."""
    flat = np.concatenate([np.zeros(k, np.uint32), bits])
    return DeviceStorage(cuda.to_device(flat), bits.shape, (1,), k)


def _offset(a: np.ndarray, k: int, fill=3) -> DeviceStorage:
    flat = np.concatenate([np.full(k, fill, a.dtype), a, np.full(2, fill, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, (1,), k)


def _run(x, bits, threshold, consts, offset=False):
    want, want_mask = np.empty_like(x), np.empty(x.shape, np.bool_)
    cpu.dropout_forward(x, bits, threshold, *consts, want, want_mask)
    if offset:
        xs, bs = _offset(x, 2), _device_bits(bits, 5)
        out, mask = _offset(np.zeros_like(x), 3), _offset(np.zeros(x.shape, np.bool_), 4, True)
    else:
        xs, bs = DeviceStorage.from_numpy(x), _device_bits(bits)
        out, mask = DeviceStorage.empty(x.shape, x.dtype), DeviceStorage.empty(x.shape, np.bool_)
    dev.dropout_forward(xs, bs, threshold, *consts, out, mask)
    return out, mask, want, want_mask


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_dropout_matches_cpu(dtype, p):
    x = np.random.default_rng(1).standard_normal(N).astype(dtype)
    threshold = min(round(p * 2.0 ** 32), 2 ** 32)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    out, mask, want, want_mask = _run(x, _bits(), threshold, (scale, 0.0, 0.0), offset=p == 0.3)
    np.testing.assert_array_equal(mask.to_numpy(), want_mask)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6 if dtype == np.float32 else 1e-15)
    if p == 0.0:
        assert want_mask.all()
    if p == 1.0:
        assert not want_mask.any()


def test_dropout_offsets_leave_padding():
    x = np.linspace(-1, 1, N)
    out, mask, want, want_mask = _run(x, _bits(seed=2), 2 ** 31, (2.0, 0.0, 0.0), offset=True)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-15)
    np.testing.assert_array_equal(mask.to_numpy(), want_mask)
    buf = out.buffer.copy_to_host()
    assert (buf[:3] == 3).all() and (buf[-2:] == 3).all()
    mbuf = mask.buffer.copy_to_host()
    assert mbuf[:4].all() and mbuf[-2:].all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_alpha_dropout_constants_and_inf(dtype):
    p, alpha = 0.2, 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    x = np.random.default_rng(5).standard_normal(N).astype(dtype)
    x[:6] = [np.inf, -np.inf, np.nan, np.inf, 0.0, -0.0]
    bits = _bits(seed=6)
    bits[:6] = [0, 2 ** 32 - 1, 0, 2 ** 32 - 1, 0, 0]
    out, mask, want, want_mask = _run(x, bits, round(p * 2 ** 32), (a, alpha * a * p, alpha * a * (p - 1)))
    got = out.to_numpy()
    np.testing.assert_array_equal(mask.to_numpy(), want_mask)
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-15)
    assert np.isnan(got[0]) and got[1] == -np.inf and np.isnan(got[2]) and got[3] == np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [False, True])
def test_masked_scale_matches_cpu(dtype, offset):
    rng = np.random.default_rng(7)
    g = rng.standard_normal(N).astype(dtype)
    g[0] = np.inf
    mask = rng.random(N) < 0.6
    mask[0] = False
    want = np.empty_like(g)
    cpu.masked_scale(g, mask, 1.25, want)
    if offset:
        gs, ms, out = _offset(g, 1), _offset(mask, 6, True), _offset(np.zeros_like(g), 2)
    else:
        gs, ms, out = DeviceStorage.from_numpy(g), DeviceStorage.from_numpy(mask), DeviceStorage.empty((N,), dtype)
    dev.masked_scale(gs, ms, 1.25, out)
    got = out.to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert np.isnan(got[0])
    assert (got[1:][~mask[1:]] == 0).all()


def test_empty_is_no_launch():
    e = DeviceStorage.empty((0,), np.float32)
    m = DeviceStorage.empty((0,), np.bool_)
    dev.dropout_forward(e, _device_bits(np.zeros(0, np.uint32)), 5, 2.0, 0.0, 0.0, e, m)
    dev.masked_scale(e, m, 2.0, e)
    assert e.to_numpy().shape == (0,)


def test_signatures_match_cpu(assert_same_api):
    assert_same_api(dev, cpu)
