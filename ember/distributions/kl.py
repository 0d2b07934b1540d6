"""``kl_divergence(p, q)`` and its registry of closed forms.

Rules are registered per pair of distribution classes (``@register_kl(Normal, Normal)``); a call dispatches on the
most specific registered pair that both arguments are instances of (left-to-right: the first argument's class
decides first), warning when the left and right orders disagree, and raising NotImplementedError when no pair
matches. Pairs whose supports do not nest are infinite.
"""
from __future__ import annotations

import math
import warnings
from functools import total_ordering
from typing import Any, Callable

from ..autograd.gradients import grad
from ..linalg.solves import solve_triangular
from ..tensor.creation import full_like
from ..tensor.elementwise import where
from ..tensor.shape_utils import broadcast_shapes
from ..tensor.tensor import Tensor
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal, _lowrank_logdet, _lowrank_mahalanobis
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _softplus, _sum_rightmost, euler_constant

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}  # (type_p, type_q) -> the rule dispatch chose (or NotImplemented)


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorator: ``fn(p, q)`` computes KL(p || q) for instances of ``type_p`` and ``type_q``."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()  # a new rule may be more specific than a remembered choice
        return fn

    return decorator


@total_ordering
class _Match:
    """A registered pair ordered lexicographically by subclassing: (A, B) <= (C, D) when A is a strict subclass of
    C, or A is C and B is a subclass of D."""

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: "_Match") -> bool:
        for mine, theirs in zip(self.types, other.types):
            if not issubclass(mine, theirs):
                return False
            if mine is not theirs:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    """The rule of the most specific registered pair matching (type_p, type_q), or NotImplemented."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fn, right_fn = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left_fn is not right_fn:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl("
                      f"{left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=3)
    return left_fn


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], over the batch."""
    key = (type(p), type(q))
    try:
        fn = _KL_MEMOIZE[key]
    except KeyError:
        fn = _KL_MEMOIZE[key] = _dispatch_kl(*key)
    if fn is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fn(p, q)


# ------------------------------------------------------------------------------------------------ helpers
def _infinite_like(t: Tensor) -> Tensor:
    return full_like(t, math.inf)


def _x_log_x(t: Tensor) -> Tensor:
    """t log t, 0 at t = 0."""
    return t.xlogy(t)


def _batch_trace_xxt(m: Tensor) -> Tensor:
    """tr(M M^T) = the squared Frobenius norm, over batches."""
    return m.pow(2).sum((-2, -1))


def _normal_cross_term(mean: Tensor, second_moment: Tensor, q: Normal) -> Tensor:
    """-E_p[log q(x)] for a normal q from p's first two moments."""
    return 0.5 * (2 * math.pi * q.scale.pow(2)).log() + \
        (second_moment - 2 * q.loc * mean + q.loc.pow(2)) / (2 * q.scale.pow(2))


