"""Joins and reorders: cat/stack and friends, flips, rolls, repeats, triangles, diagonals, diff.

Forwards work on NumPy arrays (these ops only move or copy elements);
backwards are written in differentiable ember ops (narrow, sum, flip, roll,
diagonal, ...) so double backward works. Ops that are a composition of
existing differentiable ops (stack, rot90, meshgrid, kron-like reshapes, diff)
are written as that composition and need no Function of their own.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.function import Function
from ..autograd.tangents import linear_jvp
from . import autocast_policy, dtypes
from ._dispatch import broadcast_shapes, on_device
from .memory_format import contiguous_format, empty_in_format, suggest_memory_format
from .conversion import clone
from .device import CPU, factory_device, place
from .elementwise import binary, inplace
from .indexing import index_add
from .tensor import Tensor, _wrap_dim
from . import views
from .views import expand, narrow, reshape, transpose, unsqueeze
from .out_arg import with_out
from .arguments import tensor_args


# ----------------------------------------------------------------------------- argument helpers
def _tensor_list(op: str, tensors: Any, arg: str = "tensors") -> list[Tensor]:
    """The tensors of a list/tuple argument, with torch's TypeError for anything else."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{arg}' must be tuple of Tensors, but found element of type "
                            f"{type(t).__name__}")
    return list(tensors)


