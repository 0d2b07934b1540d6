"""Convolutions and transposed convolutions (1-, 2- and 3-d), with torch's arguments, checks and errors.

The checked call becomes a ``ConvGeometry``; the ops themselves (im2col plus one
BLAS product per group, differentiable to any order) are ``ember.tensor.fused.conv``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...tensor import autocast_policy, dtypes
from ...tensor.fused.conv import ConvGeometry, conv, conv_transpose
from ...tensor.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


# ----------------------------------------------------------------------------------------------- argument handling
def _ntuple(value: Any, n: int, name: str, op: str = "") -> tuple[int, ...]:
    """An int or a sequence of 1 or ``n`` ints as an ``n``-tuple, with torch's errors."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, tuple, list, Sequence)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    items = tuple(value)
    wrong = [v for v in items if isinstance(v, bool) or not isinstance(v, (int, np.integer))]
    if wrong:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                        f"{type(wrong[0]).__name__}")
    if len(items) == 1:
        return (int(items[0]),) * n
    if len(items) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(items)}")
    return tuple(int(v) for v in items)


def output_size(size: int, kernel: int, stride: int, pad_total: int, dilation: int, ceil: bool = False) -> int:
    """Positions a window fits along a dim of ``size`` padded by ``pad_total`` in all."""
    span = size + pad_total - dilation * (kernel - 1) - 1
    return (-(-span // stride) if ceil else span // stride) + 1


# ---------------------------------------------------------------------------------------------------- validation
def _check_operands(op: str, nd: int, x: Any, w: Any, bias: Any) -> bool:
    """Types, ranks and dtypes; returns whether ``x`` is unbatched."""
    for arg, label in ((x, "input"), (w, "weight")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"{op}(): argument '{label}' (position {1 if label == 'input' else 2}) must be Tensor, "
                            f"not {type(arg).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{op}(): argument 'bias' must be Tensor, not {type(bias).__name__}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got input of "
                           f"size: {list(x.shape)}")
    if w.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {op}, but got weight of size {list(w.shape)}")
    if x.dtype is not w.dtype and not _empty_batch(x, nd):  # torch checks it in the kernel an empty batch skips
        raise RuntimeError(f"Input type ({x.type()}) and weight type ({w.type()}) should be the same")
    if bias is not None and bias.dtype is not x.dtype:
        raise RuntimeError(f"Input type ({x.dtype.scalar_type_name.lower()}) and bias type "
                           f"({bias.dtype.scalar_type_name.lower()}) should be the same")
    if x.dtype is dtypes.bool:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")
    return x.ndim == nd + 1


def _empty_batch(x: Tensor, nd: int) -> bool:
    return x.ndim == nd + 2 and x.shape[0] == 0


def _check_empty_input(op: str, nd: int, x: Tensor) -> None:
    """torch convolves an empty input only when its batch or its channels are empty."""
    if x.numel() == 0 and x.shape[0] and x.shape[1]:
        shape = list(x.shape) if nd > 1 else list(x.shape[:2]) + [1] + list(x.shape[2:])   # conv1d runs as 2-d
        raise RuntimeError(f"{op}: Only zero batch or zero channel inputs are supported, but got input shape: {shape}")


def _mixed_dtype_empty_batch(x: Tensor, w: Tensor, bias: Tensor | None, shape: tuple[int, ...]) -> Tensor:
    """torch's result for an empty batch whose weight has another dtype: ``x * w[0] (+ bias[0])`` viewed to the
    output shape, so its dtype follows type promotion."""
    out = x * w.reshape(-1)[0]
    if bias is not None:
        out = out + bias[0]
    return out.reshape(shape)


def _check_hyper(stride, dilation, groups: int, padding=None) -> None:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise TypeError(f"argument 'groups' must be int, not {type(groups).__name__}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if padding is not None and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_channels(x: Tensor, w: Tensor, bias: Tensor | None, groups: int, transposed: bool) -> None:
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(w.shape)}] instead")
    expected = w.shape[0] if transposed else w.shape[1] * groups
    if x.shape[1] != expected:
        given = f"transposed=1, weight of size {list(w.shape)}" if transposed else \
            f"groups={groups}, weight of size {list(w.shape)}"
        raise RuntimeError(f"Given {given}, expected input{list(x.shape)} to have {expected} channels, but got "
                           f"{x.shape[1]} channels instead")
    out_channels = w.shape[1] * groups if transposed else w.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        prefix = "transposed=1, " if transposed else ""
        raise RuntimeError(f"Given {prefix}weight of size {list(w.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")


def _same_padding(kernel, dilation, stride, op: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    lo = tuple(t // 2 for t in total)
    return lo, tuple(t - p for t, p in zip(total, lo))


# ---------------------------------------------------------------------------------------------------- public ops
def _convnd(nd: int, op: str, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
            dilation: Any, groups: int) -> Tensor:
    if autocast_policy.ACTIVE and autocast_policy.covers(op, input):
        return autocast_policy.run(op, _convnd, nd, op, input, weight, bias, stride, padding, dilation, groups)
    unbatched = _check_operands(op, nd, input, weight, bias)
    x = input.unsqueeze(0) if unbatched else input
    stride = _ntuple(stride, nd, "stride", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * nd
        elif padding == "same":
            _check_hyper(stride, dilation, groups)
            lo, hi = _same_padding(kernel, dilation, stride, op)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        lo = hi = _ntuple(padding, nd, "padding", op)
    _check_hyper(stride, dilation, groups, lo)
    _check_channels(x, weight, bias, groups, transposed=False)
    image = tuple(x.shape[2:])
    padded = [i + a + b for i, a, b in zip(image, lo, hi)]
    if any(p < d * (k - 1) + 1 for p, k, d in zip(padded, kernel, dilation)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
            f"({' x '.join(str(d * (k - 1) + 1) for k, d in zip(kernel, dilation))}). Kernel size can't be greater "
            "than actual input size")
    _check_empty_input(op, nd, x)
    cols = tuple(output_size(i, k, s, a + b, d) for i, k, s, a, b, d in zip(image, kernel, stride, lo, hi, dilation))
    if x.dtype is not weight.dtype:
        return _mixed_dtype_empty_batch(x, weight, bias, (0, weight.shape[0]) + cols)
    geo = ConvGeometry(nd, kernel, stride, lo, dilation, image, cols, groups)
    out = conv(x, weight, bias, geo)
    return out.squeeze(0) if unbatched else out


def _conv_transposend(nd: int, op: str, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                      padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    if autocast_policy.ACTIVE and autocast_policy.covers(op, input):
        return autocast_policy.run(op, _conv_transposend, nd, op, input, weight, bias, stride, padding,
                                   output_padding, groups, dilation)
    unbatched = _check_operands(op, nd, input, weight, bias)
    x = input.unsqueeze(0) if unbatched else input
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    stride = _ntuple(stride, nd, "stride", op)
    padding = _ntuple(padding, nd, "padding", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    extra = _ntuple(output_padding, nd, "output_padding", op)
    _check_hyper(stride, dilation, groups, padding)
    if any(e < 0 for e in extra):
        raise RuntimeError("negative output_padding is not supported")
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation)):
        names = ("depth", "height", "width")[3 - nd:] if nd > 1 else ("",)
        parts = [" ".join(f"{key}{'_' + n if n else ''}: {v}" for n, v in zip(names, vals))
                 for key, vals in (("output_padding", extra), ("stride", stride), ("dilation", dilation))]
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got {' '.join(parts)}")
    _check_channels(x, weight, bias, groups, transposed=True)
    _check_empty_input(op, nd, x)
    kernel = tuple(weight.shape[2:])
    cols = tuple(x.shape[2:])
    image = tuple((c - 1) * s - 2 * p + d * (k - 1) + e + 1
                  for c, s, p, d, k, e in zip(cols, stride, padding, dilation, kernel, extra))
    if any(i <= 0 for i in image):
        raise RuntimeError(f"{op}: the output size {image} computed from input size {cols}, kernel size {kernel}, "
                           f"stride {stride}, padding {padding} and dilation {dilation} is too small")
    if x.dtype is not weight.dtype:
        return _mixed_dtype_empty_batch(x, weight, bias, (0, weight.shape[1] * groups) + image)
    geo = ConvGeometry(nd, kernel, stride, padding, dilation, image, cols, groups)
    out = conv_transpose(x, weight, bias, geo)
    return out.squeeze(0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of (N, C, L) or (C, L) input with (OC, C/groups, K) weight."""
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) or (C, H, W) input; padding may be an int, a pair, 'same' or 'valid'."""
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-d convolution of (N, C, D, H, W) or (C, D, H, W) input."""
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 1-d convolution (the gradient of conv1d w.r.t. its input); weight is (C, OC/groups, K)."""
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 2-d convolution; weight is (C, OC/groups, kH, kW)."""
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 3-d convolution; weight is (C, OC/groups, kD, kH, kW)."""
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


TORCH_FUNCTIONS = {"conv1d": conv1d, "conv2d": conv2d, "conv3d": conv3d, "conv_transpose1d": conv_transpose1d,
                   "conv_transpose2d": conv_transpose2d, "conv_transpose3d": conv_transpose3d}
