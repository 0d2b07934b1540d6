"""CUDA activation kernels against the CPU kernels (same scalar functions), on tiny arrays: offsets, NaN, empty
launches. Each activation's values and gradients on device tensors, special values included, are the op harness's
(tests/cuda/test_device_ops.py runs tests/test_nn_activation.py's cases)."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import activations as cpu  # noqa: E402
from ember.kernels.cuda import activations as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

PARAMS = {"leaky_relu": (0.01,), "elu": (1.6732632423543772, 1.0507009873554805, 1.0),
          "softplus_beta": (2.0, 20.0), "hardtanh": (-1.0, 2.0)}
SPECIAL = [-1000.0, -60.0, -30.0, -3.0, -1e-3, 0.0, 1e-3, 3.0, 9.9, 10.1, 21.0, 30.0, 90.0, 1000.0]


def _inputs(dtype) -> np.ndarray:
    rng = np.random.default_rng(3)
    return np.concatenate([np.array(SPECIAL), rng.standard_normal(40) * 4]).astype(dtype)


def _offset_storage(a: np.ndarray, k: int) -> DeviceStorage:
    flat = np.concatenate([np.full(k, 5, a.dtype), a, np.full(2, 5, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, (1,), k)


def test_same_names_as_cpu():
    assert dev.ACTIVATIONS == cpu.ACTIVATIONS
    assert set(dev.__all__) == set(cpu.__all__)


@pytest.mark.parametrize("name", ["gelu", "silu", "elu"])
def test_offsets_and_padding(name):
    x = _inputs(np.float64)
    g = np.linspace(-2, 2, x.size)
    params = PARAMS.get(name, ())
    fwd, bwd = np.empty_like(x), np.empty_like(x)
    cpu.activation_forward(name, x, fwd, params)
    cpu.activation_backward(name, x, g, bwd, params)
    out = _offset_storage(np.zeros_like(x), 4)
    dev.activation_forward(name, _offset_storage(x, 3), out, params)
    np.testing.assert_allclose(out.to_numpy(), fwd, rtol=1e-12)
    dev.activation_backward(name, _offset_storage(x, 1), _offset_storage(g, 6), out, params)
    np.testing.assert_allclose(out.to_numpy(), bwd, rtol=1e-12)
    buf = out.buffer.copy_to_host()
    assert (buf[:4] == 5).all() and (buf[-2:] == 5).all()


@pytest.mark.parametrize("name", ["gelu", "leaky_relu", "silu", "hardtanh"])
def test_nan_propagates(name):
    x = np.array([np.nan, 1.0, -1.0])
    out = DeviceStorage.empty((3,), np.float64)
    dev.activation_forward(name, DeviceStorage.from_numpy(x), out, PARAMS.get(name, ()))
    got = out.to_numpy()
    assert np.isnan(got[0]) and np.isfinite(got[1:]).all()


def test_empty_and_unknown():
    empty = DeviceStorage.empty((0,), np.float32)
    dev.activation_forward("gelu", empty, empty)
    dev.activation_backward("silu", empty, empty, empty)
    with pytest.raises(ValueError):
        dev.activation_forward("nope", empty, empty)


def test_signatures_match_cpu(assert_same_api):
    assert_same_api(dev, cpu)
