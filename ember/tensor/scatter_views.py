"""The ``*_scatter`` ops: a copy of ``input`` with ``src`` written into the region one of its views selects
(``slice_scatter``, ``select_scatter``, ``diagonal_scatter``, ``as_strided_scatter``). They are the functional
(out-of-place) form of writing through a view, and differentiable in both ``input`` and ``src``.

The first three are a clone plus a copy through the view, so they reuse the view's own gradient machinery;
``as_strided_scatter`` addresses storage positions, so it is its own Function that routes gradients by position.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.function import Function, name_node
from ..autograd.grad_mode import no_grad
from .conversion import clone, copy_
from .device import CPU, place
from .out_arg import with_out
from .tensor import Tensor, _check_no_internal_overlap, _wrap_dim
from .views import MovePositions, _storage_positions, as_strided, diagonal, getitem, select, storage_of
from .arguments import tensor_args

__all__ = ["slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"]


def _check_src(src: Tensor, region_shape: Sequence[int]) -> None:
    if tuple(src.shape) != tuple(region_shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(region_shape)}")


def _scatter_through(input: Tensor, src: Tensor, view: Callable[[Tensor], Tensor], node: str) -> Tensor:
    """A clone of ``input`` with ``src`` copied into ``view(clone)``; its graph node gets torch's ``node`` name."""
    with no_grad():
        _check_src(src, view(input).shape)
    out = clone(input)
    copy_(view(out), src)
    return name_node(out, node)


@tensor_args
@with_out
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """``input`` with ``src`` in the slice ``start:end:step`` of ``dim``."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, input.ndim, "slice_scatter")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_through(input, src, lambda t: getitem(t, key), "SliceScatterBackward0")


@tensor_args
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``src`` at position ``index`` of ``dim`` (``src`` has that slice's shape, without ``dim``)."""
    return _scatter_through(input, src, lambda t: select(t, dim, index), "SelectScatterBackward0")


@tensor_args
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with ``src`` on the diagonal that ``input.diagonal(offset, dim1, dim2)`` selects."""
    return _scatter_through(input, src, lambda t: diagonal(t, offset, dim1, dim2), "DiagonalScatterBackward0")


class AsStridedScatter(Function):
    """The copy of ``input`` (dense, in ``input``'s dimension order) with ``src`` written at storage positions
    ``offset + sum(i_k * stride_k)``. Backward routes by position: ``src`` gets the gradient at its positions and
    ``input`` the gradient everywhere else."""

    @staticmethod
    def forward(ctx, input: Tensor, src: Tensor, size: tuple[int, ...], stride: tuple[int, ...], offset: int):
        out = np.empty_like(place(input._array, CPU), order="K")
        np.copyto(out, place(input._array, CPU))
        with no_grad():
            region = as_strided(Tensor._make(out), size, stride, offset)
        _check_no_internal_overlap(region)
        _check_src(src, size)
        np.copyto(region._array, place(src._array, CPU), casting="unsafe")
        _, capacity, start = storage_of(Tensor._make(out))
        item = out.itemsize
        ctx.out_positions = _storage_positions(out.shape, tuple(s // item for s in out.strides), start)
        ctx.src_positions = _storage_positions(size, stride, offset)
        ctx.capacity, ctx.src_dtype = capacity, src.dtype
        return place(out, input.device)

    @staticmethod
    def backward(ctx, g: Tensor):
        grad_input = grad_src = None
        if ctx.needs_input_grad[0]:
            covered = np.isin(ctx.out_positions, ctx.src_positions)
            grad_input = g.masked_fill(Tensor._make(place(covered, g.device)), 0)
        if ctx.needs_input_grad[1]:
            grad_src = MovePositions.apply(g, ctx.out_positions, ctx.src_positions, ctx.capacity).to(ctx.src_dtype)
        return grad_input, grad_src, None, None, None


@tensor_args
def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """``input`` with ``src`` written where ``input.as_strided(size, stride, storage_offset)`` would look, in a
    fresh copy of ``input``. As in torch, ``storage_offset`` counts in ``input``'s storage (default: its own
    offset) and the copy is laid out densely in ``input``'s dimension order."""
    own = input.storage_offset()
    offset = own if storage_offset is None else int(storage_offset)
    if offset < own:
        raise RuntimeError(f"as_strided_scatter(): storage_offset {offset} lies before the input's own storage "
                           f"offset {own}, outside the copy that is written")
    return AsStridedScatter.apply(input, src, tuple(int(n) for n in size), tuple(int(s) for s in stride),
                                  offset - own)


TENSOR_METHODS: dict[str, Callable] = {name: globals()[name] for name in __all__}
