"""Gradients through ember.distributions: of log_prob and entropy against torch's, float64 gradchecks, the
reparameterised samples (location-scale ones by gradcheck, gamma-based ones by their implicit gradients against
scipy), the Bregman entropies of the exponential families, and a small VAE that trains."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

import ember
import ember.distributions as D
from ember.autograd import gradcheck
from ember.distributions.exp_family import ExponentialFamily

_R = np.random.default_rng(99)

# (distribution, continuous parameters, the values scored): torch and ember get the same float64 tensors
LOG_PROB_CASES = [
    ("Normal", dict(loc=_R.normal(size=3), scale=_R.uniform(0.5, 2, 3)), _R.normal(size=(4, 3))),
    ("Gamma", dict(concentration=_R.uniform(0.5, 3, 3), rate=_R.uniform(0.5, 2, 3)), _R.uniform(0.1, 3, (4, 3))),
    ("Beta", dict(concentration1=_R.uniform(0.5, 3, 3), concentration0=_R.uniform(0.5, 3, 3)),
     _R.uniform(0.05, 0.95, (4, 3))),
    ("Dirichlet", dict(concentration=_R.uniform(0.5, 3, (2, 3))), _R.dirichlet(np.ones(3), (4, 2))),
    ("StudentT", dict(df=_R.uniform(1, 5, 3), loc=_R.normal(size=3), scale=_R.uniform(0.5, 2, 3)),
     _R.normal(size=(4, 3))),
    ("Laplace", dict(loc=_R.normal(size=3), scale=_R.uniform(0.5, 2, 3)), _R.normal(size=(4, 3)) + 0.01),
    ("Cauchy", dict(loc=_R.normal(size=3), scale=_R.uniform(0.5, 2, 3)), _R.normal(size=(4, 3))),
    ("Gumbel", dict(loc=_R.normal(size=3), scale=_R.uniform(0.5, 2, 3)), _R.normal(size=(4, 3))),
    ("LogNormal", dict(loc=_R.normal(size=3), scale=_R.uniform(0.5, 2, 3)), _R.uniform(0.1, 3, (4, 3))),
    ("Weibull", dict(scale=_R.uniform(0.5, 2, 3), concentration=_R.uniform(0.5, 3, 3)), _R.uniform(0.1, 3, (4, 3))),
    ("Kumaraswamy", dict(concentration1=_R.uniform(0.5, 3, 3), concentration0=_R.uniform(0.5, 3, 3)),
     _R.uniform(0.05, 0.95, (4, 3))),
    ("VonMises", dict(loc=_R.normal(size=3), concentration=np.array([0.5, 2.0, 6.0])), _R.normal(size=(4, 3))),
    ("Bernoulli", dict(logits=_R.normal(size=3)), _R.integers(0, 2, (4, 3)).astype(float)),
    ("Binomial", dict(logits=_R.normal(size=3)), _R.integers(0, 2, (4, 3)).astype(float)),
    ("Poisson", dict(rate=_R.uniform(0.5, 4, 3)), _R.integers(0, 6, (4, 3)).astype(float)),
    ("Geometric", dict(probs=_R.uniform(0.2, 0.8, 3)), _R.integers(0, 6, (4, 3)).astype(float)),
    ("NegativeBinomial", dict(total_count=_R.uniform(1, 4, 3), logits=_R.normal(size=3)),
     _R.integers(0, 6, (4, 3)).astype(float)),
    ("Categorical", dict(logits=_R.normal(size=(3, 4))), _R.integers(0, 4, (5, 3)).astype(float)),
    ("ContinuousBernoulli", dict(probs=np.array([0.2, 0.6, 0.8])), _R.uniform(0.05, 0.95, (4, 3))),
    ("FisherSnedecor", dict(df1=_R.uniform(1, 6, 3), df2=_R.uniform(1, 6, 3)), _R.uniform(0.1, 3, (4, 3))),
    ("Chi2", dict(df=_R.uniform(1, 6, 3)), _R.uniform(0.1, 3, (4, 3))),
    ("HalfNormal", dict(scale=_R.uniform(0.5, 2, 3)), _R.uniform(0.1, 3, (4, 3))),
    ("Pareto", dict(scale=_R.uniform(0.2, 0.5, 3), alpha=_R.uniform(0.5, 3, 3)), _R.uniform(0.6, 3, (4, 3))),
    ("MultivariateNormal", dict(loc=_R.normal(size=(2, 3)), scale_tril=np.tril(_R.normal(size=(3, 3)), -1) +
                                np.diag(_R.uniform(0.5, 2, 3))), _R.normal(size=(4, 2, 3))),
    ("LowRankMultivariateNormal", dict(loc=_R.normal(size=3), cov_factor=_R.normal(size=(3, 2)),
                                       cov_diag=_R.uniform(0.5, 2, 3)), _R.normal(size=(4, 3))),
    ("InverseGamma", dict(concentration=_R.uniform(0.5, 3, 3), rate=_R.uniform(0.5, 2, 3)),
     _R.uniform(0.1, 3, (4, 3))),
]


def _leaves(lib, params):
    return {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}


@pytest.mark.parametrize("name, params, values", LOG_PROB_CASES, ids=[c[0] for c in LOG_PROB_CASES])
def test_log_prob_and_entropy_gradients_match_torch(torch_ref, name, params, values):
    t_params, e_params = _leaves(torch_ref, params), _leaves(ember, params)
    t_dist = getattr(torch_ref.distributions, name)(**t_params, validate_args=False)
    e_dist = getattr(D, name)(**e_params, validate_args=False)
    t_out = t_dist.log_prob(torch_ref.tensor(values)).sum()
    e_out = e_dist.log_prob(ember.tensor(values)).sum()
    try:
        t_out = t_out + t_dist.entropy().sum()
        e_out = e_out + e_dist.entropy().sum()
    except NotImplementedError:
        pass
    t_out.backward()
    e_out.backward()
    np.testing.assert_allclose(e_out.item(), t_out.item(), rtol=1e-9)
    for k in params:
        np.testing.assert_allclose(e_params[k].grad.numpy(), t_params[k].grad.numpy(), rtol=1e-6, atol=1e-9,
                                   err_msg=k)


@pytest.mark.parametrize("name, params, values", [c for c in LOG_PROB_CASES if c[0] in {
    "Normal", "Gamma", "Beta", "Dirichlet", "StudentT", "VonMises", "MultivariateNormal",
    "LowRankMultivariateNormal", "Binomial", "Categorical"}], ids=lambda c: c if isinstance(c, str) else "")
def test_log_prob_gradcheck(name, params, values):
    names = list(params)
    value = ember.tensor(values)

    def log_prob(*tensors):
        return getattr(D, name)(**dict(zip(names, tensors)), validate_args=False).log_prob(value)

    assert gradcheck(log_prob, tuple(_leaves(ember, params).values()))


# ------------------------------------------------------------------------------------ reparameterisation
def _seeded(sample):
    """``sample`` as a deterministic function of the parameters: the same noise on every call."""
    def run(*args):
        ember.manual_seed(17)
        return sample(*args)
    return run


RSAMPLE_CASES = [
    ("Normal", lambda a, b: D.Normal(a, b)),
    ("Laplace", lambda a, b: D.Laplace(a, b)),
    ("Cauchy", lambda a, b: D.Cauchy(a, b)),
    ("Uniform", lambda a, b: D.Uniform(a, a + b)),
    ("Exponential", lambda a, b: D.Exponential(b)),
    ("LogNormal", lambda a, b: D.LogNormal(a, b)),
    ("Gumbel", lambda a, b: D.Gumbel(a, b)),
    ("Weibull", lambda a, b: D.Weibull(b, b + 0.5)),
    ("Kumaraswamy", lambda a, b: D.Kumaraswamy(b, b + 1)),
    ("Pareto", lambda a, b: D.Pareto(b, b + 1)),
    ("HalfNormal", lambda a, b: D.HalfNormal(b)),
    ("ContinuousBernoulli", lambda a, b: D.ContinuousBernoulli(logits=a)),
    ("RelaxedBernoulli", lambda a, b: D.RelaxedBernoulli(b, logits=a)),
    ("RelaxedOneHotCategorical", lambda a, b: D.RelaxedOneHotCategorical(b[0], logits=a)),
    ("MultivariateNormal", lambda a, b: D.MultivariateNormal(
        a, scale_tril=b.diag_embed() + 0.3 * (b.unsqueeze(-1) * b).tril(-1))),
    ("LowRankMultivariateNormal", lambda a, b: D.LowRankMultivariateNormal(a, b.unsqueeze(-1), b * b)),
]


@pytest.mark.parametrize("name, build", RSAMPLE_CASES, ids=[c[0] for c in RSAMPLE_CASES])
def test_rsample_gradcheck(name, build):
    a = ember.tensor([0.3, -0.6, 1.2], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([0.8, 1.5, 0.6], dtype=ember.float64, requires_grad=True)
    d = build(a, b)
    assert d.has_rsample
    assert gradcheck(_seeded(lambda x, y: build(x, y).rsample((2,))), (a, b))


def test_normal_rsample_gradient_is_the_noise():
    loc = ember.zeros(5, dtype=ember.float64, requires_grad=True)
    scale = ember.full((5,), 2.0, dtype=ember.float64, requires_grad=True)
    x = D.Normal(loc, scale).rsample()
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), np.ones(5))
    np.testing.assert_allclose(scale.grad.numpy(), x.detach().numpy() / 2)
    assert not D.Normal(loc, scale).sample().requires_grad


def test_gamma_implicit_gradients_match_the_inverse_cdf():
    """dx/dalpha at fixed u = F(x; alpha), from scipy's inverse CDF, for tiny to large concentrations."""
    ember.manual_seed(5)
    alpha = ember.tensor([0.05, 0.3, 1.0, 2.5, 30.0, 1000.0], dtype=ember.float64).expand(200, 6).contiguous()
    alpha.requires_grad_()
    x = D.Gamma(alpha, 1.0).rsample()
    x.sum().backward()
    a, v = alpha.detach().numpy(), x.detach().numpy()
    u = special.gammainc(a, v)
    h = 1e-6 * a
    expected = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    usable = (u > 1e-10) & (u < 1 - 1e-10)
    np.testing.assert_allclose(alpha.grad.numpy()[usable], expected[usable], rtol=1e-5)
    # and the rate's gradient is the scaling's: x = g / rate
    rate = ember.tensor([2.0], dtype=ember.float64, requires_grad=True)
    sample = D.Gamma(ember.tensor([3.0], dtype=ember.float64), rate).rsample()
    sample.backward()
    np.testing.assert_allclose(rate.grad.numpy(), -sample.detach().numpy() / 2)