def _varargs(tensors: tuple) -> tuple:
    """Accept ``f(a, b)`` and ``f([a, b])`` alike."""
    return tuple(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tuple(tensors)


def _int_tuple(op: str, value: Any, arg: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in value):
        return tuple(int(v) for v in value)
    raise TypeError(f"{op}(): argument '{arg}' must be tuple of ints, not {type(value).__name__}")


def _promoted(tensors: Sequence[Tensor]) -> dtypes.dtype:
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = dtypes.promote_types(dt, t.dtype)
    return dt


def _grad_as(g: Tensor, t_dtype: dtypes.dtype) -> Tensor:
    return g if g.dtype is t_dtype else g.to(t_dtype)


# ----------------------------------------------------------------------------- cat / stack
def _skipped(t: Tensor) -> bool:
    """torch's legacy rule: 1-D tensors of shape (0,) take no part in cat."""
    return t.ndim == 1 and t.shape[0] == 0


class Cat(Function):
    """Concatenation along ``dim`` in the promoted dtype; each input's gradient is its slice."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, dim: int, dt: dtypes.dtype, *tensors: Tensor):
        kept = [t._array for t in tensors if not _skipped(t)]
        ctx.dim, ctx.metas = dim, [(t.shape[dim] if not _skipped(t) else None, t.dtype) for t in tensors]
        return _concatenate(kept, dim, dt) if kept else np.empty((0,), dt.np)

    @staticmethod
    def backward(ctx, g: Tensor):
        grads, start = [], 0
        for need, (length, t_dtype) in zip(ctx.needs_input_grad[2:], ctx.metas):
            if length is None:
                grads.append(g.new_zeros((0,)).to(t_dtype) if need else None)
                continue
            grads.append(_grad_as(narrow(g, ctx.dim, start, length), t_dtype) if need else None)
            start += length
        return (None, None, *grads)


def _concatenate(arrays: list[Any], dim: int, dt: dtypes.dtype, seen: list[Any] | None = None) -> Any:
    """The arrays joined along ``dim`` in dtype ``dt``; on the host laid out as torch's cat: in the inputs'
    suggested memory format (read from ``seen``'s strides when given) when they all suggest one, else
    contiguous."""
    if any(on_device(a) for a in arrays):
        return np.concatenate([a.astype(dt.np, copy=False) for a in arrays], axis=dim)
    formats = {suggest_memory_format(a) for a in (arrays if seen is None else seen)}
    fmt = formats.pop() if len(formats) == 1 else contiguous_format
    shape = list(arrays[0].shape)
    shape[dim] = sum(a.shape[dim] for a in arrays)
    out = empty_in_format(tuple(shape), dt.np, fmt)
    return np.concatenate(arrays, axis=dim, out=out, casting="unsafe")


class _StackCat(Cat):
    """stack: a cat of unsqueezed tensors for the graph; its result laid out as torch's, a cat of the tensors
    along ``dim`` viewed with the new dim split off (after the last dim: the cat of the unsqueezed ones)."""

    @staticmethod
    def forward(ctx, dim: int, dt: dtypes.dtype, *tensors: Tensor):
        ctx.dim, ctx.metas = dim, [(1, t.dtype) for t in tensors]
        arrays = [t._array for t in tensors]
        if dim == arrays[0].ndim - 1:  # torch's unsqueeze gives a new last dim stride 1
            seen = [np.lib.stride_tricks.as_strided(a, a.shape, a.strides[:-1] + (a.itemsize,)) for a in arrays
                    if not on_device(a)]
            return _concatenate(arrays, dim, dt, seen)
        index = (slice(None),) * dim + (0,)
        joined = _concatenate([a[index] for a in arrays], dim, dt)
        return joined.reshape(arrays[0].shape[:dim] + (len(arrays),) + arrays[0].shape[dim + 1:])


_STACK = _StackCat.named("StackBackward0")


@tensor_args
@with_out(cast=True)
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim; mixed dtypes are promoted as torch does."""
    if autocast_policy.ACTIVE and autocast_policy.covers("cat", tensors):
        return autocast_policy.run("cat", cat, tensors, dim)
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    kept = [(i, t) for i, t in enumerate(tensors) if not _skipped(t)]
    ref = kept[0][1] if kept else tensors[0]
    d = _wrap_dim(dim, ref.ndim, "cat")
    for i, t in kept:
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {t.ndim}")
        for j, (n, m) in enumerate(zip(ref.shape, t.shape)):
            if j != d and n != m:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {n} but got "
                                   f"size {m} for tensor number {i} in the list.")
    return Cat.apply(d, _promoted(tensors), *tensors)


concat = cat
concatenate = cat


@tensor_args
@with_out(cast=True)
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equal-shaped tensors along a new dim."""
    if autocast_policy.ACTIVE and autocast_policy.covers("stack", tensors):
        return autocast_policy.run("stack", stack, tensors, dim)
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = _wrap_dim(dim, tensors[0].ndim + 1, "stack")   # torch checks the dim before the shapes
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    return _STACK.apply(d, _promoted(tensors), *(unsqueeze.__wrapped__(t, d) for t in tensors))  # no guard frames


def atleast_1d(*tensors: Tensor) -> Any:
    """Each tensor with at least one dim (0-d becomes shape (1,))."""
    out = tuple(reshape(t, (1,)) if t.ndim == 0 else t for t in _varargs(tensors))
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def atleast_2d(*tensors: Tensor) -> Any:
    """Each tensor with at least two dims (new dims in front)."""
    out = tuple(reshape(t, (1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t for t in _varargs(tensors))
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def atleast_3d(*tensors: Tensor) -> Any:
    """Each tensor with at least three dims, as NumPy: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    shapes = {0: lambda s: (1, 1, 1), 1: lambda s: (1, s[0], 1), 2: lambda s: (s[0], s[1], 1)}
    out = tuple(reshape(t, shapes[t.ndim](t.shape)) if t.ndim < 3 else t for t in _varargs(tensors))
    return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else out


def _stack_family(op: str, tensors: Any, lift: Callable, dim: Callable[[list[Tensor]], int]) -> Tensor:
    tensors = _tensor_list(op, tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    lifted = [lift(t) for t in tensors]
    return cat(lifted, dim(lifted))


@tensor_args
@with_out(cast=True)
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join column-wise (dim 1), or along dim 0 for 1-D tensors."""
    return _stack_family("hstack", tensors, atleast_1d, lambda ts: 0 if ts[0].ndim == 1 else 1)


@tensor_args
@with_out(cast=True)
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join row-wise after making every tensor at least 2-D."""
    return _stack_family("vstack", tensors, atleast_2d, lambda ts: 0)


row_stack = vstack


@tensor_args
@with_out(cast=True)
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join depth-wise (dim 2) after making every tensor at least 3-D."""
    return _stack_family("dstack", tensors, atleast_3d, lambda ts: 2)


@tensor_args
@with_out(cast=True)
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Join as columns: 0-D and 1-D tensors become (n, 1) columns first."""
    return _stack_family("column_stack", tensors, lambda t: reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t,
                         lambda ts: 1)


# ----------------------------------------------------------------------------- flips and rolls
def _unique_dims(op: str, dims: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    wrapped = tuple(_wrap_dim(d, ndim, op) for d in dims)
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return wrapped


class Flip(Function):
    """A reversed copy along ``dims``; flipping is its own adjoint."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, dims: tuple[int, ...]):
        ctx.dims = dims
        return np.flip(x._array, axis=dims).copy() if x.ndim else x._array.copy()

    @staticmethod
    def backward(ctx, g: Tensor):
        return Flip.apply(g, ctx.dims), None


@tensor_args
def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in torch)."""
    if not isinstance(dims, (list, tuple)):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}")
    return Flip.apply(input, _unique_dims("flip", _int_tuple("flip", dims, "dims"), input.ndim))


def _flip_method(self: Tensor, *dims: Any) -> Tensor:
    """``Tensor.flip(*dims)`` accepts ints as varargs as well as one sequence."""
    return flip(self, dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else tuple(dims))


@tensor_args
def fliplr(input: Tensor) -> Tensor:
    """Reverse dim 1 (left/right)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return Flip.apply(input, (1,))


@tensor_args
def flipud(input: Tensor) -> Tensor:
    """Reverse dim 0 (up/down)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return Flip.apply(input, (0,))


class Roll(Function):
    """Circular shift; the adjoint rolls back. ``dims=None`` rolls the flattened tensor."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, shifts: tuple[int, ...], dims: tuple[int, ...] | None):
        ctx.shifts, ctx.dims = shifts, dims
        a = x._array
        if dims is None:
            return np.roll(a.reshape(-1), shifts[0]).reshape(a.shape)
        return np.roll(a, shifts, axis=dims)

    @staticmethod
    def backward(ctx, g: Tensor):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.dims), None, None


@tensor_args
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements circularly along ``dims`` (or over the flattened tensor when ``dims`` is None)."""
    shifts = _int_tuple("roll", shifts, "shifts")
    dims = None if dims is None else _int_tuple("roll", dims, "dims")
    if not shifts:
        raise RuntimeError("`shifts` required")
    if dims is None and len(shifts) != 1 or dims is not None and len(dims) != len(shifts):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims or ())}")
    if input.numel() == 0:  # torch returns a copy before looking at dims
        return clone(input)
    if dims is not None:
        if input.ndim == 0:
            raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
        dims = tuple(_wrap_dim(d, input.ndim, "roll") for d in dims)
    return Roll.apply(input, shifts, dims)


