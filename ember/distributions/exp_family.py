"""``ExponentialFamily``: distributions of the form p(x; t) = exp(<t, T(x)> - F(t) + k(x)).

A member gives its natural parameters ``t`` (``_natural_params``), its log-normalizer ``F``
(``_log_normalizer``) and the mean of its carrier measure ``E[k(x)]`` (``_mean_carrier_measure``); the entropy
then follows from the gradient of ``F`` (a Bregman divergence), and so does the KL divergence between two members
of one family (``kl.py``).
"""
from __future__ import annotations

from typing import Any

from ..autograd.gradients import grad
from ..tensor.tensor import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """The base of the exponential-family distributions."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters, as a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """The log-normalizer F of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        """E[k(x)] under the distribution."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """-E[k(x)] + F(t) - <t, grad F(t)>."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*params)
        grads = grad(log_normalizer.sum(), params, create_graph=True)
        result = result + log_normalizer
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
