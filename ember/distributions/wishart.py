"""The Wishart distribution over positive definite matrices."""
from __future__ import annotations

import math
import warnings
from numbers import Number
from typing import Any

from ..linalg.cholesky_solves import cholesky_inverse, cholesky_solve
from ..linalg.decompositions import cholesky
from ..linalg.determinants import slogdet
from ..tensor.creation import arange, as_tensor
from ..tensor.elementwise import where
from ..tensor.random_ops import randn
from ..tensor.shape_utils import broadcast_shapes
from ..tensor.special_math import mvlgamma
from ..tensor.tensor import Size, Tensor
from ..tensor.type_info import finfo
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_MAX_TRY_CORRECTION = 3  # redraws of singular samples before rsample gives up (torch's default)


def _multivariate_digamma(x: Tensor, p: int) -> Tensor:
    """sum_{i<p} digamma(x - i / 2): the derivative of mvlgamma(x, p)."""
    offsets = arange(p, dtype=x.dtype, device=x.device) / 2
    return (x.unsqueeze(-1) - offsets).digamma().sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix | precision_matrix | scale_tril) over p x p positive definite matrices:
    the sum of ``df`` outer products of N(0, covariance) vectors. Reparameterised by the Bartlett decomposition
    (chi-squared diagonal, normal lower triangle)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df: Any, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = param.shape[:-2]
            self.df = as_tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if (self.df <= p - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        matrix_shape = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(matrix_shape)
        else:
            self.precision_matrix = param.expand(matrix_shape)
        self._df_constraint = constraints.greater_than(p - 1)
        if (self.df < p).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        # Bartlett: the i-th diagonal entry of the factor is sqrt(chi2(df - i))
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) -
                               arange(p, dtype=param.dtype, device=param.device).expand(tuple(batch_shape) + (-1,)))

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": self.__dict__.get("_df_constraint", constraints.greater_than(0))}

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Wishart":
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._df_constraint = self._df_constraint
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new._dist_chi2 = self._dist_chi2.expand(batch_shape + self.event_shape[-1:])
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = where(factor > 0, factor, float("nan"))
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        diagonal = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (v.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: Any = Size()) -> Tensor:
        p = self._event_shape[-1]
        shape = self._extended_shape(sample_shape)
        eps = finfo(self.df.dtype).eps
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = randn(tuple(shape[:-2]) + (p * (p - 1) // 2,), dtype=diagonal.dtype, device=diagonal.device)
        noise = diagonal.diag_embed() + vec_to_tril_matrix(below, diag=-1)
        factor = self._unbroadcasted_scale_tril @ noise
        return factor @ factor.mT

    def rsample(self, sample_shape: Any = Size(), max_try_correction: int | None = None) -> Tensor:
        """Bartlett draws; up to ``max_try_correction`` (3) redraws replace samples that came out singular."""
        tries = _MAX_TRY_CORRECTION if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(sample_shape)
        singular = self._singular(sample)
        if singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(tries):
                redrawn = self._bartlett_sampling(sample_shape)
                sample = where(self._as_matrix_mask(singular), redrawn, sample)
                singular = self._singular(sample)
                if not singular.any():
                    break
        return sample

    def _singular(self, sample: Tensor) -> Tensor:
        """Per draw (over the sample shape), whether any matrix of its batch is not positive definite."""
        singular = ~self.support.check(sample)
        return singular.amax(self._batch_dims) if self._batch_shape else singular

    def _as_matrix_mask(self, mask: Tensor) -> Tensor:
        return mask.reshape(tuple(mask.shape) + (1,) * (len(self._batch_shape) + 2))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        lower = self._unbroadcasted_scale_tril
        log_det_cov = 2 * lower.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = cholesky_solve(value, lower).diagonal(dim1=-2, dim2=-1).sum(-1)
        return -(nu * (p * math.log(2) + log_det_cov) - (nu - p - 1) * slogdet(value).logabsdet + trace) / 2 - \
            mvlgamma(nu / 2, p)

    def entropy(self) -> Tensor:
        nu = self.df
        p = self._event_shape[-1]
        log_det_cov = 2 * self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (p + 1) / 2 * log_det_cov + p * (p + 1) / 2 * math.log(2) + mvlgamma(nu / 2, p) - \
            (nu - p - 1) / 2 * _multivariate_digamma(nu / 2, p) + nu * p / 2

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-slogdet(-2 * x).logabsdet + p * math.log(2)) + mvlgamma(y + (p + 1) / 2, p)


