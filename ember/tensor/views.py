"""View ops: tensors that share storage (and the version counter) with their base.

Every view is described by a function from the base's array to the view's
array. That one description serves the forward pass, the gradient (scatter
the incoming gradient into the viewed region of zeros), and in-place changes
made through a view (the base's graph history is rebased, as torch's
CopySlices does).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.function import Function, name_node
from ..autograd.tangents import linear_jvp
from .._user_warnings import warn_user_once
from ..autograd.grad_mode import is_grad_enabled, no_grad
from . import dtypes
from .device import CPU, place
from ._dispatch import backend, on_device, sum_to_shape
from .tensor import Size, Tensor, _check_inplace, _wrap_dim
from .arguments import tensor_args
from .memory_format import contiguous_format, dim_order, empty_in_format, is_contiguous_as, preserve_format

ViewFn = Callable[[np.ndarray], np.ndarray]


def _root(x: Tensor) -> tuple[Tensor, ViewFn | None]:
    return (x._base, x._view_fn) if x._view_fn is not None else (x, None)


def _compose(outer: ViewFn, inner: ViewFn | None) -> ViewFn:
    return outer if inner is None else (lambda a: outer(inner(a)))


class View(Function):
    """A view of the input; backward is given per view op (cheap inverse, or scatter into zeros)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x: Tensor, view_fn: ViewFn, grad_fn: Callable | None):
        out = view_fn(x._array)
        base, parent_fn = _root(x)
        t = Tensor._make(out, version=x._version, base=base)
        t._view_fn = _compose(view_fn, parent_fn)
        if ctx.needs_input_grad:
            ctx.view_fn, ctx.grad_fn, ctx.input_shape = view_fn, grad_fn, x.shape
        return t

    @staticmethod
    def backward(ctx, g: Tensor):
        if ctx.grad_fn is not None:
            return ctx.grad_fn(g), None, None
        return EmbedIntoView.apply(g, ctx.input_shape, ctx.view_fn, False), None, None


class EmbedIntoView(Function):
    """Zeros of ``shape`` with ``g`` added into the region ``view_fn`` selects (the adjoint of a view)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, g: Tensor, shape: tuple[int, ...], view_fn: ViewFn, overlapping: bool):
        ctx.view_fn = view_fn
        n = math.prod(shape)
        if overlapping:
            index = view_fn(np.arange(n).reshape(shape))
            if on_device(g._array):
                out = np.zeros(n, dtype=g._array.dtype, like=g._array)
                backend(g).scatter("sum", out, np.ascontiguousarray(index).reshape(-1),
                                   g._array.contiguous().reshape(-1))
                return out.reshape(shape)
            flat = np.bincount(index.reshape(-1), weights=g._array.reshape(-1).astype(np.float64), minlength=n)
            return flat.astype(g._array.dtype).reshape(shape)
        out = np.zeros(shape, dtype=g._array.dtype, like=g._array)
        view_fn(out)[...] = g._array
        return out

    @staticmethod
    def backward(ctx, gg: Tensor):
        return make_view(gg, ctx.view_fn, None), None, None, None


def make_view(x: Tensor, view_fn: ViewFn, grad_fn: Callable | None, node: str | None = None) -> Tensor:
    """Apply a view op to ``x``; ``grad_fn=None`` means 'scatter the gradient back into zeros'. ``node`` is torch's
    name of the view op's graph node (``ViewBackward0`` when None)."""
    out = View.apply(x, view_fn, grad_fn)
    return out if node is None or out._grad_fn is None else name_node(out, node)  # no call when nothing recorded


class CopySlices(Function):
    """Graph step for a base after an in-place change made through one of its views."""

    @staticmethod
    def forward(ctx, base: Tensor, src: Tensor, view_fn: ViewFn):
        ctx.view_fn, ctx.shape = view_fn, base.shape
        return Tensor._make(base._array, version=base._version)

    @staticmethod
    def backward(ctx, g: Tensor):
        region = make_view(g, ctx.view_fn, None)
        g_base = g - EmbedIntoView.apply(region, ctx.shape, ctx.view_fn, False)
        return g_base, region, None


