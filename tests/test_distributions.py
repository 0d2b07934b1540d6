"""ember.distributions against torch.distributions: densities, CDFs, moments, entropies, shapes, argument
validation and KL divergences on the same parameters (float64), and sample statistics against the moments.

The differential tests take torch through the ``torch_ref`` fixture and skip without it; the sample statistics need
only ember. Gradients are in test_distributions_grad.py, transforms and constraints in
test_distributions_transforms.py.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import ember
import ember.distributions as D

_R = np.random.default_rng(20240521)


def _pos(*shape, lo=0.5, hi=3.0):
    return _R.uniform(lo, hi, shape)


def _real(*shape):
    return _R.normal(size=shape)


def _prob(*shape):
    return _R.uniform(0.1, 0.9, shape)


def _simplex(*shape):
    x = _R.uniform(0.2, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _spd(n, *batch):
    a = _R.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(n, *batch):
    return np.linalg.cholesky(_spd(n, *batch))


# (distribution, parameters): NumPy arrays become float64 tensors, anything else passes as it is
CASES = [
    ("Normal", dict(loc=_real(3), scale=_pos(3))),
    ("Normal", dict(loc=_real(2, 1), scale=_pos(3))),
    ("Bernoulli", dict(probs=_prob(3))),
    ("Bernoulli", dict(logits=_real(2, 3))),
    ("Categorical", dict(probs=_simplex(2, 4))),
    ("Categorical", dict(logits=_real(3, 5))),
    ("OneHotCategorical", dict(probs=_simplex(2, 4))),
    ("OneHotCategoricalStraightThrough", dict(logits=_real(4))),
    ("Uniform", dict(low=np.array([-1.5, 0.2, 2.0]), high=np.array([1.0, 0.9, 5.0]))),
    ("Beta", dict(concentration1=_pos(3), concentration0=_pos(3))),
    ("Gamma", dict(concentration=_pos(3), rate=_pos(3))),
    ("Dirichlet", dict(concentration=_pos(2, 4))),
    ("Exponential", dict(rate=_pos(3))),
    ("Laplace", dict(loc=_real(3), scale=_pos(3))),
    ("LogNormal", dict(loc=_real(3), scale=_pos(3, hi=1.0))),
    ("MultivariateNormal", dict(loc=_real(2, 3), covariance_matrix=_spd(3, 2))),
    ("MultivariateNormal", dict(loc=_real(3), precision_matrix=_spd(3))),
    ("MultivariateNormal", dict(loc=_real(3), scale_tril=_tril(3, 2))),
    ("Poisson", dict(rate=_pos(3, hi=8))),
    ("Binomial", dict(total_count=np.array([5.0, 5.0, 5.0]), probs=_prob(3))),
    ("Binomial", dict(total_count=np.array([3.0, 7.0, 10.0]), logits=_real(3))),
    ("Multinomial", dict(total_count=6, probs=_simplex(2, 3))),
    ("Geometric", dict(probs=_prob(3))),
    ("Cauchy", dict(loc=_real(3), scale=_pos(3))),
    ("HalfNormal", dict(scale=_pos(3))),
    ("HalfCauchy", dict(scale=_pos(3))),
    ("Chi2", dict(df=_pos(3, hi=6))),
    ("StudentT", dict(df=np.array([0.8, 1.5, 4.0]), loc=_real(3), scale=_pos(3))),
    ("Gumbel", dict(loc=_real(3), scale=_pos(3))),
    ("Pareto", dict(scale=_pos(3), alpha=np.array([0.8, 1.5, 3.0]))),
    ("Weibull", dict(scale=_pos(3), concentration=_pos(3))),
    ("Kumaraswamy", dict(concentration1=np.array([0.7, 2.0, 3.0]), concentration0=np.array([2.0, 1.5, 4.0]))),
    ("FisherSnedecor", dict(df1=np.array([1.5, 3.0, 6.0]), df2=np.array([3.0, 5.0, 9.0]))),
    ("NegativeBinomial", dict(total_count=_pos(3, hi=5), probs=_prob(3))),
    ("NegativeBinomial", dict(total_count=_pos(3, hi=5), logits=_real(3))),
    ("ContinuousBernoulli", dict(probs=np.array([0.2, 0.4995, 0.8]))),
    ("ContinuousBernoulli", dict(logits=_real(3))),
    ("RelaxedBernoulli", dict(temperature=np.array(0.7), probs=_prob(3))),
    ("RelaxedOneHotCategorical", dict(temperature=np.array(0.7), probs=_simplex(2, 3))),
    ("LowRankMultivariateNormal", dict(loc=_real(2, 3), cov_factor=_real(2, 3, 2), cov_diag=_pos(2, 3))),
    ("VonMises", dict(loc=_real(3), concentration=np.array([0.5, 2.0, 10.0]))),
    ("LKJCholesky", dict(dim=3, concentration=_pos(2))),
    ("Wishart", dict(df=np.array([4.0, 5.0]), covariance_matrix=_spd(3, 2))),
    ("Wishart", dict(df=4.5, scale_tril=_tril(2))),
    ("InverseGamma", dict(concentration=np.array([0.8, 1.5, 3.0]), rate=_pos(3))),
    ("LogisticNormal", dict(loc=_real(3), scale=_pos(3))),
    ("GeneralizedPareto", dict(loc=_real(3), scale=_pos(3), concentration=np.array([-0.3, 0.2, 0.6]))),
]
IDS = [f"{name}-{'-'.join(params)}" for name, params in CASES]

# torch's Kumaraswamy.mode is NaN wherever concentration0 > 1 (log1p(-concentration0)); ember's is the closed form
# ((a - 1) / (a b - 1))^(1/a), checked in test_kumaraswamy_mode_is_the_closed_form
_SKIP = {("Kumaraswamy", "mode")}
# torch's GeneralizedPareto mixes float32 into float64 computations (torch.tensor(0.0)): compared in float32
_FLOAT32_ONLY = {"GeneralizedPareto"}


def _lib_dist(lib, module, name, params, dtype):
    kwargs = {k: lib.tensor(v, dtype=dtype) if isinstance(v, np.ndarray) else v for k, v in params.items()}
    return getattr(module, name)(**kwargs)


def _pair(torch, name, params):
    float32 = name in _FLOAT32_ONLY
    t = _lib_dist(torch, torch.distributions, name, params, torch.float32 if float32 else torch.float64)
    e = _lib_dist(ember, D, name, params, ember.float32 if float32 else ember.float64)
    return t, e, (1e-4 if float32 else 1e-7)


def _evaluate(dist, method, values, probs):
    if method == "log_prob":
        return dist.log_prob(values)
    if method == "cdf":
        return dist.cdf(values)
    if method == "icdf":
        return dist.icdf(probs)
    if method in ("entropy", "perplexity", "enumerate_support"):
        return getattr(dist, method)()
    return getattr(dist, method)


def _outcome(dist, method, values, probs):
    try:
        return _evaluate(dist, method, values, probs), None
    except (NotImplementedError, ValueError) as e:
        return None, e


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # torch's Wishart draws, at df near p - 1
@pytest.mark.parametrize("name, params", CASES, ids=IDS)
def test_values_match_torch(torch_ref, name, params):
    t, e, tol = _pair(torch_ref, name, params)
    assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)
    assert (e.has_rsample, e.has_enumerate_support) == (t.has_rsample, t.has_enumerate_support)
    if "tensor" not in repr(t.support):  # a support holding tensors prints them differently
        assert repr(e.support) == repr(t.support)
    torch_ref.manual_seed(0)
    t_values = t.sample((4,))
    array = t_values.numpy()
    e_values = ember.tensor(array, dtype=ember.float32 if name in _FLOAT32_ONLY else None) \
        if array.dtype == np.int64 else ember.tensor(array)
    p = np.random.default_rng(1).uniform(0.05, 0.95, tuple(t_values.shape))
    t_probs, e_probs = torch_ref.tensor(p, dtype=t_values.dtype), ember.tensor(p).to(e_values.dtype)
    compared = 0
    for method in ("mean", "mode", "variance", "stddev", "entropy", "perplexity", "enumerate_support", "log_prob",
                   "cdf", "icdf"):
        if (name, method) in _SKIP:
            continue
        expected, t_error = _outcome(t, method, t_values, t_probs)
        got, e_error = _outcome(e, method, e_values, e_probs)
        if t_error is not None or e_error is not None:
            assert type(e_error) is type(t_error), (method, t_error, e_error)
            if isinstance(t_error, ValueError) or str(t_error).startswith("Inhomogeneous"):
                assert str(e_error) == str(t_error)
            continue
        expected, got = expected.detach().numpy(), got.detach().numpy()
        assert got.shape == expected.shape, method
        np.testing.assert_allclose(got.astype(float), expected.astype(float), rtol=tol, atol=tol, err_msg=method)
        compared += 1
    assert compared >= 1


def test_kumaraswamy_mode_is_the_closed_form():
    a = ember.tensor([2.0, 3.0, 0.5], dtype=ember.float64)
    b = ember.tensor([1.5, 4.0, 2.0], dtype=ember.float64)
    mode = D.Kumaraswamy(a, b).mode.numpy()
    an, bn = a.numpy(), b.numpy()
    expected = ((an[:2] - 1) / (an[:2] * bn[:2] - 1)) ** (1 / an[:2])
    np.testing.assert_allclose(mode[:2], expected, rtol=1e-12)
    assert math.isnan(mode[2])  # no interior mode for a < 1
    # the mode is where the density peaks
    d = D.Kumaraswamy(a[:2], b[:2])
    for delta in (-1e-3, 1e-3):
        assert (d.log_prob(d.mode + delta) < d.log_prob(d.mode)).all()


# ---------------------------------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("name, params", CASES, ids=IDS)
def test_sample_and_expand_shapes(name, params):
    dtype = ember.float32 if name in _FLOAT32_ONLY else ember.float64
    d = _lib_dist(ember, D, name, params, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Wishart's low-df warning
        s = d.sample((5, 2))
    assert tuple(s.shape) == (5, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
    if d.has_rsample:
        assert tuple(d.rsample((3,)).shape) == (3,) + tuple(d.batch_shape) + tuple(d.event_shape)
    big = d.expand((4,) + tuple(d.batch_shape))
    assert type(big) is type(d)
    assert tuple(big.batch_shape) == (4,) + tuple(d.batch_shape) and big.event_shape == d.event_shape
    assert tuple(big.sample().shape) == (4,) + tuple(d.batch_shape) + tuple(d.event_shape)
    one = d.sample()
    np.testing.assert_allclose(big.log_prob(one).numpy(), np.broadcast_to(d.log_prob(one).numpy(),
                                                                           tuple(big.batch_shape)), rtol=1e-6)


def test_parameters_broadcast_and_numbers_give_scalar_batches():
    assert D.Normal(0.0, 1.0).batch_shape == ember.Size([])
    assert D.Normal(0.0, 1.0).loc.dtype == ember.float32
    d = D.Normal(ember.zeros(2, 1, dtype=ember.float64), ember.ones(3, dtype=ember.float64))
    assert d.batch_shape == ember.Size([2, 3]) and d.scale.dtype == ember.float64
    assert d.log_prob(ember.zeros(4, 1, 1, dtype=ember.float64)).shape == ember.Size([4, 2, 3])
    mvn = D.MultivariateNormal(ember.zeros(4, 3), scale_tril=ember.eye(3))
    assert mvn.batch_shape == ember.Size([4]) and mvn.event_shape == ember.Size([3])
    assert D.Independent(D.Normal(ember.zeros(4, 3), 1.0), 1).event_shape == ember.Size([3])
    assert D.Categorical(ember.ones(2, 5)).enumerate_support().shape == ember.Size([5, 2])
    assert D.Categorical(ember.ones(2, 5)).enumerate_support(expand=False).shape == ember.Size([5, 1])


def test_mixture_same_family_matches_torch(torch_ref):
    weights, locs, scales = _simplex(2, 3), _real(2, 3), _pos(2, 3)
    x = _real(5, 2)

    def build(lib, module):
        return module.MixtureSameFamily(module.Categorical(lib.tensor(weights)),
                                        module.Normal(lib.tensor(locs), lib.tensor(scales)))

    t, e = build(torch_ref, torch_ref.distributions), build(ember, D)
    for attr in ("mean", "variance"):
        np.testing.assert_allclose(getattr(e, attr).numpy(), getattr(t, attr).numpy(), rtol=1e-10)
    for method in ("log_prob", "cdf"):
        np.testing.assert_allclose(getattr(e, method)(ember.tensor(x)).numpy(),
                                   getattr(t, method)(torch_ref.tensor(x)).numpy(), rtol=1e-10)
    assert e.batch_shape == ember.Size([2]) and repr(e.support) == repr(t.support)
    assert e.sample((7,)).shape == ember.Size([7, 2])
    # multivariate components: the mixture's event is theirs
    comps = D.Independent(D.Normal(ember.zeros(3, 2), ember.ones(3, 2)), 1)
    mix = D.MixtureSameFamily(D.Categorical(ember.ones(3)), comps)
    assert mix.event_shape == ember.Size([2]) and mix.sample((4,)).shape == ember.Size([4, 2])
    assert mix.log_prob(ember.zeros(4, 2)).shape == ember.Size([4])


# ---------------------------------------------------------------------------------------------- validation
def _message(fn):
    try:
        fn()
    except (ValueError, NotImplementedError, TypeError) as e:
        return type(e), str(e).replace("torch.Size", "Size").replace("ember.Size", "Size")
    return None


@pytest.mark.parametrize("call", [
    lambda m, lib: m.Normal(lib.tensor([0.0, 1.0]), lib.tensor([-1.0, 1.0])),
    lambda m, lib: m.Exponential(lib.tensor(-1.0)),
    lambda m, lib: m.Normal(0.0, 1.0).log_prob(1.0),
    lambda m, lib: m.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
    lambda m, lib: m.MultivariateNormal(lib.zeros(2), lib.eye(2)).log_prob(lib.zeros(3)),
    lambda m, lib: m.Exponential(lib.ones(3)).log_prob(lib.tensor([-1.0, 2.0, 3.0])),
    lambda m, lib: m.Exponential(1.0).log_prob(lib.tensor(-1.0)),
    lambda m, lib: m.Categorical(lib.ones(3)).log_prob(lib.tensor(1.5)),
    lambda m, lib: m.Bernoulli(probs=0.3, logits=0.2),
    lambda m, lib: m.Categorical(lib.tensor(0.5)),
    lambda m, lib: m.Uniform(lib.tensor(1.0), lib.tensor(0.0)),
    lambda m, lib: m.MultivariateNormal(lib.zeros(2)),
    lambda m, lib: m.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda m, lib: m.Geometric(lib.tensor([0.0, 0.5])),
    lambda m, lib: m.Independent(m.Normal(lib.zeros(2), 1.0), 2),
    lambda m, lib: m.Multinomial(lib.tensor(3), lib.ones(3)),
    lambda m, lib: m.Binomial(lib.tensor([2.0, 3.0]), lib.tensor([0.5, 0.5])).entropy(),
    lambda m, lib: m.LKJCholesky(1),
    lambda m, lib: m.Beta(lib.tensor([1.0]), lib.tensor([-1.0])),
    lambda m, lib: m.Dirichlet(lib.tensor([1.0, -1.0])),
    lambda m, lib: m.TransformedDistribution(m.Normal(0.0, 1.0), [1]),
    lambda m, lib: m.MixtureSameFamily(m.Categorical(lib.ones(2)), m.Normal(lib.zeros(3), 1.0)),
    lambda m, lib: m.ContinuousBernoulli(probs=lib.tensor(1.5), validate_args=True),
])
def test_validation_errors_match_torch(torch_ref, call):
    before = torch_ref.distributions.Distribution._validate_args  # a program run earlier may have turned it off
    torch_ref.distributions.Distribution.set_default_validate_args(True)
    try:
        expected = _message(lambda: call(torch_ref.distributions, torch_ref))
    finally:
        torch_ref.distributions.Distribution.set_default_validate_args(before)
    assert expected is not None
    assert _message(lambda: call(D, ember)) == expected


def test_validation_follows_the_default_and_the_flag():
    assert D.Distribution._validate_args is True
    D.Normal(0.0, -1.0, validate_args=False)  # no check
    try:
        D.Distribution.set_default_validate_args(False)
        d = D.Normal(0.0, -1.0)
        assert math.isnan(d.log_prob(ember.tensor(0.0)).item())
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(1.5)
    with pytest.raises(ValueError, match="constraint GreaterThan"):
        D.Normal(0.0, -1.0)


def test_the_base_class_and_custom_subclasses():
    with pytest.raises(NotImplementedError):
        D.Distribution(validate_args=False).sample()
    with pytest.raises(NotImplementedError, match="does not implement mean"):
        D.Distribution(validate_args=False).mean

    class Shifted(D.Normal):
        def __init__(self):
            super().__init__(0.0, 1.0)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Shifted().expand((2,))
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Normal(ember.zeros(3), 1.0)) == "Normal(loc: ember.Size([3]), scale: ember.Size([3]))"
    with pytest.warns(UserWarning, match="sample_n will be deprecated"):
        assert D.Normal(0.0, 1.0).sample_n(3).shape == ember.Size([3])


# ----------------------------------------------------------------------------------------------------- KL
def _kl_params():
    return {
        "Bernoulli": [dict(probs=np.array([0.2, 0.5, 0.9])), dict(probs=np.array([0.0, 1.0, 0.3]))],
        "Beta": [dict(concentration1=_pos(3), concentration0=_pos(3))],
        "Binomial": [dict(total_count=np.array([5.0, 5.0, 5.0]), probs=_prob(3))],
        "Categorical": [dict(probs=_simplex(3, 4))],
        "Cauchy": [dict(loc=_real(3), scale=_pos(3))],
        "ContinuousBernoulli": [dict(probs=np.array([0.2, 0.4995, 0.8]))],
        "Dirichlet": [dict(concentration=_pos(3, 4))],
        "Exponential": [dict(rate=_pos(3))],
        "Gamma": [dict(concentration=_pos(3), rate=_pos(3))],
        "Geometric": [dict(probs=_prob(3))],
        "Gumbel": [dict(loc=_real(3), scale=_pos(3))],
        "HalfNormal": [dict(scale=_pos(3))],
        "Laplace": [dict(loc=_real(3), scale=_pos(3))],
        "LowRankMultivariateNormal": [dict(loc=_real(3, 3), cov_factor=_real(3, 3, 2), cov_diag=_pos(3, 3))],
        "MultivariateNormal": [dict(loc=_real(3, 3), scale_tril=_tril(3))],
        "Normal": [dict(loc=_real(3), scale=_pos(3))],
        "OneHotCategorical": [dict(probs=_simplex(3, 4))],
        "Pareto": [dict(scale=_pos(3), alpha=np.array([0.8, 1.5, 3.0]))],
        "Poisson": [dict(rate=_pos(3))],
        "Uniform": [dict(low=np.array([0.1, -1.0, 0.3]), high=np.array([0.8, 2.0, 0.9])),
                    dict(low=np.array([0.0, 0.2, 1.0]), high=np.array([1.0, 0.9, 3.0]))],
        "LogNormal": [dict(loc=_real(3), scale=_pos(3))],
        "Chi2": [dict(df=_pos(3, lo=2, hi=5))],
    }


def _kl_pairs():
    params = _kl_params()
    registered = sorted({(p.__name__, q.__name__) for p, q in D.kl._KL_REGISTRY})
    extra = [("LogNormal", "LogNormal"), ("Chi2", "Gamma"), ("Chi2", "Chi2")]  # dispatch to base-class rules
    return [(p, q, pk, qk) for p, q in registered + extra for pk in params.get(p, []) for qk in params.get(q, [])]


def test_every_registered_pair_of_torch_is_registered(torch_ref):
    from torch.distributions.kl import _KL_REGISTRY as torch_registry

    ours = {(p.__name__, q.__name__): fn.__name__ for (p, q), fn in D.kl._KL_REGISTRY.items()}
    theirs = {(p.__name__, q.__name__): fn.__name__ for (p, q), fn in torch_registry.items()}
    assert ours == theirs


def test_kl_divergences_match_torch(torch_ref):
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p_name, q_name, p_params, q_params in _kl_pairs():
            t_kl = torch_ref.distributions.kl_divergence(
                _lib_dist(torch_ref, torch_ref.distributions, p_name, p_params, torch_ref.float64),
                _lib_dist(torch_ref, torch_ref.distributions, q_name, q_params, torch_ref.float64))
            e_kl = D.kl_divergence(_lib_dist(ember, D, p_name, p_params, ember.float64),
                                   _lib_dist(ember, D, q_name, q_params, ember.float64))
            np.testing.assert_allclose(e_kl.detach().numpy(), t_kl.numpy(), rtol=1e-7, atol=1e-10,
                                       err_msg=f"KL({p_name} || {q_name})")
            compared += 1
    assert compared > 100


def test_kl_dispatch_errors_and_registration():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q "
                                                  "type Categorical"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(ember.ones(2)))
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Poisson(1.0), D.Exponential(1.0))  # only the Bregman rule matches
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)

    class Wider(D.Normal):
        pass

    # the most specific rule wins, and a new registration invalidates the remembered choice
    base = D.kl_divergence(Wider(0.0, 1.0), D.Normal(1.0, 1.0))
    assert base.item() == pytest.approx(0.5)

    @D.register_kl(Wider, D.Normal)
    def _kl_wider_normal(p, q):
        return ember.tensor(42.0)

    try:
        assert D.kl_divergence(Wider(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 42.0
    finally:
        del D.kl._KL_REGISTRY[Wider, D.Normal]
        D.kl._KL_MEMOIZE.clear()


def test_kl_of_mvn_against_the_formula():
    # a full check of the matrix path: KL = 0.5 (tr(S_q^-1 S_p) + d^T S_q^-1 d - n + log |S_q| / |S_p|)
    sp, sq = _spd(3), _spd(3)
    mp, mq = _real(3), _real(3)
    p = D.MultivariateNormal(ember.tensor(mp), ember.tensor(sp))
    q = D.MultivariateNormal(ember.tensor(mq), ember.tensor(sq))
    inv = np.linalg.inv(sq)
    d = mq - mp
    expected = 0.5 * (np.trace(inv @ sp) + d @ inv @ d - 3 + np.log(np.linalg.det(sq) / np.linalg.det(sp)))
    assert D.kl_divergence(p, q).item() == pytest.approx(expected, rel=1e-10)


# ------------------------------------------------------------------------------------- sample statistics
N_SAMPLES = 20000

# (distribution, parameters, whether to check the variance): means and variances of N_SAMPLES draws against
# the distribution's own moments (already checked against torch above)
STATISTICS = [
    ("Normal", dict(loc=np.array([0.5, -2.0]), scale=np.array([1.0, 3.0])), True),
    ("Bernoulli", dict(probs=np.array([0.1, 0.7])), True),
    ("Uniform", dict(low=np.array([0.0, -3.0]), high=np.array([1.0, 5.0])), True),
    ("Beta", dict(concentration1=np.array([0.5, 3.0]), concentration0=np.array([2.0, 1.5])), True),
    ("Gamma", dict(concentration=np.array([0.3, 4.0]), rate=np.array([1.0, 2.0])), True),
    ("Dirichlet", dict(concentration=np.array([0.5, 1.0, 4.0])), True),
    ("Exponential", dict(rate=np.array([0.5, 3.0])), True),
    ("Laplace", dict(loc=np.array([1.0, -1.0]), scale=np.array([0.5, 2.0])), True),
    ("LogNormal", dict(loc=np.array([0.0, 1.0]), scale=np.array([0.25, 0.5])), True),
    ("Poisson", dict(rate=np.array([0.3, 4.0, 25.0, 400.0])), True),
    ("Binomial", dict(total_count=np.array([10.0, 100.0, 1000.0, 50.0]), probs=np.array([0.3, 0.05, 0.6, 0.98])),
     True),
    ("Geometric", dict(probs=np.array([0.2, 0.7])), True),
    ("HalfNormal", dict(scale=np.array([1.0, 2.0])), True),
    ("Chi2", dict(df=np.array([1.0, 5.0])), True),
    ("StudentT", dict(df=np.array([5.0, 10.0]), loc=np.array([1.0, 0.0]), scale=np.array([1.0, 2.0])), True),
    ("Gumbel", dict(loc=np.array([0.0, 2.0]), scale=np.array([1.0, 0.5])), True),
    ("Pareto", dict(scale=np.array([1.0, 2.0]), alpha=np.array([5.0, 6.0])), True),
    ("Weibull", dict(scale=np.array([1.0, 2.0]), concentration=np.array([0.8, 3.0])), True),
    ("Kumaraswamy", dict(concentration1=np.array([2.0, 0.7]), concentration0=np.array([3.0, 1.5])), True),
    ("FisherSnedecor", dict(df1=np.array([3.0, 8.0]), df2=np.array([10.0, 12.0])), True),
    ("NegativeBinomial", dict(total_count=np.array([3.0, 10.0]), probs=np.array([0.4, 0.7])), True),
    ("ContinuousBernoulli", dict(probs=np.array([0.2, 0.7])), True),
    ("Categorical", dict(probs=np.array([0.2, 0.5, 0.3])), False),
    ("OneHotCategorical", dict(probs=np.array([0.2, 0.5, 0.3])), True),
    ("Multinomial", dict(total_count=7, probs=np.array([0.2, 0.5, 0.3])), True),
    ("MultivariateNormal", dict(loc=np.array([1.0, -1.0]), covariance_matrix=np.array([[2.0, 0.6], [0.6, 1.0]])),
     True),
    ("LowRankMultivariateNormal", dict(loc=np.array([1.0, 0.0, -1.0]), cov_factor=np.array([[1.0], [0.5], [-1.0]]),
                                       cov_diag=np.array([0.5, 1.0, 2.0])), True),
    ("VonMises", dict(loc=np.array([0.5, -1.0]), concentration=np.array([0.5, 8.0])), True),
    ("InverseGamma", dict(concentration=np.array([5.0, 8.0]), rate=np.array([1.0, 3.0])), True),
    ("GeneralizedPareto", dict(loc=np.array([0.0, 1.0]), scale=np.array([1.0, 2.0]),
                               concentration=np.array([-0.3, 0.05])), True),
    ("Wishart", dict(df=np.array(5.0), covariance_matrix=np.array([[2.0, 0.6], [0.6, 1.0]])), True),
]


def _circular_mean(x):
    return np.arctan2(np.sin(x).mean(0), np.cos(x).mean(0))


@pytest.mark.parametrize("name, params, check_variance", STATISTICS, ids=[s[0] for s in STATISTICS])
def test_sample_moments(name, params, check_variance):
    ember.manual_seed(1234)
    d = _lib_dist(ember, D, name, params, ember.float64)
    draws = d.sample((N_SAMPLES,)).double().numpy()
    mean, variance = d.mean.numpy(), d.variance.numpy()
    if name == "VonMises":  # a circular variable: compare the mean direction and 1 - E[cos(x - loc)]
        np.testing.assert_allclose(_circular_mean(draws), mean, atol=0.05)
        np.testing.assert_allclose(1 - np.cos(draws - mean).mean(0), variance, rtol=0.05)
        return
    if name == "Categorical":
        counts = np.stack([(draws == k).mean(0) for k in range(3)])
        np.testing.assert_allclose(counts, params["probs"], atol=4 * np.sqrt(0.25 / N_SAMPLES))
        return
    # the mean within 5 standard errors (heavy tails: a relative bound on the variance)
    standard_error = np.sqrt(variance / N_SAMPLES)
    assert np.all(np.abs(draws.mean(0) - mean) <= 5 * standard_error + 1e-12), (draws.mean(0), mean)
    if check_variance:
        np.testing.assert_allclose(draws.var(0), variance, rtol=0.1, atol=1e-12)


def test_samples_lie_in_the_support():
    ember.manual_seed(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, params in CASES:
            dtype = ember.float32 if name in _FLOAT32_ONLY else ember.float64
            d = _lib_dist(ember, D, name, params, dtype)
            assert d.support.check(d.sample((200,))).all(), name


def test_samples_follow_the_generator():
    d = D.Gamma(ember.tensor([0.5, 2.0]), ember.tensor(1.0))
    ember.manual_seed(3)
    first = d.sample((10,))
    ember.manual_seed(3)
    assert ember.equal(first, d.sample((10,)))


def test_the_binomial_and_poisson_samplers_match_their_pmfs():
    # counts of 20k draws against the probabilities, in both sampling regimes (inversion and rejection)
    ember.manual_seed(11)
    for d, pmf in ((D.Binomial(ember.tensor(30.0), ember.tensor(0.1)), stats.binom(30, 0.1).pmf),
                   (D.Binomial(ember.tensor(60.0), ember.tensor(0.7)), stats.binom(60, 0.7).pmf),
                   (D.Poisson(ember.tensor(3.0)), stats.poisson(3.0).pmf),
                   (D.Poisson(ember.tensor(40.0)), stats.poisson(40.0).pmf)):
        draws = d.sample((N_SAMPLES,)).numpy().astype(int)
        ks = np.arange(draws.max() + 1)
        frequencies = np.bincount(draws, minlength=len(ks)) / N_SAMPLES
        probabilities = pmf(ks)
        assert np.all(np.abs(frequencies - probabilities) <= 5 * np.sqrt(probabilities / N_SAMPLES) + 2e-4)


def test_the_samplers_are_torch_top_level_functions_with_a_generator():
    # torch.poisson, torch.binomial and torch._standard_gamma: draws follow the generator given, not the default one
    g = ember.Generator().manual_seed(5)
    draws = [ember.poisson(ember.full((50,), 4.0), generator=g), ember.binomial(ember.full((50,), 9.0), ember.tensor(0.3),
                                                                                  generator=g),
             ember._standard_gamma(ember.full((50,), 2.0), generator=g)]
    g.manual_seed(5)
    ember.manual_seed(0)  # the default generator's state must not matter
    again = [ember.poisson(ember.full((50,), 4.0), generator=g), ember.binomial(ember.full((50,), 9.0), ember.tensor(0.3),
                                                                                  generator=g),
             ember._standard_gamma(ember.full((50,), 2.0), generator=g)]
    for first, second in zip(draws, again):
        assert ember.equal(first, second)
    assert draws[0].shape == (50,) and bool((draws[0] == draws[0].round()).all()) and bool((draws[1] <= 9).all())
    assert 3.0 < draws[0].mean().item() < 5.0 and bool((draws[2] > 0).all())


def test_the_top_level_samplers_refuse_what_torch_refuses():
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(NotImplementedError, match="poisson_cpu.*Long"):
        ember.poisson(ember.tensor([1]))
    with pytest.raises(ValueError, match="floating-point dtypes for count, got: Long"):
        ember.binomial(ember.tensor([3]), ember.tensor([0.5]))
