"""The fused Linear + activation on the device: the kernels against the CPU kernels, and ``Sequential`` on CUDA
against the same model on the CPU (small shapes: the simulator runs one Python thread per CUDA thread)."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.kernels.cpu import bias_activation as cpu  # noqa: E402
from ember.kernels.cuda import bias_activation as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

PARAMS = {"leaky_relu": (0.2,), "elu": (1.5, 1.0, 1.0), "softplus_beta": (2.0, 3.0), "hardtanh": (-1.0, 2.0)}
TOL = {np.float32: dict(rtol=2e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
# (rows, features): no rows, one block of rows, rows split over blocks (the two-launch bias gradient)
SHAPES = [(0, 3), (5, 9), (20, 3)]


def _arrays(shape, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 2, s).astype(dtype) for s in (shape, (shape[1],), shape)]


def test_same_api_as_cpu():
    assert dev.__all__ == cpu.__all__ and dev.BIAS_ACTIVATIONS == cpu.BIAS_ACTIVATIONS


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", cpu.BIAS_ACTIVATIONS)
def test_kernels_match_cpu(name, dtype, shape):
    y, bias, g = _arrays(shape, dtype)
    params = PARAMS.get(name, ())
    want_y, want_out = y.copy(), np.empty_like(y)
    cpu.bias_activation_forward(name, want_y, bias, want_out, params)
    dy, dout = DeviceStorage.from_numpy(y), DeviceStorage.empty(y.shape, dtype)
    dev.bias_activation_forward(name, dy, DeviceStorage.from_numpy(bias), dout, params)
    np.testing.assert_allclose(dout.to_numpy(), want_out, **TOL[dtype])
    np.testing.assert_array_equal(dy.to_numpy(), want_y)  # the pre-activation, kept

    saved = want_out if cpu.grad_reads_output(name) else want_y
    want_grad, want_db = np.empty_like(y), np.empty(shape[1], dtype)
    cpu.bias_activation_backward(name, saved, g, want_grad, want_db, params)
    dgrad, ddb = DeviceStorage.empty(y.shape, dtype), DeviceStorage.empty((shape[1],), dtype)
    dev.bias_activation_backward(name, DeviceStorage.from_numpy(saved), DeviceStorage.from_numpy(g), dgrad, ddb,
                                 params)
    np.testing.assert_allclose(dgrad.to_numpy(), want_grad, **TOL[dtype])
    np.testing.assert_allclose(ddb.to_numpy(), want_db, **TOL[dtype])


@pytest.mark.parametrize("name", ["relu", "gelu"])
def test_in_place_forward_and_no_bias_grad(name):
    y, bias, g = _arrays((20, 3), np.float32, seed=1)
    want = y.copy()
    cpu.bias_activation_forward(name, want, bias, want)
    dy = DeviceStorage.from_numpy(y)
    dev.bias_activation_forward(name, dy, DeviceStorage.from_numpy(bias), dy)
    np.testing.assert_allclose(dy.to_numpy(), want, **TOL[np.float32])
    want_grad = np.empty_like(y)
    cpu.bias_activation_backward(name, want, g, want_grad, None)
    dgrad = DeviceStorage.empty(y.shape, np.float32)
    dev.bias_activation_backward(name, dy, DeviceStorage.from_numpy(g), dgrad, None)
    np.testing.assert_allclose(dgrad.to_numpy(), want_grad, **TOL[np.float32])


@pytest.mark.parametrize("act", [nn.ReLU, nn.GELU, lambda: nn.GELU("tanh"), nn.Tanh, nn.Sigmoid, nn.SiLU,
                                 lambda: nn.LeakyReLU(0.2)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_sequential_on_cuda_matches_cpu(act, dtype):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3, dtype=dtype), act())
    x = np.random.default_rng(2).normal(0, 2, (2, 3, 4))
    g = np.random.default_rng(3).normal(size=(2, 3, 3))
    results = []
    for device in ("cpu", "cuda"):
        model.to(device)
        for p in model.parameters():
            p.grad = None
        xt = ember.tensor(x, dtype=dtype, device=device, requires_grad=True)
        out = model(xt)
        assert type(out.grad_fn)._forward_cls.__name__ == "_LinearActivation"
        out.backward(ember.tensor(g, dtype=dtype, device=device))
        results.append([t.detach().cpu().numpy() for t in (out, xt.grad, model[0].weight.grad, model[0].bias.grad)])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is ember.float32 else dict(rtol=1e-12, atol=1e-12)
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, **tol)


def test_hook_on_cuda_disables_fusion():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).to("cuda")
    seen = []
    model[1].register_forward_hook(lambda m, args, out: seen.append(out.shape))
    out = model(ember.ones(2, 4, device="cuda", requires_grad=True))
    assert seen == [(2, 3)] and type(out.grad_fn)._forward_cls.__name__ != "_LinearActivation"
