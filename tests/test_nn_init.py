"""ember.nn.init: gains and fans against torch, distributions by their moments, in-place semantics, errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.nn import init

GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None), ("conv_transpose1d", None),
         ("conv_transpose2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
         ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("leaky_relu", math.sqrt(5)),
         ("selu", None)]


@pytest.mark.parametrize("name,param", GAINS)
def test_calculate_gain_matches_torch(torch_ref, name, param):
    assert init.calculate_gain(name, param) == pytest.approx(torch_ref.nn.init.calculate_gain(name, param))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity softplus"):
        init.calculate_gain("softplus")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "0.1")


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=2, max_size=5))
def test_fans_match_torch(shape):
    torch = pytest.importorskip("torch")
    t = torch.empty(shape)
    e = ember.empty(shape)
    assert init._calculate_fan_in_and_fan_out(e) == torch.nn.init._calculate_fan_in_and_fan_out(t)
    for mode in ("fan_in", "fan_out", "FAN_OUT"):
        assert init._calculate_correct_fan(e, mode) == torch.nn.init._calculate_correct_fan(t, mode)


def test_fan_errors():
    for shape in [(3,), ()]:
        with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
            init._calculate_fan_in_and_fan_out(ember.empty(shape))
    with pytest.raises(ValueError, match="Mode fan_avg not supported, please use one of"):
        init.kaiming_uniform_(ember.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(5))


def _values(t):
    return t.detach().numpy().astype(np.float64).ravel()


def test_uniform_and_normal_moments():
    ember.manual_seed(0)
    u = init.uniform_(ember.empty(200, 100), -3.0, 5.0)
    v = _values(u)
    assert v.min() >= -3.0 and v.max() < 5.0
    assert v.mean() == pytest.approx(1.0, abs=0.05)
    assert v.std() == pytest.approx(8 / math.sqrt(12), rel=0.02)
    n = _values(init.normal_(ember.empty(200, 100), 2.0, 0.5))
    assert n.mean() == pytest.approx(2.0, abs=0.01)
    assert n.std() == pytest.approx(0.5, rel=0.02)


@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
def test_xavier_bounds_and_std(shape):
    ember.manual_seed(1)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(ember.empty(shape))
    std = 2.0 * math.sqrt(2.0 / (fan_in + fan_out))
    v = _values(init.xavier_uniform_(ember.empty(shape), gain=2.0))
    assert np.abs(v).max() <= math.sqrt(3) * std
    assert v.std() == pytest.approx(std, rel=0.03)
    v = _values(init.xavier_normal_(ember.empty(shape), gain=2.0))
    assert v.std() == pytest.approx(std, rel=0.03)
    assert v.mean() == pytest.approx(0.0, abs=0.05 * std)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("relu", 0), ("leaky_relu", math.sqrt(5)), ("tanh", 0)])
def test_kaiming_bounds_and_std(mode, nonlinearity, a):
    ember.manual_seed(2)
    shape = (128, 64, 3)
    fan = {"fan_in": 64 * 3, "fan_out": 128 * 3}[mode]
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    v = _values(init.kaiming_uniform_(ember.empty(shape), a=a, mode=mode, nonlinearity=nonlinearity))
    assert np.abs(v).max() <= math.sqrt(3) * std
    assert np.abs(v).max() > 0.95 * math.sqrt(3) * std
    assert v.std() == pytest.approx(std, rel=0.03)
    v = _values(init.kaiming_normal_(ember.empty(shape), a=a, mode=mode, nonlinearity=nonlinearity))
    assert v.std() == pytest.approx(std, rel=0.03)


def test_linear_default_init_bound_matches_torch_formula():
    # Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    ember.manual_seed(3)
    v = _values(init.kaiming_uniform_(ember.empty(400, 25), a=math.sqrt(5)))
    assert np.abs(v).max() <= 1 / 5
    assert np.abs(v).max() > 0.99 / 5


def test_trunc_normal_support_and_moments(torch_ref):
    ember.manual_seed(4)
    mean, std, a, b = 0.5, 2.0, -1.0, 3.0
    v = _values(init.trunc_normal_(ember.empty(400, 100), mean, std, a, b))
    assert v.min() >= a and v.max() <= b
    dist = torch_ref.distributions.Normal(mean, std)  # truncated normal moments from the closed form
    alpha, beta = (a - mean) / std, (b - mean) / std
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    z = float(dist.cdf(torch_ref.tensor(b)) - dist.cdf(torch_ref.tensor(a)))
    exp_mean = mean + std * (phi(alpha) - phi(beta)) / z
    exp_var = std**2 * (1 + (alpha * phi(alpha) - beta * phi(beta)) / z - ((phi(alpha) - phi(beta)) / z) ** 2)
    assert v.mean() == pytest.approx(exp_mean, abs=0.02)
    assert v.std() == pytest.approx(math.sqrt(exp_var), rel=0.02)


def test_trunc_normal_warns_when_mean_far_outside():
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(ember.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


def test_constant_ones_zeros():
    t = ember.empty(3, 4, dtype=ember.float64)
    assert init.constant_(t, 2.5) is t and np.all(t.numpy() == 2.5)
    assert np.all(init.ones_(t).numpy() == 1)
    assert np.all(init.zeros_(t).numpy() == 0)
    i = init.constant_(ember.empty(4, dtype=ember.int64), 7)
    assert i.dtype == ember.int64 and i.tolist() == [7] * 4


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_matches_torch(torch_ref, shape):
    ref = torch_ref.nn.init.eye_(torch_ref.empty(shape)).numpy()
    np.testing.assert_array_equal(init.eye_(ember.empty(shape)).numpy(), ref)


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((4, 2, 3), 2), ((6, 3, 3, 2), 3), ((2, 4, 3, 3, 3), 1),
                                          ((3, 5, 4, 4), 1)])
def test_dirac_matches_torch(torch_ref, shape, groups):
    ref = torch_ref.nn.init.dirac_(torch_ref.empty(shape), groups=groups).numpy()
    np.testing.assert_array_equal(init.dirac_(ember.empty(shape), groups=groups).numpy(), ref)


def test_dirac_is_identity_conv(torch_ref):
    # A Dirac-initialised conv passes its input through (checked with torch's conv on ember's weights).
    w = init.dirac_(ember.empty(3, 3, 3, 3))
    x = torch_ref.randn(1, 3, 5, 5)
    y = torch_ref.nn.functional.conv2d(x, torch_ref.from_numpy(w.numpy()), padding=1)
    torch_ref.testing.assert_close(y, x)


def test_shape_errors():
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(ember.empty(3, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(5, 2, 3), groups=2)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ember.empty(4))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(ember.empty(2, 3, 4), 0.5)


@pytest.mark.parametrize("shape", [(3, 7), (7, 3), (5, 5), (6, 2, 3)])
def test_orthogonal_rows_or_columns_orthonormal(shape):
    ember.manual_seed(5)
    w = init.orthogonal_(ember.empty(shape, dtype=ember.float64), gain=1.5).numpy().reshape(shape[0], -1)
    small = min(w.shape)
    gram = w @ w.T if w.shape[0] == small else w.T @ w
    np.testing.assert_allclose(gram, 1.5**2 * np.eye(small), atol=1e-12)


def test_sparse_zeros_per_column():
    ember.manual_seed(6)
    w = init.sparse_(ember.empty(10, 8), sparsity=0.25, std=0.5).numpy()
    assert ((w == 0).sum(axis=0) == 3).all()  # ceil(0.25 * 10)
    assert w[w != 0].std() == pytest.approx(0.5, rel=0.3)


def test_inplace_semantics_on_leaf_and_view():
    p = ember.ones(4, 6, requires_grad=True)
    version = p._version.value
    out = init.kaiming_uniform_(p)
    assert out is p and p.requires_grad and p.grad_fn is None
    assert p._version.value > version
    assert not np.all(p.detach().numpy() == 1)
    base = ember.zeros(4, 6)
    init.ones_(base[:, 1:3])
    assert base.numpy()[:, 1:3].sum() == 8 and base.numpy().sum() == 8


@pytest.mark.parametrize("fn,args", [(init.uniform_, ()), (init.normal_, ()), (init.xavier_uniform_, ()),
                                     (init.kaiming_normal_, ()), (init.orthogonal_, ()), (init.sparse_, (0.5,)),
                                     (init.trunc_normal_, ())])
def test_reproducible_with_seed_and_generator(fn, args):
    ember.manual_seed(7)
    a = fn(ember.empty(5, 4), *args).numpy().copy()
    ember.manual_seed(7)
    b = fn(ember.empty(5, 4), *args).numpy().copy()
    np.testing.assert_array_equal(a, b)
    c = fn(ember.empty(5, 4), *args, generator=ember.Generator().manual_seed(11)).numpy().copy()
    d = fn(ember.empty(5, 4), *args, generator=ember.Generator().manual_seed(11)).numpy().copy()
    np.testing.assert_array_equal(c, d)
    assert not np.array_equal(a, c)


def test_zero_element_kaiming_warns_and_noop():
    t = ember.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(t) is t
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(t)


def test_deprecated_aliases_warn_and_forward():
    t = ember.empty(2, 3)
    with pytest.warns(FutureWarning, match=r"`nn.init.constant` is now deprecated in favor of `nn.init.constant_`"):
        init.constant(t, 3.0)
    assert np.all(t.numpy() == 3.0)


def test_float16_init_stays_float16():
    t = init.xavier_normal_(ember.empty(50, 40, dtype=ember.float16))
    assert t.dtype == ember.float16 and np.isfinite(t.numpy()).all()
    assert _values(t).std() == pytest.approx(math.sqrt(2 / 90), rel=0.1)
