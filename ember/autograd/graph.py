"""Hooks on the autograd graph, as ``torch.autograd.graph``.

``saved_tensors_hooks(pack_hook, unpack_hook)``: while the context is active,
every tensor a recorded op saves with ``ctx.save_for_backward`` goes through
``pack_hook(tensor)`` at once and the result is stored instead; reading
``ctx.saved_tensors`` calls ``unpack_hook(stored)``, which must return a Tensor.
Nested contexts: the innermost pair applies. ``save_on_cpu`` moves saved
tensors to the CPU and back; ``disable_saved_tensors_hooks`` forbids hooks in
a region. Node hooks (``grad_fn.register_hook`` / ``register_prehook``) live on
``Node`` itself.
"""
from __future__ import annotations

from typing import Any, Callable

from . import function as _function
from .function import Node

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

_DISABLED: list = []  # error messages of active ``disable_saved_tensors_hooks`` regions


class saved_tensors_hooks:
    """Context manager: pack saved tensors with ``pack_hook`` and unpack them with ``unpack_hook``."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if _DISABLED:
            raise RuntimeError(_DISABLED[-1])
        _function._SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: Any) -> None:
        _function._SAVED_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device when backward reads them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Any) -> tuple:
            return t.device, t.to("cpu")

        def unpack(packed: tuple) -> Any:
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager (or decorator) in which entering a ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        if _function._SAVED_HOOKS:
            raise RuntimeError(self.error_message)
        _DISABLED.append(self.error_message)

    def __exit__(self, *exc: Any) -> None:
        _DISABLED.pop()

    def __call__(self, func: Callable) -> Callable:
        import functools

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with disable_saved_tensors_hooks(self.error_message):
                return func(*args, **kwargs)

        return wrapper
