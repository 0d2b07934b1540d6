"""The step loop shared by the optimizers whose update is one fused kernel per parameter (or per group).

``FusedOptimizer.step`` walks the param groups, skips parameters without a
gradient, creates state on a parameter's first step, advances its ``step``
counter and hands parameter, gradient, state buffers and scalars to the
optimizer's update rule (a ``FusedUpdate``, the tensor-layer op over the
backends' ``optim_updates`` kernels). Unless the group says ``foreach=False``,
the parameters that share a device, dtype and step scalars are updated together
where the backend can (one launch on the GPU; ``UpdateBatch``). A subclass
states only what is its own: its update rule, the group options the rule takes,
its state buffers, and the scalars derived from the step count.
"""
from __future__ import annotations

from typing import Any, Callable

from ..tensor.optimizer_updates import FusedUpdate, UpdateBatch
from ..tensor.tensor import Tensor
from ._state import advance_step, new_step, to_scalar, zeros_state
from .optimizer import Optimizer, run_closure

__all__ = ["FusedOptimizer"]

# Group options passed to the update rule as bools (the rest become Python floats).
_FLAGS = frozenset({"maximize", "nesterov", "decoupled_weight_decay"})


class FusedOptimizer(Optimizer):
    """Base of the fused-kernel optimizers (a template for ``step``).

    Subclasses set ``_update`` (a ``FusedUpdate``), ``_options`` (group keys
    read once per group, in the rule's order; ``"betas"`` gives two floats) and
    ``_buffers`` (zero-filled state buffers, in the rule's order), and override ``_buffer_names`` / ``_step_scalars`` where those
    depend on the group or the step count.
    """

    _update: FusedUpdate
    _options: tuple[str, ...] = ()
    _buffers: tuple[str, ...] = ()
    # 0-d state tensors (default dtype) created with the buffers, with their initial values.
    _scalar_state: dict[str, float] = {"step": 0.0}
    # Group options that older checkpoints may lack, with the value they meant (filled in on loading).
    _legacy_options: dict[str, Any] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in self._legacy_options.items():
                group.setdefault(key, value)
        for s in self.state.values():
            if isinstance(s, dict):
                for key in self._scalar_state:
                    if key in s and not isinstance(s[key], Tensor):
                        s[key] = new_step(float(s[key]))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = run_closure(closure)
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        """Update the group's parameters: on the GPU together (one launch per dtype and step scalars) unless the
        group says ``foreach=False``, else one kernel call each."""
        options = self._group_options(group)
        names = self._buffer_names(group)
        foreach = group.get("foreach")
        update = self._update
        batch = UpdateBatch(update) if foreach is None or foreach else None
        try:
            for p in group["params"]:
                grad = p.grad
                if grad is not None:
                    buffers, scalars = self._prepare(p, names, options)
                    if batch is None:
                        update(p, grad, buffers, *scalars)
                    else:
                        batch.add(p, grad, buffers, scalars)
        finally:  # parameters whose step was counted are updated even if a later one fails
            if batch is not None:
                batch.flush()

    def _group_options(self, group: dict[str, Any]) -> tuple:
        """``self._options`` of ``group`` as Python floats and bools (one-element Tensors read out)."""
        values: list[Any] = []
        for key in self._options:
            value = group[key]
            if key == "betas":
                values.extend(float(to_scalar(b)) for b in value)
            else:
                values.append(bool(value) if key in _FLAGS else float(to_scalar(value)))
        return tuple(values)

    def _buffer_names(self, group: dict[str, Any]) -> tuple[str | None, ...]:
        """The state buffers the kernel takes for this group, in order; None for an option not in use."""
        return self._buffers

    def _buffer_fill(self) -> float:
        """The initial value of every state buffer."""
        return 0.0

    def _init_state(self, p: Tensor, state: dict[str, Any], names: tuple[str | None, ...]) -> None:
        """Fill a parameter's empty state: the scalar state, then the buffers."""
        for key, value in self._scalar_state.items():
            state[key] = new_step(value)
        fill = self._buffer_fill()
        for name in names:
            if name is not None:
                state[name] = zeros_state(p, fill)

    def _prepare(self, p: Tensor, names: tuple[str | None, ...], options: tuple) -> tuple[list, tuple]:
        """Advance the parameter's step counter (creating its state on its first step); its kernel's state
        buffers (None for an unused one) and scalars."""
        state = self.state[p]
        if not state:
            self._init_state(p, state, names)
        step = advance_step(state["step"])
        return [None if name is None else state[name] for name in names], self._step_scalars(state, step, options)

    def _step_scalars(self, state: dict[str, Any], step: float, options: tuple) -> tuple:
        """The kernel's scalar arguments at step count ``step`` (default: the group options as they are)."""
        return options
