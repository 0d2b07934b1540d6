"""torch's ``out=`` argument: the result is written into the given tensor(s), which are returned.

The rules are torch's: ``out`` must have the result's dtype (elementwise ops: any dtype the result casts to;
reductions and factories that take ``dtype``: ``out``'s dtype is the one computed in); ``out`` of another shape
is resized in place (with torch's deprecation warning when it had elements); it may alias an input; a view
writes through to its base; and under grad mode no argument (nor ``out``) may require grad.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from .dtypes import SCALAR_TYPE_NAMES, can_cast, to_dtype
from .tensor import Tensor, _check_no_internal_overlap
from .views import resize_storage


def _requires_grad(value: Any) -> bool:
    if isinstance(value, Tensor):
        return value._requires_grad
    return isinstance(value, (tuple, list)) and any(_requires_grad(v) for v in value)


def _check_dtype(result: Tensor, out: Tensor, op: str, cast: bool | str) -> None:
    if out.dtype is result.dtype or cast == "unsafe":
        return
    if not cast:
        raise RuntimeError(f"{op}(): Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{op}(): result type {SCALAR_TYPE_NAMES[result.dtype.name]} can't be cast to the "
                           f"desired output type {SCALAR_TYPE_NAMES[out.dtype.name]} (the out tensor's dtype)")


def write_out(result: Tensor, out: Any, op: str, cast: bool | str = False) -> Tensor:
    """Copy ``result`` into ``out`` (checked, resized when its shape differs) and return ``out``."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    _check_dtype(result, out, op, cast)
    if out.device != result.device:
        raise RuntimeError(f"{op}(): Expected out tensor to be on device {result.device}, but got {out.device}")
    if out.shape != result.shape:
        if out.numel():
            warnings.warn(
                f"{op}(): An output with one or more elements was resized since it had shape {list(out.shape)}, "
                f"which does not match the required output shape {list(result.shape)}. This behavior is "
                "deprecated, and in a future PyTorch release outputs will not be resized unless they have zero "
                "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=3)
        resize_storage(out, tuple(result.shape))
    _check_no_internal_overlap(out)
    np.copyto(out._array, result._array, casting="unsafe")
    out._version.value += 1
    return out


def _adopt_out_dtype(op: str, out: Any, kwargs: dict, takes_device: bool) -> None:
    """Factories and dtype-taking reductions compute in ``out``'s dtype (and, for factories, on its device)."""
    if not isinstance(out, Tensor):
        return
    dtype = kwargs.get("dtype")
    if dtype is None:
        kwargs["dtype"] = out.dtype
    elif to_dtype(dtype) is not out.dtype:
        raise RuntimeError(f"{op}(): dtype {SCALAR_TYPE_NAMES[to_dtype(dtype).name]} does not match dtype of out "
                           f"parameter ({SCALAR_TYPE_NAMES[out.dtype.name]})")
    if takes_device and kwargs.get("device") is None:
        kwargs["device"] = out.device


def _signature_with_out(fn: Callable) -> inspect.Signature | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    extra = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Tensor | None")
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    return signature.replace(parameters=params[:at] + [extra] + params[at:])


def with_out(fn: Callable | None = None, *, cast: bool | str = False, dtype_from_out: bool = False) -> Callable:
    """Give ``fn`` torch's ``out=`` keyword: compute, then copy into ``out`` (a tensor or a tuple of them).

    ``out`` must have the result's dtype; with ``cast`` (torch's rule for elementwise ops) a single result may go
    to any dtype it casts to, with ``cast="unsafe"`` to any dtype at all. With ``dtype_from_out`` (factories, and
    reductions that take ``dtype``) ``out``'s dtype is passed as ``dtype`` when none is given, and must match when
    one is. Used bare (``@with_out``) or with keywords (``@with_out(cast=True)``). The undecorated function stays
    reachable as ``.without_out`` (Tensor methods bind it: torch's methods take no ``out``).
    """
    if fn is None:
        return functools.partial(with_out, cast=cast, dtype_from_out=dtype_from_out)
    signature = _signature_with_out(fn)
    takes_device = signature is not None and "device" in signature.parameters
    op = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        if is_grad_enabled() and (_requires_grad(args) or _requires_grad(tuple(kwargs.values()))
                                  or _requires_grad(out)):
            raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if dtype_from_out:
            _adopt_out_dtype(op, out, kwargs, takes_device)
        result = fn(*args, **kwargs)
        if not isinstance(result, tuple):
            written = write_out(result, out, op, cast)
            return written.requires_grad_() if kwargs.get("requires_grad") else written  # a factory's flag
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{op}(): argument 'out' must be a tuple of {len(result)} Tensors")
        written = tuple(write_out(r, o, op) for r, o in zip(result, out))
        return type(result)(*written) if hasattr(result, "_fields") else written

    if signature is not None:
        wrapper.__signature__ = signature
    wrapper.without_out = fn
    return wrapper
