"""Small shape utilities scripts reach for: ``broadcast_shapes``, ``ravel``, ``unravel_index``, ``combinations``,
``Tensor.sum_to_size`` and ``Tensor.fill_diagonal_``, with torch's rules and errors."""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.function import name_node
from . import dtypes
from ._dispatch import sum_to_shape
from .creation import empty
from .device import place
from .joins import stack
from .tensor import Size, Tensor
from .views import _shape_arg, require_args, reshape
from .arguments import tensor_args

__all__ = ["broadcast_shapes", "ravel", "unravel_index", "combinations", "sum_to_size", "fill_diagonal_"]


def _as_shape(shape: Any) -> tuple:
    """One argument of ``broadcast_shapes``: an int is a 1-D shape, None an empty one."""
    if isinstance(shape, Tensor):
        raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    if not isinstance(shape, (tuple, list)) or any(
            not isinstance(n, (int, np.integer)) or isinstance(n, Tensor) for n in shape):
        raise TypeError(f"broadcast_shapes(): expected ints or sequences of ints as shapes, got {shape!r}")
    return tuple(shape)


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape tensors of these shapes broadcast to (without making any tensor)."""
    parsed = [_as_shape(s) for s in shapes]
    result = [1] * max((len(s) for s in parsed), default=0)
    for position, shape in enumerate(parsed):
        for i in range(-1, -len(shape) - 1, -1):
            n = int(shape[i])
            if n < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
            if n == 1 or n == result[i]:
                continue
            if result[i] != 1:
                given = shapes[position] if isinstance(shapes[position], (tuple, list)) else shape
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {i}! Mismatching "
                                   f"argument at index {position} had {given!r}; but expected shape should be "
                                   f"broadcastable to {result}")
            result[i] = n
    return Size(result)


@tensor_args
def ravel(input: Tensor) -> Tensor:
    """``input`` flattened to 1-D: a view when its strides allow, else a copy."""
    return name_node(reshape(input, (-1,)), "ViewBackward0")


def _unravel_shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool) else shape
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for n in dims:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(n)}")
    if any(n < 0 for n in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(dims)}")
    return tuple(int(n) for n in dims)


@tensor_args
def unravel_index(indices: Tensor, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of each flat index in ``indices``: one int64 tensor per dim, of
    ``indices``' shape. As in torch, an index outside the shape wraps around (each coordinate is taken modulo
    its dim)."""
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    dims = _unravel_shape(shape)
    if 0 in dims:
        raise RuntimeError(f"unravel_index(): cannot unravel indices into the empty shape {dims} "
                           "(ZeroDivisionError)")
    flat = indices.to(dtypes.int64)
    return tuple(flat.floor_divide(math.prod(dims[d + 1:])).remainder(n) for d, n in enumerate(dims))


@tensor_args
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the elements of a 1-D tensor, one per row (itertools' order); with
    ``with_replacement`` an element may repeat. Differentiable in ``input``."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    columns = Tensor._make(place(np.ascontiguousarray(rows.T), input.device))
    return stack([input.index_select(0, columns[j]) for j in range(r)], 1)


def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """``input`` summed down to ``size``, a shape it broadcasts from (``input`` itself when already that)."""
    require_args("sum_to_size", "size", size)
    shape = _shape_arg(size)
    have = tuple(input.shape)
    lead = len(have) - len(shape)
    if lead < 0 or any(n != 1 and n != have[lead + i] for i, n in enumerate(shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    return sum_to_shape(input, shape)


def _diagonal_mask(shape: Sequence[int], wrap: bool) -> np.ndarray:
    """Where ``fill_diagonal_`` writes: every (i, i, ..., i); with ``wrap`` (tall matrices) the diagonal starts
    again every ``cols + 1`` elements in row-major order, as torch's does."""
    mask = np.zeros(shape, dtype=np.bool_)
    n = min(shape)
    mask[(np.arange(n),) * len(shape)] = True
    rows, cols = shape[0], shape[1]
    if wrap and len(shape) == 2 and rows > cols + 1:
        mask.reshape(-1)[::cols + 1] = True
    return mask


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal of ``input`` (2-D, or n-D with all dims equal), in place; with
    ``wrap`` a tall matrix's diagonal restarts below the square part (every ``cols + 1`` elements in row-major
    order: torch's rule, which for a non-contiguous tensor ember applies in logical row-major order)."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = Tensor._make(place(_diagonal_mask(tuple(input.shape), bool(wrap)), input.device))
    return input.masked_fill_(mask, fill_value)


TENSOR_METHODS: dict[str, Callable] = {"ravel": ravel, "sum_to_size": sum_to_size, "fill_diagonal_": fill_diagonal_}
