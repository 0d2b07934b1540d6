"""RMSprop, optionally centered and with momentum."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ._fused_optimizer import FusedOptimizer
from ._validate import check_lr, check_nonneg, check_not_differentiable

__all__ = ["RMSprop"]


class RMSprop(FusedOptimizer):
    """torch.optim.RMSprop: ``p -= lr * g / (sqrt(E[g^2] - E[g]^2 if centered else E[g^2]) + eps)``."""

    _update = FusedUpdate("rmsprop_update")
    _options = ("lr", "alpha", "eps", "weight_decay", "momentum", "maximize")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("alpha value", alpha)
        check_not_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _buffer_names(self, group: dict[str, Any]) -> tuple[str | None, ...]:
        return ("square_avg", "momentum_buffer" if group["momentum"] > 0 else None,
                "grad_avg" if group["centered"] else None)
