"""Stochastic gradient descent, with heavy-ball or Nesterov momentum."""
from __future__ import annotations

from typing import Any, Iterable

from ..tensor.optimizer_updates import FusedUpdate
from ..tensor.tensor import Tensor
from ._fused_optimizer import FusedOptimizer
from ._state import zeros_state
from ._validate import check_lr, check_not_differentiable, check_nonneg

__all__ = ["SGD"]


class SGD(FusedOptimizer):
    """torch.optim.SGD: ``buf = momentum*buf + (1-dampening)*g``; ``p -= lr * buf`` (Nesterov: ``g + momentum*buf``)."""

    _update = FusedUpdate("sgd_update")
    _options = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")
    _scalar_state: dict[str, float] = {}  # no step counter, as torch's SGD
    _legacy_options = {"nesterov": False, "maximize": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_not_differentiable(differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _prepare(self, p: Tensor, names: tuple[str | None, ...], options: tuple) -> tuple[list, tuple]:
        """No state without momentum (as torch); a new momentum buffer takes the first gradient as is."""
        buf, first = None, False
        if options[1] != 0.0:  # momentum
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = zeros_state(p)
                first = True
        return [buf], (*options, first)
