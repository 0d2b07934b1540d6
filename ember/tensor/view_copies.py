"""torch's ``*_copy`` functions: each view op's result as a fresh contiguous tensor that shares nothing with its
input (``permute_copy``, ``narrow_copy``, ``unbind_copy``, ...). They are the view followed by a copy, so the
gradient is the view's; the graph node carries torch's name (``PermuteBackward0_copy``).

The sparse-only ones (``values_copy``, ``indices_copy``, ...) and the complex views (``view_as_real_copy``) have no
counterpart: ember's tensors are dense and real.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.function import name_node
from ..autograd.grad_mode import is_grad_enabled, no_grad
from . import dtypes
from .conversion import clone, copy_
from .memory_format import contiguous_format
from .out_arg import with_out, write_out
from .splits import split_with_sizes
from .tensor import Tensor, _wrap_dim
from . import views
from .arguments import tensor_args

__all__ = ["view_copy", "permute_copy", "transpose_copy", "t_copy", "expand_copy", "squeeze_copy",
           "unsqueeze_copy", "select_copy", "slice_copy", "diagonal_copy", "unbind_copy", "split_copy",
           "split_with_sizes_copy", "narrow_copy", "detach_copy", "alias_copy", "unfold_copy", "as_strided_copy"]


def _copied(view: Tensor, node: str) -> Tensor:
    """A contiguous copy of ``view`` whose graph node is named ``node``."""
    return name_node(clone(view, memory_format=contiguous_format), node)


def _size_sequence(op: str, size: Any) -> tuple[int, ...]:
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument 'size' (position 2) must be tuple of ints, not {type(size).__name__}")
    return tuple(int(n) for n in size)


@tensor_args
@with_out
def view_copy(input: Tensor, size: Any) -> Tensor:
    """``input.view(size)`` copied; with a dtype instead of a size, ``input``'s bytes reinterpreted as that dtype
    (the last dim scales by the ratio of item sizes), which has no gradient."""
    if isinstance(size, dtypes.dtype):
        data = clone(input, memory_format=contiguous_format).detach()._array
        if data.ndim == 0 and size.itemsize != data.itemsize:
            raise RuntimeError(f"self.dim() cannot be 0 to view {dtypes.SCALAR_TYPE_NAMES[input.dtype.name]} as "
                               f"{dtypes.SCALAR_TYPE_NAMES[size.name]} (different element sizes)")
        try:
            return Tensor._make(data.view(size.np))
        except ValueError:
            raise RuntimeError(f"view_copy(): the last dim of size {data.shape[-1]} of a "
                               f"{dtypes.SCALAR_TYPE_NAMES[input.dtype.name]} tensor does not divide into "
                               f"{dtypes.SCALAR_TYPE_NAMES[size.name]} elements") from None
    return _copied(views.view(input, _size_sequence("view_copy", size)), "ViewBackward0_copy")


@tensor_args
@with_out
def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input.permute(dims)`` copied."""
    return _copied(views.permute(input, tuple(dims)), "PermuteBackward0_copy")


@tensor_args
@with_out
def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``input.transpose(dim0, dim1)`` copied."""
    return _copied(views.transpose(input, dim0, dim1), "TransposeBackward0_copy")


@tensor_args
@with_out
def t_copy(input: Tensor) -> Tensor:
    """``input.t()`` copied."""
    return _copied(views.t(input), "TBackward0_copy")


@tensor_args
@with_out
def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """``input.expand(size)`` copied (every element materialised). ``implicit`` has no effect, as in torch's
    eager mode (it only marks expansions that broadcasting inserted)."""
    return _copied(views.expand(input, _size_sequence("expand_copy", size)), "ExpandBackward0_copy")


@tensor_args
@with_out
def squeeze_copy(input: Tensor, dim: Any = None) -> Tensor:
    """``input.squeeze(dim)`` copied (all size-1 dims, one, or a tuple of them)."""
    node = "SqueezeBackward0_copy" if dim is None else \
        "SqueezeBackward2_copy" if isinstance(dim, (tuple, list)) else "SqueezeBackward1_copy"
    return _copied(views.squeeze(input, dim), node)


@tensor_args
@with_out
def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """``input.unsqueeze(dim)`` copied."""
    return _copied(views.unsqueeze(input, dim), "UnsqueezeBackward0_copy")


@tensor_args
@with_out
def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index)`` copied."""
    return _copied(views.select(input, dim, index), "SelectBackward0_copy")


