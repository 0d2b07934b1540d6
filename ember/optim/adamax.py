"""Adamax: Adam with an infinity-norm second moment."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ._fused_optimizer import FusedOptimizer
from ._validate import check_betas, check_lr, check_nonneg, check_not_differentiable

__all__ = ["Adamax"]


class Adamax(FusedOptimizer):
    """torch.optim.Adamax: ``u = max(beta2*u, |g| + eps)``; ``p -= lr/(1-beta1**t) * m/u``."""

    _update = FusedUpdate("adamax_update")
    _options = ("lr", "betas", "eps", "weight_decay", "maximize")
    _buffers = ("exp_avg", "exp_inf")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_not_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_scalars(self, state: dict[str, Any], step: float, options: tuple) -> tuple:
        lr, beta1, beta2, eps, weight_decay, maximize = options
        return beta1, beta2, eps, weight_decay, lr / (1 - beta1 ** step), maximize
