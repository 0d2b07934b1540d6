"""Adadelta: steps scaled by the ratio of running RMS of updates and of gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ._fused_optimizer import FusedOptimizer
from ._validate import check_lr, check_nonneg, check_not_differentiable

__all__ = ["Adadelta"]


class Adadelta(FusedOptimizer):
    """torch.optim.Adadelta: ``delta = sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps) * g``; ``p -= lr * delta``."""

    _update = FusedUpdate("adadelta_update")
    _options = ("lr", "rho", "eps", "weight_decay", "maximize")
    _buffers = ("square_avg", "acc_delta")

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg("epsilon value", eps)
        check_nonneg("weight_decay value", weight_decay)
        check_not_differentiable(differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)
