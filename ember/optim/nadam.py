"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..tensor.optimizer_updates import FusedUpdate
from ..tensor.tensor import Tensor
from ._fused_optimizer import FusedOptimizer
from ._validate import check_betas, check_lr, check_nonneg, check_not_differentiable

__all__ = ["NAdam"]


class NAdam(FusedOptimizer):
    """torch.optim.NAdam; ``mu_product`` is kept as a 0-d tensor of the default dtype, like torch's."""

    _update = FusedUpdate("nadam_update")
    _options = ("lr", "betas", "eps", "weight_decay", "momentum_decay", "maximize", "decoupled_weight_decay")
    _buffers = ("exp_avg", "exp_avg_sq")
    _scalar_state = {"step": 0.0, "mu_product": 1.0}

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("momentum_decay value", momentum_decay)
        check_not_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_scalars(self, state: dict[str, Any], step: float, options: tuple) -> tuple:
        lr, beta1, beta2, eps, weight_decay, momentum_decay, maximize, decoupled = options
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product = _scale_in_place(state["mu_product"], mu)
        mu_product_next = mu_product * mu_next
        return (lr, beta1, beta2, eps, weight_decay, 1 - beta2 ** step, -lr * (1.0 - mu) / (1.0 - mu_product),
                (-lr * mu_next) / (1.0 - mu_product_next), maximize, decoupled)


def _scale_in_place(t: Tensor, factor: float) -> float:
    """``t *= factor`` in the tensor's own precision (as torch rounds it); the result as a Python float."""
    a = t._array
    np.multiply(a, a.dtype.type(factor), out=a)
    t._version.value += 1
    return float(a)
