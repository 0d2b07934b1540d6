"""Adagrad: per-coordinate steps scaled by the accumulated squared gradients."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ._fused_optimizer import FusedOptimizer
from ._validate import check_lr, check_nonneg, check_not_differentiable

__all__ = ["Adagrad"]


class Adagrad(FusedOptimizer):
    """torch.optim.Adagrad; state (``step``, ``sum``) is created for every parameter up front, as in torch."""

    _update = FusedUpdate("adagrad_update")
    _options = ("lr", "lr_decay", "eps", "weight_decay", "maximize")
    _buffers = ("sum",)

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg("lr_decay value", lr_decay)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("initial_accumulator_value value", initial_accumulator_value)
        check_nonneg("epsilon value", eps)
        check_not_differentiable(differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p], self._buffers)

    def _buffer_fill(self) -> float:
        return float(self.defaults["initial_accumulator_value"])

    def _step_scalars(self, state: dict[str, Any], step: float, options: tuple) -> tuple:
        lr, lr_decay, *rest = options
        return (lr / (1 + (step - 1) * lr_decay), *rest)
