"""RAdam: Adam with a rectified (variance-corrected) adaptive step."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ._fused_optimizer import FusedOptimizer
from ._validate import check_betas, check_lr, check_nonneg, check_not_differentiable

__all__ = ["RAdam"]


class RAdam(FusedOptimizer):
    """torch.optim.RAdam: the adaptive term is used only once the SMA length ``rho_t`` exceeds 5."""

    _update = FusedUpdate("radam_update")
    _options = ("lr", "betas", "eps", "weight_decay", "maximize", "decoupled_weight_decay")
    _buffers = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_not_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_scalars(self, state: dict[str, Any], step: float, options: tuple) -> tuple:
        lr, beta1, beta2, eps, weight_decay, maximize, decoupled = options
        rho_inf = 2 / (1 - beta2) - 1
        bias_correction2 = 1 - beta2 ** step
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        rectified = rho_t > 5.0
        rect = (math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                if rectified else 1.0)
        return (lr, beta1, beta2, eps, weight_decay, 1 - beta1 ** step, bias_correction2 ** 0.5, rect, rectified,
                maximize, decoupled)
