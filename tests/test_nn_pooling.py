"""Pooling (max, average, adaptive, Lp, unpooling): values, indices and gradients against torch; errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)


def _randn(*shape):
    return RNG.standard_normal(shape)


def _check(torch, name, shape, *args, x=None, **kwargs):
    """F.<name> against torch on float64: values, indices (when returned) and input gradients."""
    x = _randn(*shape) if x is None else x
    ours_in, theirs_in = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = getattr(F, name)(ours_in, *args, **kwargs)
    theirs = getattr(torch.nn.functional, name)(theirs_in, *args, **kwargs)
    if isinstance(theirs, tuple):
        assert ours[1].dtype is ember.int64
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
        ours, theirs = ours[0], theirs[0]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = _randn(*theirs.shape)
    ours.backward(ember.tensor(g))
    theirs.backward(torch.tensor(g))
    np.testing.assert_allclose(ours_in.grad.numpy(), theirs_in.grad.numpy(), rtol=1e-12, atol=1e-12)


CASES = [
    ("max_pool1d", (2, 3, 9), (3, 2, 1), dict(ceil_mode=True, return_indices=True)),
    ("max_pool1d", (3, 9), (2,), {}),
    ("max_pool2d", (2, 3, 7, 6), (3, 2, 1), dict(return_indices=True)),
    ("max_pool2d", (2, 3, 7, 6), ((3, 2), (2, 1), (1, 1)), dict(dilation=(2, 1), ceil_mode=True, return_indices=True)),
    ("max_pool2d", (3, 8, 8), (3, 1, 1), {}),
    ("max_pool3d", (1, 2, 5, 6, 4), (2, (1, 2, 2), 1), dict(return_indices=True)),
    ("avg_pool1d", (2, 3, 8), (3, 2, 1), dict(ceil_mode=True)),
    ("avg_pool1d", (2, 3, 8), (3, 2, 1), dict(count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), {}),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), dict(ceil_mode=True, divisor_override=4)),
    ("avg_pool3d", (1, 2, 5, 6, 4), (2, 2, 1), dict(ceil_mode=True)),
    ("adaptive_avg_pool1d", (2, 3, 7), (5,), {}),
    ("adaptive_avg_pool2d", (2, 3, 7, 6), ((3, 4),), {}),
    ("adaptive_avg_pool2d", (3, 7, 6), ((None, 4),), {}),
    ("adaptive_avg_pool2d", (2, 3, 5, 5), (1,), {}),
    ("adaptive_avg_pool3d", (1, 2, 5, 6, 4), ((2, 3, 3),), {}),
    ("adaptive_max_pool1d", (2, 3, 7), (3,), dict(return_indices=True)),
    ("adaptive_max_pool2d", (2, 3, 7, 6), ((3, 4),), dict(return_indices=True)),
    ("adaptive_max_pool2d", (2, 3, 4, 4), (6,), dict(return_indices=True)),
    ("adaptive_max_pool3d", (1, 2, 5, 6, 4), ((2, 3, 3),), dict(return_indices=True)),
]


@pytest.mark.parametrize("name,shape,args,kwargs", CASES)
def test_pooling_matches_torch(torch_ref, name, shape, args, kwargs):
    _check(torch_ref, name, shape, *args, **kwargs)


def test_lp_pool_matches_torch(torch_ref):
    x = np.abs(_randn(2, 3, 7, 6)) + 0.1
    _check(torch_ref, "lp_pool2d", None, 2, 3, 2, x=x)
    _check(torch_ref, "lp_pool1d", None, 3.0, 3, x=x[:, :, 0])
    _check(torch_ref, "lp_pool2d", None, 1.5, (2, 3), ceil_mode=True, x=x)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 2), h=st.integers(1, 8), w=st.integers(1, 8), k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)), d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       p=st.tuples(st.integers(0, 1), st.integers(0, 1)), ceil=st.booleans(), avg=st.booleans(),
       include=st.booleans())
def test_pool2d_random_configs_match_torch(n, h, w, k, s, d, p, ceil, avg, include):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    if avg:
        d = (1, 1)
    if any(pi > ((ki - 1) * di + 1) // 2 for pi, ki, di in zip(p, k, d)):
        return
    x = _randn(n, 2, h, w)
    try:
        expected = tf.avg_pool2d(torch.tensor(x), k, s, p, ceil, include) if avg else \
            tf.max_pool2d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            (F.avg_pool2d(ember.tensor(x), k, s, p, ceil, include) if avg else
             F.max_pool2d(ember.tensor(x), k, s, p, d, ceil))
        return
    got = F.avg_pool2d(ember.tensor(x), k, s, p, ceil, include) if avg else \
        F.max_pool2d(ember.tensor(x), k, s, p, d, ceil, return_indices=True)
    if not avg:
        np.testing.assert_array_equal(got[1].numpy(), expected[1].numpy())
        got, expected = got[0], expected[0]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_max_pool_numpy_reference_and_nan():
    x = _randn(2, 3, 6, 8)
    out = F.max_pool2d(ember.tensor(x), 2).numpy()
    np.testing.assert_array_equal(out, x.reshape(2, 3, 3, 2, 4, 2).max(axis=(3, 5)))
    x[0, 0, 1, 1] = np.nan
    values, indices = F.max_pool2d(ember.tensor(x), 2, return_indices=True)
    assert np.isnan(values.numpy()[0, 0, 0, 0]) and indices.numpy()[0, 0, 0, 0] == 1 * 8 + 1
    assert not np.isnan(values.numpy()[0, 0, 0, 1])


def test_avg_pool_numpy_reference():
    x = _randn(2, 3, 6, 8)
    out = F.avg_pool2d(ember.tensor(x), (3, 2)).numpy()
    np.testing.assert_allclose(out, x.reshape(2, 3, 2, 3, 4, 2).mean(axis=(3, 5)), rtol=1e-12)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(ember.tensor(x), 1).numpy()[..., 0, 0], x.mean(axis=(2, 3)),
                               rtol=1e-12)


def test_integer_and_half_pooling(torch_ref):
    x = RNG.integers(-20, 20, (2, 3, 6, 6))
    for name, args in (("max_pool2d", (2,)), ("avg_pool2d", (3, 2, 1))):
        got = getattr(F, name)(ember.tensor(x), *args)
        expected = getattr(torch_ref.nn.functional, name)(torch_ref.tensor(x), *args)
        assert got.dtype is ember.int64
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    h = F.max_pool2d(ember.tensor(x, dtype=ember.float16), 2)
    assert h.dtype is ember.float16
    np.testing.assert_array_equal(h.numpy(), x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    with pytest.raises(NotImplementedError):
        F.adaptive_max_pool2d(ember.tensor(x), 2)


POOL_GRAD = [
    lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True),
    lambda t: F.max_pool1d(t.flatten(2), 2, dilation=2),
    lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda t: F.avg_pool2d(t, 2, divisor_override=3),
    lambda t: F.adaptive_avg_pool2d(t, (3, 4)),
    lambda t: F.adaptive_max_pool2d(t, (2, 3)),
    lambda t: F.lp_pool2d(t.abs() + 0.5, 3, 2),
    lambda t: F.max_pool3d(t.unsqueeze(1), 2, 1),
]


@pytest.mark.parametrize("index", range(len(POOL_GRAD)))
def test_pooling_gradcheck_and_gradgradcheck(index):
    x = ember.tensor(_randn(2, 2, 5, 6), requires_grad=True)
    assert gradcheck(POOL_GRAD[index], [x])
    assert gradgradcheck(POOL_GRAD[index], [x])


def test_max_unpool_matches_torch(torch_ref):
    x = _randn(2, 3, 6, 8)
    values, indices = torch_ref.nn.functional.max_pool2d(torch_ref.tensor(x), 2, return_indices=True)
    ours_v, ours_i = F.max_pool2d(ember.tensor(x, requires_grad=True), 2, return_indices=True)
    unpooled = F.max_unpool2d(ours_v, ours_i, 2)
    np.testing.assert_array_equal(unpooled.detach().numpy(),
                                  torch_ref.nn.functional.max_unpool2d(values, indices, 2).numpy())
    bigger = F.max_unpool2d(ours_v, ours_i, 2, output_size=(7, 9))
    assert tuple(bigger.shape) == (2, 3, 7, 9)
    v1, i1 = F.max_pool1d(ember.tensor(x[:, :, 0]), 2, return_indices=True)
    t1 = torch_ref.nn.functional.max_pool1d(torch_ref.tensor(x[:, :, 0]), 2, return_indices=True)
    np.testing.assert_array_equal(F.max_unpool1d(v1, i1, 2).numpy(),
                                  torch_ref.nn.functional.max_unpool1d(*t1, 2).numpy())
    assert gradcheck(lambda t: F.max_unpool2d(t, ours_i, 2), [ember.tensor(_randn(2, 3, 3, 4), requires_grad=True)])
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(ours_v, ours_i * 10, 2)


@pytest.mark.parametrize("call,match", [
    (lambda: F.max_pool2d(ember.randn(2, 3, 6, 7), 3, padding=2), "pad should be at most half"),
    (lambda: F.max_pool2d(ember.randn(2, 3, 6, 7), 3, stride=0), "stride should not be zero"),
    (lambda: F.max_pool2d(ember.randn(2, 3, 6, 7), 3, dilation=0), "dilation should be greater than zero"),
    (lambda: F.max_pool2d(ember.randn(2, 3, 6, 7), 8), "Output size is too small"),
    (lambda: F.max_pool2d(ember.randn(6, 7), 2), "Expected 3D or 4D"),
    (lambda: F.max_pool2d(ember.randn(2, 0, 4, 4), 2), "Expected 3D or 4D"),
    (lambda: F.max_pool2d(ember.randn(2, 3, 6, 7), (2, 2, 2)), "tuple of two ints"),
    (lambda: F.avg_pool2d(ember.randn(2, 3, 6, 7), 2, divisor_override=0), "divisor must be not zero"),
    (lambda: F.avg_pool1d(ember.randn(7), 2), "Expected 2D or 3D"),
    (lambda: F.adaptive_avg_pool2d(ember.randn(2, 3, 0, 4), 2), "non-zero size for non-batch dimensions"),
    (lambda: F.adaptive_avg_pool1d(ember.randn(2, 3, 6), (4, 5)), "should contain one int"),
])
def test_pooling_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_pooling_empty_batch():
    out, idx = F.max_pool2d(ember.randn(0, 3, 4, 4, requires_grad=True), 2, return_indices=True)
    assert tuple(out.shape) == (0, 3, 2, 2) and tuple(idx.shape) == (0, 3, 2, 2)
    assert tuple(F.adaptive_avg_pool2d(ember.randn(2, 3, 5, 5), 0).shape) == (2, 3, 0, 0)


MODULES = [
    ("MaxPool1d", (3,), dict(stride=2, padding=1, return_indices=True)),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", ((3, 2),), dict(stride=1, dilation=(1, 2), ceil_mode=True)),
    ("MaxPool3d", (2,), dict(padding=1)),
    ("AvgPool1d", (2,), {}),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False)),
    ("AvgPool3d", (2,), dict(divisor_override=5)),
    ("AdaptiveAvgPool1d", (3,), {}),
    ("AdaptiveAvgPool2d", ((2, None),), {}),
    ("AdaptiveAvgPool3d", (2,), {}),
    ("AdaptiveMaxPool1d", (3,), dict(return_indices=True)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}),
    ("AdaptiveMaxPool3d", (2,), {}),
    ("LPPool1d", (2, 3), {}),
    ("LPPool2d", (2, 3), dict(stride=2)),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_pooling_modules_match_torch(torch_ref, name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch_ref.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    dims = 3 if name.endswith("3d") else 2 if name.endswith("2d") else 1
    x = np.abs(_randn(2, 3, *([6] * dims))) + 0.1
    got, expected = ours(ember.tensor(x)), theirs(torch_ref.tensor(x))
    if isinstance(expected, tuple):
        np.testing.assert_array_equal(got[1].numpy(), expected[1].numpy())
        got, expected = got[0], expected[0]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


def test_max_unpool_module(torch_ref):
    assert repr(nn.MaxUnpool2d(2)) == repr(torch_ref.nn.MaxUnpool2d(2))
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    x = ember.tensor(_randn(1, 2, 4, 4))
    restored = unpool(*pool(x))
    kept = restored.numpy() != 0
    assert kept.sum() == 8
    np.testing.assert_array_equal(restored.numpy()[kept], x.numpy()[kept])


def test_torch_namespace_exports():
    for name in ("max_pool1d", "max_pool2d", "avg_pool1d", "adaptive_avg_pool1d"):
        assert getattr(ember, name) is getattr(F, name)
    values, indices = ember.adaptive_max_pool1d(ember.tensor([[[1.0, 5.0, 2.0, 3.0]]]), 2)  # a pair, as torch's
    assert values.tolist() == [[[5.0, 3.0]]] and indices.tolist() == [[[1, 3]]]


# ---- found by the long fuzz run (issue 8), torch as the oracle -------------------------------------------------------
@pytest.mark.parametrize("name, shape, size", [
    ("adaptive_avg_pool2d", (1, 2, 0, 0), (1, 1)), ("adaptive_avg_pool2d", (1, 2, 0, 3), 1),
    ("adaptive_avg_pool2d", (2, 0, 3), 1), ("adaptive_avg_pool1d", (2, 3, 0), 1),
    ("adaptive_avg_pool3d", (1, 2, 0, 0, 0), 1), ("adaptive_avg_pool2d", (2, 0, 4, 4), 2),
    ("adaptive_avg_pool2d", (0, 4, 4), 2), ("adaptive_avg_pool2d", (0, 0, 4, 4), 2),
    ("adaptive_avg_pool1d", (2, 0, 4), 2), ("adaptive_avg_pool1d", (0, 4), 2), ("adaptive_max_pool2d", (0, 4, 4), 2),
    ("adaptive_max_pool1d", (0, 4), 2), ("adaptive_avg_pool3d", (0, 4, 4, 4), 2),
    ("adaptive_max_pool3d", (0, 4, 4, 4), 2)])
def test_adaptive_pooling_of_empty_inputs_matches_torch(torch_ref, name, shape, size):
    """Empty channels pass where torch lets them; averaging to size 1 is a mean over the pooled dims (NaN when
    they are empty)."""
    ours = getattr(F, name)(ember.zeros(shape), size)
    theirs = getattr(torch_ref.nn.functional, name)(torch_ref.zeros(shape), size)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name, shape", [("adaptive_avg_pool2d", (2, 3, 0, 4)), ("adaptive_avg_pool2d", (3, 0, 4)),
                                         ("adaptive_max_pool2d", (2, 0, 4, 4)), ("adaptive_max_pool2d", (1, 2, 0, 0)),
                                         ("adaptive_avg_pool3d", (2, 0, 4, 4, 4)), ("adaptive_max_pool1d", (2, 0, 4)),
                                         ("adaptive_avg_pool1d", (2, 3, 0))])
def test_adaptive_pooling_still_refuses_empty_pooled_dims(torch_ref, name, shape):
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        getattr(torch_ref.nn.functional, name)(torch_ref.zeros(shape), 2)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        getattr(F, name)(ember.zeros(shape), 2)


def test_adaptive_average_to_one_is_the_mean(torch_ref):
    x = _randn(2, 3, 5, 4)
    ours = ember.tensor(x, requires_grad=True)
    got = F.adaptive_avg_pool2d(ours, 1)
    expected = torch_ref.nn.functional.adaptive_avg_pool2d(torch_ref.tensor(x), 1).numpy()
    assert got.shape == (2, 3, 1, 1)
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-12, atol=1e-15)
    got.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), np.full(x.shape, 1 / 20), rtol=1e-14)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        F.adaptive_avg_pool2d(ember.zeros(2, 3, 4, dtype=ember.int64), 1)
