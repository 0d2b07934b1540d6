"""``InstanceNorm1d``/``2d``/``3d``: each channel of each sample normalized over its spatial dims."""
from __future__ import annotations

import warnings
from typing import Any

from ...tensor.tensor import Tensor
from ..functional.normalization import instance_norm
from .batchnorm import _expect_dims, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Instance norm; like torch, no affine parameters and no running statistics by default.

    ``_spatial_dims`` is the number of dims after the channel; an input with one dim fewer than the batched
    form is one unbatched sample.
    """

    _spatial_dims = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._spatial_dims
        _expect_dims(input, (n + 1, n + 2), f"{n + 1}D or {n + 2}D")

    def _normalize(self, input: Tensor) -> Tensor:
        return instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                             self.training or not self.track_running_stats,
                             self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.ndim == self._spatial_dims + 1
        feature_dim = 0 if unbatched else 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if unbatched:
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over ``(N, C, L)`` or unbatched ``(C, L)`` input."""

    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over ``(N, C, H, W)`` or unbatched ``(C, H, W)`` input."""

    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` input."""

    _spatial_dims = 3
