"""Device storage: a flat device buffer seen through shape, strides and an offset.

Numba's own N-d device arrays transpose only in 2-D on real hardware and behave
differently in the simulator, so ember keeps its own strided view: ``buffer`` is
a flat 1-D Numba device array, ``shape``/``strides`` (in elements, may be 0 or
negative) and ``offset`` (elements) say which elements a tensor sees. Views
share the buffer; kernels receive the buffer and the layout explicitly.

bfloat16 storage holds its elements' bits in a uint16 buffer (Numba has no bfloat16): ``dtype`` says bfloat16,
``bits()`` is the same view as uint16 for kernels that move elements, and ``bfloat16.py`` converts to and from
the other dtypes (arithmetic kernels see float32, as on the CPU).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ... import opcodes as op
from ..._cuda_context import active, activate
from ..common.dtypes import BFLOAT16, BFLOAT16_BITS
from . import allocator
from .ndarray import NdarrayProtocol, on_own_device, to_device_operand

__all__ = ["DeviceStorage", "SUPPORTED_DTYPES", "c_strides"]

# dtypes kernels take; uint32 holds dropout's random bits, uint16 bfloat16's bits. float16 is stored as such and
# computed in float32 (the tensor layer widens it before arithmetic kernels, as on the CPU and in torch).
SUPPORTED_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32, np.float16, np.float32,
    np.float64))
STORAGE_DTYPES = SUPPORTED_DTYPES | {BFLOAT16}  # what a storage may hold


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _check_dtype(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in STORAGE_DTYPES:
        raise TypeError(f"CUDA storage does not support dtype {dtype}")
    return dtype


def _buffer_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of the flat buffer behind a storage of ``dtype`` (bfloat16's bits are uint16)."""
    return BFLOAT16_BITS if dtype == BFLOAT16 else dtype


