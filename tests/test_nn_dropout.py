"""Dropout in ember.nn: statistics of the masks, gradients, seeding, channel-wise forms and modules."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

SELU_SATURATION = -1.7580993408473766


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    ember.manual_seed(0)
    x = ember.ones(200_000)  # large enough for the parallel kernel
    y = F.dropout(x, p).numpy()
    kept = y != 0
    assert abs((1 - kept.mean()) - p) < 0.01
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1.0) < 0.02


def test_dropout_gradient_is_mask_times_scale():
    x = ember.tensor(np.random.default_rng(0).normal(size=(40, 30)), requires_grad=True)
    y = F.dropout(x, 0.3)
    g = np.random.default_rng(1).normal(size=(40, 30))
    y.backward(ember.tensor(g))
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, g / 0.7, 0.0), rtol=1e-12)
    np.testing.assert_allclose(y.detach().numpy(), np.where(kept, x.detach().numpy() / 0.7, 0.0), rtol=1e-12)


def test_dropout_double_backward():
    x = ember.tensor(np.random.default_rng(2).normal(size=(6,)), requires_grad=True)

    def seeded(t):  # reseeding gives every evaluation the same mask
        ember.manual_seed(3)
        return F.dropout(t, 0.4) * t

    assert gradcheck(seeded, (x,))
    assert gradgradcheck(seeded, (x,))


def test_manual_seed_replays_masks():
    x = ember.ones(1000)
    ember.manual_seed(42)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    ember.manual_seed(42)
    c = F.dropout(x, 0.5).numpy()
    assert np.array_equal(a, c) and not np.array_equal(a, b)


def test_eval_mode_and_p_zero_are_identity():
    x = ember.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False there
    assert F.dropout2d(ember.randn(2, 3, 4, 4), 0.5, training=False).shape == (2, 3, 4, 4)
    m = nn.Dropout(0.9).eval()
    assert np.array_equal(m(x).numpy(), x.numpy())


def test_p_one_zeroes_everything_and_gradient():
    x = ember.randn(3, 4, requires_grad=True)
    y = F.dropout(x, 1.0)
    assert not y.detach().numpy().any()
    y.sum().backward()
    assert not x.grad.numpy().any()


@pytest.mark.parametrize("fn", [F.dropout, F.alpha_dropout, F.feature_alpha_dropout, F.dropout1d, F.dropout2d,
                                F.dropout3d])
@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_probability_is_validated(fn, p):
    with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
        fn(ember.ones(2, 3, 4), p)


@pytest.mark.parametrize("cls", [nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
                                 nn.FeatureAlphaDropout])
def test_modules_validate_and_print_like_torch(cls, torch_ref):
    with pytest.raises(ValueError, match="dropout probability"):
        cls(1.2)
    assert repr(cls(0.3, inplace=True)) == repr(getattr(torch_ref.nn, cls.__name__)(0.3, inplace=True))
    assert repr(cls()) == repr(getattr(torch_ref.nn, cls.__name__)())


def test_integer_input_in_training_raises():
    with pytest.raises(RuntimeError, match="can't be cast"):
        F.dropout(ember.tensor([1, 2, 3]), 0.5)


def test_inplace_dropout_writes_input():
    x = ember.ones(1000)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}


def test_inplace_dropout_on_nonleaf_backprops():
    leaf = ember.ones(500, requires_grad=True)
    x = leaf * 1.0
    y = F.dropout(x, 0.25, inplace=True)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(leaf.grad.numpy(), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)


def test_float16_and_noncontiguous_inputs():
    x = ember.ones(64, 32, dtype=ember.float16)
    y = F.dropout(x, 0.5)
    assert y.dtype == ember.float16 and set(np.unique(y.numpy().astype(np.float32))) <= {0.0, 2.0}
    t = ember.ones(30, 40).t()
    z = F.dropout(t, 0.5)
    assert z.shape == (40, 30) and set(np.unique(z.numpy())) <= {0.0, 2.0}


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_keeps_mean_and_variance(p):
    ember.manual_seed(1)
    x = ember.randn(200_000)
    y = F.alpha_dropout(x, p, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    a = 1.0 / math.sqrt((SELU_SATURATION ** 2 * p + 1) * (1 - p))
    dropped_value = a * SELU_SATURATION + (-SELU_SATURATION) * a * p
    assert abs(np.isclose(y, dropped_value, rtol=1e-5).mean() - p) < 0.01


def test_alpha_dropout_gradient():
    x = ember.randn(300, requires_grad=True, dtype=ember.float64)
    y = F.alpha_dropout(x, 0.3, training=True)
    y.sum().backward()
    a = 1.0 / math.sqrt((SELU_SATURATION ** 2 * 0.3 + 1) * 0.7)
    grads = np.unique(np.round(x.grad.numpy(), 12))
    np.testing.assert_allclose(sorted(grads), [0.0, a], rtol=1e-10)


@pytest.mark.parametrize("fn,shape,channel_dims", [
    (F.dropout1d, (8, 16, 5), 2), (F.dropout1d, (16, 5), 1), (F.dropout2d, (8, 16, 4, 4), 2),
    (F.dropout3d, (4, 16, 2, 3, 3), 2), (F.dropout3d, (16, 2, 3, 3), 1),
])
def test_channel_dropout_zeroes_whole_channels(fn, shape, channel_dims):
    ember.manual_seed(5)
    x = ember.ones(*shape, requires_grad=True)
    y = fn(x, 0.5)
    arr = y.detach().numpy().reshape(math.prod(shape[:channel_dims]), -1)
    per_channel = np.unique(arr, axis=1)
    assert per_channel.shape[1] == 1  # every channel is constant: all kept (2) or all dropped (0)
    assert set(np.unique(arr)) == {0.0, 2.0}
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())


def test_channel_dropout_rank_errors_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(3), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            F.dropout2d(ember.ones(3), 0.5)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(ember.ones(2, 3, 4), 0.5)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(ember.ones(3, 4), 0.5)


def test_feature_alpha_dropout_values():
    ember.manual_seed(2)
    y = F.feature_alpha_dropout(ember.zeros(64, 8, 5), 0.5, training=True).numpy()
    per_channel = y.reshape(64 * 8, 5)
    assert np.all(per_channel == per_channel[:, :1])
    a = 1.0 / math.sqrt((SELU_SATURATION ** 2 * 0.5 + 1) * 0.5)
    np.testing.assert_allclose(sorted(np.unique(np.round(y, 6))),
                               sorted({round(a * SELU_SATURATION * -0.5, 6), round(a * (SELU_SATURATION + -SELU_SATURATION * 0.5), 6)}),
                               rtol=1e-5)


def test_dropout_modules_follow_train_and_eval():
    x = ember.ones(4, 6, 3, 3)
    m = nn.Sequential(nn.Dropout(0.5), nn.Dropout2d(0.5))
    assert not np.array_equal(m(x).numpy(), x.numpy())
    m.eval()
    assert np.array_equal(m(x).numpy(), x.numpy())


def test_torch_level_functions():
    x = ember.ones(100)
    assert ember.dropout(x, 0.5, False) is x
    ember.manual_seed(0)
    y = ember.dropout(x, 0.5, True)
    assert set(np.unique(y.numpy())) == {0.0, 2.0}
    assert ember.alpha_dropout(x, 0.5, False) is x
    assert ember.feature_alpha_dropout(ember.ones(2, 3), 0.5, False).shape == (2, 3)


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3).map(tuple), p=st.floats(0.05, 0.95))
def test_dropout_hypothesis_shapes(shape, p):
    x = ember.ones(*shape)
    y = F.dropout(x, p).numpy()
    assert y.shape == shape
    assert np.all((y == 0) | np.isclose(y, 1 / (1 - p)))
