"""CUDA loss kernels (class-index NLL / cross-entropy, CTC) against the CPU kernels, on tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.cpu import losses as cpu  # noqa: E402
from ember.kernels.cuda import losses as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

# The simulator runs device code on NumPy scalars, which warn where the GPU silently makes the NaN (-inf + inf).
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
IGNORE = -100


def _offset(a: np.ndarray, k: int) -> DeviceStorage:
    """``a`` at element offset ``k`` of a larger device buffer (junk around it)."""
    flat = np.concatenate([np.full(k, 9, a.dtype), a.reshape(-1), np.full(2, 9, a.dtype)])
    return DeviceStorage(DeviceStorage.from_numpy(flat).buffer, a.shape, DeviceStorage.from_numpy(a).strides, k)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


# ---- class NLL ---------------------------------------------------------------------------------------------------

def _class_case(dtype, shape, seed=0):
    n, c, s = shape
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    target = rng.integers(0, c, (n, s)).astype(np.int64)
    target.flat[::3] = IGNORE
    weight = rng.uniform(0.5, 2.0, c).astype(dtype)
    return x, target, weight


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("shape", [(4, 5, 1), (2, 37, 3)])
def test_class_nll_matches_cpu(dtype, from_logits, smoothing, shape):
    x, target, weight = _class_case(dtype, shape)
    if not from_logits:
        x = _log_softmax(x, 1).astype(dtype)
    rows = (shape[0], shape[2])
    loss, lse = np.empty(rows, dtype), np.empty(rows, dtype)
    total = cpu.class_nll_forward(x, target, weight, IGNORE, smoothing, from_logits, loss, lse)
    g = np.random.default_rng(9).standard_normal(rows).astype(dtype)
    grad = np.empty_like(x)
    cpu.class_nll_backward(x, target, weight, lse, g, IGNORE, smoothing, from_logits, grad)

    offset = shape == (2, 37, 3)
    xs = _offset(x, 3) if offset else DeviceStorage.from_numpy(x)
    ts = _offset(target, 1) if offset else DeviceStorage.from_numpy(target)
    ws = _offset(weight, 2) if offset else DeviceStorage.from_numpy(weight)
    d_loss = _offset(np.zeros(rows, dtype), 4) if offset else DeviceStorage.empty(rows, dtype)
    d_lse = _offset(np.zeros(rows, dtype), 5) if offset else DeviceStorage.empty(rows, dtype)
    d_total = dev.class_nll_forward(xs, ts, ws, IGNORE, smoothing, from_logits, d_loss, d_lse)
    assert isinstance(d_total, float)
    np.testing.assert_allclose(d_total, total, rtol=1e-12)
    np.testing.assert_allclose(d_loss.to_numpy(), loss, **TOL[dtype])
    np.testing.assert_allclose(d_lse.to_numpy(), lse, **TOL[dtype])
    assert (d_loss.to_numpy()[target == IGNORE] == 0).all()

    gs = _offset(g, 6) if offset else DeviceStorage.from_numpy(g)
    d_grad = _offset(np.zeros_like(x), 7) if offset else DeviceStorage.empty(x.shape, dtype)
    dev.class_nll_backward(xs, ts, ws, d_lse, gs, IGNORE, smoothing, from_logits, d_grad)
    got = d_grad.to_numpy()
    np.testing.assert_allclose(got, grad, **TOL[dtype])
    assert (got.transpose(0, 2, 1)[target == IGNORE] == 0).all()
    if offset:
        buf = d_grad.buffer.copy_to_host()
        assert (buf[:7] == 9).all() and (buf[-2:] == 9).all()


def test_class_nll_host_target_and_weight_large_logits_and_nan():
    x = np.array([[[1e4], [1e4 - 2], [-1e4]], [[0.5], [np.nan], [1.0]], [[1.0], [2.0], [3.0]]])
    target = np.array([[0], [2], [IGNORE]], np.int64)
    weight = np.array([1.0, 2.0, 0.5])
    loss, lse = np.empty((3, 1)), np.empty((3, 1))
    total = cpu.class_nll_forward(x, target, weight, IGNORE, 0.0, True, loss, lse)
    d_loss, d_lse = DeviceStorage.empty((3, 1), np.float64), DeviceStorage.empty((3, 1), np.float64)
    d_total = dev.class_nll_forward(DeviceStorage.from_numpy(x), target, weight, IGNORE, 0.0, True, d_loss, d_lse)
    assert d_total == total == 1.5
    got = d_loss.to_numpy()
    np.testing.assert_allclose(got, loss, rtol=1e-12)
    assert np.isfinite(got[0, 0]) and np.isnan(got[1, 0]) and got[2, 0] == 0


def test_class_nll_empty_batch():
    x = DeviceStorage.empty((0, 4, 1), np.float32)
    rows = DeviceStorage.empty((0, 1), np.float32)
    t = DeviceStorage.empty((0, 1), np.int64)
    w = DeviceStorage.from_numpy(np.ones(4, np.float32))
    assert dev.class_nll_forward(x, t, w, IGNORE, 0.0, True, rows, rows) == 0.0
    dev.class_nll_backward(x, t, w, rows, rows, IGNORE, 0.0, True, x)


# ---- CTC ---------------------------------------------------------------------------------------------------------

def _ctc_case(dtype, blank):
    steps, batch, classes, labels = 6, 5, 4, 3
    rng = np.random.default_rng(4)
    lp = _log_softmax(rng.standard_normal((steps, batch, classes)) * 2, 2).astype(dtype)
    others = [c for c in range(classes) if c != blank]
    targets = rng.choice(others, (batch, labels)).astype(np.int64)
    targets[1] = [others[0], others[0], others[1]]            # a repeated label (no skip)
    input_lengths = np.array([6, 5, 0, 2, 4], np.int64)       # item 2 empty, item 3 impossible (needs >= 3 steps)
    target_lengths = np.array([3, 3, 0, 3, 0], np.int64)
    return lp, targets, input_lengths, target_lengths


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("blank", [0, 3])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_matches_cpu(dtype, blank, zero_infinity):
    lp, targets, il, tl = _ctc_case(dtype, blank)
    steps, batch, _ = lp.shape
    width = 2 * targets.shape[1] + 1
    alpha, nll = np.empty((batch, steps, width), dtype), np.empty(batch, dtype)
    cpu.ctc_forward(lp, targets, il, tl, blank, alpha, nll)
    g = np.linspace(0.5, 1.5, batch).astype(dtype)
    grad = np.empty_like(lp)
    cpu.ctc_backward(lp, targets, il, tl, blank, alpha, nll, g, zero_infinity, grad)

    offset = blank == 3
    lps = _offset(lp, 2) if offset else DeviceStorage.from_numpy(lp)
    ts, ils, tls = (_offset(targets, 1), _offset(il, 3), _offset(tl, 5)) if offset else (
        DeviceStorage.from_numpy(targets), DeviceStorage.from_numpy(il), DeviceStorage.from_numpy(tl))
    d_alpha = _offset(np.zeros_like(alpha), 4) if offset else DeviceStorage.empty(alpha.shape, dtype)
    d_nll = _offset(np.zeros_like(nll), 3) if offset else DeviceStorage.empty(nll.shape, dtype)
    dev.ctc_forward(lps, ts, ils, tls, blank, d_alpha, d_nll)
    got_nll = d_nll.to_numpy()
    np.testing.assert_allclose(got_nll, nll, **TOL[dtype])
    np.testing.assert_allclose(d_alpha.to_numpy(), alpha, **TOL[dtype])
    assert got_nll[2] == 0 and got_nll[3] == np.inf and np.isfinite(got_nll[[0, 1, 4]]).all()

    gs = _offset(g, 1) if offset else DeviceStorage.from_numpy(g)
    d_grad = _offset(np.full_like(lp, 7), 2) if offset else DeviceStorage.from_numpy(np.full_like(lp, 7))
    dev.ctc_backward(lps, ts, ils, tls, blank, d_alpha, d_nll, gs, zero_infinity, d_grad)
    got = d_grad.to_numpy()
    np.testing.assert_allclose(got, grad, **TOL[dtype])
    assert (got[:, 2] == 0).all() and (got[5:, 1] == 0).all()
    if zero_infinity:
        assert (got[:, 3] == 0).all()
    else:
        assert np.isnan(got[:2, 3]).all()
    np.testing.assert_allclose(got[:, [0, 1, 4]].sum(-1), 0, atol=1e-5)


def test_ctc_host_lengths_and_targets():
    lp, targets, il, tl = _ctc_case(np.float64, 0)
    steps, batch, _ = lp.shape
    alpha, nll = np.empty((batch, steps, 7)), np.empty(batch)
    cpu.ctc_forward(lp, targets, il, tl, 0, alpha, nll)
    d_alpha, d_nll = DeviceStorage.empty(alpha.shape, np.float64), DeviceStorage.empty((batch,), np.float64)
    dev.ctc_forward(DeviceStorage.from_numpy(lp), targets, il, tl, 0, d_alpha, d_nll)
    np.testing.assert_allclose(d_nll.to_numpy(), nll, rtol=1e-12)


def test_signatures_match_cpu(assert_same_api):
    assert_same_api(dev, cpu)
