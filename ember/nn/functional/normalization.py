"""Normalization functions: batch, layer, group, instance, RMS and local response norm, ``normalize``.

Layer and group norm run on the fused "rows" kernels, batch and instance norm
on the "channels" kernels of ``ember.cpu_kernels.normalization`` (one pass for
the statistics, one for the output). Their first-order backward is a fused
kernel too; when a graph of the gradient is wanted (``create_graph=True``,
i.e. grad mode is on inside backward) the same gradient is computed in
differentiable tensor ops instead, so double backward works. Eval-mode batch
norm, RMS norm, local response norm and ``normalize`` are short tensor-op
compositions that autograd differentiates directly. float16 is computed in float32.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import dtypes
from ...tensor._dispatch import ascontiguous, compute_dtype, family
from ...tensor.tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
           "normalize"]


# ------------------------------------------------------------------ array plumbing
def _flat(t: Tensor, cdt: dtypes.dtype) -> np.ndarray:
    """``t``'s data as a flat C-contiguous array in the compute dtype (no copy when it already is one)."""
    return ascontiguous(t._array, dtype=cdt.np).reshape(-1)


def _flat_or_empty(t: Tensor | None, cdt: dtypes.dtype) -> np.ndarray:
    """A parameter's flat array, or an empty one (the kernels' "absent")."""
    return _flat(t, cdt) if t is not None else np.empty(0, cdt.np)


def _result(y: np.ndarray, like: Tensor) -> Tensor:
    return Tensor._make(y.reshape(like.shape).astype(like.dtype.np, copy=False))


def _param_grad(g: np.ndarray, param: Tensor | None, needed: bool) -> Tensor | None:
    if param is None or not needed:
        return None
    return Tensor._make(g.reshape(param.shape).astype(param.dtype.np))


def _check_dtypes(input: Tensor, *others: Tensor | None) -> None:
    """torch's CPU rule: float32/float64 inputs need parameters of the same dtype; float16 takes float16 or float32."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"expected a floating-point input, but got {input.dtype}")
    allowed = (input.dtype, dtypes.float32) if input.dtype is dtypes.float16 else (input.dtype,)
    for t in others:
        if t is not None and t.dtype not in allowed:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


# ------------------------------------------------------------------ differentiable gradient (create_graph path)
def _composite_grads(x4: Tensor, w4: Tensor | None, gy4: Tensor, dims: tuple[int, int], eps: float
                     ) -> tuple[Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias) of normalize-over-``dims``-then-affine, in tensor ops so they can be differentiated.

    ``x4`` is a 4-d view (A, G, K, S) whose dims (1, 2) are the channel; weight/bias grads sum over (0, 3).
    """
    cdt = compute_dtype(x4.dtype)
    x4, gy4 = x4.to(cdt), gy4.to(cdt)
    mean = x4.mean(dims, keepdim=True)
    centred = x4 - mean
    rstd = ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = centred * rstd
    g = gy4 * w4.to(cdt) if w4 is not None else gy4
    dx = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
    return dx, (gy4 * xhat).sum((0, 3)), gy4.sum((0, 3))


def _grads_as_tensors(x: Tensor, weight: Tensor | None, bias: Tensor | None, needs: tuple, grads: tuple) -> tuple:
    dx, dw, db = grads
    return (dx.reshape(x.shape).to(x.dtype) if needs[0] else None,
            dw.reshape(weight.shape).to(weight.dtype) if weight is not None and needs[1] else None,
            db.reshape(bias.shape).to(bias.dtype) if bias is not None and needs[2] else None)


