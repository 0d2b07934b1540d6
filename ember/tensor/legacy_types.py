"""torch's legacy tensor types: ``FloatTensor``, ``cuda.LongTensor``, ... and the legacy constructor behind them.

Old code still builds tensors as ``FloatTensor(2, 3)`` or ``LongTensor([1, 2])``, checks
``isinstance(x, FloatTensor)`` and converts with ``x.type(DoubleTensor)``. As in torch, a legacy type is
not a ``Tensor`` subclass: calling it returns a plain ``Tensor`` of its dtype and device type, and
``isinstance`` holds exactly when a tensor's dtype and device type match (a metaclass's instance check).
``Tensor(...)`` (the default dtype, no dtype check on a tensor argument) and ``x.new(...)`` (``x``'s dtype
and device) take the same arguments: sizes, a ``Size``, data (a sequence or NumPy array), a tensor to alias,
or nothing.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._cuda_runtime.availability import INSTALL_HINT, is_available
from . import dtypes
from .device import CPU, device as device_type
from .tensor import Size, Tensor
from .views import make_view
from .creation import empty, tensor
from .._settings import set_default_device

# ``x.type()`` spells types as torch does ("torch.FloatTensor"), so code comparing against those strings works;
# the classes themselves live in ``ember`` and ``ember.cuda`` (where pickle finds them).
_TORCH_PREFIX = {False: "torch.", True: "torch.cuda."}


def type_name(dt: dtypes.dtype, cuda: bool) -> str:
    """torch's name of the legacy type of ``dt`` on the CPU or CUDA, e.g. ``torch.cuda.LongTensor``."""
    return f"{_TORCH_PREFIX[cuda]}{dtypes.SCALAR_TYPE_NAMES[dt.name]}Tensor"


class LegacyTensorType(type):
    """The metaclass of ``FloatTensor`` & co.: calling one builds a tensor, ``isinstance`` compares dtype and
    device type."""

    dtype: dtypes.dtype
    is_cuda: bool

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:
        if cls.is_cuda:
            _require_cuda(cls)
        return legacy_new(cls.dtype, "cuda" if cls.is_cuda else CPU, args, kwargs, check_dtype=True)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.is_cuda == cls.is_cuda


def _require_cuda(cls: LegacyTensorType) -> None:
    if not is_available():
        raise TypeError(f"type {type_name(cls.dtype, True)} not available: CUDA cannot be used here. "
                        f"{INSTALL_HINT}")


def _make_types(cuda: bool) -> dict[str, LegacyTensorType]:
    module = "ember.cuda" if cuda else "ember"
    types = {}
    for dt in dtypes.ALL_DTYPES:
        name = type_name(dt, cuda).rsplit(".", 1)[1]
        doc = f"Legacy tensor type: ``{name}(...)`` builds a {dt.name} tensor on {'CUDA' if cuda else 'the CPU'}."
        types[name] = LegacyTensorType(name, (), {"dtype": dt, "is_cuda": cuda, "is_sparse": False,
                                                  "__module__": module, "__qualname__": name, "__doc__": doc})
    return types


CPU_TYPES = _make_types(False)
CUDA_TYPES = _make_types(True)


# ----------------------------------------------------------------------------- the legacy constructor
_SIGNATURES = (" * (*, torch.device device = None)\n * (Tensor other)\n * (tuple of ints size, *, torch.device "
               "device = None)\n * (object data, *, torch.device device = None)")


def _invalid_combination(args: tuple, kwargs: dict) -> TypeError:
    got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return TypeError(f"new() received an invalid combination of arguments - got ({', '.join(got)}), but expected "
                     f"one of:\n{_SIGNATURES}")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _sizes(args: tuple) -> tuple[int, ...]:
    """All-int positional arguments as a size, with torch's TypeError naming the first that is not an int."""
    for pos, a in enumerate(args):
        if not _is_int(a):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos + 1} with error \"type "
                            f"must be tuple of ints,but got {type(a).__name__}\"")
    return tuple(int(a) for a in args)


def _check_device(expected: str, dev: Any) -> None:
    got = device_type(dev)
    if got.type != expected:
        raise RuntimeError(f"legacy constructor expects device type: {expected} but device type: {got.type} was "
                           "passed")


def _alias(source: Tensor, dt: dtypes.dtype | None, dev_type: str) -> Tensor:
    """``Type(tensor)``: the same tensor (storage and graph), which must have this type's dtype and device."""
    if dt is not None and (source.dtype is not dt or source.device.type != dev_type):
        raise TypeError(f"new(): expected a tensor of type {type_name(dt, dev_type == 'cuda')} "
                        f"(got {source.type()})")

    return make_view(source, lambda a: a, lambda g: g)