class DeviceStorage(NdarrayProtocol):
    """A strided view of a flat device buffer (see the module docstring) on CUDA device ``device_index`` (the
    device whose context is current when None: where a buffer just allocated lives); ``dtype`` is the buffer's
    own unless given (bfloat16 over a uint16 buffer)."""

    __slots__ = ("buffer", "shape", "strides", "offset", "dtype", "device_index")

    def __init__(self, buffer, shape: Sequence[int], strides: Sequence[int], offset: int = 0,
                 device_index: int | None = None, dtype: np.dtype | None = None) -> None:
        self.buffer = buffer
        self.shape = tuple(int(n) for n in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.dtype = np.dtype(buffer.dtype) if dtype is None else dtype
        self.device_index = active.index if device_index is None else device_index
        if len(self.shape) != len(self.strides):
            raise ValueError(f"shape {self.shape} and strides {self.strides} differ in length")

    # ------------------------------------------------------------------ creation and transfer
    @classmethod
    def from_numpy(cls, array: np.ndarray) -> DeviceStorage:
        """Copy ``array`` (any layout) to a new C-contiguous buffer on the active device."""
        array = np.asarray(array)
        out = cls.empty(array.shape, array.dtype)
        if out.numel:
            out.buffer.copy_to_device(np.ascontiguousarray(array).reshape(-1).view(out.buffer.dtype))
        return out

    @classmethod
    def empty(cls, shape: Sequence[int], dtype) -> DeviceStorage:
        """A new C-contiguous storage of ``shape`` with uninitialised elements, from the active device's pool."""
        shape = tuple(int(n) for n in shape)
        if any(n < 0 for n in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        index = active.index
        dtype = _check_dtype(dtype)
        buffer = allocator.device_empty(math.prod(shape), _buffer_dtype(dtype), index)
        return cls(buffer, shape, c_strides(shape), 0, index, dtype)

    def on_device(self, index: int) -> DeviceStorage:
        """This view on device ``index``: itself when already there, else a C-contiguous copy made through host
        memory (correct without peer access between the two devices)."""
        if index == self.device_index:
            return self
        host = self.to_numpy()
        activate(index)
        return DeviceStorage.from_numpy(host)

    def span(self) -> tuple[int, int]:
        """The lowest and one past the highest buffer index this view touches ((offset, offset) when empty)."""
        if self.numel == 0:
            return self.offset, self.offset
        lo = hi = self.offset
        for n, s in zip(self.shape, self.strides):
            if s < 0:
                lo += s * (n - 1)
            else:
                hi += s * (n - 1)
        return lo, hi + 1

    @property
    def __cuda_array_interface__(self) -> dict:
        """This view as other GPU libraries (CuPy for cuBLAS, ...) read it: the same memory, no copy. Work is
        ordered on the legacy default stream (1), where ember launches its kernels. (The simulator has no
        addresses: there the pointer is ``data_ptr``'s stand-in.)"""
        item = self.dtype.itemsize
        start = self.data_ptr() if self.numel else 0
        return {"shape": self.shape, "strides": tuple(s * item for s in self.strides), "typestr": self.dtype.str,
                "data": (start, False), "version": 3, "stream": 1}

    @on_own_device
    def to_numpy(self) -> np.ndarray:
        """A new host array with this view's elements (C-contiguous)."""
        if self.numel == 0:
            return np.empty(self.shape, self.dtype)
        lo, hi = self.span()
        host = self.buffer[lo:hi].copy_to_host().view(self.dtype)
        item = self.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(host[self.offset - lo:], self.shape,
                                               tuple(s * item for s in self.strides))
        return view.copy()  # C-contiguous; keeps 0-d arrays 0-d (ascontiguousarray would not)

    # ------------------------------------------------------------------ properties
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """C-contiguous (strides of size-1 dims ignored), as torch's ``is_contiguous``."""
        step = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n == 0:
                return True
            if n != 1 and s != step:
                return False
            step *= n
        return True

    def __repr__(self) -> str:
        return (f"DeviceStorage(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype})")

    # ------------------------------------------------------------------ views (share the buffer)
    def _view(self, shape, strides, offset) -> DeviceStorage:
        return DeviceStorage(self.buffer, shape, strides, offset, self.device_index, self.dtype)

    def bits(self) -> DeviceStorage:
        """This view as its buffer's own dtype (a bfloat16 storage's uint16 bits), for kernels that move elements."""
        return DeviceStorage(self.buffer, self.shape, self.strides, self.offset, self.device_index)

    def _dim(self, dim: int) -> int:
        if not -self.ndim <= dim < max(self.ndim, 1):
            raise IndexError(f"dimension {dim} out of range for {self.ndim}-d storage")
        return dim % self.ndim

    def as_strided(self, shape: Sequence[int], strides: Sequence[int], offset: int | None = None) -> DeviceStorage:
        """A view with any layout over the same buffer; raises if it would reach outside the buffer."""
        view = self._view(shape, strides, self.offset if offset is None else offset)
        if any(n < 0 for n in view.shape):
            raise ValueError(f"negative dimension in shape {view.shape}")
        lo, hi = view.span()
        if view.numel and (lo < 0 or hi > self.buffer.size):
            raise ValueError(f"as_strided: shape {view.shape}, strides {view.strides} and offset {view.offset} "
                             f"reach outside a buffer of {self.buffer.size} elements")
        return view

    def permute(self, dims: Sequence[int]) -> DeviceStorage:
        """Dimensions reordered: dim ``i`` of the result is dim ``dims[i]`` of this view."""
        dims = [self._dim(d) for d in dims]
        if sorted(dims) != list(range(self.ndim)):
            raise ValueError(f"permute: {tuple(dims)} is not a permutation of {self.ndim} dims")
        return self._view([self.shape[d] for d in dims], [self.strides[d] for d in dims], self.offset)

    def select(self, dim: int, index: int) -> DeviceStorage:
        """The slice at ``index`` along ``dim``, that dim removed."""
        dim = self._dim(dim)
        n = self.shape[dim]
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for dim {dim} of size {n}")
        index %= n
        return self._view(self.shape[:dim] + self.shape[dim + 1:], self.strides[:dim] + self.strides[dim + 1:],
                          self.offset + index * self.strides[dim])

    def slice(self, dim: int, start: int | None = None, stop: int | None = None, step: int | None = None
              ) -> DeviceStorage:
        """``x[..., start:stop:step, ...]`` along ``dim`` with Python's slice rules (negative steps included)."""
        dim = self._dim(dim)
        first, last, step = slice(start, stop, step).indices(self.shape[dim])
        count = len(range(first, last, step))
        shape, strides = list(self.shape), list(self.strides)
        shape[dim], strides[dim] = count, strides[dim] * step
        return self._view(shape, strides, self.offset + (first * self.strides[dim] if count else 0))

    def flip(self, dims: Sequence[int]) -> DeviceStorage:
        """The elements in reverse order along each of ``dims``."""
        view = self
        for d in dims:
            view = view.slice(d, None, None, -1)
        return view

    def expand(self, shape: Sequence[int]) -> DeviceStorage:
        """Broadcast to ``shape`` (new leading dims and size-1 dims get stride 0; -1 keeps a size)."""
        shape = tuple(shape)
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError(f"expand: {len(shape)} sizes given for a {self.ndim}-d storage")
        sizes, strides = [], []
        for i, n in enumerate(shape):
            if i < lead:
                if n < 0:
                    raise ValueError(f"expand: size -1 not allowed in leading dim {i}")
                sizes.append(n)
                strides.append(0)
                continue
            m, s = self.shape[i - lead], self.strides[i - lead]
            if n == -1 or n == m:
                sizes.append(m)
                strides.append(s)
            elif m == 1 and n >= 0:
                sizes.append(n)
                strides.append(0)
            else:
                raise ValueError(f"expand: size {n} does not match {m} in dim {i} (shape {self.shape})")
        return self._view(sizes, strides, self.offset)

    def reshape_view(self, shape: Sequence[int]) -> DeviceStorage:
        """The same elements viewed with ``shape`` (one -1 allowed); this view must be contiguous."""
        shape = list(shape)
        if shape.count(-1) > 1:
            raise ValueError("reshape: only one dimension can be -1")
        if -1 in shape:
            known = math.prod(n for n in shape if n != -1)
            if known == 0 or self.numel % known:
                raise ValueError(f"reshape: shape {tuple(shape)} is invalid for {self.numel} elements")
            shape[shape.index(-1)] = self.numel // known
        if math.prod(shape) != self.numel:
            raise ValueError(f"reshape: shape {tuple(shape)} is invalid for {self.numel} elements")
        if not self.is_contiguous:
            raise ValueError("reshape_view needs a contiguous storage; copy it first")
        return self._view(shape, c_strides(shape), self.offset)

    # ------------------------------------------------------------------ copies
    @on_own_device
    def copy_from(self, other: DeviceStorage) -> None:
        """Write ``other`` (broadcast to this shape, cast to this dtype, from any device) into this view, any
        layouts."""
        from .elementwise import unary  # not at the top: the elementwise kernels import this module

        if not isinstance(other, DeviceStorage):  # an explicit host-to-device copy
            host = np.asarray(other)
            other = DeviceStorage.from_numpy(host) if host.size > 1 else to_device_operand(host)
        other = other.on_device(self.device_index)
        if self.dtype == BFLOAT16 or other.dtype == BFLOAT16:
            from .bfloat16 import copy  # not at the top: the conversion kernels import this module

            copy(other, self)
            return
        unary(op.COPY, other, self)

    @on_own_device
    def contiguous(self) -> DeviceStorage:
        """This view if C-contiguous, else a C-contiguous copy."""
        if self.is_contiguous:
            return self
        out = DeviceStorage.empty(self.shape, self.dtype)
        out.copy_from(self)
        return out
