"""``LayerNorm``, ``GroupNorm``, ``RMSNorm`` and ``LocalResponseNorm``."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

from ...tensor.creation import empty
from ...tensor.tensor import Tensor
from .. import init
from ..functional.normalization import group_norm, layer_norm, local_response_norm, rms_norm
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _shape_tuple(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(n) for n in normalized_shape)


class _AffineNorm(Module):
    """A norm followed by an optional elementwise ``weight`` (initialised to 1) and ``bias`` (to 0)."""

    def _init_affine(self, shape: tuple[int, ...] | int, weight: bool, bias: bool, device: Any, dtype: Any) -> None:
        """Register ``weight``/``bias`` of ``shape`` (None when not wanted) and initialise them."""
        for name, wanted in (("weight", weight), ("bias", bias)):
            if wanted:
                setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
            else:
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if getattr(self, "bias", None) is not None:
            init.zeros_(self.bias)


class LayerNorm(_AffineNorm):
    """Normalize over the trailing ``normalized_shape`` dims, then an elementwise affine."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._init_affine(self.normalized_shape, elementwise_affine, elementwise_affine and bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(_AffineNorm):
    """Normalize each of ``num_groups`` groups of channels per sample, then a per-channel affine."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self._init_affine(num_channels, affine, affine and bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(_AffineNorm):
    """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale by ``weight``."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._init_affine(self.normalized_shape, elementwise_affine, False, device, dtype)

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalize each channel by the energy of ``size`` neighbouring channels (AlexNet's LRN)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