@tensor_args
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the second)."""
    dims = _int_tuple("rot90", dims, "dims")
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_wrap_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k %= 4
    if k == 0:
        return clone(input)
    if k == 2:
        return Flip.apply(input, (d0, d1))
    return transpose(Flip.apply(input, (d1,) if k == 1 else (d0,)), d0, d1)


# ----------------------------------------------------------------------------- repeats
class Repeat(Function):
    """Tile the input ``sizes`` times per dim; the gradient sums over the tiled blocks."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, sizes: tuple[int, ...]):
        padded = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
        ctx.shape, ctx.pairs = x.shape, tuple(v for pair in zip(sizes, padded) for v in pair)
        return np.tile(x._array.reshape(padded), sizes)

    @staticmethod
    def backward(ctx, g: Tensor):
        blocks = g.reshape(ctx.pairs)
        return blocks.sum(tuple(range(0, len(ctx.pairs), 2))).reshape(ctx.shape), None


def _sizes(sizes: tuple) -> tuple[int, ...]:
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    return tuple(int(s) for s in sizes)


def _check_repeat(x: Tensor, sizes: tuple[int, ...]) -> None:
    padded = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    out = [n * r for n, r in zip(padded, sizes)]
    negative = [n if n < 0 else r for n, r in zip(out, sizes) if r < 0]
    if negative:
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {out}")


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """``Tensor.repeat``: tile the whole tensor ``sizes[i]`` times along dim i (new dims in front)."""
    views.require_args("repeat", "repeats", sizes)
    sizes = _sizes(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    _check_repeat(input, sizes)
    return Repeat.apply(input, sizes)


@tensor_args
def tile(input: Tensor, *dims: Any) -> Tensor:
    """``torch.tile``: like ``repeat`` but ``dims`` may be shorter than the tensor's rank (padded with 1s)."""
    dims = _sizes(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


class RepeatInterleave(Function):
    """Repeat element i of ``dim`` ``repeats[i]`` times; its adjoint is a segment sum."""

    @staticmethod
    def forward(ctx, x: Tensor, repeats: np.ndarray, dim: int):
        ctx.repeats, ctx.dim = repeats, dim
        return np.repeat(x._array, repeats, axis=dim)

    @staticmethod
    def backward(ctx, g: Tensor):
        return SegmentSum.apply(g, ctx.repeats, ctx.dim), None, None


class SegmentSum(Function):
    """Sum consecutive runs of ``repeats[i]`` entries of ``dim`` (empty runs give zeros)."""

    @staticmethod
    def forward(ctx, g: Tensor, repeats: np.ndarray, dim: int):
        ctx.repeats, ctx.dim = repeats, dim
        owners = np.repeat(np.arange(repeats.size, dtype=np.int64), repeats)  # the input entry of each g entry
        shape = g.shape[:dim] + (repeats.size,) + g.shape[dim + 1:]
        return index_add(g.new_zeros(shape), dim, Tensor._make(owners), g)

    @staticmethod
    def backward(ctx, gg: Tensor):
        return RepeatInterleave.apply(gg, ctx.repeats, ctx.dim), None, None


def _repeats_array(repeats: Any, length: int, dim: int) -> tuple[np.ndarray, bool]:
    """The per-element repeat counts as an int64 array, and whether they came as a tensor."""
    if not isinstance(repeats, Tensor):
        r = int(repeats)
        if r < 0:
            raise RuntimeError("Repeats must be non-negative")
        return np.full(length, r, dtype=np.int64), False
    if repeats.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if repeats.dtype not in (dtypes.int32, dtypes.int64):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for \'{repeats.dtype.scalar_type_name}\'')
    arr = place(repeats._array, CPU).reshape(-1).astype(np.int64)  # counts set the result's shape: host metadata
    if arr.size == 1:
        arr = np.full(length, arr[0], dtype=np.int64)
    elif arr.size != length:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{arr.size} and input.size({dim}) = {length}")
    if (arr < 0).any():
        raise RuntimeError("repeats can not be negative")
    return arr, True


@tensor_args
def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (along ``dim``, or of the flattened tensor) ``repeats`` times.

    With only a tensor of counts, returns ``[0]*c0 + [1]*c1 + ...`` in the counts' dtype.
    """
    if repeats is None:
        counts, _ = _repeats_array(input, input.numel(), 0)
        values = np.repeat(np.arange(counts.size, dtype=input._array.dtype), counts)
        return Tensor._make(place(values, input.device))
    if dim is None:
        input, d = reshape(input, (-1,)), 0
    else:
        d = _wrap_dim(dim, input.ndim, "repeat_interleave")
        if input.ndim == 0:
            input = reshape(input, (1,))
    counts, from_tensor = _repeats_array(repeats, input.shape[d], d)
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size" if from_tensor else
                           f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}")
    return RepeatInterleave.apply(input, counts, d)


# ----------------------------------------------------------------------------- triangles
class Triangle(Function):
    """The lower (tril) or upper (triu) part of the last two dims; the gradient is the same part of ``g``."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, diagonal: int, lower: bool):
        ctx.diagonal, ctx.lower = diagonal, lower
        return (np.tril if lower else np.triu)(x._array, diagonal)

    @staticmethod
    def backward(ctx, g: Tensor):
        return Triangle.apply(g, ctx.diagonal, ctx.lower), None, None


def _triangle(input: Tensor, diagonal: int, lower: bool) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 dimensions")
    return Triangle.apply(input, int(diagonal), lower)


@tensor_args
@with_out
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements above the ``diagonal``-th diagonal of the last two dims."""
    return _triangle(input, diagonal, True)


@tensor_args
@with_out
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements below the ``diagonal``-th diagonal of the last two dims."""
    return _triangle(input, diagonal, False)


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place ``tril``."""
    return inplace(input, "tril", lambda s: tril(s, diagonal))


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place ``triu``."""
    return inplace(input, "triu", lambda s: triu(s, diagonal))


def _triangle_indices(row: int, col: int, offset: int, dtype: Any, device: Any, lower: bool) -> Tensor:
    for name, n in (("row", row), ("col", col)):
        if n < 0:
            raise RuntimeError(f"{name} must be non-negative, got{n}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return Tensor._make(place(np.stack([rows, cols]).astype(dt.np).reshape(2, -1), factory_device(device)))


@tensor_args
@with_out
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """Coordinates (2 x N, row-major order) of the lower triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices(row, col, offset, dtype, device, True)


@tensor_args
@with_out
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """Coordinates (2 x N, row-major order) of the upper triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices(row, col, offset, dtype, device, False)


# ----------------------------------------------------------------------------- grids and broadcasting
def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids (expanded views) from 0-D/1-D tensors; ``indexing`` is "ij" (matrix) or "xy" (Cartesian)."""
    tensors = _tensor_list("meshgrid", list(_varargs(tensors)))
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of "
                               f"shape {list(t.shape)}")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    position = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        position[0], position[1] = 1, 0
    shape = [0] * len(tensors)
    for t, p in zip(tensors, position):
        shape[p] = t.numel()
    out = []
    for t, p in zip(tensors, position):
        lifted = [1] * len(tensors)
        lifted[p] = t.numel()
        out.append(expand(reshape(t, tuple(lifted)), tuple(shape)))
    return tuple(out)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """All tensors expanded (as views) to their common broadcast shape."""
    tensors = _varargs(tensors)
    shape = broadcast_shapes(*(t.shape for t in tensors)) if tensors else ()
    return tuple(expand(t, shape) for t in tensors)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of elements of 1-D tensors, one per row (itertools.product order)."""
    tensors = _varargs(tensors)
    for t in tensors:
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(getattr(t, 'shape', ()))}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


# ----------------------------------------------------------------------------- diagonals
class DiagEmbed(Function):
    """Place the last dim on a diagonal of a new (dim1, dim2) plane; the adjoint reads that diagonal."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, offset: int, d1: int, d2: int):
        ctx.args = (offset, d1, d2)
        n = (x.shape[-1] if x.ndim else 1) + abs(offset)
        shape = list(x.shape[:-1])
        for d in sorted((d1, d2)):
            shape.insert(d, n)
        out = np.zeros(shape, dtype=x._array.dtype, like=x._array)
        views.diagonal(Tensor._make(out), offset, d1, d2)._array[...] = x._array
        return out

    @staticmethod
    def backward(ctx, g: Tensor):
        return views.diagonal(g, *ctx.args), None, None, None


@tensor_args
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose (dim1, dim2) diagonals (at ``offset``) hold the last dim of ``input``; zeros elsewhere."""
    d1, d2 = _wrap_dim(dim1, input.ndim + 1, "diag_embed"), _wrap_dim(dim2, input.ndim + 1, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagEmbed.apply(input, int(offset), d1, d2)


@tensor_args
@with_out
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D -> a square matrix with ``input`` on a diagonal; 2-D -> a copy of one diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return clone(views.diagonal(input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")



@tensor_args
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input on a diagonal of a square matrix."""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


class BlockDiag(Function):
    """2-D blocks on the diagonal of a zero matrix; each block's gradient is its window of ``g``."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, dt: dtypes.dtype, *blocks: Tensor):
        rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
        out = np.zeros((rows, cols), dtype=dt.np, like=blocks[0]._array)
        r = c = 0
        windows = []
        for b in blocks:
            h, w = b.shape
            out[r:r + h, c:c + w] = b._array
            windows.append((r, c, h, w, b.dtype))
            r, c = r + h, c + w
        ctx.windows = windows
        return out

    @staticmethod
    def backward(ctx, g: Tensor):
        grads = tuple(_grad_as(narrow(narrow(g, 0, r, h), 1, c, w), t_dtype) if need else None
                      for need, (r, c, h, w, t_dtype) in zip(ctx.needs_input_grad[1:], ctx.windows))
        return (None, *grads)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the inputs (0-D and 1-D inputs count as one-row blocks)."""
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    if not tensors:
        return Tensor._make(np.empty((1, 0), dtype=dtypes.get_default_dtype().np))
    blocks = [reshape(t, (1, t.numel())) if t.ndim < 2 else t for t in tensors]
    return BlockDiag.apply(_promoted(tensors), *blocks)


# ----------------------------------------------------------------------------- differences
@tensor_args
@with_out(cast=True)
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``dim`` (``ne`` for bool), after joining ``prepend``/``append``."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim, "diff")
    for extra in (prepend, append):
        if extra is not None and extra.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n == 0:
        return clone(input)
    if prepend is not None or append is not None:
        input = cat([t for t in (prepend, input, append) if t is not None], d)
    x = input
    for _ in range(min(n, max(x.shape[d], 1))):   # past the dim's size every difference is empty: stop there
        m = max(x.shape[d] - 1, 0)
        head, tail = narrow(x, d, 0, m), narrow(x, d, min(1, x.shape[d]), m)
        x = binary("ne", tail, head) if x.dtype is dtypes.bool else binary("sub", tail, head)
    return x


__all__ = [
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack",
    "atleast_1d", "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "roll", "rot90", "repeat_interleave",
    "tile", "tril", "triu", "tril_indices", "triu_indices", "meshgrid", "broadcast_tensors", "diag", "diag_embed",
    "diagflat", "block_diag", "cartesian_prod", "diff",
]

TENSOR_METHODS: dict[str, Callable] = {
    "flip": _flip_method, "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90, "repeat": repeat,
    "repeat_interleave": repeat_interleave, "tile": tile, "tril": tril, "triu": triu, "tril_": tril_,
    "triu_": triu_, "diag": diag, "diag_embed": diag_embed, "diagflat": diagflat, "diff": diff,
}
