"""torch's ``out=`` argument: the result is written into the given tensor(s), which are returned."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..autograd.grad_mode import is_grad_enabled, no_grad
from .dtypes import can_cast
from .tensor import Tensor


def _write(result: Tensor, out: Any, op: str, cast: bool) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.dtype is not result.dtype and not (cast and can_cast(result.dtype, out.dtype)):
        raise RuntimeError(f"{op}(): expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    if out.shape != result.shape:
        if out.numel() != 0:
            raise RuntimeError(
                f"{op}(): out has shape {list(out.shape)} but the result has shape {list(result.shape)}; "
                "pass an empty tensor to have it resized"
            )
        out._array = result._array.astype(out.dtype.np)
        return out
    with no_grad():
        out.copy_(result)
    return out


def with_out(fn: Callable | None = None, *, cast: bool = False) -> Callable:
    """Give ``fn`` torch's ``out=`` keyword: compute, then copy into ``out`` (a tensor or a tuple of them).

    ``out`` must have the result's dtype, or with ``cast`` (torch's rule for elementwise ops) any dtype the
    result casts to. Used bare (``@with_out``) or with the keyword (``@with_out(cast=True)``).
    """
    if fn is None:
        return functools.partial(with_out, cast=cast)

    @functools.wraps(fn)
    def wrapper(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        if is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args):
            raise RuntimeError(
                f"{fn.__name__}(): functions with out=... arguments don't support automatic differentiation, "
                "but one of the arguments requires grad."
            )
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{fn.__name__}(): argument 'out' must be a tuple of {len(result)} Tensors")
            written = tuple(_write(r, o, fn.__name__, cast) for r, o in zip(result, out))
            return type(result)(*written) if hasattr(result, "_fields") else written
        return _write(result, out, fn.__name__, cast)

    return wrapper
