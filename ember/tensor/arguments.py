"""torch's argument rules for ember's public functions: ``@tensor_args``.

A non-tensor where a public function takes a tensor is torch's TypeError ("amax(): argument 'input' (position 1)
must be Tensor, not int"), not an AttributeError from deep inside ("'int' object has no attribute 'ndim'").
Checking every argument of every call up front would cost each op a loop; instead the function runs as it is, and
only when it fails with AttributeError (what a non-tensor meets first: ``.ndim``, ``.dtype``, ``._requires_grad``)
are its arguments bound to the signature and the first ``Tensor`` parameter holding something else reported.

The same wrapper takes NumPy's argument names, as torch's argument parser does for its built-in functions:
``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1`` for ``input`` and ``x2`` for ``other``
(``ember.sum(x, axis=1, keepdims=True)``). Only a call that fails with TypeError and passed one of those names is
retried with the names mapped, so calls that don't use them pay nothing more; a function torch writes in Python
(``split``, ``norm``, ``unique``) takes none, as in torch. ember also takes them in ``nn.functional``, where
torch's Python-written functions refuse them.

Which parameters are tensors is read from the annotations once, when the function is decorated. A function
decorated twice, or reached through two names (``concat = cat``), keeps one guarded form. Tensor methods get their
guard from ``method_args`` (``tensor/methods.py`` binds them).
"""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

from .tensor import Tensor

__all__ = ["guard_namespace", "method_args", "tensor_args", "unguarded"]

# How a tensor parameter is annotated (annotations are strings under ``from __future__ import annotations``).
_TENSOR_ANNOTATIONS = {Tensor, "Tensor", "Tensor | None", "Optional[Tensor]", "'Tensor'"}

# torch's python_arg_parser accepts these NumPy names for its parameters
_NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"), "other": ("x2",)}
# ember's functions for those torch writes in Python (torch/functional.py, torch/_tensor.py), whose parameters
# have no other names there (``torch.linalg.norm`` is built in and takes them: only ``torch.norm`` does not)
_WITHOUT_NUMPY_NAMES = {"ember.tensor.reduce.norm", "ember.tensor.views.split", "ember.tensor.sorting.unique",
                        "ember.tensor.sorting.unique_consecutive"}


def _tensor_parameters(fn: Callable) -> tuple[inspect.Signature, list[tuple[int, str]], dict[str, str]] | None:
    """The signature, the (position, name) of each ``Tensor`` parameter of ``fn`` and its NumPy argument names
    (alias -> parameter); None when it has neither."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = signature.parameters
    found = [(i, p.name) for i, p in enumerate(params.values())
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
             and p.annotation in _TENSOR_ANNOTATIONS]
    own = inspect.unwrap(fn)
    python_written = f"{own.__module__}.{own.__qualname__}" in _WITHOUT_NUMPY_NAMES
    aliases = {} if python_written or any(p.kind is p.VAR_KEYWORD for p in params.values()) \
        else {alias: name for name, p in params.items() if name in _NUMPY_NAMES and p.kind is not p.POSITIONAL_ONLY
              for alias in _NUMPY_NAMES[name] if alias not in params}
    return (signature, found, aliases) if found or aliases else None


def _numpy_names_mapped(kwargs: dict, aliases: dict[str, str]) -> dict | None:
    """``kwargs`` with NumPy's names replaced by the parameters' own; None when none was used or one collides
    with a name also given (``dim`` and ``axis``: the original TypeError stands, as in torch)."""
    if not aliases or not kwargs or not any(k in aliases for k in kwargs):
        return None
    mapped = {aliases.get(k, k): v for k, v in kwargs.items()}
    return mapped if len(mapped) == len(kwargs) else None


def _not_a_tensor(fn: Callable, signature: inspect.Signature, params: list[tuple[int, str]], args: tuple,
                  kwargs: dict) -> TypeError | None:
    """torch's TypeError for the first tensor parameter bound to a non-tensor; None when every one is a tensor."""
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None
    for position, name in params:
        value = bound.get(name)
        if value is not None and not isinstance(value, Tensor):
            error = TypeError(f"{fn.__name__}(): argument '{name}' (position {position + 1}) must be Tensor, not "
                              f"{type(value).__name__}")
            error.not_a_tensor = True  # a guard around a function calling this one reports its own argument
            return error
    return None


def _guard(fn: Callable, found: tuple[inspect.Signature, list[tuple[int, str]], dict[str, str]]) -> Callable:
    signature, params, aliases = found
    # a function given ``out=`` by ``out_arg.with_out`` (the decorator directly around it) runs its undecorated
    # form unless ``out`` is passed: one frame instead of two
    inner = getattr(fn, "without_out", None)
    direct = inner if inner is not None and inner is getattr(fn, "__wrapped__", None) else fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return (fn if "out" in kwargs else direct)(*args, **kwargs)
        except (AttributeError, TypeError) as failure:
            if isinstance(failure, AttributeError) or getattr(failure, "not_a_tensor", False):
                error = _not_a_tensor(fn, signature, params, args, kwargs)
                if error is None:
                    raise
                raise error from None
            mapped = _numpy_names_mapped(kwargs, aliases)  # the binding failed: nothing ran yet
            if mapped is None:
                raise
        return call(*args, **mapped)

    return call


# each original function -> its guarded form (a function reached through two names, or a function and the method
# of the same name, stays one object), and back
_GUARDED: dict[Callable, Callable] = {}
_ORIGINALS: dict[Callable, Callable] = {}


def _guarded(fn: Callable, found: Any) -> Callable:
    if fn not in _GUARDED:
        guard = fn if found is None else _guard(fn, found)
        _GUARDED[fn], _ORIGINALS[guard] = guard, fn
    return _GUARDED[fn]


def tensor_args(fn: Callable) -> Callable:
    """Decorator of a public function: torch's TypeError when a ``Tensor`` parameter gets something else, and
    NumPy's argument names where torch takes them. ``fn`` itself when it has no parameter of either kind."""
    if fn in _ORIGINALS:
        return fn
    return _guarded(fn, _tensor_parameters(fn))


def unguarded(fn: Callable) -> Callable:
    """The function ``tensor_args`` guarded (``fn`` itself when it is no guard)."""
    return _ORIGINALS.get(fn, fn)


def method_args(fn: Callable) -> Callable:
    """``fn`` (an unguarded Tensor method) guarded where it takes a tensor besides ``self`` or a parameter with a
    NumPy name besides ``self`` (``x.sum(axis=0)``); otherwise ``fn`` itself, as ``self`` is always a tensor.
    A method and the function it is stays one guarded object (``Tensor.masked_fill is ember.masked_fill``)."""
    found = _tensor_parameters(fn)
    if found is None:
        return fn
    first = next(iter(found[0].parameters), None)
    if any(position > 0 for position, _ in found[1]) or any(p != first for p in found[2].values()):
        return _guarded(fn, found)
    return fn


def guard_namespace(*namespaces: dict[str, Any]) -> None:
    """Guard every public function ember defines that these namespaces (or tables of functions by name) hold:
    for ``nn.functional``, whose functions the nn layer defines and re-exports."""
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            if not name.startswith("_") and isinstance(value, types.FunctionType) \
                    and (value.__module__ or "").startswith("ember"):
                namespace[name] = tensor_args(value)
