"""The LKJ distribution over Cholesky factors of correlation matrices (Lewandowski, Kurowicka and Joe, 2009)."""
from __future__ import annotations

import math
from typing import Any

from ..tensor.creation import arange
from ..tensor.joins import cat
from ..tensor.random_ops import randn
from ..tensor.special_math import mvlgamma
from ..tensor.tensor import Size, Tensor
from ..tensor.type_info import finfo
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ(concentration) over the lower Cholesky factors L of ``dim`` x ``dim`` correlation matrices L L^T, with
    density proportional to det(L L^T)^(concentration - 1); sampled by the onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        # the onion method grows the factor row by row; row i's squared off-diagonal norm is
        # Beta(i / 2, concentration + (dim - 2 - i) / 2) (row 0 has none: a placeholder Beta(1/2, ...))
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "LKJCholesky":
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        shape = self._extended_shape(sample_shape)
        u = randn(tuple(shape), dtype=y.dtype, device=y.device).tril(-1)
        norms = u.norm(dim=-1, keepdim=True)
        # row 0 has no off-diagonal entries: 0 / 0 there becomes 0
        direction = (u / norms).nan_to_num(0.0)
        w = y.sqrt() * direction
        diagonal = (1 - w.pow(2).sum(-1)).clamp(min=finfo(w.dtype).tiny).sqrt()
        return w + diagonal.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        # density on the factor: prod_i L_ii^(dim - i + 2 (concentration - 1)) for i = 2..dim (1-based), times the
        # normalizer of the LKJ density on correlation matrices
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        # mvlgamma's constant is (d-1)(d-2)/4 log pi, the normalizer's d(d-1)/4 log pi: (d-1)/2 log pi between them
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)
