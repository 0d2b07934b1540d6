"""The generalized Pareto distribution."""
from __future__ import annotations

import math
from typing import Any

from ..tensor.elementwise import where
from ..tensor.random_ops import rand
from ..tensor.tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """GPD(loc, scale, concentration xi): survival (1 + xi z)^(-1/xi) for z = (x - loc) / scale (exp(-z) at
    xi = 0); support [loc, loc - scale / xi] for xi < 0, [loc, inf) otherwise. Reparameterised by inversion."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "GeneralizedPareto":
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    def _safe_xi(self) -> tuple[Tensor, Tensor]:
        """(xi == 0, xi with its zeros replaced by 1): the closed forms divide by xi."""
        zero = self.concentration == 0
        return zero, where(zero, 1.0, self.concentration)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """log P(X > value)."""
        z = self._z(value)
        zero, xi = self._safe_xi()
        return where(zero, -z, -(xi * z).log1p() / xi)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, xi = self._safe_xi()
        log_density = where(zero, -z, -(1 / xi + 1) * (xi * z).log1p()) - self.scale.log()
        inside = (z >= 0) & ((self.concentration >= 0) | (z <= -1 / xi))
        return where(inside, log_density, -math.inf)

    def log_cdf(self, value: Tensor) -> Tensor:
        """log P(X <= value)."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -self.log_survival_function(value).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        zero, xi = self._safe_xi()
        log_tail = (-value).log1p()
        z = where(zero, -log_tail, (-xi * log_tail).expm1() / xi)
        return self.loc + self.scale * z

    @property
    def mean(self) -> Tensor:
        xi = self.concentration
        return where(xi < 1, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self) -> Tensor:
        xi = self.concentration
        return where(xi < 0.5, self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi)), math.nan)

    def entropy(self) -> Tensor:
        return self.scale.log() + self.concentration + 1

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
