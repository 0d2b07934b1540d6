"""Padding, resampling and pixel rearrangement: ``pad``, ``interpolate``, ``grid_sample``, ``pixel_shuffle``, ...

Every op here except constant padding is a composition of differentiable
ember ops, so gradients of any order come for free:

* replicate/reflect/circular padding and nearest resampling pick, along each
  padded dim, one source element per output element: ``index_select`` with an
  index vector computed in NumPy;
* linear/bilinear/bicubic/trilinear and area resampling are separable: along
  each spatial dim the output is a fixed (out x in) matrix applied to the input
  (one BLAS product per dim), whose adjoint is the transposed matrix;
* ``grid_sample`` gathers the corner values of each sample point and weights
  them with expressions of the grid, so autograd reaches both input and grid.

Constant padding gets its own ``Function``: its adjoint is constant padding by
the negated amounts (a crop where the forward padded, zeros where it cropped).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from ...autograd.function import Function
from ...tensor import autocast_policy
from ...tensor.tensor import Tensor
from ...tensor.device import place

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


# ----------------------------------------------------------------------------- shared helpers
def _ints(op: str, value: Any, arg: str) -> tuple[int, ...]:
    """A tuple/list/Size of ints with torch's TypeError for anything else."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{op}(): argument '{arg}' (position 2) must be tuple of ints, not {type(value).__name__}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}(): argument '{arg}' (position 2) must be tuple of ints, but found element of "
                            f"type {type(v).__name__} at pos {i}")
    return tuple(int(v) for v in value)


def _index(idx: np.ndarray) -> Tensor:
    return Tensor._make(np.ascontiguousarray(idx, dtype=np.int64))


def _select_along(x: Tensor, dim: int, idx: np.ndarray) -> Tensor:
    """``x`` with positions ``idx`` picked along ``dim`` (gradient: scatter-add back)."""
    return x.index_select(dim, _index(idx))


def _matrix_along(x: Tensor, dim: int, matrix: np.ndarray) -> Tensor:
    """Apply the (out x in) ``matrix`` along ``dim`` of ``x`` (gradient: the transposed matrix)."""
    m = Tensor._make(place(np.ascontiguousarray(matrix.T, dtype=x.dtype.np), x.device))
    return (x.movedim(dim, -1) @ m).movedim(-1, dim)


# ----------------------------------------------------------------------------- pad
class ConstantPad(Function):
    """Pad (or crop, for negative amounts) each dim by ``(before, after)`` filling with ``value``."""

    @staticmethod
    def forward(ctx, x: Tensor, amounts: tuple[tuple[int, int], ...], value: Any):
        ctx.amounts = amounts
        a = x._array
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, amounts))
        out = np.full(shape, value, dtype=a.dtype, like=a)
        src = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(a.shape, amounts))
        dst = tuple(slice(max(lo, 0), m - max(hi, 0)) for m, (lo, hi) in zip(shape, amounts))
        if all(s.stop > s.start for s in src) and out.size:
            out[dst] = a[src]
        return out

    @staticmethod
    def backward(ctx, g: Tensor):
        return ConstantPad.apply(g, tuple((-lo, -hi) for lo, hi in ctx.amounts), 0), None, None

    @classmethod
    def jvp_rule(cls, args: tuple, outputs: tuple, tangents: tuple) -> Tensor:
        """Forward mode: padding with a constant is affine, so the tangent is padded with zeros."""
        return cls.apply(tangents[0], args[1], 0)