# ------------------------------------------------------------------ rows: layer norm, group norm
class _RowsNorm(Function):
    """Normalize rows of ``K * S`` elements; the affine channel of run ``k`` of row ``r`` is ``(r % G) * K + k``."""

    @staticmethod
    def forward(ctx, x, weight, bias, groups, k, s, eps):
        cdt = compute_dtype(x.dtype)
        xa = _flat(x, cdt)
        rows = xa.size // (k * s) if xa.size else 0
        mean, rstd, y = np.empty(rows, like=xa), np.empty(rows, like=xa), np.empty_like(xa)
        if xa.size:
            family("normalization", xa).rows_norm_forward(xa, _flat_or_empty(weight, cdt), _flat_or_empty(bias, cdt),
                                                          groups, k, s, eps, y, mean, rstd)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.arrays, ctx.geometry, ctx.eps = (xa, mean, rstd), (groups, k, s), eps
        return _result(y, x)

    @staticmethod
    def backward(ctx, gy):
        x, weight, bias = ctx.saved_tensors
        groups, k, s = ctx.geometry
        needs = ctx.needs_input_grad
        if is_grad_enabled() and x.numel():
            view = (-1, groups, k, s)
            w4 = weight.reshape(1, groups, k, 1) if weight is not None else None
            grads = _composite_grads(x.reshape(view), w4, gy.reshape(view), (2, 3), ctx.eps)
            return _grads_as_tensors(x, weight, bias, needs, grads) + (None,) * 4
        xa, mean, rstd = ctx.arrays
        kernels = family("normalization", xa)
        cdt = compute_dtype(x.dtype)
        dya = _flat(gy, cdt)
        dx = None
        if needs[0]:
            dxa = np.empty_like(xa)
            if xa.size:
                kernels.rows_norm_backward(dya, xa, mean, rstd, _flat_or_empty(weight, cdt), groups, k, s, dxa)
            dx = _result(dxa, x)
        dw = db = None
        if (weight is not None and needs[1]) or (bias is not None and needs[2]):
            dw, db = np.zeros(groups * k, like=xa), np.zeros(groups * k, like=xa)
            if xa.size:
                kernels.rows_norm_affine_grads(dya, xa, mean, rstd, groups, k, s, dw, db)
        return dx, _param_grad(dw, weight, needs[1]), _param_grad(db, bias, needs[2]), None, None, None, None


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
    shape = _normalized_shape(normalized_shape)
    _check_normalized(input, shape, ", ", weight=weight, bias=bias)
    _check_dtypes(input, weight, bias)
    return _RowsNorm.apply(input, weight, bias, 1, math.prod(shape), 1, float(eps))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each group of ``C / num_groups`` channels of each sample, then a per-channel affine."""
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
    return _RowsNorm.apply(input, weight, bias, int(num_groups), channels // num_groups, spatial, float(eps))


# ------------------------------------------------------------------ channels: batch norm, instance norm
def _channel_geometry(x: Tensor) -> tuple[int, int, int]:
    return x.shape[0], x.shape[1], math.prod(x.shape[2:])


class _ChannelNorm(Function):
    """Batch norm with the batch's statistics (computed by the caller: ``stats = (x_flat, mean, var)``)."""

    @staticmethod
    def forward(ctx, x, weight, bias, stats, eps):
        xa, mean, var = stats
        a, c, s = _channel_geometry(x)
        rstd = 1.0 / np.sqrt(var + eps)
        scale = rstd * weight._array.astype(np.float64).reshape(-1) if weight is not None else rstd
        shift = -mean * scale
        if bias is not None:
            shift += bias._array.astype(np.float64).reshape(-1)
        y = np.empty_like(xa)
        family("normalization", xa).channel_fma(xa, xa, scale, np.zeros(c, like=xa), shift, c, s, y)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.arrays, ctx.eps = (xa, mean, rstd), eps
        return _result(y, x)

    @staticmethod
    def backward(ctx, gy):
        x, weight, bias = ctx.saved_tensors
        needs = ctx.needs_input_grad
        a, c, s = _channel_geometry(x)
        if is_grad_enabled():
            w4 = weight.reshape(1, 1, c, 1) if weight is not None else None
            grads = _composite_grads(x.reshape(a, 1, c, s), w4, gy.reshape(a, 1, c, s), (0, 3), ctx.eps)
            return _grads_as_tensors(x, weight, bias, needs, grads) + (None, None)
        xa, mean, rstd = ctx.arrays
        kernels = family("normalization", xa)
        dya = _flat(gy, compute_dtype(x.dtype))
        sum_dy, sum_dy_xmu = np.zeros(c, like=xa), np.zeros(c, like=xa)
        if xa.size:
            kernels.channel_grad_sums(dya, xa, mean, a, c, s, sum_dy, sum_dy_xmu)
        dx = None
        if needs[0]:
            n = max(a * s, 1)  # an empty batch has an empty gradient
            wr = rstd * weight._array.astype(np.float64).reshape(-1) if weight is not None else rstd
            q = -wr * rstd * rstd * sum_dy_xmu / n
            dxa = np.empty_like(xa)
            kernels.channel_fma(dya, xa, wr, q, -wr * sum_dy / n - mean * q, c, s, dxa)
            dx = _result(dxa, x)
        return dx, _param_grad(sum_dy_xmu * rstd, weight, needs[1]), _param_grad(sum_dy, bias, needs[2]), None, None


def _batch_stats(x: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x as a flat compute-dtype array, per-channel mean, biased variance) in one pass."""
    a, c, s = _channel_geometry(x)
    xa = _flat(x, compute_dtype(x.dtype))
    mean, var = np.zeros(c, like=xa), np.zeros(c, like=xa)
    if xa.size:
        family("normalization", xa).channel_moments(xa, a, c, s, mean, var)
    return xa, mean, var


def _update_running(running: Tensor | None, batch_value: np.ndarray, momentum: float) -> None:
    """``running = momentum * batch + (1 - momentum) * running``, written straight into the buffer (no graph, and,
    as in torch, no overlap check: an expanded buffer is updated too)."""
    if running is None:
        return
    buffer = running._array
    if any(stride == 0 and n > 1 for stride, n in zip(buffer.strides, buffer.shape)):
        _update_overlapping(buffer, batch_value, momentum)
    else:
        new = momentum * batch_value + (1.0 - momentum) * buffer.astype(np.float64).reshape(-1)
        np.copyto(buffer, new.reshape(buffer.shape), casting="unsafe")
    running._version.value += 1


def _update_overlapping(buffer: np.ndarray, batch_value: np.ndarray, momentum: float) -> None:
    """Channel by channel, each reading what the previous one wrote (torch's serial loop over a shared element)."""
    for channel, index in enumerate(np.ndindex(*buffer.shape)):
        buffer[index] = momentum * float(batch_value[channel]) + (1.0 - momentum) * float(buffer[index])


def _affine_eval(input: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor | None,
                 bias: Tensor | None, eps: float) -> Tensor:
    """Batch norm with fixed statistics: a per-channel ``x * scale + shift`` in tensor ops."""
    cdt = compute_dtype(input.dtype)
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
    stats = _batch_stats(input)
    a, _, s = _channel_geometry(input)
    n = a * s
    if n > 0:
        _update_running(running_mean, stats[1], momentum)
        _update_running(running_var, stats[2] * n / (n - 1) if n > 1 else np.full_like(stats[2], np.nan), momentum)
    return _ChannelNorm.apply(input, weight, bias, stats, float(eps))


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
    shape = _normalized_shape(normalized_shape)
    _check_normalized(input, shape, "", weight=weight)
    cdt = compute_dtype(input.dtype)
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
    from ...tensor.joins import cat

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
