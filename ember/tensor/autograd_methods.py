"""The ``Tensor`` methods that use autograd: the gradient hooks and ``backward``.

They sit above both the tensor core (``tensor.py``, which autograd imports) and autograd's engine (which runs
ops), so nothing below imports this module; ``tensor/methods.py`` binds them with the ops.
"""
from __future__ import annotations

from typing import Any, Callable

from ..autograd import gradients
from ..autograd.function import RemovableHandle, grad_accumulator
from .tensor import Tensor


def retain_grad(self: Tensor) -> None:
    """Keep ``.grad`` for this non-leaf tensor after backward."""
    if self._grad_fn is None:
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        return
    if self._retains_grad:
        return
    self._retains_grad = True

    def keep(grad: Tensor) -> None:
        self.grad = grad.detach() if self.grad is None else self.grad + grad.detach()

    _add_node_hook(keep, self._grad_fn, self._output_nr)


def register_hook(self: Tensor, hook: Callable[[Tensor], "Tensor | None"]) -> RemovableHandle:
    """Run ``hook(grad)`` when this tensor's gradient is computed; it may return a replacement."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is None:
        return _add_node_hook(hook, grad_accumulator(self), 0)
    return _add_node_hook(hook, self._grad_fn, self._output_nr)


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable[[Tensor], None]) -> RemovableHandle:
    """Run ``hook(self)`` on this leaf after backward has accumulated its gradient into ``self.grad`` (not
    under ``autograd.grad``, which accumulates nothing); e.g. an optimizer step per parameter."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return RemovableHandle.add(grad_accumulator(self)._hook_table("_post_accumulate_hooks"), hook)


def _add_node_hook(hook: Callable, node: Any, index: int) -> RemovableHandle:
    """``hook`` on the gradient that graph node ``node`` receives for its output ``index``."""
    table = node._hook_table("_tensor_hooks")
    return RemovableHandle.add(table.setdefault(index, {}), hook)


def backward(self: Tensor, gradient: "Tensor | None" = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see ``ember.autograd.backward``)."""
    gradients.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)


TENSOR_METHODS = {fn.__name__: fn for fn in (retain_grad, register_hook, register_post_accumulate_grad_hook,
                                             backward)}
for _fn in TENSOR_METHODS.values():
    _fn.__qualname__ = f"Tensor.{_fn.__name__}"  # as a method of the class body would be named (in error messages)
