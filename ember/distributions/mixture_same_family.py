"""``MixtureSameFamily``: a mixture whose components are the batch of one distribution."""
from __future__ import annotations

from typing import Any

from ..autograd.grad_mode import no_grad
from ..tensor.activation_ops import log_softmax
from ..tensor.tensor import Size, Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mixture weights from a ``Categorical`` over the rightmost batch dimension of ``component_distribution``
    (e.g. a Gaussian mixture: Categorical(weights) with Normal(locs, scales) of batch shape (..., K))."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mixture_batch = mixture_distribution.batch_shape
        component_batch = component_distribution.batch_shape[:-1]
        for m, c in zip(reversed(mixture_batch), reversed(component_batch)):
            if m != 1 and c != 1 and m != c:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible with "
                                 f"`component_distribution.batch_shape`({component_batch})")
        k_mixture = mixture_distribution.logits.shape[-1]
        k_component = component_distribution.batch_shape[-1]
        if k_mixture != k_component:
            raise ValueError(f"`mixture_distribution component` ({k_mixture}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({k_component})")
        self._num_component = k_mixture
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(component_batch, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> "MixtureSameFamily":
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(batch_shape, new._component_distribution.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    def _component_dim(self) -> int:
        return -1 - self._event_ndims

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(self._component_dim())

    @property
    def variance(self) -> Tensor:
        # the law of total variance: E[Var(X | component)] + Var(E[X | component])
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = self._component_dim()
        expected_variance = (probs * self.component_distribution.variance).sum(dim)
        variance_of_means = (probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(dim)
        return expected_variance + variance_of_means

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = log_softmax(self.mixture_distribution.logits, -1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        sample_shape = Size(sample_shape)
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            which = self.mixture_distribution.sample(sample_shape)
            draws = self.component_distribution.sample(sample_shape)
            # the index of each draw's component, broadcast over the event
            index = which.reshape(tuple(which.shape) + (1,) * (self._event_ndims + 1))
            index = index.expand(tuple(which.shape) + (1,) + tuple(self.event_shape))
            return draws.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        """``x`` with a component dimension (of size one) left of the event."""
        return x.unsqueeze(self._component_dim())

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        """Mixture weights (..., K) laid out against the components' (..., K, *event): broadcasting supplies any
        batch dimensions the mixture lacks."""
        return x.reshape(tuple(x.shape) + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(\n  {self.mixture_distribution},\n  {self.component_distribution})"
