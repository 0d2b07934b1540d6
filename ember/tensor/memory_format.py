"""Memory formats: a logical NCHW tensor stored as NCHW or NHWC (a stride order, not a new shape)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


class memory_format:
    """A memory-format tag such as ``ember.channels_last``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

_ORDERS = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def dim_order(fmt: Any, ndim: int) -> tuple[int, ...]:
    """Logical dims from outermost to innermost in memory for a format."""
    order = _ORDERS.get(fmt)
    if order is None or fmt is contiguous_format:
        return tuple(range(ndim))
    check_format(fmt, ndim)
    return order


def is_contiguous_as(a: np.ndarray, fmt: Any = None) -> bool:
    """Whether ``a``'s strides are the dense strides of ``fmt`` (size-1 dims may have any stride)."""
    fmt = contiguous_format if fmt is None else fmt
    if fmt is contiguous_format and a.size == 0:  # torch: an empty tensor is contiguous, whatever its strides
        return True
    if type(a) is not np.ndarray and fmt is contiguous_format:
        return a.is_contiguous
    if fmt not in _ORDERS and fmt is not contiguous_format:
        raise RuntimeError(f"is_contiguous: unsupported memory format {fmt}")
    if fmt in _ORDERS and len(_ORDERS[fmt]) != a.ndim:
        return False
    order = dim_order(fmt, a.ndim)
    item = a.itemsize if type(a) is np.ndarray else 1  # device storage keeps element strides
    expected = 1
    for d in reversed(order):
        n = a.shape[d]
        if n != 1 and a.strides[d] != expected * item:
            return False
        expected *= n
    return True


def empty_in_format(shape: tuple[int, ...], np_dtype: Any, fmt: Any, like: Any = None) -> np.ndarray:
    """An uninitialised array of logical ``shape`` laid out in memory format ``fmt`` (on ``like``'s device)."""
    return _empty_ordered(tuple(shape), np_dtype, dim_order(fmt, len(shape)), like)