def test_reparameterised_gradients_are_unbiased():
    """E[d x / d theta] = d E[x] / d theta over 20k draws, for the gamma-based samplers."""
    ember.manual_seed(21)
    n = 20000
    cases = [
        (lambda c: D.Gamma(c, 1.0), lambda c: c, [0.4, 3.0]),
        (lambda c: D.Beta(c, ember.tensor(2.0, dtype=ember.float64)), lambda c: c / (c + 2), [0.7, 3.0]),
        (lambda c: D.Chi2(c), lambda c: c, [1.5, 6.0]),
        (lambda c: D.Dirichlet(ember.stack([c, c.detach() * 0 + 1.5])), lambda c: c / (c + 1.5), [0.6, 2.0]),
    ]
    for build, mean, points in cases:
        for point in points:
            c = ember.tensor(point, dtype=ember.float64, requires_grad=True)
            draws = build(c).rsample((n,))
            draws = draws[..., 0] if draws.dim() > 1 else draws
            (g,) = ember.autograd.grad(draws.mean(), c)
            c2 = ember.tensor(point, dtype=ember.float64, requires_grad=True)
            (expected,) = ember.autograd.grad(mean(c2), c2)
            assert g.item() == pytest.approx(expected.item(), rel=0.05, abs=0.01), (point, g, expected)


