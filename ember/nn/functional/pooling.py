"""Max, average, adaptive, Lp pooling and max-unpooling (1-, 2- and 3-d).

All flavours become per-dim windows (``Windows``) that two fused ops (max,
average: ``ember.tensor.fused.pooling``) consume, so ceil mode, padding,
dilation and adaptive sizes are handled once, in Python, when the windows are
built here.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..._determinism import alert_not_deterministic
from ...tensor import autocast_policy, dtypes
from ...tensor.fused import pooling as fused
from ...tensor.fused.pooling import Windows, lead_dims, plane_sizes
from ...tensor.tensor import Tensor

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]

_WORDS = {1: "one", 2: "two", 3: "three"}


# ------------------------------------------------------------------------------------------------------ windows
def pool_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """torch's pooling output length; in ceil mode the last window must start inside the input or left padding."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _max_dim(size: int, kernel: int, stride: int, pad: int, dilation: int, out: int) -> tuple:
    starts, counts = [], []
    for o in range(out):
        start = o * stride - pad
        end = min(start + dilation * (kernel - 1) + 1, size)
        while start < 0:
            start += dilation
        starts.append(start)
        counts.append(max(0, -(-(end - start) // dilation)))
    return starts, counts, dilation, counts


def _avg_dim(size: int, kernel: int, stride: int, pad: int, include_pad: bool, out: int) -> tuple:
    starts, counts, divisors = [], [], []
    for o in range(out):
        start = o * stride - pad
        end = min(start + kernel, size + pad)
        padded = end - start
        start, end = max(start, 0), min(end, size)
        starts.append(start)
        counts.append(max(0, end - start))
        divisors.append(padded if include_pad else max(0, end - start))
    return starts, counts, 1, divisors


def _adaptive_dim(size: int, out: int) -> tuple:
    starts = [o * size // out for o in range(out)]
    counts = [-(-(o + 1) * size // out) - s for o, s in enumerate(starts)]
    return starts, counts, 1, counts


@functools.lru_cache(maxsize=256)
def _sliding_windows(kind: str, in_size: tuple, kernel: tuple, stride: tuple, pad: tuple, dilation: tuple,
                     ceil_mode: bool, include_pad: bool, override: int) -> Windows:
    dims = []
    for n, k, s, p, d in zip(in_size, kernel, stride, pad, dilation):
        out = pool_output_size(n, k, s, p, d, ceil_mode)
        dims.append(_max_dim(n, k, s, p, d, out) if kind == "max" else _avg_dim(n, k, s, p, include_pad, out))
    return Windows(dims, in_size, override)


@functools.lru_cache(maxsize=256)
def _adaptive_windows(in_size: tuple, out_size: tuple) -> Windows:
    return Windows([_adaptive_dim(n, o) for n, o in zip(in_size, out_size)], in_size)


# ---------------------------------------------------------------------------------------------------- validation
def _check_input(op: str, x: Any, nd: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2) or any(n == 0 for n in x.shape[x.ndim - nd - 1:]):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{list(x.shape)}")


def _pool_tuple(value: Any, nd: int, name: str, op: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * nd
    items = tuple(value) if isinstance(value, (tuple, list)) else None
    if items is None or len(items) not in (1, nd) or not all(isinstance(v, (int, np.integer)) for v in items):
        raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of {_WORDS[nd]} ints")
    return tuple(int(v) for v in items) * (nd if len(items) == 1 else 1)


def _sliding(kind: str, op: str, x: Tensor, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
             ceil_mode: bool, include_pad: bool = True, divisor_override: Any = None) -> Windows:
    """Check a max/avg pooling call the way torch does and build its windows."""
    _check_input(op, x, nd)
    kernel = _pool_tuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
        _pool_tuple(stride, nd, "stride", op)
    pad = _pool_tuple(padding, nd, "padding", op)
    dilation = _pool_tuple(dilation, nd, "dilation", op)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_size={list(kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation={list(dilation)}")
    for p, k, d in zip(pad, kernel, dilation):
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    spatial = tuple(x.shape[x.ndim - nd:])
    out = tuple(pool_output_size(*a, ceil_mode) for a in zip(spatial, kernel, stride, pad, dilation))
    if any(o < 1 for o in out):
        channels = x.shape[x.ndim - nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (channels,) + spatial))}). Calculated output "
                           f"size: ({'x'.join(map(str, (channels,) + out))}). Output size is too small")
    return _sliding_windows(kind, spatial, kernel, stride, pad, dilation, bool(ceil_mode), bool(include_pad),
                            int(divisor_override or 0))


# Adaptive pools whose emptiness check covers only the pooled dims (torch's 1-d average pool runs the 2-d one).
_CHECKS_POOLED_DIMS_ONLY = ("adaptive_avg_pool1d", "adaptive_avg_pool2d")


def _check_adaptive_nonempty(op: str, x: Tensor, nd: int) -> None:
    """torch's check of the non-batch dims: the pooled dims for 1-/2-d average pooling, every dim after the first
    for the others (so an unbatched input may have no channels)."""
    first = x.ndim - nd if op in _CHECKS_POOLED_DIMS_ONLY else 1
    for i in range(first, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {i} being empty")


def _adaptive_sizes(op: str, spatial: tuple, nd: int, output_size: Any) -> tuple[int, ...]:
    """The output size, ``None`` entries taking the input's size."""
    sizes = (output_size,) * nd if isinstance(output_size, (int, np.integer)) else tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{op}() argument 'output_size' should contain {_WORDS[nd]} int"
                           f"{'s' if nd > 1 else ''} (got {len(sizes)})")
    sizes = tuple(n if o is None else int(o) for o, n in zip(sizes, spatial))
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{op}(): elements of output_size must be greater than or equal to 0 but received "
                           f"{list(sizes)}")
    return sizes


def _adaptive(op: str, x: Any, nd: int, output_size: Any) -> Windows:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(x.shape)}")
    spatial = tuple(x.shape[x.ndim - nd:])
    sizes = _adaptive_sizes(op, spatial, nd, output_size)
    # torch averages to size 1 by a mean over the pooled dims (see ``_adaptive_avg``), which checks no sizes
    is_mean = op.startswith("adaptive_avg") and all(o == 1 for o in sizes)
    if not is_mean:
        _check_adaptive_nonempty(op, x, nd)
    if not x.dtype.is_floating_point:
        if is_mean:
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                               f"or complex dtype. Got: {x.dtype.scalar_type_name}")
        raise NotImplementedError(f"\"{op}\" not implemented for '{x.dtype.scalar_type_name}'")
    return _adaptive_windows(spatial, sizes)


def _max_result(x: Tensor, win: Windows, nd: int, return_indices: bool, keeps_3d: bool = True) -> Any:
    out, indices = fused.max_pool(x, win, nd, keeps_3d)
    return (out, indices) if return_indices else out


# ---------------------------------------------------------------------------------------------------- public ops
def _max_pool(nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
              return_indices: bool) -> Any:
    win = _sliding("max", f"max_pool{nd}d", input, nd, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_result(input, win, nd, return_indices)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of the last dim; with ``return_indices`` also each maximum's position."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding (kH, kW) windows; stride defaults to the kernel size, padding counts as -inf."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding (kD, kH, kW) windows."""
    if autocast_policy.ACTIVE and autocast_policy.covers("max_pool3d", input):
        return autocast_policy.run("max_pool3d", max_pool3d, input, kernel_size, stride, padding, dilation, ceil_mode,
                                   return_indices)
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = True) -> Any:
    """``max_pool1d`` returning (values, indices)."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = True) -> Any:
    """``max_pool2d`` returning (values, indices)."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = True) -> Any:
    """``max_pool3d`` returning (values, indices)."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: Any) -> Tensor:
    win = _sliding("avg", f"avg_pool{nd}d", input, nd, kernel_size, stride, padding, 1, ceil_mode,
                   count_include_pad, divisor_override)
    return fused.avg_pool(input, win, nd)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last dim (zero padding counted unless ``count_include_pad=False``)."""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding (kH, kW) windows; ``divisor_override`` replaces the window size as the divisor."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over sliding (kD, kH, kW) windows."""
    if autocast_policy.ACTIVE and autocast_policy.covers("avg_pool3d", input):
        return autocast_policy.run("avg_pool3d", avg_pool3d, input, kernel_size, stride, padding, ceil_mode,
                                   count_include_pad, divisor_override)
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive_avg(nd: int, input: Tensor, output_size: Any) -> Tensor:
    """Adaptive mean pooling; to size 1 it is, as in torch, a mean over the pooled dims (NaN over empty ones)."""
    win = _adaptive(f"adaptive_avg_pool{nd}d", input, nd, output_size)
    if win.out_size == (1, 1, 1):
        return input.mean(tuple(range(-nd, 0)), keepdim=True)
    return fused.avg_pool(input, win, nd)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean pooling to a given length: window o spans [floor(o*L/out), ceil((o+1)*L/out))."""
    return _adaptive_avg(1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Mean pooling to a given (H, W); None keeps that dim's size."""
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Mean pooling to a given (D, H, W); None keeps that dim's size."""
    if autocast_policy.ACTIVE and autocast_policy.covers("adaptive_avg_pool3d", input):
        return autocast_policy.run("adaptive_avg_pool3d", adaptive_avg_pool3d, input, output_size)
    return _adaptive_avg(3, input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a given length (adaptive windows)."""
    return _max_result(input, _adaptive("adaptive_max_pool1d", input, 1, output_size), 1, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a given (H, W) (adaptive windows)."""
    return _max_result(input, _adaptive("adaptive_max_pool2d", input, 2, output_size), 2, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a given (D, H, W) (adaptive windows)."""
    if autocast_policy.ACTIVE and autocast_policy.covers("adaptive_max_pool3d", input):
        return autocast_policy.run("adaptive_max_pool3d", adaptive_max_pool3d, input, output_size, return_indices)
    return _max_result(input, _adaptive("adaptive_max_pool3d", input, 3, output_size), 3, return_indices,
                       keeps_3d=False)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    """``adaptive_max_pool1d`` returning (values, indices)."""
    return adaptive_max_pool1d(input, output_size, return_indices)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    """``adaptive_max_pool2d`` returning (values, indices)."""
    return adaptive_max_pool2d(input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = True) -> Any:
    """``adaptive_max_pool3d`` returning (values, indices)."""
    return adaptive_max_pool3d(input, output_size, return_indices)


def _max_unpool(nd: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                output_size: Any) -> Tensor:
    op = f"max_unpool{nd}d"
    _check_input(op, input, nd)
    alert_not_deterministic(f"max_unpooling{max(nd, 2)}d_forward_out")  # duplicate indices: unspecified in torch
    if not isinstance(indices, Tensor) or indices.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: elements of indices should be type int64")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    kernel = _pool_tuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None else _pool_tuple(stride, nd, "stride", op)
    pad = _pool_tuple(padding, nd, "padding", op)
    spatial = tuple(input.shape[input.ndim - nd:])
    default = tuple((n - 1) * s + k - 2 * p for n, s, k, p in zip(spatial, stride, kernel, pad))
    if output_size is None:
        size = default
    else:
        size = tuple(int(v) for v in output_size)[-nd:]
        if len(size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(tuple(output_size))}'")
        for n, d, s in zip(size, default, stride):
            if not d - s < n < d + s:
                raise ValueError(f"invalid output_size \"{list(size)}\" (dim {size.index(n)} must be between "
                                 f"{d - s} and {d + s})")
    planes, count = plane_sizes(tuple(input.shape), nd)
    total = math.prod(size)
    flat = indices._array.reshape(planes, count) if planes else indices._array.reshape(0, count)
    if flat.size and (flat.min() < 0 or flat.max() >= total):
        bad = int(flat.max() if flat.max() >= total else flat.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size {'x'.join(map(str, size))})")
    out = input.new_zeros((planes, total)).scatter(1, indices.reshape(planes, count), input.reshape(planes, count))
    return out.reshape(lead_dims(tuple(input.shape), nd) + size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of max_pool1d: values back at their indices, zeros elsewhere."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of max_pool2d: values back at their indices, zeros elsewhere."""
    if autocast_policy.ACTIVE and autocast_policy.covers("max_unpool2d", input):
        return autocast_policy.run("max_unpool2d", max_unpool2d, input, indices, kernel_size, stride, padding,
                                   output_size)
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of max_pool3d."""
    if autocast_policy.ACTIVE and autocast_policy.covers("max_unpool3d", input):
        return autocast_policy.run("max_unpool3d", max_unpool3d, input, indices, kernel_size, stride, padding,
                                   output_size)
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def _lp_pool(nd: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool) -> Tensor:
    kernel = _pool_tuple(kernel_size, nd, "kernel_size", f"lp_pool{nd}d")
    pooled = _avg_pool(nd, input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None)
    return (pooled.sign() * pooled.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum of x**p over each window) ** (1/p)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (kH, kW) windows."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over (kD, kH, kW) windows."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


TORCH_FUNCTIONS = {
    "max_pool1d": max_pool1d, "max_pool2d": max_pool2d, "max_pool3d": max_pool3d, "avg_pool1d": avg_pool1d,
    "adaptive_avg_pool1d": adaptive_avg_pool1d, "max_pool1d_with_indices": max_pool1d_with_indices,
    # torch.adaptive_max_pool1d (unlike F.adaptive_max_pool1d) always returns (values, indices).
    "adaptive_max_pool1d": adaptive_max_pool1d_with_indices,
}