def legacy_new(dt: dtypes.dtype, dev: Any, args: tuple, kwargs: dict, check_dtype: bool) -> Tensor:
    """torch's legacy constructor for dtype ``dt`` on ``dev`` (a device or "cuda", the current CUDA device):
    no arguments (an empty tensor), sizes or a ``Size`` (uninitialised), data (copied into ``dt``), or a tensor
    (returned as an alias; with ``check_dtype`` it must already be ``dt`` on ``dev``'s device type)."""
    if set(kwargs) - {"device", "size"} or ("size" in kwargs and args):
        raise _invalid_combination(args, kwargs)
    dev_type = dev.type if isinstance(dev, device_type) else dev
    if kwargs.get("device") is not None:
        _check_device(dev_type, kwargs["device"])
        dev = kwargs["device"]
    if "size" in kwargs:
        args = (Size(kwargs["size"]),)
    if not args:
        return empty(0, dtype=dt, device=dev)
    if len(args) > 1:
        if not _is_int(args[0]):
            raise _invalid_combination(args, kwargs)
        return empty(_sizes(args), dtype=dt, device=dev)
    (data,) = args
    if isinstance(data, Tensor):
        if kwargs.get("device") is not None:
            raise RuntimeError("Legacy tensor constructor of the form torch.Tensor(tensor, device=device) is not "
                               "supported.  Use torch.tensor(...) or torch.as_tensor(...) instead.")
        return _alias(data, dt if check_dtype else None, dev_type)
    if isinstance(data, Size) or _is_int(data):
        return empty(_sizes(tuple(data) if isinstance(data, Size) else (data,)), dtype=dt, device=dev)
    if isinstance(data, str):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if not isinstance(data, (list, tuple, np.ndarray)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return tensor(data, dtype=dt, device=dev)


def construct_into(self: Tensor, *args: Any, **kwargs: Any) -> None:
    """``Tensor(...)``: the legacy constructor in the default dtype, its result's state moved into ``self``."""
    source = legacy_new(dtypes.get_default_dtype(), CPU, args, kwargs, check_dtype=False)
    for slot in ("_array", "_version", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_accumulator",
                 "_retains_grad", "_base", "_view_fn"):
        setattr(self, slot, getattr(source, slot))


def new(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``x.new(...)``: the legacy constructor with ``x``'s dtype and device (sizes, data, or a tensor to alias)."""
    return legacy_new(self.dtype, self.device, args, kwargs, check_dtype=True)


# ----------------------------------------------------------------------------- Tensor.type
def _type_named(name: str) -> LegacyTensorType | None:
    """The legacy type a string names ("torch.FloatTensor", "ember.cuda.LongTensor"), None if none."""
    for root in ("torch.", "ember."):
        if name.startswith(root):
            rest = name[len(root):]
            types = CUDA_TYPES if rest.startswith("cuda.") else CPU_TYPES
            return types.get(rest.removeprefix("cuda."))
    return None


def _resolve(target: Any) -> tuple[dtypes.dtype, str | None]:
    """What ``x.type(target)`` converts to: a dtype, and a device type (None: keep the tensor's)."""
    if isinstance(target, dtypes.dtype):
        return target, None
    if isinstance(target, LegacyTensorType):
        return target.dtype, "cuda" if target.is_cuda else "cpu"
    if target is Tensor:
        return dtypes.get_default_dtype(), "cpu"
    if isinstance(target, str):
        if target in ("torch.Tensor", "ember.Tensor"):
            return dtypes.get_default_dtype(), "cpu"
        found = _type_named(target)
        if found is None:
            raise ValueError(f"invalid type: '{target}'")
        return found.dtype, "cuda" if found.is_cuda else "cpu"
    if isinstance(target, type):
        raise ValueError(f"invalid type: '{target.__name__}'")
    raise TypeError("dtype must be a type, str, or dtype object")


def tensor_type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """``x.type()``: torch's legacy type name of ``x``; ``x.type(t)``: ``x`` converted to ``t`` (a legacy type, its
    name, or a dtype), ``x`` itself when it already is one."""
    if dtype is None:
        return type_name(self.dtype, self.is_cuda)
    dt, dev_type = _resolve(dtype)
    if dev_type is None or dev_type == self.device.type:
        return self.to(dt, non_blocking=non_blocking)
    return self.to("cuda" if dev_type == "cuda" else CPU, dt, non_blocking=non_blocking)


def set_default_tensor_type(t: Any) -> None:
    """torch's deprecated way (it warns) to set the default floating dtype and device at once, from a legacy
    type or its name: ``cuda`` types make creation functions default to the current CUDA device, CPU types to the
    CPU. ember keeps the device part per thread, as ``set_default_device`` does."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    cls = _type_named(t) if isinstance(t, str) else t
    if not isinstance(cls, LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not cls.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if cls.is_cuda:
        _require_cuda(cls)

    dtypes.set_default_dtype(cls.dtype)
    set_default_device("cuda" if cls.is_cuda else None)


TENSOR_METHODS = {"new": new, "type": tensor_type, "__init__": construct_into}

__all__ = ["LegacyTensorType", "CPU_TYPES", "CUDA_TYPES", "legacy_new", "construct_into", "new", "tensor_type",
           "type_name", "set_default_tensor_type"]
