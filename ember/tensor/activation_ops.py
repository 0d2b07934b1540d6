"""The activations torch has as tensor ops, functions and methods alike: ``softmax``, ``log_softmax``,
``hardshrink``, ``prelu`` (``torch.softmax(x, 1)``, ``x.softmax(1)``).

They are tensor ops here as in torch, so ``tensor/methods.py`` binds them with the others;
``ember.nn.functional`` re-exports them and builds its forms (``F.softmax``'s optional ``dim``, ``F.softmin``) on
``checked_softmax``. softmax and log_softmax run the fused row kernels (``tensor/fused/softmax.py``).
"""
from __future__ import annotations

from typing import Any, Callable

from . import autocast_policy, dtypes
from . import elementwise as ew
from .arguments import tensor_args
from .fused.softmax import softmax as fused_softmax
from .tensor import Tensor

__all__ = ["hardshrink", "log_softmax", "prelu", "softmax"]


def require_float(x: Tensor, kernel: str) -> None:
    """torch's errors for an activation's input: a non-tensor, or a dtype that is not floating (named by torch's
    ``kernel``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{kernel}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.scalar_type_name}\'')


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def checked_softmax(input: Tensor, dim: int, dtype: Any, log: bool) -> Tensor:
    """softmax (``log``: log_softmax) along ``dim`` in torch's order of checks: the cast, the dim check, then an
    empty tensor (of any dtype) passes through, then the float check."""
    if not isinstance(input, Tensor):
        name = "log_softmax" if log else "softmax"
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    op = "log_softmax" if log else "softmax"
    if dtype is None and autocast_policy.ACTIVE and autocast_policy.covers(op, input):
        return autocast_policy.run(op, checked_softmax, input, dim, dtype, log)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    d = _wrap_dim(int(dim), input.ndim)
    if input.numel() == 0:
        return input.clone()
    require_float(input, "log_softmax_lastdim_kernel_impl" if log else "softmax_lastdim_kernel_impl")
    return fused_softmax(input, d, log)


@tensor_args
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``torch.softmax`` / ``Tensor.softmax``: exp(x) / sum(exp(x)) along ``dim`` (required here)."""
    return checked_softmax(input, dim, dtype, False)


@tensor_args
def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``torch.log_softmax`` / ``Tensor.log_softmax``: x - logsumexp(x) along ``dim`` (required here)."""
    return checked_softmax(input, dim, dtype, True)


@tensor_args
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (NaN stays NaN)."""
    inside = (input >= -lambd) & (input <= lambd)
    return ew.where(inside, 0.0, input)


@tensor_args
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, with one weight per channel (dim 1) or one shared."""
    if autocast_policy.ACTIVE and autocast_policy.covers("prelu", input):
        return autocast_policy.run("prelu", prelu, input, weight)
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if n != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                f"{n} and channel size = {channels}."
            )
        weight = weight.reshape((n,) + (1,) * (input.ndim - 2))
    elif weight.ndim == 1 and input.ndim == 0:
        weight = weight.reshape(())
    return ew.where(input > 0, input, weight * input)


TENSOR_METHODS: dict[str, Callable] = {name: globals()[name] for name in __all__}
