"""CUDA fused optimizer updates against the CPU kernels (ember.kernels.cpu.optim_updates), over a few steps."""
from __future__ import annotations

import math

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import optim_updates as cpu  # noqa: E402
from ember.kernels.cuda import optim_updates as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

N = 45  # more elements than the simulator's threads per block
PAD = 2
STEPS = 3
TOL = {np.float32: dict(rtol=1e-5, atol=1e-7), np.float64: dict(rtol=1e-12, atol=1e-15)}
DTYPES = [np.float32, np.float64]


def _dev(a: np.ndarray, pad: int = PAD) -> DeviceStorage:
    """A device copy of 1-D ``a`` at offset ``pad`` into a sentinel-padded buffer."""
    buf = np.concatenate([np.full(pad, 7, a.dtype), a, np.full(PAD, 7, a.dtype)])
    return DeviceStorage(cuda.to_device(buf), a.shape, (1,), offset=pad)


def _host(s: DeviceStorage) -> np.ndarray:
    buf = s.buffer.copy_to_host()
    np.testing.assert_array_equal(buf[:s.offset], 7)
    np.testing.assert_array_equal(buf[s.offset + s.numel:], 7)
    return s.to_numpy()


class Pair:
    """One update rule run side by side: host arrays for the CPU kernel, device copies for the CUDA one."""

    def __init__(self, dtype, seed: int, buffers: dict):
        rng = np.random.default_rng(seed)
        self.dtype = dtype
        self.rng = rng
        self.param = rng.standard_normal(N).astype(dtype)
        # state: name -> host array, or None when unused (the CPU gets an empty array, the device None or empty)
        self.host = {k: (None if v is None else np.asarray(v, dtype)) for k, v in buffers.items()}
        self.dev = {k: (None if v is None else _dev(v, pad=1 + i)) for i, (k, v) in enumerate(self.host.items())}
        self.dparam = _dev(self.param, pad=3)

    def step(self, cpu_fn, dev_fn, *scalars, grad=None, absent: int = 0):
        """One update on both sides; an unused device buffer is passed as None (``absent`` 0), an empty device
        storage (1) or the CPU path's empty host placeholder (2)."""
        grad = self.rng.standard_normal(N).astype(self.dtype) if grad is None else grad
        empty = np.empty(0, self.dtype)
        cpu_fn(self.param, grad, *[empty if a is None else a for a in self.host.values()], *scalars)
        stand_in = (None, DeviceStorage.empty((0,), self.dtype), empty)[absent]
        dev_fn(self.dparam, _dev(grad), *[stand_in if a is None else a for a in self.dev.values()], *scalars)

    def check(self):
        np.testing.assert_allclose(_host(self.dparam), self.param, **TOL[self.dtype])
        for name, a in self.host.items():
            if a is not None:
                np.testing.assert_allclose(_host(self.dev[name]), a, **TOL[self.dtype], err_msg=name)
        assert self.dparam.dtype == self.dtype


