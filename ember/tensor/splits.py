"""Splitting a tensor into views: ``tensor_split`` (NumPy's array_split), ``hsplit``/``vsplit``/``dsplit``,
``split_with_sizes`` and torch's ``unsafe_*`` spellings of split and chunk.

Every piece is a view of the input (a narrow), so the pieces share its storage and gradients flow back through
them, as in torch. The ``unsafe_*`` forms differ in torch only in that autograd does not track them as views;
ember returns the same views under torch's node names.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..autograd.function import name_node
from . import dtypes
from .tensor import Tensor, _wrap_dim
from .views import chunk, narrow, split
from .arguments import tensor_args

__all__ = ["tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes"]


def _int_list(op: str, name: str, value: Any, position: int) -> list[int]:
    """A tuple/list of Python ints (not bools, not floats), as torch's parser accepts for ``int[]``."""
    if not isinstance(value, (tuple, list)) or any(
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in value):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be tuple of ints, not "
                        f"{type(value).__name__}")
    return [int(v) for v in value]


def _boundaries(size: int, sections: int) -> list[int]:
    """Where ``sections`` nearly equal pieces of ``size`` start (the first ``size % sections`` one longer)."""
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    base, extra = divmod(size, sections)
    return [i * base + min(i, extra) for i in range(1, sections)]


def _split_at(input: Tensor, indices: Sequence[int], d: int) -> tuple[Tensor, ...]:
    """The pieces ``input[prev:index]`` along ``d`` (Python slice rules: negative and past-the-end indices
    clamp, a decreasing pair gives an empty piece)."""
    size = input.shape[d]
    pieces, previous = [], 0
    for stop in list(indices) + [size]:
        start, end, _ = slice(previous, stop).indices(size)
        pieces.append(narrow(input, d, start, max(0, end - start)))
        previous = stop
    return tuple(pieces)


def _tensor_sections(t: Tensor) -> int | list[int]:
    """A tensor's ``indices_or_sections``: a 0-d int64 tensor is a section count, a 1-d one the indices."""
    if t.dtype is not dtypes.int64:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                           f"{dtypes.SCALAR_TYPE_NAMES[t.dtype.name]}")
    if t.ndim > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {t.ndim} dims")
    return t.tolist()


def _one_of(op: str, positional: Any, **keywords: Any) -> Any:
    """The one ``indices_or_sections`` given, positionally or by one of torch's keyword names."""
    given = [v for v in (positional, *keywords.values()) if v is not None]
    if len(given) != 1:
        raise TypeError(f'{op}() missing 1 required positional arguments: "indices_or_sections"' if not given
                        else f"{op}() got more than one of indices, sections and tensor_indices_or_sections")
    return given[0]


@tensor_args
def tensor_split(input: Tensor, indices_or_sections: Any = None, dim: int = 0, *, sections: Any = None,
                 indices: Any = None, tensor_indices_or_sections: Any = None) -> tuple[Tensor, ...]:
    """Views of ``input`` split along ``dim``: into ``sections`` nearly equal pieces (an int), or at the given
    ``indices`` (a list), or as a 0-d/1-d int64 tensor says; NumPy's ``array_split``."""
    how = _one_of("tensor_split", indices_or_sections, sections=sections, indices=indices,
                  tensor_indices_or_sections=tensor_indices_or_sections)
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.ndim, "tensor_split")
    if isinstance(how, Tensor):
        how = _tensor_sections(how)
    if isinstance(how, (int, np.integer)) and not isinstance(how, bool):
        return _split_at(input, _boundaries(input.shape[d], int(how)), d)
    return _split_at(input, _int_list("tensor_split", "indices", how, 2), d)


def _directional_split(op: str, input: Tensor, how: Any, d: int, min_dims: int) -> tuple[Tensor, ...]:
    """``hsplit``/``vsplit``/``dsplit``: ``tensor_split`` along ``d``, an int count having to divide the dim."""
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.ndim} dimensions!")
    if isinstance(how, (int, np.integer)) and not isinstance(how, bool):
        size = input.shape[d]
        if how == 0 or size % how:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {d}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {how}!")
        return tensor_split(input, int(how), d)
    return _split_at(input, _int_list(op, "indices", how, 2), d)


@tensor_args
def hsplit(input: Tensor, indices_or_sections: Any = None, *, sections: Any = None,
           indices: Any = None) -> tuple[Tensor, ...]:
    """Split along the columns (dim 1; dim 0 of a 1-D tensor) into equal pieces or at ``indices``."""
    how = _one_of("hsplit", indices_or_sections, sections=sections, indices=indices)
    return _directional_split("hsplit", input, how, 1 if input.ndim > 1 else 0, 1)


@tensor_args
def vsplit(input: Tensor, indices_or_sections: Any = None, *, sections: Any = None,
           indices: Any = None) -> tuple[Tensor, ...]:
    """Split along the rows (dim 0, of a tensor of at least 2 dims) into equal pieces or at ``indices``."""
    how = _one_of("vsplit", indices_or_sections, sections=sections, indices=indices)
    return _directional_split("vsplit", input, how, 0, 2)


@tensor_args
def dsplit(input: Tensor, indices_or_sections: Any = None, *, sections: Any = None,
           indices: Any = None) -> tuple[Tensor, ...]:
    """Split along the depth (dim 2, of a tensor of at least 3 dims) into equal pieces or at ``indices``."""
    how = _one_of("dsplit", indices_or_sections, sections=sections, indices=indices)
    return _directional_split("dsplit", input, how, 2, 3)


@tensor_args
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of the given non-negative sizes along ``dim`` (they must add up to the dim's size)."""
    sizes = _int_list("split_with_sizes", "split_sizes", split_sizes, 2)
    if any(n < 0 for n in sizes):
        raise RuntimeError("split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    return split(input, sizes, dim)


def _renamed(pieces: tuple[Tensor, ...], node: str) -> tuple[Tensor, ...]:
    return tuple(name_node(p, node) for p in pieces)


@tensor_args
def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` into pieces of ``split_size`` (torch's unchecked-view spelling; the same views here)."""
    if not isinstance(split_size, (int, np.integer)) or isinstance(split_size, bool):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _renamed(split(input, int(split_size), dim), "UnsafeSplitBackward0")


@tensor_args
def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``split_with_sizes`` (torch's unchecked-view spelling; the same views here)."""
    return _renamed(split_with_sizes(input, split_sizes, dim), "UnsafeSplitWithSizesBackward0")


@tensor_args
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunk`` (torch's unchecked-view spelling; the same views here)."""
    return _renamed(chunk(input, chunks, dim), "UnsafeSplitBackward0")


TENSOR_METHODS: dict[str, Callable] = {name: globals()[name] for name in __all__}
