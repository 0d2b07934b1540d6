"""Whole-tensor comparisons: ``isclose``, ``allclose`` and ``equal`` (torch's tolerances and NaN rules), built on
the elementwise ops so they run on either device; never recorded by autograd."""
from __future__ import annotations

from typing import Any

from ..autograd.grad_mode import no_grad
from . import dtypes
from .tensor import Tensor
from .arguments import tensor_args
from .creation import tensor


def _operand(input: Tensor, other: Any, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(other, Tensor):
        return other
    if isinstance(other, (bool, int, float)):
        return tensor(other, dtype=input.dtype, device=input.device)
    raise TypeError(f"{op}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")


@tensor_args
def isclose(input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (or equal, which covers infinities); NaNs are close
    to each other only with ``equal_nan``. Both tensors must have one dtype, as in torch."""
    other = _operand(input, other, "isclose")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose(): {input.dtype.scalar_type_name} did not match {other.dtype.scalar_type_name}")
    if rtol < 0 or atol < 0:
        bad, value = ("rtol", rtol) if rtol < 0 else ("atol", atol)
        raise RuntimeError(f"isclose(): {bad} must be greater than or equal to zero, but got {value}")
    with no_grad():
        close = input == other
        if input.dtype is dtypes.bool:
            return close
        if equal_nan and input.dtype.is_floating_point:
            close = close | (input.isnan() & other.isnan())
        a, b = (input, other) if input.dtype.is_floating_point else (input.double(), other.double())
        diff = (a - b).abs()
        return close | (diff.isfinite() & (diff <= atol + rtol * b.abs()))


@tensor_args
def allclose(input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (see ``isclose``)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@tensor_args
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same size and elements (NaN equals nothing)."""
    other = _operand(input, other, "equal")
    if input.shape != other.shape:
        return False
    with no_grad():
        return bool((input == other).all().item())


TENSOR_METHODS = {"isclose": isclose, "allclose": allclose, "equal": equal}
__all__ = ["isclose", "allclose", "equal"]