def _per_dim(input: Tensor, pad: tuple[int, ...]) -> list[tuple[int, int]]:
    """torch's pad tuple (last dim first) as one ``(before, after)`` pair per dim of ``input``."""
    pairs = [(0, 0)] * input.ndim
    for k in range(len(pad) // 2):
        pairs[input.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    return pairs


def _constant_pad(input: Tensor, pad: tuple[int, ...], value: Any) -> Tensor:
    amounts = _per_dim(input, pad)
    for n, (lo, hi) in zip(input.shape, amounts):
        if n + min(lo, 0) + min(hi, 0) < 0:  # torch crops before it pads
            raise RuntimeError("narrow(): length must be non-negative.")
    return ConstantPad.apply(input, tuple(amounts), value)


_NONCONSTANT_HELP = ("Supported combinations for non-constant padding:\n"
                     "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                     "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                     "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _source_positions(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each output position along a dim of size ``n`` padded by ``(lo, hi)``, the input position it copies."""
    if mode == "circular":  # torch crops first, then wraps around the cropped extent
        start, stop = max(-lo, 0), n - max(-hi, 0)
        kept = np.arange(start, stop)
        lo, hi = max(lo, 0), max(hi, 0)
        return kept[np.arange(-lo, kept.size + hi) % kept.size] if kept.size else kept
    p = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    p = np.abs(p)  # reflect about the first element, then about the last
    return np.where(p > n - 1, 2 * (n - 1) - p, p)


def _check_nonconstant(input: Tensor, pad: tuple[int, ...], mode: str) -> None:
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                                  + _NONCONSTANT_HELP)
    spatial = input.shape[input.ndim - k:]
    amounts = _per_dim(input, pad)[input.ndim - k:]
    if mode == "circular":
        for n, (lo, hi) in zip(spatial, amounts):
            kept = n - max(-lo, 0) - max(-hi, 0)  # torch's result is undefined past n; we refuse past kept
            if lo > kept or hi > kept:
                raise RuntimeError("Padding value causes wrapping around more than once.")
        return
    if any(n == 0 for n in input.shape[-(k + 1):]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    if mode == "reflect":
        for j, (n, (lo, hi)) in enumerate(zip(spatial, amounts)):
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #{4 + 2 * (k - 1 - j)}: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({lo}, {hi}) at dimension "
                                   f"{input.ndim - k + j} of input {list(input.shape)}")
    out = [n + lo + hi for n, (lo, hi) in zip(spatial, amounts)]
    if k == 1 and out[0] < 1:
        raise RuntimeError(f"input (W: {spatial[0]}) is too small. Calculated output W: {out[0]}")
    for m in out:
        if m < 0:
            full = list(input.shape[:input.ndim - k]) + out
            raise RuntimeError(f"Trying to create tensor with negative dimension {m}: {full}")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad ``input``; ``pad`` lists ``(before, after)`` amounts starting from the LAST dim, as in torch.

    ``mode`` is ``'constant'`` (any number of dims, negative amounts crop), or ``'reflect'``,
    ``'replicate'``, ``'circular'`` (the last 1-3 dims of a batched or unbatched input).
    """
    if autocast_policy.ACTIVE and mode in _AUTOCAST_PADS and autocast_policy.covers(_AUTOCAST_PADS[mode], input):
        return autocast_policy.run(_AUTOCAST_PADS[mode], _padded, input, _ints("pad", pad, "pad"), mode, value)
    return _padded(input, _ints("pad", pad, "pad"), mode, value)


# autocast's names of the padding modes it covers (the CPU runs them in float32)
_AUTOCAST_PADS = {"reflect": "reflection_pad", "replicate": "replication_pad"}


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """``torch.constant_pad_nd``: constant padding over any number of trailing dims."""
    return _padded(input, _ints("constant_pad_nd", pad, "pad"), "constant", value)


def _padded(input: Tensor, pad: tuple[int, ...], mode: str, value: Any) -> Tensor:
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        return _constant_pad(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_nonconstant(input, pad, mode)
    out = input
    for d, (lo, hi) in enumerate(_per_dim(input, pad)):
        if lo or hi:
            out = _select_along(out, d, _source_positions(input.shape[d], lo, hi, mode))
    return out


# ----------------------------------------------------------------------------- interpolate
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _output_plan(input: Tensor, size: Any, scale_factor: Any,
                 recompute_scale_factor: bool | None) -> tuple[list[int], list[float | None]]:
    """Output sizes and the scale factors the coordinate maps use (None: derive from the sizes)."""
    spatial = list(input.shape[2:])
    dims = len(spatial)
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * dims
        if len(sizes) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {spatial} and output size of {size}. Please provide input tensor "
                             f"in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return [int(s) for s in sizes], [None] * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * dims
    if len(scales) != dims:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please "
                         f"provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                         f"format.")
    sizes = [math.floor(float(n) * float(s)) for n, s in zip(spatial, scales)]
    return sizes, [None] * dims if recompute_scale_factor else [float(s) for s in scales]


def _ratio(n_in: int, n_out: int, scale: float | None) -> float:
    """Input positions per output position: from the user's scale factor when given, else from the sizes."""
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _nearest_positions(n_in: int, n_out: int, scale: float | None, exact: bool) -> np.ndarray:
    r = _ratio(n_in, n_out, scale)
    dst = np.arange(n_out, dtype=np.float64) + (0.5 if exact else 0.0)
    return np.minimum(np.floor(dst * r).astype(np.int64), n_in - 1)


def _source_coords(n_in: int, n_out: int, scale: float | None, align_corners: bool, cubic: bool,
                   dtype: Any = np.float64) -> np.ndarray:
    """Input positions of the outputs in ``dtype``, rounded as torch's kernel rounds them: its scale in the input's
    precision, then one rounding of ``scale * (dst + 0.5) - 0.5`` (a fused multiply-add; extended precision
    stands in for it)."""
    dst = np.arange(n_out, dtype=np.longdouble)
    if align_corners:
        return (dst * dtype((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)).astype(dtype)
    src = (np.longdouble(dtype(_ratio(n_in, n_out, scale))) * (dst + 0.5) - 0.5).astype(dtype)
    return src if cubic else np.maximum(src, dtype(0.0))


def _linear_along(x: Tensor, dim: int, n_out: int, scale: float | None, align_corners: bool) -> Tensor:
    """Linear interpolation along ``dim`` from each output's two neighbours only, as torch computes it: a NaN or inf
    elsewhere in the row must not reach the output (and a dim that keeps its size weighs each value with itself)."""
    n_in = x.shape[dim]
    src = _source_coords(n_in, n_out, scale, align_corners, cubic=False, dtype=x.dtype.compute.np.type)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = i0 if n_in == n_out and scale in (None, 1.0) else np.minimum(i0 + 1, n_in - 1)
    shape = [1] * x.ndim
    shape[dim] = n_out
    frac = Tensor._make(place(np.asarray(src - i0, dtype=x.dtype.np).reshape(shape), x.device))
    return _select_along(x, dim, i0) * (1 - frac) + _select_along(x, dim, i1) * frac


def _cubic_weights(t: np.ndarray, a: float = -0.75) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the 4 taps at offsets -1, 0, 1, 2 from ``floor(src)``."""
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_matrix(n_in: int, n_out: int, scale: float | None, align_corners: bool) -> np.ndarray:
    src = _source_coords(n_in, n_out, scale, align_corners, cubic=True)
    base = np.floor(src).astype(np.int64)
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    for k, w in enumerate(_cubic_weights(src - base)):
        np.add.at(m, (rows, np.clip(base - 1 + k, 0, n_in - 1)), w)
    return m


def _area_matrix(n_in: int, n_out: int) -> np.ndarray:
    """Adaptive average pooling along one dim: output ``i`` averages ``[floor(i*in/out), ceil((i+1)*in/out))``."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        start, stop = (i * n_in) // n_out, ((i + 1) * n_in + n_out - 1) // n_out
        m[i, start:stop] = 1.0 / (stop - start)
    return m


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an ``(N, C, d1[, d2[, d3]])`` tensor to ``size`` or by ``scale_factor``."""
    if autocast_policy.ACTIVE and autocast_policy.covers("interpolate", input):
        return autocast_policy.run("interpolate", interpolate, input, size, scale_factor, mode, align_corners,
                                   recompute_scale_factor, antialias)
    if input.ndim not in (3, 4, 5) or mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _LINEAR_MODES:
        if input.ndim != _LINEAR_MODES[mode] + 2:
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR_MODES[mode] + 2}D "
                                      f"input")
        align_corners = bool(align_corners)
    elif align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        if mode not in ("bilinear", "bicubic"):
            raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
                             "tensor as input")
        raise NotImplementedError("interpolate(antialias=True) is not supported by ember")
    if mode == "area" and size is None:
        recompute_scale_factor = True
    sizes, scales = _output_plan(input, size, scale_factor, recompute_scale_factor)
    if any(n <= 0 for n in sizes) or any(n <= 0 for n in input.shape[2:]):
        raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(map(str, input.shape[2:]))}) and output ({', '.join(map(str, sizes))})")
    if mode not in ("nearest", "nearest-exact") and not input.is_floating_point():
        raise NotImplementedError(f'"upsample_{mode}" not implemented for \'{input.dtype}\'')
    out = input
    for j, (n_out, scale) in enumerate(zip(sizes, scales)):
        d, n_in = j + 2, input.shape[j + 2]
        if mode in ("nearest", "nearest-exact"):
            if n_in != n_out or scale not in (None, 1.0):
                out = _select_along(out, d, _nearest_positions(n_in, n_out, scale, mode == "nearest-exact"))
        elif mode == "area":
            out = _matrix_along(out, d, _area_matrix(n_in, n_out))
        elif mode == "bicubic":
            out = _matrix_along(out, d, _cubic_matrix(n_in, n_out, scale, align_corners))
        else:
            out = _linear_along(out, d, n_out, scale, align_corners)
    return out if out is not input else input.clone()


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------------- grid_sample / affine_grid
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Fold ``coord`` back and forth into ``[twice_low/2, twice_high/2]`` (differentiable almost everywhere)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = dist.fmod(span)
    flips = (dist / span).floor().detach()
    even = flips.fmod(2) == 0
    return (extra + low).where(even, span - extra + low)


def _source_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A normalised grid coordinate in ``[-1, 1]`` as a pixel position, folded per ``padding_mode``."""
    if align_corners:
        x = (coord + 1) / 2 * (size - 1)
    else:
        x = ((coord + 1) * size - 1) / 2
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
    if padding_mode in ("border", "reflection"):
        x = x.clamp(0, size - 1)
    return x


def _gather_points(flat: Tensor, corner: list[Tensor], spatial: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Values of ``flat`` (N, C, prod(spatial)) at integer positions ``corner`` (each (N, P)) and an in-bounds mask."""
    inside = None
    linear = None
    for pos, n in zip(corner, spatial):
        ok = (pos >= 0) & (pos <= n - 1)
        inside = ok if inside is None else inside & ok
        clipped = pos.clamp(0, n - 1)
        linear = clipped if linear is None else linear * n + clipped
    n_batch, channels = flat.shape[0], flat.shape[1]
    index = linear.long().unsqueeze(1).expand(n_batch, channels, linear.shape[1])
    return flat.gather(2, index), inside.unsqueeze(1)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, [D,] H, W) at the normalised points of ``grid`` (N, [Do,] Ho, Wo, 2|3).

    ``grid[..., 0]`` is x (width), ``grid[..., 1]`` is y (height), ``grid[..., 2]`` is z (depth).
    """
    if autocast_policy.ACTIVE and autocast_policy.covers("grid_sample", input):
        return autocast_policy.run("grid_sample", grid_sample, input, grid, mode, padding_mode, align_corners)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    k = input.ndim - 2
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != k:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {k} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample(mode='bicubic') is not supported by ember")
    if any(n == 0 for n in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                           f"{list(input.shape)} with dimension {input.shape.index(0)} being empty")
    n_batch, channels = input.shape[0], input.shape[1]
    spatial = tuple(input.shape[2:])  # (D,) H, W
    out_spatial = tuple(grid.shape[1:-1])
    points = grid.reshape(n_batch, -1, k)
    # grid's last axis runs x, y, z: reverse it to line up with the (D,) H, W dims
    coords = [_source_coord(points[:, :, k - 1 - j], spatial[j], padding_mode, align_corners) for j in range(k)]
    flat = input.reshape(n_batch, channels, -1)
    if mode == "nearest":
        values, inside = _gather_points(flat, [c.round().detach() for c in coords], spatial)
        out = values * inside
    else:
        lows = [c.floor().detach() for c in coords]
        out = None
        for corner in range(1 << k):
            picks = [(corner >> (k - 1 - j)) & 1 for j in range(k)]
            weight = None
            for c, lo, p in zip(coords, lows, picks):
                w = c - lo if p else lo + 1 - c
                weight = w if weight is None else weight * w
            values, inside = _gather_points(flat, [lo + p for lo, p in zip(lows, picks)], spatial)
            term = values * (weight.unsqueeze(1) * inside)
            out = term if out is None else out + term
    return out.reshape(n_batch, channels, *out_spatial)


def _base_coords(n: int, align_corners: bool, dtype: Any) -> np.ndarray:
    if n <= 1:
        return np.zeros(max(n, 0), dtype=dtype)
    steps = np.linspace(-1.0, 1.0, n)
    return (steps if align_corners else steps * (n - 1) / n).astype(dtype)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, [D,] H, W, 2|3) of the affine maps ``theta`` (N, 2, 3) or (N, 3, 4) for ``size``."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    k = len(size) - 2
    if k not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {_size_repr(size)}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        kind = "2D affine matrices of shape Nx2x3" if k == 2 else "3D affine matrices of shape Nx3x4"
        raise ValueError(f"Expected a batch of {kind} for size {_size_repr(size)}. Got {_size_repr(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    spatial = size[2:]
    axes = [_base_coords(n, align_corners, theta.dtype.np) for n in reversed(spatial)]  # x, y, (z)
    mesh = np.meshgrid(*reversed(axes), indexing="ij")  # per (D,) H, W
    columns = [mesh[k - 1 - j] for j in range(k)] + [np.ones(spatial, dtype=theta.dtype.np)]
    base = Tensor._make(place(np.ascontiguousarray(np.stack(columns, -1).reshape(-1, k + 1)), theta.device))
    grid = base @ theta.transpose(1, 2)  # (N, P, k)
    return grid.reshape(size[0], *spatial, k)


def _size_repr(shape: Sequence[int]) -> str:
    return f"torch.Size([{', '.join(str(int(s)) for s in shape)}])"


# ----------------------------------------------------------------------------- pixel rearrangement
def _expect_3d(input: Tensor, op: str) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} "
                           "dimension(s)")


def _shuffle_factor(input: Tensor, factor: int, op: str, name: str) -> int:
    """The checked block size ``r`` of pixel_(un)shuffle."""
    _expect_3d(input, op)
    r = int(factor)
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {r}")
    return r


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): move channel blocks into spatial blocks."""
    r = _shuffle_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    b = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W): the inverse of :func:`pixel_shuffle`."""
    r = _shuffle_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    b = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g*k, *) -> (N, k*g, *): interleave the channels of ``groups`` groups (ShuffleNet)."""
    groups = int(groups)
    _expect_3d(input, "channel_shuffle")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle

TORCH_FUNCTIONS = {"pixel_shuffle": pixel_shuffle, "pixel_unshuffle": pixel_unshuffle,
                   "channel_shuffle": channel_shuffle, "native_channel_shuffle": channel_shuffle,
                   "constant_pad_nd": constant_pad_nd}
