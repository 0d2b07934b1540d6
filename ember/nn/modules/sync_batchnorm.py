"""``SyncBatchNorm``: batch normalization whose training statistics span every process of a group.

In training each rank sums its part of the batch per channel (count, sum, sum of squares, in float64 so the
variance does not cancel), one all-reduce makes the sums global, and every rank normalizes with the global mean and
variance: the result equals ``BatchNorm`` on the concatenated batch. Backward all-reduces the two per-channel sums
the input gradient needs (of ``dy`` and ``dy * (x - mean)``); the weight and bias gradients stay local, as torch's,
since ``DistributedDataParallel`` averages them. In eval mode, or outside a group of more than one process, it is
plain ``BatchNorm``.
"""
from __future__ import annotations

from typing import Any, Optional

from ... import distributed as dist
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...tensor import dtypes
from ...tensor.joins import cat
from ...tensor.tensor import Tensor
from .batchnorm import _BatchNorm
from .module import Module

__all__ = ["SyncBatchNorm"]


def _channel_view(stat: Tensor, ndim: int) -> Tensor:
    """A per-channel vector shaped to broadcast against an (N, C, ...) input."""
    return stat.reshape((1, -1) + (1,) * (ndim - 2))


def _reduced_dims(ndim: int) -> list[int]:
    return [0] + list(range(2, ndim))


class _SyncBatchNormFunction(Function):
    """Normalization with group-wide statistics; its backward makes the matching group-wide reductions."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float,
                group: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        dims = _reduced_dims(input.ndim)
        x64 = input.detach().to(dtypes.float64)
        local_count = float(input.numel() // input.shape[1])
        sums = cat([x64.sum(dims), (x64 * x64).sum(dims), x64.new_full((1,), local_count)])
        dist.all_reduce(sums, group=group)
        channels = input.shape[1]
        count = float(sums[-1].item())
        mean64 = sums[:channels] / count
        var64 = (sums[channels:2 * channels] / count - mean64 * mean64).clamp(min=0.0)
        invstd64 = (var64 + eps).rsqrt()
        mean, invstd = mean64.to(input.dtype), invstd64.to(input.dtype)
        xhat = (input - _channel_view(mean, input.ndim)) * _channel_view(invstd, input.ndim)
        out = xhat
        if weight is not None:
            out = out * _channel_view(weight, input.ndim)
        if bias is not None:
            out = out + _channel_view(bias, input.ndim)
        ctx.save_for_backward(xhat, weight, invstd)
        ctx.count, ctx.group = count, group
        count_out = sums[-1:]
        ctx.mark_non_differentiable(mean64, var64, count_out)
        return out, mean64, var64, count_out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor, *_unused: Any) -> tuple:
        xhat, weight, invstd = ctx.saved_tensors
        ndim = grad_out.ndim
        dims = _reduced_dims(ndim)
        sum_dy = grad_out.sum(dims)
        sum_dy_xhat = (grad_out * xhat).sum(dims)
        grad_weight = sum_dy_xhat if weight is not None and ctx.needs_input_grad[1] else None
        grad_bias = sum_dy if ctx.needs_input_grad[2] else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            both = cat([sum_dy, sum_dy_xhat]).to(dtypes.float64)
            dist.all_reduce(both, group=ctx.group)
            both = (both / ctx.count).to(grad_out.dtype)
            channels = sum_dy.shape[0]
            mean_dy = _channel_view(both[:channels], ndim)
            mean_dy_xhat = _channel_view(both[channels:], ndim)
            scale = _channel_view(invstd if weight is None else invstd * weight, ndim)
            grad_input = (grad_out - mean_dy - xhat * mean_dy_xhat) * scale
        return grad_input, grad_weight, grad_bias, None, None


class SyncBatchNorm(_BatchNorm):
    """``BatchNorm`` over N, C, ... inputs (at least 2-D) with the training statistics of the whole group.

    ``process_group`` (default: the default group) is the set of ranks whose batches are normalized together.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def _synchronised(self) -> bool:
        """Whether this forward should use group-wide statistics (training, in a group of more than one)."""
        if not self.training:
            return False
        return dist.is_initialized() and dist.get_world_size(self.process_group) > 1

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected {self.num_features} channels (dim 1), got input of shape "
                             f"{list(input.shape)}")
        if not self._synchronised():
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        out, mean, var, count = _SyncBatchNormFunction.apply(input, self.weight, self.bias, self.eps,
                                                             self.process_group)
        if self.track_running_stats and self.running_mean is not None:
            n = float(count.item())
            if n <= 1:
                raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                                 f"{list(input.shape)} (across the group)")
            with no_grad():
                self.running_mean.mul_(1.0 - factor).add_(mean.to(self.running_mean.dtype) * factor)
                unbiased = var * (n / (n - 1.0))
                self.running_var.mul_(1.0 - factor).add_(unbiased.to(self.running_var.dtype) * factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm*d`` replaced by a ``SyncBatchNorm`` holding the same parameters and
        buffers (the module itself when it is one)."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted

