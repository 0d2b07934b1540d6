"""torch's TypeError when a public function gets something else where it takes a tensor.

Without this, ``ember.amax(3)`` fails deep inside with "'int' object has no attribute 'ndim'". Checking every
argument of every call up front would cost each op a loop; instead each public function whose signature annotates
a parameter ``Tensor`` runs as it is, and only when it fails with AttributeError (what a non-tensor meets first:
``.ndim``, ``.dtype``, ``._requires_grad``) are its arguments bound to the signature and the first ``Tensor``
parameter holding something else reported as torch does: "amax(): argument 'input' (position 1) must be Tensor,
not int".

The same wrapper takes NumPy's argument names, as torch's argument parser does for its built-in functions:
``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1`` for ``input`` and ``x2`` for ``other``
(``x.sum(axis=1, keepdims=True)``). Only a call that fails with TypeError and passed one of those names is
retried with the names mapped, so calls that don't use them pay nothing more; a function torch writes in Python
(``split``, ``norm``, ``unique``) takes none, as in torch. ember also takes them in ``nn.functional``, where
torch's Python-written functions refuse them.
"""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

from .tensor.tensor import Tensor

__all__ = ["guard_namespace", "guard_methods"]

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
    aliases = {} if f"{fn.__module__}.{fn.__qualname__}" in _WITHOUT_NUMPY_NAMES or any(p.kind is p.VAR_KEYWORD for p in params.values()) \
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
            return TypeError(f"{fn.__name__}(): argument '{name}' (position {position + 1}) must be Tensor, not "
                             f"{type(value).__name__}")
    return None


def guarded(fn: Callable) -> Callable:
    """``fn``, turning an AttributeError caused by a non-tensor in a ``Tensor`` parameter into torch's TypeError,
    and taking NumPy's argument names (``axis``, ``keepdims``, ...) where torch does."""
    found = _tensor_parameters(fn)
    if found is None:
        return fn
    signature, params, aliases = found

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AttributeError:
            error = _not_a_tensor(fn, signature, params, args, kwargs)
            if error is None:
                raise
            raise error from None
        except TypeError:
            mapped = _numpy_names_mapped(kwargs, aliases)  # the binding failed: nothing ran yet
            if mapped is None:
                raise
        return call(*args, **mapped)

    return call


# original function's id -> its guarded form, shared by every namespace: a function exported twice (``ember.selu``
# and ``nn.functional.selu``, an alias) stays one object. The wrapper keeps the original alive, so ids stay unique.
_GUARDED: dict[int, Callable] = {}
_GUARDS: set[int] = set()  # ids of the guarded forms (a namespace may already hold one)


def _guard_once(value: Callable) -> Callable:
    if id(value) not in _GUARDED:
        _GUARDED[id(value)] = guard = guarded(value)
        _GUARDS.add(id(guard))
    return _GUARDED[id(value)]


def _ours(name: str, value: Any) -> bool:
    """A public function ember defines, not yet guarded."""
    return not name.startswith("_") and isinstance(value, types.FunctionType) \
        and (value.__module__ or "").startswith("ember") and id(value) not in _GUARDS


def guard_namespace(namespace: dict[str, Any]) -> None:
    """Guard every public function that ember defines in a module namespace."""
    for name, value in list(namespace.items()):
        if _ours(name, value):
            namespace[name] = _guard_once(value)


def guard_methods(cls: type) -> None:
    """Guard the public methods of ``cls`` that take a tensor besides ``self`` (``self`` is one: a method with
    no other tensor parameter has nothing to check) or a parameter with a NumPy name besides ``self``
    (``x.sum(axis=0)``). Operators (dunder names) stay unwrapped: ``x + y`` pays no extra frame, and torch
    answers a wrong operand type there with NotImplemented anyway."""
    for name, value in list(vars(cls).items()):
        if _ours(name, value):
            found = _tensor_parameters(value)
            if found is None:
                continue
            first = next(iter(found[0].parameters), None)
            if any(position > 0 for position, _ in found[1]) or any(p != first for p in found[2].values()):
                setattr(cls, name, _guard_once(value))