def _zeros(dtype):
    return np.zeros(N, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("momentum,dampening,nesterov,weight_decay,maximize", [
    (0.0, 0.0, False, 0.0, False), (0.9, 0.1, False, 0.01, False), (0.9, 0.0, True, 0.0, True)])
def test_sgd(dtype, momentum, dampening, nesterov, weight_decay, maximize):
    pair = Pair(dtype, 1, {"buf": _zeros(dtype) if momentum else None})
    for t in range(STEPS):
        pair.step(cpu.sgd_update, dev.sgd_update, 0.1, momentum, dampening, weight_decay, nesterov, maximize, t == 0,
                  absent=t % 3)
        pair.check()


def _adam_scalars(t, lr, beta1, beta2):
    return lr / (1 - beta1 ** t), math.sqrt(1 - beta2 ** t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("amsgrad,decoupled,weight_decay,maximize,beta1", [
    (False, False, 0.0, False, 0.9), (True, False, 0.1, True, 0.9), (True, True, 0.01, False, 0.3)])
def test_adam(dtype, amsgrad, decoupled, weight_decay, maximize, beta1):
    pair = Pair(dtype, 2, {"m": _zeros(dtype), "v": _zeros(dtype), "max": _zeros(dtype) if amsgrad else None})
    lr, beta2, eps = 1e-2, 0.999, 1e-8
    for t in range(1, STEPS + 1):
        pair.step(cpu.adam_update, dev.adam_update, lr, beta1, beta2, eps, weight_decay,
                  *_adam_scalars(t, lr, beta1, beta2), maximize, decoupled, absent=t % 3)
        pair.check()


def test_adam_amsgrad_nan_wins_the_maximum():
    pair = Pair(np.float64, 3, {"m": _zeros(np.float64), "v": _zeros(np.float64), "max": _zeros(np.float64)})
    grad = pair.rng.standard_normal(N)
    grad[4] = np.nan
    pair.step(cpu.adam_update, dev.adam_update, 1e-2, 0.9, 0.999, 1e-8, 0.0, *_adam_scalars(1, 1e-2, 0.9, 0.999),
              False, False, grad=grad)
    pair.check()
    got_max = _host(pair.dev["max"])
    assert np.isnan(got_max[4]) and np.isnan(_host(pair.dparam)[4]) and np.isfinite(np.delete(got_max, 4)).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("decoupled,weight_decay,maximize", [(False, 0.0, False), (True, 0.05, True)])
def test_nadam(dtype, decoupled, weight_decay, maximize):
    pair = Pair(dtype, 4, {"m": _zeros(dtype), "v": _zeros(dtype)})
    lr, beta1, beta2, eps, psi = 2e-3, 0.9, 0.999, 1e-8, 0.004
    mu_product = 1.0
    for t in range(1, STEPS + 1):
        mu = beta1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        mu_product *= mu
        grad_coef = -lr * (1 - mu) / (1 - mu_product)
        avg_coef = -lr * mu_next / (1 - mu_product * mu_next)
        pair.step(cpu.nadam_update, dev.nadam_update, lr, beta1, beta2, eps, weight_decay, 1 - beta2 ** t, grad_coef,
                  avg_coef, maximize, decoupled)
        pair.check()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("decoupled,weight_decay,maximize", [(False, 0.0, False), (True, 0.1, True),
                                                             (False, 0.1, False)])
def test_radam(dtype, decoupled, weight_decay, maximize):
    pair = Pair(dtype, 5, {"m": _zeros(dtype), "v": _zeros(dtype)})
    lr, beta1, beta2, eps = 1e-2, 0.9, 0.9, 1e-8  # a small beta2 so rho_t passes 5 within the steps
    rho_inf = 2 / (1 - beta2) - 1
    for t in range(1, STEPS + 3):
        bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
        rho_t = rho_inf - 2 * t * beta2 ** t / bc2
        rectified = rho_t > 5
        rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) \
            if rectified else 1.0
        pair.step(cpu.radam_update, dev.radam_update, lr, beta1, beta2, eps, weight_decay, bc1, math.sqrt(bc2), rect,
                  rectified, maximize, decoupled)
        pair.check()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_decay,maximize", [(0.0, False), (0.1, True)])
def test_adamax(dtype, weight_decay, maximize):
    pair = Pair(dtype, 6, {"m": _zeros(dtype), "u": _zeros(dtype)})
    lr, beta1, beta2, eps = 2e-3, 0.9, 0.999, 1e-8
    for t in range(1, STEPS + 1):
        grad = pair.rng.standard_normal(N).astype(dtype)
        grad[:3] = 0.0  # exp_inf then falls to eps-sized values: the max picks beta2*u or |g|+eps
        pair.step(cpu.adamax_update, dev.adamax_update, beta1, beta2, eps, weight_decay, lr / (1 - beta1 ** t),
                  maximize, grad=grad)
        pair.check()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("momentum,centered,weight_decay,maximize,alpha", [
    (0.0, False, 0.0, False, 0.99), (0.9, False, 0.1, True, 0.99), (0.5, True, 0.0, False, 0.3),
    (0.0, True, 0.01, False, 0.99)])
def test_rmsprop(dtype, momentum, centered, weight_decay, maximize, alpha):
    pair = Pair(dtype, 7, {"sq": _zeros(dtype), "buf": _zeros(dtype) if momentum else None,
                           "avg": _zeros(dtype) if centered else None})
    for t in range(STEPS):
        pair.step(cpu.rmsprop_update, dev.rmsprop_update, 1e-2, alpha, 1e-8, weight_decay, momentum, maximize,
                  absent=(t + 1) % 3)
        pair.check()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_decay,maximize", [(0.0, False), (0.1, True)])
def test_adagrad(dtype, weight_decay, maximize):
    pair = Pair(dtype, 8, {"sum": np.full(N, 0.1, dtype)})
    lr, lr_decay, eps = 1e-1, 0.01, 1e-10
    for t in range(1, STEPS + 1):
        pair.step(cpu.adagrad_update, dev.adagrad_update, lr / (1 + (t - 1) * lr_decay), eps, weight_decay, maximize)
        pair.check()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_decay,maximize", [(0.0, False), (0.1, True)])
def test_adadelta(dtype, weight_decay, maximize):
    pair = Pair(dtype, 9, {"sq": _zeros(dtype), "acc": _zeros(dtype)})
    for _ in range(STEPS):
        pair.step(cpu.adadelta_update, dev.adadelta_update, 1.0, 0.9, 1e-6, weight_decay, maximize)
        pair.check()


def test_empty_parameter_and_mismatched_state():
    empty = DeviceStorage.empty((0,), np.float32)
    dev.adam_update(empty, empty, empty, empty, None, 1e-3, 0.9, 0.999, 1e-8, 0.0, 1e-2, 0.1, False, False)
    p = _dev(np.ones(4, np.float32))
    with pytest.raises(ValueError):
        dev.adagrad_update(p, _dev(np.ones(4, np.float32)), _dev(np.ones(3, np.float32)), 0.1, 1e-10, 0.0, False)
    with pytest.raises(TypeError):
        dev.adagrad_update(p, _dev(np.ones(4, np.float64)), _dev(np.ones(4, np.float32)), 0.1, 1e-10, 0.0, False)
    np.testing.assert_array_equal(_host(p), 1.0)