def test_straight_through_gradient_is_the_probabilities():
    logits = ember.tensor([0.2, -0.4, 1.0], dtype=ember.float64, requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    sample = d.rsample()
    assert sorted(sample.detach().tolist()) == [0.0, 0.0, 1.0]
    (sample * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
    probs = ember.softmax(logits.detach(), -1)
    weights = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    expected = probs * (weights - (probs * weights).sum())  # the softmax's Jacobian applied to the weights
    np.testing.assert_allclose(logits.grad.numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dist", [
    lambda: D.Normal(ember.tensor([0.3, -1.0], dtype=ember.float64), ember.tensor([0.5, 2.0], dtype=ember.float64)),
    lambda: D.Gamma(ember.tensor([0.5, 3.0], dtype=ember.float64), ember.tensor([2.0, 0.3], dtype=ember.float64)),
    lambda: D.Exponential(ember.tensor([0.5, 3.0], dtype=ember.float64)),
    lambda: D.Bernoulli(ember.tensor([0.2, 0.7], dtype=ember.float64)),
    lambda: D.ContinuousBernoulli(ember.tensor([0.2, 0.7], dtype=ember.float64)),
], ids=["Normal", "Gamma", "Exponential", "Bernoulli", "ContinuousBernoulli"])
def test_bregman_entropy_equals_the_closed_form(dist):
    d = dist()
    np.testing.assert_allclose(ExponentialFamily.entropy(d).detach().numpy(), d.entropy().numpy(), rtol=1e-9)


def test_bregman_kl_between_poissons_and_exponential_family_entropy_of_wishart(torch_ref):
    # Poisson has no entropy; its KL via Bregman equals the registered closed form
    p, q = D.Poisson(ember.tensor([1.5, 4.0], dtype=ember.float64)), D.Poisson(ember.tensor([2.0, 3.0],
                                                                                             dtype=ember.float64))
    bregman = D.kl._kl_expfamily_expfamily(p, q)
    np.testing.assert_allclose(bregman.detach().numpy(), D.kl_divergence(p, q).numpy(), rtol=1e-10)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    w = D.Wishart(ember.tensor(4.5, dtype=ember.float64), covariance_matrix=ember.tensor(cov))
    tw = torch_ref.distributions.Wishart(torch_ref.tensor(4.5, dtype=torch_ref.float64),
                                         covariance_matrix=torch_ref.tensor(cov))
    np.testing.assert_allclose(ExponentialFamily.entropy(w).detach().numpy(), tw.entropy().numpy(), rtol=1e-8)


# ------------------------------------------------------------------------------------------------- a VAE
def test_a_small_vae_trains():
    """Encoder to (mu, log sigma), a Normal rsample, a Bernoulli decoder and KL to N(0, 1): the ELBO loss
    falls."""
    nn = ember.nn
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    prototypes = rng.integers(0, 2, (4, 16)).astype(np.float32)
    data = ember.tensor(np.abs(prototypes[rng.integers(0, 4, 256)] - (rng.random((256, 16)) < 0.05)))
    encoder = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    decoder = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 16))
    params = list(encoder.parameters()) + list(decoder.parameters())
    optimizer = ember.optim.Adam(params, lr=0.02)
    prior = D.Normal(ember.zeros(2), ember.ones(2))

    def loss_of(batch):
        mu, log_sigma = encoder(batch).chunk(2, dim=-1)
        posterior = D.Normal(mu, log_sigma.exp())
        z = posterior.rsample()
        likelihood = D.Bernoulli(logits=decoder(z)).log_prob(batch).sum(-1)
        kl = D.kl_divergence(posterior, prior).sum(-1)
        return (kl - likelihood).mean()

    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = loss_of(data)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses)
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])