def rebase_history(t: Tensor, result: Tensor) -> None:
    """After ``t``'s storage took ``result``'s values in place, put ``t`` where ``result`` is in the graph."""
    if t._view_fn is None:
        t._grad_fn, t._output_nr, t._requires_grad = result._grad_fn, result._output_nr, True
        return
    base = t._base
    new_base = CopySlices.apply(base, result, t._view_fn)
    base._grad_fn, base._output_nr, base._requires_grad = new_base._grad_fn, 0, True
    fresh = make_view(base, t._view_fn, None)
    t._grad_fn, t._output_nr, t._requires_grad = fresh._grad_fn, 0, True


# ----------------------------------------------------------------------------- shapes
def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` or ``f(Size)``, like torch."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    try:
        return tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"expected a sequence of ints as the shape, got {shape!r}") from None


def require_args(op: str, name: str, args: tuple) -> None:
    """torch's ``*sizes`` methods need at least one argument (an empty tuple counts as one)."""
    if not args:
        raise TypeError(f'{op}() missing 1 required positional arguments: "{name}"')


def _infer_shape(op: str, shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[: unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _reshape_grad(shape: tuple[int, ...]) -> Callable:
    return lambda g: g.reshape(shape)


def view(x: Tensor, *shape: Any) -> Tensor:
    """Same data, new shape; fails (like torch) when the strides cannot express it without a copy."""
    if len(shape) == 1 and isinstance(shape[0], (dtypes.dtype, str)):
        raise RuntimeError("view(dtype) is not supported by ember")
    new = _infer_shape("view", _shape_arg(shape), x.numel())
    try:
        np.reshape(x._array, new, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans "
            "across two contiguous subspaces). Use .reshape(...) instead."
        ) from None
    return make_view(x, lambda a: np.reshape(a, new, copy=False), _reshape_grad(x.shape))


@tensor_args
def reshape(x: Tensor, *shape: Any) -> Tensor:
    """Same data, new shape: a view when the strides allow, else a copy."""
    new = _infer_shape("reshape", _shape_arg(shape), x.numel())
    try:
        np.reshape(x._array, new, copy=False)
    except ValueError:
        return Reshape.apply(x, new)
    return make_view(x, lambda a: np.reshape(a, new, copy=False), _reshape_grad(x.shape))


class Reshape(Function):
    """The copying reshape, for inputs whose strides a view cannot express."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x, shape):
        ctx.input_shape = x.shape
        return np.reshape(x._array, shape).copy()

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.input_shape), None


def view_as(x: Tensor, other: Tensor) -> Tensor:
    return view(x, other.shape)


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    return reshape(x, other.shape)


@tensor_args
def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one."""
    s, e = _wrap_dim(start_dim, x.ndim, "flatten"), _wrap_dim(end_dim, x.ndim, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x.shape
    return reshape.__wrapped__(x, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])  # no guard frame


@tensor_args
def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1)."""
    d = _wrap_dim(dim, x.ndim, "unflatten")
    sizes = _infer_shape("unflatten", tuple(sizes), x.shape[d])
    return view(x, x.shape[:d] + sizes + x.shape[d + 1:]) if x.is_contiguous() else \
        reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


@tensor_args
def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    """Drop size-1 dims (all, one, or a tuple of them)."""
    if dim is None:
        dims = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        dims = tuple(_wrap_dim(d, x.ndim, "squeeze") for d in (dim if isinstance(dim, (tuple, list)) else (dim,)))
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = tuple(d for d in dims if x.ndim and x.shape[d] == 1)
    node = "SqueezeBackward0" if dim is None else "SqueezeBackward2" if isinstance(dim, (tuple, list)) else \
        "SqueezeBackward1"
    if not dims:
        return make_view(x, lambda a: a.view(), _reshape_grad(x.shape), node)
    return make_view(x, lambda a: np.squeeze(a, axis=dims), _reshape_grad(x.shape), node)


@tensor_args
def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim``."""
    d = _wrap_dim(dim, x.ndim + 1, "unsqueeze")
    return make_view(x, lambda a: np.expand_dims(a, d), _reshape_grad(x.shape), "UnsqueezeBackward0")


@tensor_args
def permute(x: Tensor, *dims: Any) -> Tensor:
    """Reorder dims."""
    require_args("permute", "dims", dims)
    order = _shape_arg(dims)
    if len(order) != x.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {x.ndim} is not equal to len(dims) = {len(order)}"
        )
    order = tuple(_wrap_dim(d, x.ndim, "permute") for d in order)
    if len(set(order)) != len(order):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = tuple(np.argsort(order))
    return make_view(x, lambda a: a.transpose(order), lambda g: g.permute(inverse), "PermuteBackward0")


@tensor_args
def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    d0, d1 = _wrap_dim(dim0, x.ndim, "transpose"), _wrap_dim(dim1, x.ndim, "transpose")
    if x.ndim == 0:
        return make_view(x, lambda a: a.view(), _reshape_grad(x.shape), "TransposeBackward0")
    return make_view(x, lambda a: np.swapaxes(a, d0, d1), lambda g: g.transpose(d0, d1), "TransposeBackward0")


@tensor_args
def t(x: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims."""
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    if x.ndim == 2:
        return make_view(x, lambda a: np.swapaxes(a, 0, 1), lambda g: g.transpose(0, 1), "TBackward0")
    return make_view(x, lambda a: a.view(), _reshape_grad(x.shape), "TBackward0")


def matrix_transpose(x: Tensor, name: str = "mT") -> Tensor:
    """Swap the last two dims (``.mT``; ``.mH``, the same on real tensors, names itself in the error)."""
    if x.ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got "
                           f"{x.ndim}-D tensor.")
    return transpose(x, -2, -1)


def matrix_adjoint(x: Tensor) -> Tensor:
    """``.mH``: the conjugate transpose of the last two dims (the transpose, on real tensors)."""
    return matrix_transpose(x, "mH")


def full_transpose(x: Tensor) -> Tensor:
    """Reverse all dims (``.T``); torch deprecates it on tensors that are not 2-D (a warning, once)."""
    if x.ndim not in (0, 2):
        warn_user_once("T", "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                        "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
                        "batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                        "dimensions of a tensor.")
    if x.ndim == 0:
        warn_user_once("T0", "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
    return permute(x, tuple(range(x.ndim - 1, -1, -1)))


def conj_transpose(x: Tensor) -> Tensor:
    """``.H``: the conjugate transpose of a matrix (the transpose, on real tensors); a 0-D tensor is itself
    (deprecated: a warning, once), other ranks are torch's RuntimeError."""
    if x.ndim == 0:
        warn_user_once("H0", "Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return x
    if x.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {x.ndim}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if x.ndim > 2 else ""))
    return transpose(x, 0, 1)


@tensor_args
def expand(x: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to a larger shape without copying (-1 keeps a dim)."""
    require_args("expand", "size", sizes)
    sizes = _shape_arg(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(x.shape)}}}, size={list(sizes)}): the number of sizes provided "
            f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({x.ndim})"
        )
    lead = len(sizes) - x.ndim
    target = []
    for i, n in enumerate(sizes):
        have = x.shape[i - lead] if i >= lead else None
        if n == -1:
            if have is None:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}")
            n = have
        elif have is not None and have != 1 and have != n:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({have}) at non-singleton "
                f"dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(x.shape)}"
            )
        target.append(n)
    target = tuple(target)
    shape = x.shape
    return make_view(x, lambda a: _broadcast_view(a, target), lambda g: sum_to_shape(g, shape), "ExpandBackward0")


def _broadcast_view(a: Any, shape: tuple[int, ...]) -> Any:
    """``a`` broadcast to ``shape``, writeable like ``a``: torch lets one write through an expanded tensor where no
    two written elements share memory (``inplace`` refuses the writes where they do)."""
    view = np.broadcast_to(a, shape)
    if type(a) is np.ndarray and a.flags.writeable:
        return np.lib.stride_tricks.as_strided(a, shape, view.strides, writeable=True)
    return view


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return expand(x, other.shape)


@tensor_args
def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    return expand(x, tuple(shape))


@tensor_args
def narrow(x: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The slice ``start:start+length`` of one dim, as a view (checked in torch's order)."""
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, x.ndim, "narrow")
    size = x.shape[d]
    start = int(start)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = (slice(None),) * d + (slice(start, start + length),)
    return make_view(x, lambda a: a[index], None, "SliceBackward0")


@tensor_args
def select(x: Tensor, dim: int, index: int) -> Tensor:
    """One position of one dim, removing that dim."""
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, x.ndim, "select")
    size = x.shape[d]
    i = int(index)
    if i < -size or i >= size:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(x.shape)} at dimension {d}")
    i %= size
    key = (slice(None),) * d + (i, Ellipsis)  # the Ellipsis keeps a 0-d result an array view, not a scalar
    return make_view(x, lambda a: a[key], None, "SelectBackward0")


@tensor_args
def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """All slices along ``dim`` as views."""
    d = _wrap_dim(dim, x.ndim, "unbind")
    return tuple(name_node(select(x, d, i), "UnbindBackward0") for i in range(x.shape[d]))


@tensor_args
def split(x: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of equal size (the last may be smaller) or of the given sizes, as views."""
    d = _wrap_dim(dim, x.ndim, "split")
    size = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0 or (step == 0 and size != 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]   # torch: one empty piece
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension "
                f"{d}), but got split_sizes={sizes}"
            )
    node = "SplitBackward0" if isinstance(split_size_or_sections, int) else "SplitWithSizesBackward0"
    out, start = [], 0
    for n in sizes:
        out.append(name_node(narrow(x, d, start, n), node))
        start += n
    return tuple(out)


@tensor_args
def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` nearly equal pieces (fewer when the dim is short)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = _wrap_dim(dim, x.ndim, "chunk")
    size = x.shape[d]
    return split(x, max(1, -(-size // chunks)), d) if size else split(x, 0, d)


@tensor_args
def movedim(x: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims to new positions, keeping the others in order."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain the same "
            f"number of dims as destination ({list(dst)} dims)"
        )
    src = [_wrap_dim(s, x.ndim, "movedim") for s in src]
    dst = [_wrap_dim(s, x.ndim, "movedim") for s in dst]
    if x.ndim == 0:
        return permute(x, ())
    order = [None] * x.ndim
    for s, t_ in zip(src, dst):
        order[t_] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    order = tuple(o if o is not None else next(rest) for o in order)
    return permute(x, order)


def strided_view(a: Any, shape: Sequence[int], strides: Sequence[int]) -> Any:
    """A view of ``a`` starting at its first element with ``shape`` and ``a``'s kind of strides (bytes for NumPy
    arrays, elements for device storage)."""
    if type(a) is np.ndarray:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)
    return a.as_strided(shape, strides)


@tensor_args
def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a view in the last dim."""
    d1, d2 = _wrap_dim(dim1, x.ndim, "diagonal"), _wrap_dim(dim2, x.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")

    def fn(a: np.ndarray) -> np.ndarray:
        n1, n2 = a.shape[d1], a.shape[d2]
        length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
        start = [0] * a.ndim
        if offset >= 0:
            start[d2] = offset if length else 0
        else:
            start[d1] = -offset if length else 0
        rest = [d for d in range(a.ndim) if d not in (d1, d2)]
        strides = [a.strides[d] for d in rest] + [a.strides[d1] + a.strides[d2]]
        shape = [a.shape[d] for d in rest] + [length]
        origin = a[tuple(slice(s, None) for s in start)] if length else a
        return strided_view(origin, shape, strides)

    return make_view(x, fn, None, "DiagonalBackward0")


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Sliding windows of ``size`` every ``step`` along a dim, as a new last dim (a view)."""
    d = _wrap_dim(dimension, x.ndim, "unfold")
    length = x.shape[d] if x.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (length - size) // step + 1

    def fn(a: np.ndarray) -> np.ndarray:
        if a.ndim == 0:
            return a.reshape(1)
        shape = a.shape[:d] + (count,) + a.shape[d + 1:] + (size,)
        strides = a.strides[:d] + (a.strides[d] * step,) + a.strides[d + 1:] + (a.strides[d],)
        return strided_view(a, shape, strides)

    overlapping = step < size
    in_shape = x.shape
    return make_view(x, fn, (lambda g: EmbedIntoView.apply(g, in_shape, fn, True)) if overlapping else None,
                     "UnfoldBackward0")


@tensor_args
def as_strided(x: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """A view with explicit sizes and strides (in elements) over the base storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"as_strided: Storage size calculation overflowed with sizes={list(size)} and strides="
                           f"{list(stride)}")
    owner, capacity, x_offset = storage_of(x)
    offset = x_offset if storage_offset is None else int(storage_offset)
    needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    if needed > capacity:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{x.element_size()} requiring a storage size of {needed * x.element_size()} are out of bounds for "
            f"storage of size {capacity * x.element_size()}"
        )
    forward_array, dt = x._array, x._array.dtype

    def fn(a: np.ndarray) -> np.ndarray:
        if a is forward_array:  # the view itself: absolute positions in the storage
            return storage_view(owner, dt, size, stride, offset)
        # replayed on an array of the base's shape (gradients, in-place rebasing): its flat order is the storage
        flat = a.reshape(-1)[offset:]
        if type(a) is not np.ndarray:
            return flat.as_strided(size, stride)
        return np.lib.stride_tricks.as_strided(flat, size, tuple(s * a.itemsize for s in stride))

    x_positions = _storage_positions(x.shape, x.stride(), x_offset)
    view_positions = _storage_positions(size, stride, offset)
    return make_view(x, fn, lambda g: MovePositions.apply(g, view_positions, x_positions, capacity),
                     "AsStridedBackward0")


def _owner(a: np.ndarray) -> np.ndarray:
    """The ndarray whose memory ``a`` sees (through NumPy's as_strided, which leaves a DummyArray in the chain)."""
    while True:
        b = a.base
        if isinstance(b, np.ndarray):
            a = b
        elif hasattr(b, "__array_interface__") and isinstance(getattr(b, "base", None), np.ndarray):
            a = b.base
        else:
            return a


def storage_of(x: Tensor) -> tuple[Any, int, int]:
    """``x``'s storage: what holds its memory (a host ndarray or the device storage), the storage's size in
    elements of ``x``'s dtype, and ``x``'s offset in it."""
    a = x._array
    if type(a) is not np.ndarray:
        return a, a.buffer.size, a.offset
    owner = _owner(a)
    if not owner.nbytes:
        return owner, 0, 0
    return owner, owner.nbytes // a.itemsize, (a.__array_interface__["data"][0]
                                                - owner.__array_interface__["data"][0]) // a.itemsize


def storage_view(owner: Any, dt: np.dtype, shape: Sequence[int], strides: Sequence[int], offset: int) -> Any:
    """The array of ``shape`` and ``strides`` (in elements) from element ``offset`` of storage ``owner``."""
    if type(owner) is not np.ndarray:
        return owner.as_strided(shape, strides, offset)
    item = np.dtype(dt).itemsize
    return np.ndarray(tuple(shape), dt, buffer=owner, offset=offset * item, strides=tuple(s * item for s in strides))


def _storage_positions(shape: tuple[int, ...], strides: Sequence[int], offset: int) -> np.ndarray:
    """The storage index of every element of a strided layout."""
    positions = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        positions += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return positions


class MovePositions(Function):
    """Gradient routing between two layouts over one storage: sum what lands on a storage element, then read it.

    ``out[j] = sum of g[i] over i with src[i] == dst[j]``; its adjoint is the same op with the roles swapped,
    so as_strided's gradient is right for any input layout and overlapping windows, and differentiable again.
    """

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, g: Tensor, src: np.ndarray, dst: np.ndarray, capacity: int):
        ctx.src, ctx.dst, ctx.capacity = src, dst, capacity
        grad = place(g._array, CPU)  # a host pass on CUDA (a rare op)
        flat = np.bincount(src.reshape(-1), weights=grad.reshape(-1).astype(np.float64), minlength=capacity)
        return place(flat[dst].astype(grad.dtype), g.device)

    @staticmethod
    def backward(ctx, gg: Tensor):
        return MovePositions.apply(gg, ctx.dst, ctx.src, ctx.capacity), None, None, None


# ----------------------------------------------------------------------------- in place: shape and storage
def _become(x: Tensor, view: Tensor) -> Tensor:
    """``x`` takes ``view``'s geometry and its place in the graph: torch's in-place view ops change the tensor
    object itself. A view stays a view of the same base; the version counter is bumped once."""
    x._array = view._array
    if x._view_fn is not None:
        x._base, x._view_fn = view._base, view._view_fn
    if view._grad_fn is not None:
        x._grad_fn, x._output_nr = view._grad_fn, view._output_nr
    x._version.value += 1
    return x


def _inplace_view(x: Tensor, op: str, make: Callable[[Tensor], Tensor]) -> Tensor:
    _check_inplace(x, op)
    return _become(x, make(x))


def unsqueeze_(x: Tensor, dim: int) -> Tensor:
    """``unsqueeze`` applied to ``x`` itself."""
    return _inplace_view(x, "unsqueeze_", lambda v: unsqueeze(v, dim))


def squeeze_(x: Tensor, dim: Any = None) -> Tensor:
    """``squeeze`` (all size-1 dims, one, or a tuple of them) applied to ``x`` itself."""
    return _inplace_view(x, "squeeze_", lambda v: squeeze(v, dim))


def transpose_(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose`` applied to ``x`` itself (also ``swapdims_`` and ``swapaxes_``)."""
    return _inplace_view(x, "transpose_", lambda v: transpose(v, dim0, dim1))


def t_(x: Tensor) -> Tensor:
    """``t`` applied to ``x`` itself (at most 2 dims)."""
    if x.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return _inplace_view(x, "t_", t)


def as_strided_(x: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """``as_strided`` applied to ``x`` itself: new sizes and strides over the same storage."""
    return _inplace_view(x, "as_strided_", lambda v: as_strided(v, size, stride, storage_offset))


def dense_strides(shape: Sequence[int], memory_format: Any = None) -> tuple[int, ...]:
    """The strides (in elements) of a dense tensor of ``shape`` in ``memory_format`` (contiguous by default)."""
    if memory_format is preserve_format:
        raise RuntimeError("Unsupported memory format. Supports only ChannelsLast, ChannelsLast3d, Contiguous")
    strides, step = [0] * len(shape), 1
    for d in reversed(dim_order(memory_format or contiguous_format, len(shape))):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def resize_storage(x: Tensor, shape: tuple[int, ...], memory_format: Any = None) -> None:
    """Give ``x`` the dense ``shape`` (strides of ``memory_format``) at its storage offset, keeping the storage's
    contents in order.

    The storage grows when too small (new elements are uninitialised). ember has no shared storage object:
    after growing, other tensors that viewed the old storage keep the old one.
    """
    strides = dense_strides(shape, memory_format)
    if shape == x.shape and (memory_format is None or strides == x.stride()):
        return  # torch keeps the strides of a tensor that already has the size
    owner, capacity, offset = storage_of(x)
    needed, dt = offset + math.prod(shape), x._array.dtype
    if needed > capacity and math.prod(shape):
        grown = np.empty(needed, dtype=dt, like=x._array)
        np.copyto(storage_view(grown, dt, (capacity,), (1,), 0), storage_view(owner, dt, (capacity,), (1,), 0))
        owner = grown
    x._array, x._base, x._view_fn = storage_view(owner, dt, shape, strides, offset), None, None
    x._version.value += 1


def resize_(x: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Make ``x`` a dense tensor of ``sizes`` over its storage (grown if needed); elements already in the
    storage keep their values in storage order, new ones are uninitialised."""
    if x._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    require_args("resize_", "size", sizes)
    shape = _shape_arg(sizes)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"resize_(): negative dimension in size {list(shape)}")
    resize_storage(x, shape, memory_format)
    return x


@tensor_args
def resize_as_(x: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    """``resize_`` to ``other``'s shape."""
    return resize_(x, other.shape, memory_format=memory_format)


def set_(x: Tensor, source: Tensor | None = None, storage_offset: int = 0, size: Sequence[int] | None = None,
         stride: Sequence[int] | None = None) -> Tensor:
    """Make ``x`` look at ``source``'s storage: all of ``source`` (its sizes and strides), or ``size``/``stride``
    from ``storage_offset`` in it; no arguments leave ``x`` empty. ember has no Storage objects, so ``source`` is a
    tensor. Like torch, the result has no usable gradient: backward through it raises."""
    _check_inplace(x, "set_")
    if source is None:
        array = np.empty(0, dtype=x._array.dtype, like=x._array)
    else:
        if not isinstance(source, Tensor):
            raise TypeError(f"set_(): argument 'source' must be Tensor, not {type(source).__name__}")
        if source.dtype is not x.dtype:
            raise RuntimeError(f"Could not set tensor of type {dtypes.CPP_TYPE_NAMES[source.dtype.name]} to a "
                               f"tensor of type {dtypes.CPP_TYPE_NAMES[x.dtype.name]}")
        if size is None:
            array = source._array
        else:
            shape = _shape_arg((size,))
            strides = dense_strides(shape) if stride is None else tuple(int(s) for s in stride)
            with no_grad():
                array = as_strided(source, shape, strides, storage_offset)._array
    recorded = is_grad_enabled() and (x._requires_grad or getattr(source, "_requires_grad", False))
    x._array, x._base, x._view_fn = array, None, None
    x._version.value += 1
    if recorded:
        node = SetStorage.apply(x, source)
        x._grad_fn, x._output_nr, x._requires_grad = node._grad_fn, 0, True
    return x


class SetStorage(Function):
    """The graph step ``set_`` leaves: torch defines no derivative for it, so backward raises."""

    @staticmethod
    def forward(ctx, x: Tensor, source: Tensor | None):
        return Tensor._make(x._array, version=x._version)

    @staticmethod
    def backward(ctx, g: Tensor):
        raise RuntimeError("the derivative for 'set_' is not implemented.")


def contiguous(x: Tensor, memory_format: Any = None) -> Tensor:
    """``x`` itself when already laid out in ``memory_format``, else a copy that is."""
    fmt = contiguous_format if memory_format is None else memory_format
    if is_contiguous_as(x._array, fmt):
        return x
    return Copy.apply(x, fmt)


class Copy(Function):
    """A copy into a fresh array of a given memory format."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x, fmt):
        out = empty_in_format(x._array.shape, x._array.dtype, fmt, like=x._array)
        np.copyto(out, x._array)
        return out

    @staticmethod
    def backward(ctx, g):
        return g, None


def _basic_key(x: Tensor, key: Any) -> tuple:
    """Validate a basic index (ints, slices, None, Ellipsis) against ``x``'s shape, torch's errors."""
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        if isinstance(item, Tensor) or isinstance(item, (list, np.ndarray)) or isinstance(item, bool):
            raise IndexError(
                "ember supports only basic indexing (integers, slices, None, ...) at this version; "
                f"got an index of type {type(item).__name__}"
            )
        if not (item is None or item is Ellipsis or isinstance(item, (int, np.integer, slice))):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                f"(got {type(item).__name__})"
            )
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for item in items if item is not None and item is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    dim = 0
    for item in items:
        if item is Ellipsis:
            dim += x.ndim - consumed
        elif item is None:
            continue
        else:
            if isinstance(item, (int, np.integer)):
                size = x.shape[dim]
                if item < -size or item >= size:
                    raise IndexError(f"index {item} is out of bounds for dimension {dim} with size {size}")
            elif item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            dim += 1
    items = tuple(int(i) if isinstance(i, np.integer) else i for i in items)
    # an Ellipsis keeps NumPy from returning a scalar copy when every dim is indexed by an int
    return items if any(i is Ellipsis for i in items) else items + (Ellipsis,)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` for basic indices: always a view of ``x``."""
    index = _basic_key(x, key)
    return make_view(x, lambda a: a[index], None, _getitem_node(index))


def _getitem_node(index: tuple) -> str:
    """torch's node for a basic index: that of the last step it takes (torch skips whole-dim slices that other
    items follow)."""
    items = [i for i in index if i is not Ellipsis]
    steps = [i for i in items if not (isinstance(i, slice) and i == slice(None))]
    if not steps:
        return "SliceBackward0" if items else "AliasBackward0"
    last = steps[-1]
    return "UnsqueezeBackward0" if last is None else "SelectBackward0" if isinstance(last, int) else "SliceBackward0"
