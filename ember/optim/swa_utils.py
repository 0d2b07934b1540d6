"""Weight averaging (``torch.optim.swa_utils``): stochastic weight averaging and exponential moving averages of a
model's parameters, the SWA learning-rate schedule, and recomputing batch-norm statistics for averaged weights.

An averaging function takes ``(averaged, current, num_averaged)``: the per-tensor form returns the new average,
the multi-tensor form (``multi_avg_fn``) updates lists of tensors in place. ember has no fused ``_foreach``
kernels; the multi-tensor forms loop over the tensors with the same arithmetic (``lerp_`` for floating tensors).
"""
from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable, Sequence

from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..tensor import dtypes
from ..tensor.creation import tensor as make_tensor
from ..tensor.optimizer_updates import updates_in_batches
from ..tensor.tensor import Tensor
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]

TensorList = Sequence[Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _is_float(t: Tensor) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[TensorList, TensorList, Any], None]:
    """In-place exponential moving average of lists of tensors: ``ema = decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params: TensorList, current_params: TensorList, _: Any) -> None:
        if _is_float(ema_params[0]):
            for ema, current in zip(ema_params, current_params):
                ema.lerp_(current, 1 - decay)
        else:
            for ema, current in zip(ema_params, current_params):
                ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[TensorList, TensorList, Any], None]:
    """In-place running mean of lists of tensors: ``avg += (current - avg) / (num_averaged + 1)``."""

    @no_grad()
    def swa_update(averaged_params: TensorList, current_params: TensorList, num_averaged: Tensor | int) -> None:
        if _is_float(averaged_params[0]):
            weight = 1 / (num_averaged + 1)
            for averaged, current in zip(averaged_params, current_params):
                averaged.lerp_(current, weight)
            return
        for averaged, current in zip(averaged_params, current_params):
            if isinstance(num_averaged, Tensor):
                averaged.addcdiv_(current - averaged, num_averaged + 1)
            else:
                averaged.add_(current - averaged, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """Exponential moving average of one tensor: returns ``decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """Running mean of one tensor: returns ``averaged + (current - averaged) / (num_averaged + 1)``."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _by_device_and_dtype(averaged: list[Tensor], current: list[Tensor]) -> dict[tuple, tuple[list, list]]:
    """The pairs grouped by the averaged tensor's (device, dtype), in first-seen order."""
    groups: dict[tuple, tuple[list, list]] = {}
    for a, c in zip(averaged, current):
        group = groups.setdefault((a.device, a.dtype), ([], []))
        group[0].append(a)
        group[1].append(c)
    return groups


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) are the average of the
    weights passed to ``update_parameters``: an equal-weight running mean by default (SWA), or ``avg_fn`` /
    ``multi_avg_fn`` (e.g. ``get_ema_multi_avg_fn``). ``n_averaged`` counts the updates. Without ``use_buffers``
    the buffers are copied from the model at each update (use ``update_bn`` for batch-norm statistics)."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[[TensorList, TensorList, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", make_tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The averaged model's output."""
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model: Module) -> tuple[Iterable[Tensor], Iterable[Tensor]]:
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.parameters(), model.parameters()

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        mine, theirs = self._averaged_tensors(model)
        averaged: list[Tensor] = []
        current: list[Tensor] = []
        first = bool(self.n_averaged == 0)
        for a, c in zip(mine, theirs):
            c = c.detach().to(a.device)
            averaged.append(a.detach())
            current.append(c)
            if first:
                a.detach().copy_(c)
        if self.n_averaged > 0:
            self._average(averaged, current)
        if not self.use_buffers:
            for b, b_model in zip(self.module.buffers(), model.buffers()):
                b.detach().copy_(b_model.detach().to(b.device))
        self.n_averaged += 1

    def _average(self, averaged: list[Tensor], current: list[Tensor]) -> None:
        """torch's dispatch: ``avg_fn`` tensor by tensor; else per (device, dtype) group ``multi_avg_fn``, or the
        default SWA mean (the multi-tensor form where the backend has multi-tensor kernels, as torch's foreach
        devices: CUDA; the per-tensor form on the CPU)."""
        if self.avg_fn is not None:
            for a, c in zip(averaged, current):
                a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            return
        for (device, _), (group_averaged, group_current) in _by_device_and_dtype(averaged, current).items():
            n_averaged = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(group_averaged, group_current, n_averaged)
            elif updates_in_batches(group_averaged[0]):
                get_swa_multi_avg_fn()(group_averaged, group_current, n_averaged)
            else:
                swa = get_swa_avg_fn()
                for a, c in zip(group_averaged, group_current):
                    a.copy_(swa(a, c, n_averaged))


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of ``model``'s batch-norm layers with one pass over ``loader`` (a batch
    that is a list or tuple contributes its first element), as a cumulative average; the layers' momentum and
    the model's train/eval mode are restored afterwards."""
    momenta = {m: m.momentum for m in model.modules() if isinstance(m, _BatchNorm)}
    if not momenta:
        return
    for m in momenta:
        m.reset_running_stats()
        m.momentum = None
    was_training = model.training
    model.train()
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


def _linear_anneal(t: float) -> float:
    return t


def _cosine_anneal(t: float) -> float:
    return (1 - math.cos(math.pi * t)) / 2


_ANNEALS = {"cos": _cosine_anneal, "linear": _linear_anneal}


class SWALR(LRScheduler):
    """Anneal each group's lr to its ``swa_lr`` (a float, or one per group) over ``anneal_epochs`` steps, by a
    cosine or linear curve (``anneal_strategy``), then hold it; torch's chainable form, value for value."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | Sequence[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for value, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in _ANNEALS:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = _ANNEALS[anneal_strategy]

    def _progress(self, step: int) -> float:
        """The annealing curve's value after ``step`` steps (clamped to [0, 1] in time)."""
        return self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))

    def get_lr(self) -> list[Any]:
        """Undo the previous step's mix to recover the lr the annealing started from, then mix anew."""
        self._warn_get_lr()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        before, now = self._progress(step - 1), self._progress(step)
        lrs = []
        for group in self.optimizer.param_groups:
            swa_lr = group["swa_lr"]
            start = swa_lr if before == 1 else (group["lr"] - before * swa_lr) / (1 - before)
            lrs.append(swa_lr * now + start * (1 - now))
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer and the annealing function (restored from its name)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore ``state_dict()``'s attributes."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
