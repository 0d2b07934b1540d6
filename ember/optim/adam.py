"""Adam and AdamW (Adam with decoupled weight decay)."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ..tensor.tensor import Tensor
from ._fused_optimizer import FusedOptimizer
from ._state import to_scalar
from ._validate import check_betas, check_lr, check_nonneg, check_not_differentiable

__all__ = ["Adam", "AdamW"]


class Adam(FusedOptimizer):
    """torch.optim.Adam: bias-corrected moment estimates; AMSGrad and decoupled (AdamW) weight decay as options."""

    _update = FusedUpdate("adam_update")
    _options = ("lr", "betas", "eps", "weight_decay", "maximize", "decoupled_weight_decay")
    _legacy_options = {"amsgrad": False, "maximize": False, "decoupled_weight_decay": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        check_not_differentiable(differentiable)
        betas = tuple(to_scalar(b) for b in betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _buffer_names(self, group: dict[str, Any]) -> tuple[str | None, ...]:
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq" if group["amsgrad"] else None)

    def _step_scalars(self, state: dict[str, Any], step: float, options: tuple) -> tuple:
        lr, beta1, beta2, eps, weight_decay, maximize, decoupled = options
        return (lr, beta1, beta2, eps, weight_decay, lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5, maximize,
                decoupled)


class AdamW(Adam):
    """torch.optim.AdamW: Adam whose weight decay shrinks the parameter directly (``p *= 1 - lr*wd``)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