def _element_strides(a: Any) -> tuple[int, ...]:
    """Strides in elements (NumPy keeps byte strides, device storage element strides)."""
    item = a.itemsize if type(a) is np.ndarray else 1
    return tuple(s // item for s in a.strides)


def is_non_overlapping_and_dense(a: Any) -> bool:
    """torch's test: the elements fill one gap-free block in some dimension order (size-1 dims ignored)."""
    strides = _element_strides(a)
    expected = 1
    for s, n in sorted((s, n) for s, n in zip(strides, a.shape) if n >= 2):
        if s != expected:
            return False
        expected *= n
    return True


def _strides_like(order: tuple[int, ...], shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """torch's channels-last stride heuristic (``is_channels_last_strides_2d/3d``), over ``order`` innermost
    first: strides grow along it, and ambiguous cases (a trivial channel dim, N111) count as contiguous."""
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True


def suggest_memory_format(a: Any) -> memory_format:
    """The format torch infers from strides: channels_last(_3d) when they look like it, else contiguous."""
    shape, strides = a.shape, _element_strides(a)
    if len(shape) == 4 and _strides_like((1, 3, 2, 0), shape, strides):
        return channels_last
    if len(shape) == 5 and _strides_like((1, 4, 3, 2, 0), shape, strides):
        return channels_last_3d
    return contiguous_format


def resolve_format(a: Any, fmt: Any) -> memory_format:
    """``fmt`` with None read as contiguous and preserve_format as ``a``'s suggested format."""
    if fmt is None:
        return contiguous_format
    if fmt is preserve_format:
        return suggest_memory_format(a)
    check_format(fmt, len(a.shape))
    return fmt


def check_format(fmt: Any, ndim: int) -> None:
    """torch's error for a channels-last format on a tensor of the wrong rank (or a non-format argument)."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be an ember.memory_format, not {type(fmt).__name__}")
    if fmt is channels_last and ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if fmt is channels_last_3d and ndim != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")


def empty_like_format(a: Any, np_dtype: Any, fmt: Any = preserve_format, like: Any = None) -> Any:
    """An uninitialised array of ``a``'s shape by torch's ``empty_like`` rule: under preserve_format a dense
    non-overlapping ``a``'s exact strides, else ``a``'s suggested format; any other format as given. The result
    lives on ``like``'s device (``a``'s when None)."""
    like = a if like is None else like
    if fmt is preserve_format and is_non_overlapping_and_dense(a):
        if type(like) is np.ndarray:
            item = np.dtype(np_dtype).itemsize
            flat = np.empty(max(a.size, 1), dtype=np_dtype)
            return np.lib.stride_tricks.as_strided(flat, a.shape, tuple(s * item for s in _element_strides(a)))
        order = tuple(sorted(range(a.ndim), key=lambda d: -_element_strides(a)[d]))
        return _empty_ordered(a.shape, np_dtype, order, like)
    return empty_in_format(tuple(a.shape), np_dtype, resolve_format(a, fmt), like=like)


def _empty_ordered(shape: tuple[int, ...], np_dtype: Any, order: tuple[int, ...], like: Any) -> Any:
    physical = np.empty([shape[d] for d in order], dtype=np_dtype, like=like)
    return physical.transpose(np.argsort(order))


def obeys_layout_contract(grad: Any, variable: Any) -> bool:
    """torch's rule for a leaf's ``.grad``: a dense non-overlapping leaf's strides (on dims of size > 1, and no
    0 stride on the others), else contiguous."""
    if not is_non_overlapping_and_dense(variable):
        return is_contiguous_as(grad)
    g_strides, v_strides = _element_strides(grad), _element_strides(variable)
    return all((g == v) if n != 1 else g != 0 for n, g, v in zip(grad.shape, g_strides, v_strides))


def _broadcast_strides(a: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``a``'s element strides seen through broadcasting to ``shape`` (0 on broadcast and missing dims)."""
    lead = len(shape) - a.ndim
    strides = _element_strides(a)
    return tuple(0 if d < lead or (a.shape[d - lead] == 1 and shape[d] != 1) else strides[d - lead]
                 for d in range(len(shape)))


def iterator_order(shape: tuple[int, ...], arrays: Sequence[Any]) -> tuple[int, ...]:
    """The dim order (outermost first) torch's TensorIterator gives a new output: dims sorted by the operands'
    strides, the first operand with a strict preference deciding each pair (broadcast dims have none; equal
    strides put the smaller dim inside), ties keeping the logical order."""
    strides = [_broadcast_strides(a, shape) for a in arrays if a.ndim]
    ndim = len(shape)

    def should_swap(d0: int, d1: int) -> int:
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # innermost first, as TensorIterator's insertion sort
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            cmp = should_swap(perm[d0], perm[d1])
            if cmp > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif cmp < 0:
                break
    return tuple(reversed(perm))


def empty_for_operands(arrays: Sequence[Any], shape: tuple[int, ...], np_dtype: Any, like: Any = None) -> Any:
    """A new output of ``shape`` laid out as torch's TensorIterator lays out an op's result: same-shape operands
    that agree (all contiguous, all channels_last(_3d), or all dense with equal strides) give that layout,
    anything else the stride-sorted order of ``iterator_order``. 0-d operands (numbers) have no say."""
    tensors = [a for a in arrays if a.ndim]
    if tensors and all(tuple(a.shape) == tuple(shape) for a in tensors):
        first = tensors[0]
        for fmt in (contiguous_format, channels_last, channels_last_3d):
            if (fmt is contiguous_format or len(_ORDERS[fmt]) == len(shape)) and \
                    all(is_contiguous_as(a, fmt) for a in tensors):
                return empty_in_format(tuple(shape), np_dtype, fmt, like=like)
        if is_non_overlapping_and_dense(first) and all(_element_strides(a) == _element_strides(first)
                                                       for a in tensors[1:]):
            return empty_like_format(first, np_dtype, preserve_format, like=first if like is None else like)
    return _empty_ordered(tuple(shape), np_dtype, iterator_order(tuple(shape), tensors), like)
