"""Hyper-parameter checks with torch's ValueError messages ("Invalid learning rate: -1.0")."""
from __future__ import annotations

from typing import Any

from ..tensor.tensor import Tensor

__all__ = ["check_lr", "check_nonneg", "check_betas", "check_not_differentiable"]


def check_lr(lr: Any) -> None:
    """A learning rate: a non-negative number or a one-element Tensor."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_nonneg("learning rate", lr)


def check_nonneg(label: str, value: Any) -> None:
    if not 0.0 <= value:
        raise ValueError(f"Invalid {label}: {value}")


def check_betas(betas: Any) -> None:
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_not_differentiable(differentiable: bool) -> None:
    """ember's updates run as fused in-place kernels outside autograd."""
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported by ember's optimizers")
