"""Module backward hooks: identity Functions around a module's inputs and outputs that see their gradients."""
from __future__ import annotations

from typing import Any, Callable

from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...tensor.tensor import Tensor


class _SeeGradients(Function):
    """Identity on its tensors; in backward it hands their gradients to ``callback``, which may replace them."""

    @staticmethod
    def forward(ctx, callback: Callable, *tensors: Tensor) -> tuple:
        ctx.callback = callback
        return tuple(t._alias() for t in tensors)

    @staticmethod
    def backward(ctx, *grads: Any) -> tuple:
        return (None, *ctx.callback(grads))


def _tensor_positions(values: tuple) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor)]


class BackwardHooks:
    """One forward call's view of a module's full backward (pre-)hooks."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.input_count = 0
        self.inputs_wrapped = False
        self.grad_outputs: tuple | None = None

    def wrap_inputs(self, args: tuple) -> tuple:
        positions = _tensor_positions(args)
        self.input_count = len(positions)
        wanted = [i for i in positions if args[i].requires_grad]
        if not wanted or not is_grad_enabled():
            return args
        self.inputs_wrapped = True
        self.input_mask = [args[i].requires_grad for i in positions]
        seen = _SeeGradients.apply(self._on_input_grads, *[args[i] for i in wanted])
        out = list(args)
        for i, t in zip(wanted, seen if isinstance(seen, tuple) else (seen,)):
            out[i] = t
        return tuple(out)

    def wrap_outputs(self, output: Any) -> Any:
        single = isinstance(output, Tensor)
        values = (output,) if single else tuple(output) if isinstance(output, (tuple, list)) else ()
        wanted = [i for i in _tensor_positions(values) if values[i].requires_grad]
        if not wanted or not is_grad_enabled():
            return output
        seen = _SeeGradients.apply(self._on_output_grads, *[values[i] for i in wanted])
        out = list(values)
        for i, t in zip(wanted, seen if isinstance(seen, tuple) else (seen,)):
            out[i] = t
        return out[0] if single else type(output)(out)

    def _on_output_grads(self, grads: tuple) -> tuple:
        for hook in list(self.module._backward_pre_hooks.values()):
            result = hook(self.module, grads)
            if result is not None:
                grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        self.grad_outputs = grads
        if not self.inputs_wrapped:  # no input needs a gradient: torch calls the hooks with grad_input of Nones
            for hook in list(self.module._backward_hooks.values()):
                hook(self.module, (None,) * self.input_count, grads)
        return grads

    def _on_input_grads(self, grads: tuple) -> tuple:
        it = iter(grads)
        grad_input = tuple(next(it) if wanted else None for wanted in self.input_mask)
        for hook in list(self.module._backward_hooks.values()):
            result = hook(self.module, grad_input, self.grad_outputs)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(result)}, but expected {len(grad_input)}")
                grad_input = result
        return tuple(g for g, wanted in zip(grad_input, self.input_mask) if wanted)
