"""Dropout layers: active in training mode, the identity in eval mode."""
from __future__ import annotations

from typing import Callable

from ...tensor.tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """Holds ``p`` (checked as torch does) and ``inplace``; ``forward`` is the functional ``_fn``."""

    _fn: Callable[..., Tensor]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p, scale the rest by 1 / (1 - p)."""

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) inputs."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _fn = staticmethod(F.dropout3d)


class _AlphaDropoutNd(_DropoutNd):
    """Alpha dropouts take ``inplace`` but, as in torch, never work in place."""

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training)


class AlphaDropout(_AlphaDropoutNd):
    """Dropout that keeps SELU activations at zero mean and unit variance."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_AlphaDropoutNd):
    """Alpha dropout of whole channels."""

    _fn = staticmethod(F.feature_alpha_dropout)