# --------------------------------------------------------------------------------------- same families
@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    heads = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    heads = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, heads))
    tails = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    tails = where(p.probs == 1, 0.0, where(q.probs == 1, math.inf, tails))
    return heads + tails


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    total_p, total_q = a1 + b1, a2 + b2
    log_beta_q = a2.lgamma() + b2.lgamma() - total_q.lgamma()
    log_beta_p = a1.lgamma() + b1.lgamma() - total_p.lgamma()
    return log_beta_q - log_beta_p + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma() + \
        (total_q - total_p) * total_p.digamma()


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    # total counts of p beyond q's put mass where q has none
    if (p.total_count < q.total_count).any():
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t))
    return t.sum(-1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    # Chyzak and Nielsen (2019): log(((s_p + s_q)^2 + (l_p - l_q)^2) / (4 s_p s_q))
    return ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log() - (4 * p.scale * q.scale).log()


def _cb_cross_term(mean: Tensor, q: ContinuousBernoulli) -> Tensor:
    """-E_p[log q(x)] for a continuous Bernoulli q: log q(x) = x logit(q) + log(1 - q) + log C(q)."""
    return -mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    own = p.mean * p.logits + (-p.probs).log1p() + p._cont_bern_log_norm()
    return own + _cb_cross_term(p.mean, q)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    total_p = p.concentration.sum(-1)
    total_q = q.concentration.sum(-1)
    t1 = total_p.lgamma() - total_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - total_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return -ratio.log() + ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    # the Bregman divergence of the log-normalizer between the natural parameters
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    log_normalizer = p._log_normalizer(*p_params)
    grads = grad(log_normalizer.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_normalizer
    for p_param, q_param, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((q_param - p_param) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return -ratio.log() + shift + ratio * euler_constant + ((1 + ratio).lgamma() - shift).exp() - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs()
    return -ratio.log() + distance / q.scale + ratio * (-distance / p.scale).exp() - 1


def _same_event(p: Distribution, q: Distribution, what: str) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")


def _woodbury_factor(q: LowRankMultivariateNormal) -> Tensor:
    """A with Sigma_q^-1 = D_q^-1 - A^T A: A = L_C^-1 W_q^T D_q^-1 (L_C the capacitance's Cholesky factor)."""
    wt_dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return solve_triangular(q._capacitance_tril, wt_dinv, upper=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p: LowRankMultivariateNormal,
                                                            q: LowRankMultivariateNormal) -> Tensor:
    _same_event(p, q, "Low Rank Multivariate Normals")
    w_p, d_p = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    w_q, d_q = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    log_det = _lowrank_logdet(w_q, d_q, q._capacitance_tril) - _lowrank_logdet(w_p, d_p, p._capacitance_tril)
    mahalanobis = _lowrank_mahalanobis(w_q, d_q, p.loc - q.loc, q._capacitance_tril)
    a = _woodbury_factor(q)
    # tr(Sigma_q^-1 Sigma_p) with Sigma_p = W_p W_p^T + D_p
    trace = (d_p / d_q).sum(-1) + _batch_trace_xxt(w_p * d_q.rsqrt().unsqueeze(-1)) - \
        _batch_trace_xxt(a * d_p.sqrt().unsqueeze(-2)) - _batch_trace_xxt(a @ w_p)
    return 0.5 * (log_det + trace + mahalanobis - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _same_event(p, q, "(Low Rank) Multivariate Normals")
    w_q, d_q = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    l_p = p._unbroadcasted_scale_tril
    log_det = _lowrank_logdet(w_q, d_q, q._capacitance_tril) - \
        2 * l_p.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    mahalanobis = _lowrank_mahalanobis(w_q, d_q, p.loc - q.loc, q._capacitance_tril)
    a = _woodbury_factor(q)
    trace = _batch_trace_xxt(d_q.rsqrt().unsqueeze(-1) * l_p) - _batch_trace_xxt(a @ l_p)
    return 0.5 * (log_det + trace + mahalanobis - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _same_event(p, q, "(Low Rank) Multivariate Normals")
    w_p, d_p = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    l_q = q._unbroadcasted_scale_tril
    log_det = 2 * l_q.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _lowrank_logdet(w_p, d_p, p._capacitance_tril)
    mahalanobis = _batch_mahalanobis(l_q, q.loc - p.loc)
    n, m = p.event_shape[0], w_p.shape[-1]
    batch = broadcast_shapes(l_q.shape[:-2], w_p.shape[:-2])
    l_q = l_q.expand(tuple(batch) + (n, n))
    # tr(Sigma_q^-1 (W_p W_p^T + D_p)) = |L_q^-1 W_p|^2 + |L_q^-1 D_p^1/2|^2
    trace = _batch_trace_xxt(solve_triangular(l_q, w_p.expand(tuple(batch) + (n, m)), upper=False)) + \
        _batch_trace_xxt(solve_triangular(l_q, d_p.sqrt().diag_embed().expand(tuple(batch) + (n, n)), upper=False))
    return 0.5 * (log_det + trace + mahalanobis - n)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    _same_event(p, q, "Multivariate Normals")
    l_p, l_q = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_log_det = l_q.diagonal(dim1=-2, dim2=-1).log().sum(-1) - l_p.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    n = p.event_shape[0]
    batch = tuple(broadcast_shapes(l_q.shape[:-2], l_p.shape[:-2])) + (n, n)
    trace = _batch_trace_xxt(solve_triangular(l_q.expand(batch), l_p.expand(batch), upper=False))
    return half_log_det + 0.5 * (trace + _batch_mahalanobis(l_q, q.loc - p.loc) - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return where(p.support.lower_bound < q.support.lower_bound, math.inf, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    # one invertible map applied to both leaves the divergence unchanged
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra_event_dim = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra_event_dim)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


# --------------------------------------------------------------------------------------- across families
@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _cb_cross_term(p.mean, q)


@register_kl(Beta, Pareto)
def _kl_beta_infinity(p: Beta, q: Distribution) -> Tensor:
    return _infinite_like(p.concentration1)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


def _beta_mean_log(p: Beta) -> Tensor:
    """E[log x] for x ~ Beta(a, b): digamma(a) - digamma(a + b)."""
    return p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()


def _gamma_cross_term(mean: Tensor, mean_log: Tensor, q: Gamma) -> Tensor:
    """-E_p[log q(x)] for a gamma q from E_p[x] and E_p[log x]."""
    a, b = q.concentration, q.rate
    return a.lgamma() - a * b.log() - (a - 1) * mean_log + b * mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    return -p.entropy() + _gamma_cross_term(p.mean, _beta_mean_log(p), q)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    a, b = p.concentration1, p.concentration0
    second_moment = a * (a + 1) / ((a + b) * (a + b + 1))
    return -p.entropy() + _normal_cross_term(p.mean, second_moment, q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return where((q.low > p.support.lower_bound) | (q.high < p.support.upper_bound), math.inf, result)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_continuous_bernoulli_infinity(p: ContinuousBernoulli, q: Distribution) -> Tensor:
    return _infinite_like(p.probs)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    return -p.entropy() + _normal_cross_term(p.mean, p.variance + p.mean.pow(2), q)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    # (as torch: the bounds compare inclusively, so a q of exactly [0, 1] counts as not covering p's support)
    outside = (q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound)
    return where(outside, math.inf, result)


@register_kl(Exponential, Beta)
@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Pareto)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p: Exponential, q: Distribution) -> Tensor:
    return _infinite_like(p.rate)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    k = q.concentration
    return -k * ratio.log() + ratio + k.lgamma() + k * euler_constant - (1 + euler_constant)


def _gumbel_cross_term(mean: Tensor, laplace_transform: Tensor, q: Gumbel) -> Tensor:
    """-E_p[log q(x)] for a Gumbel q from E_p[x] and E_p[exp(-x / scale_q)]."""
    return q.scale.log() + (mean - q.loc) / q.scale + (q.loc / q.scale).exp() * laplace_transform


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    rate_scale = p.rate * q.scale
    return p.rate.log() - 1 + _gumbel_cross_term(p.rate.reciprocal(), rate_scale / (rate_scale + 1), q)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    return p.rate.log() - 1 + _normal_cross_term(p.rate.reciprocal(), 2 * p.rate.pow(-2), q)


@register_kl(Gamma, Beta)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Pareto)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p: Gamma, q: Distribution) -> Tensor:
    return _infinite_like(p.concentration)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    laplace_transform = (1 + (p.rate * q.scale).reciprocal()).pow(-p.concentration)
    return -p.entropy() + _gumbel_cross_term(p.mean, laplace_transform, q)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a, b = p.concentration, p.rate
    return -p.entropy() + _normal_cross_term(a / b, a * (a + 1) / b.pow(2), q)


@register_kl(Gumbel, Beta)
@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
def _kl_gumbel_infinity(p: Gumbel, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    return -p.entropy() + _normal_cross_term(p.mean, p.variance + p.mean.pow(2), q)


@register_kl(Laplace, Beta)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Pareto)
@register_kl(Laplace, Uniform)
def _kl_laplace_infinity(p: Laplace, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    return -p.entropy() + _normal_cross_term(p.loc, p.variance + p.loc.pow(2), q)


@register_kl(Normal, Beta)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Pareto)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p: Normal, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    # E[exp(-x / b)] for a normal x: exp(-loc / b + scale^2 / (2 b^2))
    laplace_transform = (-p.loc / q.scale + 0.5 * (p.scale / q.scale).pow(2)).exp()
    return -p.entropy() + _gumbel_cross_term(p.loc, laplace_transform, q)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|x - m| for x ~ N(loc, s): s sqrt(2/pi) exp(-d^2 / (2 s^2)) + d erf(d / (s sqrt 2)), d = loc - m
    d = p.loc - q.loc
    mean_distance = p.scale * math.sqrt(2 / math.pi) * (-0.5 * (d / p.scale).pow(2)).exp() + \
        d * (d / (p.scale * math.sqrt(2))).erf()
    return -p.entropy() + (2 * q.scale).log() + mean_distance / q.scale


@register_kl(Pareto, Beta)
@register_kl(Pareto, ContinuousBernoulli)
@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p: Pareto, q: Distribution) -> Tensor:
    return _infinite_like(p.scale)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    result = -p.entropy() - q.rate.log() + q.rate * p.alpha * p.scale / (p.alpha - 1)
    return where(p.alpha <= 1, math.inf, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    mean = p.alpha * p.scale / (p.alpha - 1)
    mean_log = p.scale.log() + p.alpha.reciprocal()
    result = -p.entropy() + _gamma_cross_term(mean, mean_log, q)
    return where(p.alpha <= 1, math.inf, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    a, s = p.alpha, p.scale
    mean = a * s / (a - 1)
    variance = s.pow(2) * a / ((a - 1).pow(2) * (a - 2))
    result = -p.entropy() + _normal_cross_term(mean, variance + mean.pow(2), q)
    return where(a <= 2, math.inf, result)


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_infinity(p: Poisson, q: Distribution) -> Tensor:
    return _infinite_like(p.rate)


def _uniform_mean_log(p: Uniform) -> Tensor:
    """E[log x] for x ~ Uniform(low, high), 0 <= low."""
    width = p.high - p.low
    return (_x_log_x(p.high) - _x_log_x(p.low) - width) / width


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    width = p.high - p.low
    mean_log_1m = (_x_log_x(1 - p.low) - _x_log_x(1 - p.high) - width) / width  # E[log(1 - x)]
    log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
    result = -width.log() - (a - 1) * _uniform_mean_log(p) - (b - 1) * mean_log_1m + log_beta
    return where((p.high > q.support.upper_bound) | (p.low < q.support.lower_bound), math.inf, result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = -p.entropy() + _cb_cross_term(p.mean, q)
    # (as torch: inclusive bounds, so p must lie strictly inside (0, 1))
    outside = (p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound)
    return where(outside, math.inf, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponetial(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return where(p.low < q.support.lower_bound, math.inf, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    result = -p.entropy() + _gamma_cross_term(p.mean, _uniform_mean_log(p), q)
    return where(p.low < q.support.lower_bound, math.inf, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    # E[exp(-x / b)] over [low, high]: b (exp(-low / b) - exp(-high / b)) / (high - low)
    b = q.scale
    laplace_transform = b * ((-p.low / b).exp() - (-p.high / b).exp()) / (p.high - p.low)
    return -p.entropy() + _gumbel_cross_term(p.mean, laplace_transform, q)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    return -p.entropy() + _normal_cross_term(p.mean, p.variance + p.mean.pow(2), q)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    # log q(x) = log alpha + alpha log scale - (alpha + 1) log x
    result = -p.entropy() - q.alpha.log() - q.alpha * q.scale.log() + (q.alpha + 1) * _uniform_mean_log(p)
    return where(p.low < q.support.lower_bound, math.inf, result)
