"""``BatchNorm1d``/``2d``/``3d`` and their shared base (also the base of the instance norms)."""
from __future__ import annotations

from typing import Any

from ...tensor import dtypes
from ...tensor.creation import empty, ones, tensor, zeros
from ...tensor.tensor import Tensor
from .. import init
from ..functional.normalization import batch_norm
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _NormBase(Module):
    """Per-channel affine parameters (``weight``, ``bias``) and running statistics (``running_mean``,
    ``running_var``, ``num_batches_tracked``), named as torch names them so state dicts transfer."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dtypes.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight 1 and bias 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """State dicts older than version 2 have no ``num_batches_tracked``: it loads as 0."""
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                else tensor(0, dtype=dtypes.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


def _expect_dims(input: Tensor, allowed: tuple[int, ...], text: str) -> None:
    if input.ndim not in allowed:
        raise ValueError(f"expected {text} input (got {input.ndim}D input)")


class _BatchNorm(_NormBase):
    """Batch statistics in training (running ones updated when tracked), running statistics in eval."""

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep_buffers = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if keep_buffers else None,
                          self.running_var if keep_buffers else None, self.weight, self.bias, use_batch_stats,
                          factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over ``(N, C)`` or ``(N, C, L)`` input, per channel ``C``."""

    def _check_input_dim(self, input: Tensor) -> None:
        _expect_dims(input, (2, 3), "2D or 3D")


class BatchNorm2d(_BatchNorm):
    """Batch norm over ``(N, C, H, W)`` input, per channel ``C``."""

    def _check_input_dim(self, input: Tensor) -> None:
        _expect_dims(input, (4,), "4D")


class BatchNorm3d(_BatchNorm):
    """Batch norm over ``(N, C, D, H, W)`` input, per channel ``C``."""

    def _check_input_dim(self, input: Tensor) -> None:
        _expect_dims(input, (5,), "5D")
