"""The von Mises distribution: a circular normal on [-pi, pi)."""
from __future__ import annotations

import math
from typing import Any

from ..autograd.grad_mode import no_grad
from ..tensor.creation import zeros
from ..tensor.elementwise import where
from ..tensor.random_ops import rand
from ..tensor.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz and Stegun 9.8.1-9.8.4: polynomials for I0 and I1 (|x| < 3.75 in (x/3.75)^2; beyond, of
# e^-x sqrt(x) I_n(x) in 3.75/x), relative error below 2e-7
_I0_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813)
_I0_LARGE = (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633,
             0.00392377)
_I1_SMALL = (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411)
_I1_LARGE = (0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312, 0.01787654,
             -0.00420059)


def _polynomial(x: Tensor, coefficients: tuple[float, ...]) -> Tensor:
    """sum_i c_i x^i by Horner's rule."""
    result = x * 0 + coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = result * x + c
    return result


def _log_modified_bessel(x: Tensor, order: int) -> Tensor:
    """log I_order(x) for x > 0, order 0 or 1."""
    small_coef, large_coef = (_I0_SMALL, _I0_LARGE) if order == 0 else (_I1_SMALL, _I1_LARGE)
    y = x / 3.75
    small = _polynomial(y * y, small_coef).log()
    if order == 1:
        small = x.abs().log() + small
    large = x - 0.5 * x.log() + _polynomial(1 / y, large_coef).log()
    return where(x < 3.75, small, large)


def _rejection_sample(loc: Tensor, concentration: Tensor, proposal_r: Tensor, shape: Size) -> Tensor:
    """Best and Fisher's (1979) wrapped-Cauchy rejection sampler, every element at once (float64)."""
    x = zeros(tuple(shape), dtype=loc.dtype, device=loc.device)
    pending = x == 0
    while pending.any():
        u = rand((3,) + tuple(shape), dtype=loc.dtype, device=loc.device)
        u1, u2, u3 = u.unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        angle = (u3 - 0.5).sign() * f.acos()
        x = where(pending & accept, angle, x)
        pending = pending & ~accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """VonMises(loc, concentration): density exp(k cos(x - loc)) / (2 pi I0(k)) on the circle; the
    log-density is differentiable, samples are not reparameterised."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "VonMises":
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - _log_modified_bessel(k, order=0)

    @lazy_property
    def _loc(self) -> Tensor:
        return self.loc.double()

    @lazy_property
    def _concentration(self) -> Tensor:
        return self.concentration.double()

    @lazy_property
    def _proposal_r(self) -> Tensor:
        k = self._concentration
        tau = 1 + (1 + 4 * k * k).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        r = (1 + rho * rho) / (2 * rho)
        return where(k < 1e-5, 1 / k + k, r)  # the second-order expansion near zero, where rho cancels

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            draws = _rejection_sample(self._loc, self._concentration, self._proposal_r, shape)
            return draws.to(self.loc.dtype)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1 - (_log_modified_bessel(k, order=1) - _log_modified_bessel(k, order=0)).exp()