@tensor_args
@with_out
def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1) -> Tensor:
    """``input[..., start:end:step]`` along ``dim``, copied."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * _wrap_dim(dim, input.ndim, "slice_copy") + (slice(start, end, step),)
    return _copied(views.getitem(input, key), "SliceBackward0_copy")


@tensor_args
@with_out
def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input.diagonal(offset, dim1, dim2)`` copied."""
    return _copied(views.diagonal(input, offset, dim1, dim2), "DiagonalBackward0_copy")


@tensor_args
@with_out
def narrow_copy(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """``input.narrow(dim, start, length)`` copied."""
    return _copied(views.narrow(input, dim, start, length), "NarrowCopyBackward0")


@tensor_args
@with_out
def detach_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` cut from the graph (torch leaves a node that cannot backward; ember records none)."""
    with no_grad():
        return clone(input, memory_format=contiguous_format)


@tensor_args
@with_out
def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (the copy of torch's alias, a view of the whole tensor)."""
    return _copied(views.make_view(input, lambda a: a.view(), None), "AliasBackward0_copy")


@tensor_args
@with_out
def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``input.unfold(dimension, size, step)`` copied."""
    return _copied(views.unfold(input, dimension, size, step), "UnfoldBackward0_copy")


@tensor_args
@with_out
def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],
                    storage_offset: int | None = None) -> Tensor:
    """``input.as_strided(size, stride, storage_offset)`` copied."""
    return _copied(views.as_strided(input, size, stride, storage_offset), "AsStridedBackward0_copy")


def _pieces_out(op: str, pieces: tuple[Tensor, ...], node: str, input: Tensor, out: Sequence[Tensor] | None,
                broadcast_into: bool = False) -> tuple[Tensor, ...] | None:
    """The pieces copied (nodes named ``node``), or, with ``out``, written into those tensors (one per piece) and
    nothing returned, as torch does: by the usual ``out=`` rule (the piece's dtype; resized when the shape
    differs), or with ``broadcast_into`` (torch's ``split_copy``) by ``copy_`` (cast, broadcast, never resized)."""
    if out is None:
        return tuple(_copied(p, node) for p in pieces)
    if is_grad_enabled() and (input.requires_grad or any(o.requires_grad for o in out)):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if len(out) != len(pieces):
        raise RuntimeError(f"{op}() expected an out= argument of size {len(pieces)}, got size {len(out)}")
    for piece, target in zip(pieces, out):
        if broadcast_into:
            with no_grad():
                copy_(target, piece)
        else:
            write_out(piece, target, op)
    return None


@tensor_args
def unbind_copy(input: Tensor, dim: int = 0, *, out: Sequence[Tensor] | None = None) -> tuple[Tensor, ...] | None:
    """``input.unbind(dim)``, each slice copied."""
    return _pieces_out("unbind_copy", views.unbind(input, dim), "UnbindBackward0_copy", input, out)


@tensor_args
def split_copy(input: Tensor, split_size: int, dim: int = 0, *,
               out: Sequence[Tensor] | None = None) -> tuple[Tensor, ...] | None:
    """``input.split(split_size, dim)`` (an int size), each piece copied."""
    if not isinstance(split_size, (int, np.integer)) or isinstance(split_size, bool):
        raise TypeError(f"split_copy(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _pieces_out("split_copy", views.split(input, int(split_size), dim), "SplitBackward0_copy", input, out,
                       broadcast_into=True)


@tensor_args
def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int], dim: int = 0, *,
                          out: Sequence[Tensor] | None = None) -> tuple[Tensor, ...] | None:
    """``split_with_sizes(input, split_sizes, dim)``, each piece copied."""
    return _pieces_out("split_with_sizes_copy", split_with_sizes(input, split_sizes, dim),
                       "SplitWithSizesBackward0_copy", input, out)


TENSOR_METHODS: dict[str, Callable] = {"narrow_copy": narrow_copy}
