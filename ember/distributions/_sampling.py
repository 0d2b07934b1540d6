"""The samplers ember's tensor layer lacks, written in tensor ops (so they run on any device and draw from the
default generator): gamma (reparameterised), Poisson and binomial draws.

Each rejection sampler proposes for every element at once and keeps the first accepted proposal of each, looping
until none is pending (a handful of rounds: the acceptance rates are above 90%). Counts are drawn in float64 and
returned in the parameter's dtype.

The gamma sampler is Marsaglia and Tsang's (2000), with the alpha < 1 boost x * U^(1/alpha). Its gradient is the
implicit reparameterisation one (Figurnov et al. 2018), as torch's ``_standard_gamma`` has: at fixed
u = F(x; alpha), dx/dalpha = -(dF/dalpha) / f(x; alpha), where F is the regularized incomplete gamma function. The
partial derivative dF/dalpha is a central difference of F in float64 (on whichever tail is the smaller, so that
nothing cancels): against scipy's inverse CDF its relative error is about 1e-9 typically and below 1e-7 in the
worst 0.1% of draws, where torch's approximations give about 2e-6 and 4e-4.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Function
from ..tensor.creation import zeros_like
from ..tensor.elementwise import where
from ..tensor.random_ops import rand_like, randn_like
from ..tensor.special_math import igamma, igammac
from ..tensor.arguments import tensor_args
from ..tensor.tensor import Tensor
from ..tensor.type_info import finfo

_POISSON_INVERSION_BELOW = 10.0  # rates below this are drawn by inversion, the rest by transformed rejection
_BINOMIAL_INVERSION_BELOW = 10.0  # the same threshold for n * min(p, 1 - p)
_INVERSION_CAP = 110  # no inversion search goes further: beyond it, tail mass is below 1e-60 for these means


def _marsaglia_tsang(alpha: Tensor, generator: Any) -> Tensor:
    """Gamma(alpha, 1) draws, alpha of a floating dtype (no graph)."""
    boost = alpha < 1
    shape = where(boost, alpha + 1, alpha)
    d = shape - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = zeros_like(shape)
    pending = alpha == alpha  # every element (NaN concentrations stay NaN)
    tiny = finfo(alpha.dtype).tiny
    while pending.any():
        z = randn_like(shape, generator=generator)
        log_u = rand_like(shape, generator=generator).clamp(min=tiny).log()
        v = (1 + c * z) ** 3
        accept = (v > 0) & (log_u < 0.5 * z * z + d - d * v + d * v.clamp(min=tiny).log())
        take = pending & accept
        out = where(take, d * v, out)
        pending = pending & ~accept
    boosted = out * (rand_like(shape, generator=generator).clamp(min=tiny).log() / alpha).exp()
    return where(boost, boosted, out).clamp(min=tiny)


def _gamma_cdf_alpha_derivative(alpha: Tensor, x: Tensor) -> Tensor:
    """dF(x; alpha)/dalpha by a central difference in float64, on the smaller of the lower and upper tails."""
    step = 1e-4 * alpha.minimum(alpha.sqrt())
    up, down = alpha + step, alpha - step
    lower = igamma(up, x) - igamma(down, x)
    upper = igammac(down, x) - igammac(up, x)
    return where(igamma(alpha, x) < 0.5, lower, upper) / (2 * step)


class _StandardGamma(Function):
    """Gamma(concentration, 1) draws with implicit reparameterisation gradients."""

    @staticmethod
    def forward(ctx, concentration: Tensor, generator: Any) -> Tensor:
        x = _marsaglia_tsang(concentration, generator)
        if ctx.needs_input_grad:
            ctx.save_for_backward(concentration, x)
        return x

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple[Tensor, None]:
        alpha, x = ctx.saved_tensors
        a, v = alpha.double(), x.double()
        log_density = (a - 1) * v.log() - v - a.lgamma()
        dx_dalpha = -_gamma_cdf_alpha_derivative(a, v) * (-log_density).exp()
        return g * dx_dalpha.to(g.dtype), None


@tensor_args
def standard_gamma(concentration: Tensor, generator: Any = None) -> Tensor:
    """Gamma(concentration, 1) draws of the concentration's shape; differentiable in the concentration
    (``torch._standard_gamma``)."""
    return _StandardGamma.apply(concentration, generator)


def _poisson_inversion(rate: Tensor, generator: Any) -> Tensor:
    """Poisson draws by sequential search of the CDF (rates below ~10; float64)."""
    u = rand_like(rate, generator=generator)
    term = (-rate).exp()
    cdf = term
    k = zeros_like(rate)
    pending = u > cdf
    while pending.any():
        k = where(pending, k + 1, k)
        term = term * rate / k.clamp(min=1)
        cdf = cdf + term
        pending = pending & (u > cdf) & (k < _INVERSION_CAP)
    return k


def _poisson_ptrs(rate: Tensor, generator: Any) -> Tensor:
    """Poisson draws by Hormann's transformed rejection with squeeze (PTRS, 1993), for rates of ~10 and more."""
    sqrt_rate, log_rate = rate.sqrt(), rate.log()
    b = 0.931 + 2.53 * sqrt_rate
    a = -0.059 + 0.02483 * b
    log_inv_alpha = (1.1239 + 1.1328 / (b - 3.4)).log()
    v_r = 0.9277 - 3.6224 / (b - 2)
    out = zeros_like(rate)
    pending = rate == rate
    while pending.any():
        u = rand_like(rate, generator=generator) - 0.5
        v = rand_like(rate, generator=generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + rate + 0.43).floor()
        quick = (us >= 0.07) & (v <= v_r)
        rejected = (k < 0) | ((us < 0.013) & (v > us))
        log_ratio = v.log() + log_inv_alpha - (a / (us * us) + b).log()
        accept = quick | (~rejected & (log_ratio <= -rate + k * log_rate - (k + 1).lgamma()))
        out = where(pending & accept, k, out)
        pending = pending & ~accept
    return out


