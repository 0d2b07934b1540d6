"""Copies and dtype/device conversion: ``to``, ``clone``, ``copy_``, ``fill_``, ``new_*``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from ..autograd.tangents import linear_jvp
from . import creation, dtypes
from ._dispatch import broadcast_shapes, copy_array, is_c_contiguous, on_device, sum_to_shape
from .device import as_device, device as device_type, place
from .tensor import Tensor
from .arguments import tensor_args
from .memory_format import check_format, contiguous_format, empty_like_format, is_non_overlapping_and_dense, \
    obeys_layout_contract, preserve_format, suggest_memory_format
from .views import as_strided
from .elementwise import inplace
from .creation import full, tensor


class Cast(Function):
    """A copy in another dtype; the gradient is cast back."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x, dt):
        ctx.dtype = x.dtype
        arr = x._array
        return _copy_as(x._array, dt, preserve_format)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


def _copy_as(arr: Any, dt: dtypes.dtype, fmt: Any) -> Any:
    """A copy of ``arr`` in dtype ``dt`` laid out by torch's ``empty_like`` rule for ``fmt``."""
    if arr.dtype == dtypes.bfloat16.np and not dt.is_floating_point and dt is not dtypes.bool:
        arr = arr.astype(np.float32)  # through float32 (exact), so out-of-range values wrap as float32's do
    if fmt is preserve_format and is_c_contiguous(arr):  # NumPy's and device storage's own copies keep C order
        return copy_array(arr) if arr.dtype == dt.np else arr.astype(dt.np)
    if on_device(arr):  # device storage copies within one dtype: lay out first, then convert
        out = empty_like_format(arr, arr.dtype, fmt)
        np.copyto(out, arr)
        return out if out.dtype == dt.np else out.astype(dt.np)
    out = empty_like_format(arr, dt.np, fmt)
    np.copyto(out, arr, casting="unsafe")
    return out


