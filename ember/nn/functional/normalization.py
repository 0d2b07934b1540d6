"""Normalization functions: batch, layer, group, instance, RMS and local response norm, ``normalize``.

Layer, group and training-mode batch and instance norm are the fused ops of
``ember.tensor.fused.normalization`` (differentiable to any order). Eval-mode
batch norm, RMS norm, local response norm and ``normalize`` are short tensor-op
compositions that autograd differentiates directly. float16 is computed in float32.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import autocast_policy, dtypes
from ...tensor.fused import normalization as fused
from ...tensor.tensor import Tensor
from ...tensor.joins import cat

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
           "normalize"]


def _check_dtypes(input: Tensor, *others: Tensor | None) -> None:
    """torch's CPU rule: float32/float64 inputs need parameters of the same dtype; float16 and bfloat16 take their
    own dtype or float32."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"expected a floating-point input, but got {input.dtype}")
    allowed = (input.dtype, dtypes.float32) if input.dtype.compute is not input.dtype else (input.dtype,)
    for t in others:
        if t is not None and t.dtype not in allowed:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


# ------------------------------------------------------------------ rows: layer norm, group norm
def _normalized_shape(normalized_shape: Any) -> tuple[int, ...]:
    if isinstance(normalized_shape, (int, np.integer)):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    shape = tuple(int(n) for n in normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    return shape


def _check_normalized(input: Tensor, shape: tuple[int, ...], separator: str, **params: Tensor | None) -> None:
    if input.ndim < len(shape) or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{separator}{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for name, p in params.items():
        if p is not None and tuple(p.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(p.shape)} and normalized_shape = {list(shape)}")


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the last ``len(normalized_shape)`` dims, then scale by ``weight`` and shift by ``bias``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("layer_norm", input):
        return autocast_policy.run("layer_norm", layer_norm, input, normalized_shape, weight, bias, eps)
    shape = _normalized_shape(normalized_shape)
    _check_normalized(input, shape, ", ", weight=weight, bias=bias)
    _check_dtypes(input, weight, bias)
    return fused.rows_norm(input, weight, bias, 1, math.prod(shape), 1, float(eps))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each group of ``C / num_groups`` channels of each sample, then a per-channel affine."""
    if autocast_policy.ACTIVE and autocast_policy.covers("group_norm", input):
        return autocast_policy.run("group_norm", group_norm, input, num_groups, weight, bias, eps)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    channels = input.shape[1]
    per_group = [input.shape[0] * channels // num_groups, num_groups] + list(input.shape[2:])
    _verify_more_than_one(per_group, per_group[0] * math.prod(per_group[2:]), "value per channel")
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.ndim != 1 or p.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(p.shape)} and input of shape {list(input.shape)}")
    _check_dtypes(input, weight, bias)
    spatial = math.prod(input.shape[2:])
    return fused.rows_norm(input, weight, bias, int(num_groups), channels // num_groups, spatial, float(eps))


# ------------------------------------------------------------------ channels: batch norm, instance norm
def _affine_eval(input: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor | None,
                 bias: Tensor | None, eps: float) -> Tensor:
    """Batch norm with fixed statistics: a per-channel ``x * scale + shift`` in tensor ops."""
    cdt = input.dtype.compute
    view = (1, -1) + (1,) * (input.ndim - 2)
    scale = (running_var.to(cdt) + eps).rsqrt()
    if weight is not None:
        scale = scale * weight.to(cdt)
    shift = -running_mean.to(cdt) * scale
    if bias is not None:
        shift = shift + bias.to(cdt)
    return (input.to(cdt) * scale.reshape(view) + shift.reshape(view)).to(input.dtype)


def _check_channel_params(input: Tensor, **params: Tensor | None) -> None:
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.ndim, 1)}, "
                         f"{max(input.ndim, 1) - 1}], but got 1)")
    channels = input.shape[1]
    for name, p in params.items():
        if p is not None and p.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {p.numel()}")
    _check_dtypes(input, *params.values())


def _batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                running_var: Tensor | None, training: bool, momentum: float, eps: float) -> Tensor:
    """torch.batch_norm: batch statistics (updating the running ones) when training, else the running ones."""
    _check_channel_params(input, weight=weight, bias=bias, running_mean=running_mean, running_var=running_var)
    if not training:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
        return _affine_eval(input, running_mean, running_var, weight, bias, eps)
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    return fused.batch_norm(input, weight, bias, running_mean, running_var, momentum, float(eps))


def _verify_more_than_one(size: Any, count: int, what: str) -> None:
    """torch refuses statistics over a single value (``size`` is what its message shows)."""
    if count == 1:
        raise ValueError(f"Expected more than 1 {what} when training, got input size {size}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) by the batch's statistics when ``training`` (updating the running ones
    with ``momentum`` and the unbiased variance), else by ``running_mean``/``running_var``."""
    if training and input.ndim >= 2:
        _verify_more_than_one(input.shape, input.shape[0] * math.prod(input.shape[2:]), "value per channel")
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def _instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                   running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float) -> Tensor:
    """torch.instance_norm: batch norm of the ``(1, N * C, ...)`` view, running stats averaged over the batch."""
    _check_channel_params(input, weight=weight, bias=bias, running_mean=running_mean, running_var=running_var)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    batch, channels = input.shape[:2]
    folded = input.reshape((1, batch * channels) + tuple(input.shape[2:]))

    def repeated(t: Tensor | None) -> Tensor | None:
        return t.repeat(batch) if t is not None else None

    stats = [repeated(t.detach()) if t is not None else None for t in (running_mean, running_var)]
    out = _batch_norm(folded, repeated(weight), repeated(bias), stats[0], stats[1], use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            for running, folded_stat in zip((running_mean, running_var), stats):
                if running is not None:
                    running.copy_(folded_stat.reshape(batch, channels).mean(0))
    return out.reshape(input.shape)


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample over its spatial dims (or by running stats when
    ``use_input_stats`` is False)."""
    if use_input_stats and input.ndim >= 2:
        _verify_more_than_one(input.shape, math.prod(input.shape[2:]), "spatial element")
    return _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


# ------------------------------------------------------------------ tensor-op compositions
def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dims; ``eps=None`` is the compute dtype's epsilon."""
    if autocast_policy.ACTIVE and autocast_policy.covers("rms_norm", input):
        return autocast_policy.run("rms_norm", rms_norm, input, normalized_shape, weight, eps)
    shape = _normalized_shape(normalized_shape)
    _check_normalized(input, shape, "", weight=weight)
    cdt = input.dtype.compute
    if eps is None:
        eps = float(np.finfo(cdt.np).eps)
    x = input.to(cdt)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        y = y * weight.to(cdt)
    return y.to(input.dtype)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
                        ) -> Tensor:
    """Divide by ``(k + alpha * mean of x^2 over a window of `size` neighbouring channels) ** beta``."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    pad_shape = lambda n: (input.shape[0], n) + tuple(input.shape[2:])  # noqa: E731
    padded = cat([sq.new_zeros(pad_shape(before)), sq, sq.new_zeros(pad_shape(after))], 1)
    window = padded.unfold(1, size, 1).sum(-1) / size
    return input / (window * alpha + k).pow(beta)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None
              ) -> Tensor:
    """``input / max(||input||_p along dim, eps)``."""
    result = input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        with no_grad():
            out.copy_(result)
        return out
    return result


# ------------------------------------------------------------------ torch's top-level forms
def _torch_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float, eps: float,
                      cudnn_enabled: bool = True) -> Tensor:
    """``torch.batch_norm``: the native op, with torch's argument order."""
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def _torch_instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                         running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                         cudnn_enabled: bool = True) -> Tensor:
    """``torch.instance_norm``: the native op, with torch's argument order."""
    return _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


def _torch_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
                      bias: Tensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """``torch.layer_norm``."""
    return layer_norm(input, normalized_shape, weight, bias, eps)


def _torch_group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
                      eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm``."""
    return group_norm(input, num_groups, weight, bias, eps)


TORCH_FUNCTIONS = {"batch_norm": _torch_batch_norm, "instance_norm": _torch_instance_norm,
                   "layer_norm": _torch_layer_norm, "group_norm": _torch_group_norm, "rms_norm": rms_norm}