@tensor_args
def poisson(rate: Tensor, generator: Any = None) -> Tensor:
    """Poisson(rate) draws of the rate's shape and dtype (no gradient, as torch.poisson)."""
    if not rate.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{rate.dtype.scalar_type_name}'")
    if not bool((rate >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    r = rate.detach().double()
    small = r < _POISSON_INVERSION_BELOW
    # each method sees harmless parameters where the other one's draws are kept
    draws = where(small, _poisson_inversion(where(small, r, 0.0), generator),
                  _poisson_ptrs(r.clamp(min=_POISSON_INVERSION_BELOW), generator))
    return draws.to(rate.dtype)


def _binomial_inversion(n: Tensor, p: Tensor, generator: Any) -> Tensor:
    """Binomial draws by sequential search of the CDF, p <= 1/2 and n p below ~10 (float64)."""
    q = 1 - p
    odds = p / q
    u = rand_like(p, generator=generator)
    term = (n * (-p).log1p()).exp()
    cdf = term
    k = zeros_like(p)
    pending = (u > cdf) & (k < n)
    while pending.any():
        term = term * (n - k) / (k + 1) * odds
        k = where(pending, k + 1, k)
        cdf = cdf + term
        pending = pending & (u > cdf) & (k < n) & (k < _INVERSION_CAP)
    return k


def _binomial_btrs(n: Tensor, p: Tensor, generator: Any) -> Tensor:
    """Binomial draws by Hormann's transformed rejection (BTRS, 1993), p <= 1/2 and n p of ~10 and more."""
    q = 1 - p
    spq = (n * p * q).sqrt()
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    log_alpha = ((2.83 + 5.1 / b) * spq).log()
    log_odds = (p / q).log()
    m = ((n + 1) * p).floor()
    h = (m + 1).lgamma() + (n - m + 1).lgamma()
    out = zeros_like(p)
    pending = p == p
    while pending.any():
        u = rand_like(p, generator=generator) - 0.5
        v = rand_like(p, generator=generator)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + c).floor()
        inside = (k >= 0) & (k <= n)
        quick = (us >= 0.07) & (v <= v_r)
        log_ratio = v.log() + log_alpha - (a / (us * us) + b).log()
        kk = k.clamp(min=0).minimum(n)
        bound = h - (kk + 1).lgamma() - (n - kk + 1).lgamma() + (kk - m) * log_odds
        accept = inside & (quick | (log_ratio <= bound))
        out = where(pending & accept, k, out)
        pending = pending & ~accept
    return out


@tensor_args
def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """Binomial(count, prob) draws of the broadcast shape, in prob's dtype (no gradient, as torch.binomial)."""
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype.scalar_type_name}")
    n, p = count.detach().double(), prob.detach().double()
    flip = p > 0.5
    p = where(flip, 1 - p, p)
    small = n * p < _BINOMIAL_INVERSION_BELOW
    # each method sees harmless parameters where the other one's draws are kept (BTRS needs n p >= 10)
    btrs_n = where(small, n.clamp(min=2 * _BINOMIAL_INVERSION_BELOW), n)
    btrs_p = where(small, p.clamp(min=0.5), p)
    draws = where(small, _binomial_inversion(where(small, n, 0.0), p, generator),
                  _binomial_btrs(btrs_n, btrs_p, generator))
    return where(flip, n - draws, draws).to(prob.dtype)