class Relayout(Function):
    """``to(dtype, memory_format=...)``: one copy into the dtype and format asked for; the gradient is cast
    back and keeps its own layout (as torch's ``_to_copy`` backward)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x, dt, fmt):
        ctx.dtype = x.dtype
        return _copy_as(x._array, dt, fmt)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None, None


class Clone(Function):
    """A copy with its own storage (keeps the memory format, as torch's preserve_format)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x):
        return _copy_as(x._array, x.dtype, preserve_format)

    @staticmethod
    def backward(ctx, g):
        return g


@tensor_args
def clone(input: Tensor, *, memory_format: Any = preserve_format) -> Tensor:
    """A copy that shares nothing with ``input`` but its graph, laid out in ``memory_format`` (by default
    ``input``'s strides when dense, else its suggested format, as torch)."""
    if memory_format is None or memory_format is preserve_format:
        return Clone.apply(input)
    check_format(memory_format, input.ndim)
    return Relayout.apply(input, input.dtype, memory_format)


def _parse_to(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    dev, dt = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif isinstance(a, (dtypes.dtype, type)) or (isinstance(a, np.dtype)):
            dt = a
        elif isinstance(a, (str, device_type, int)):
            dev = a
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return dev, dt


class ToDevice(Function):
    """A copy on another device; the gradient goes back to the source device."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, x, dev, non_blocking=False):
        ctx.source = x.device
        return place(x._array, dev, non_blocking)

    @staticmethod
    def backward(ctx, g):
        return to(g, ctx.source), None, None


def to(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Convert dtype, device and/or memory format; returns ``input`` itself when nothing changes (unless
    copy=True). A format already suggested by ``input``'s strides counts as no change, as in torch.

    ``non_blocking=True`` queues a copy from pinned host memory to the GPU on the current stream and returns at
    once (see ``pin_memory``); other copies are synchronous."""
    dev, dt = _parse_to(args, kwargs)
    fmt = kwargs.get("memory_format", preserve_format)
    fmt = preserve_format if fmt is None else fmt
    if fmt is not preserve_format:
        check_format(fmt, input.ndim)
        if suggest_memory_format(input._array) is fmt:
            fmt = preserve_format
    target_device = input.device if dev is None else as_device(dev)
    target = dtypes.to_dtype(dt) if dt is not None else input.dtype
    if target is input.dtype and target_device == input.device and fmt is preserve_format:
        return clone(input) if kwargs.get("copy") else input
    result = input
    if target_device != input.device:
        result = ToDevice.apply(result, target_device, bool(kwargs.get("non_blocking", False)))
    if fmt is not preserve_format:
        return Relayout.apply(result, target, fmt)
    return result if target is result.dtype else Cast.apply(result, target)


def cpu(input: Tensor, memory_format: Any = preserve_format) -> Tensor:
    """This tensor on the CPU (itself when already there and in ``memory_format``)."""
    return to(input, "cpu", memory_format=memory_format)


def cuda(input: Tensor, device: Any = None, non_blocking: bool = False,
         memory_format: Any = preserve_format) -> Tensor:
    """This tensor on a CUDA device (the current one by default; an int is a device index)."""
    return to(input, "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device),
              non_blocking=non_blocking, memory_format=memory_format)


def _caster(dt: dtypes.dtype):
    def cast(self: Tensor, memory_format: Any = preserve_format) -> Tensor:
        return to(self, dt, memory_format=memory_format)

    cast.__doc__ = f"``self.to({dt})``."
    return cast


float_ = _caster(dtypes.float32)
double = _caster(dtypes.float64)
half = _caster(dtypes.float16)
bfloat16 = _caster(dtypes.bfloat16)
long = _caster(dtypes.int64)
int_ = _caster(dtypes.int32)
short = _caster(dtypes.int16)
char = _caster(dtypes.int8)
byte = _caster(dtypes.uint8)
bool_ = _caster(dtypes.bool)


def type_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` in ``other``'s dtype."""
    return to(input, other.dtype)


class CopyInto(Function):
    """``dst.copy_(src)``: the gradient flows to ``src`` (summed over broadcast dims)."""

    jvp_rule = linear_jvp  # forward mode: the op applied to the tangents (it is linear in its tensors)

    @staticmethod
    def forward(ctx, dst, src):
        if broadcast_shapes(dst.shape, src.shape) != dst.shape:
            raise RuntimeError(
                f"output with shape {list(dst.shape)} doesn't match the broadcast shape "
                f"{list(broadcast_shapes(dst.shape, src.shape))}"
            )
        ctx.src_shape, ctx.src_dtype, ctx.src_device = src.shape, src.dtype, src.device
        out = np.empty_like(dst._array)
        np.copyto(out, src._array, casting="unsafe")
        return out

    @staticmethod
    def backward(ctx, g):
        return None, sum_to_shape(g, ctx.src_shape).to(ctx.src_device, ctx.src_dtype)


def in_leaf_layout(grad: Tensor, leaf: Tensor) -> Tensor:
    """``grad`` as a leaf's first ``.grad``: itself when its strides obey torch's layout contract (the leaf's
    strides when the leaf is dense, else contiguous), else a copy that does (differentiable, for create_graph)."""
    if obeys_layout_contract(grad._array, leaf._array):
        return grad
    if not is_non_overlapping_and_dense(leaf._array):
        return clone(grad, memory_format=contiguous_format)
    if not grad.requires_grad:
        out = empty_like_format(leaf._array, grad.dtype.np, preserve_format, like=grad._array)
        np.copyto(out, grad._array)
        return Tensor._make(out)
    return copy_(creation.empty_like(leaf, dtype=grad.dtype, device=grad.device), grad)


def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast) into ``self``'s storage. With ``non_blocking=True`` a ``src`` on another
    device first moves over as ``src.to(self.device, non_blocking=True)`` does: from pinned host memory to the GPU
    that transfer is queued on the current stream, and the copy into ``self`` follows it there."""
    if not isinstance(src, Tensor):
        src = tensor(src)
    if non_blocking and src.device != self.device:
        src = to(src, self.device, non_blocking=True)
    return inplace(self, "copy", lambda s: CopyInto.apply(s, src))


def fill_(self: Tensor, value: Any) -> Tensor:
    """Set every element to ``value`` (a number or 0-d tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
            )
        return copy_(self, value.expand(self.shape))
    return copy_(self, full(self.shape, value, dtype=self.dtype))


def zero_(self: Tensor) -> Tensor:
    """Set every element to zero."""
    return fill_(self, 0)


def _new(factory_name: str):
    def new(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
        return getattr(creation, factory_name)(*size, dtype=dtype or self.dtype, device=device or self.device,
                                               requires_grad=requires_grad)

    new.__doc__ = f"``{factory_name}`` with this tensor's dtype by default."
    return new


new_zeros = _new("zeros")
new_ones = _new("ones")
new_empty = _new("empty")


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``full`` with this tensor's dtype by default."""
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                      requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor laid out with ``stride`` (in elements); this tensor's dtype and device by default."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    extent = sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0
    out = as_strided(new_empty(self, max(extent, 0), dtype=dtype, device=device), size, stride).detach()
    return out.requires_grad_(True) if requires_grad else out


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """``tensor(data)`` with this tensor's dtype by default."""
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
