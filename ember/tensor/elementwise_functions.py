"""torch's elementwise functions, made from the op declarations (``ember.opcodes``).

``ember.sin`` for each generated unary op and ``ember.atan2`` for each generated binary op (both run
``elementwise.unary``/``elementwise.binary`` by name) with the ``out=`` their declaration gives; the in-place
functions torch exports (``ember.sin_``, ``ember.xlogy_``) and torch's other names (``ember.arcsin``,
``ember.multiply``); and ``SPECIAL``, the elementwise functions of ``torch.special`` (``ember.special``). Beside
them, the functions that are the Tensor method of the same name (``ember.clamp_min``, ``ember.detach``) and
``clip``. An op declared gets its functions here; ``__all__`` lists the top-level ones.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import opcodes as op
from . import elementwise
from .arguments import tensor_args, unguarded
from .out_arg import with_out
from .tensor import Tensor

# torch functions that are the Tensor method of the same name: in-place forms and a few plain ones
_METHOD_FUNCTIONS = ("clamp_", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_", "deg2rad_", "rad2deg_",
                     "nan_to_num_", "zero_", "fill_", "detach", "detach_")
_OUT_METHOD_FUNCTIONS = {"clamp_min", "clamp_max"}  # of those, the ones torch gives ``out=``
_WRITTEN_ALIASES = {"clip": "clamp"}  # other names of functions elementwise.py writes (with their in-place form)


def _with_out(fn: Callable, d: op.Elementwise) -> Callable:
    fn.__name__ = fn.__qualname__ = d.name
    fn.__doc__ = f"Elementwise {d.name}" + (f" (see ``Tensor.{d.name}``)." if d.method else ".")
    return fn if d.out is None else with_out(fn, cast=d.out == op.CAST)


def _unary_function(d: op.Unary) -> Callable:
    name = d.name

    def fn(input: Tensor) -> Tensor:
        return elementwise.unary(name, input)

    return _with_out(fn, d)


def _binary_function(d: op.Binary) -> Callable:
    name = d.name

    def fn(input: Any, other: Any) -> Tensor:
        return elementwise.binary(name, input, other)

    return _with_out(fn, d)


def _method_function(name: str) -> Callable:
    """``ember.name(input, ...)`` as ``input.name(...)``: torch's functions that are methods of their first tensor."""
    method = unguarded(getattr(Tensor, name))

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return method(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)`` (see ``Tensor.{name}``)."
    return with_out(fn) if name in _OUT_METHOD_FUNCTIONS else fn


def _functions() -> tuple[dict[str, Callable], dict[str, Callable]]:
    """(top-level functions, ``torch.special`` functions) by name, guarded (``tensor_args``); an alias is its
    target's object."""
    made: dict[str, Callable] = {}
    special: dict[str, Callable] = {}
    for d in (*op.UNARY, *op.BINARY):
        if d.surface == op.GENERATED and (d.function or d.special):
            fn = tensor_args(_unary_function(d) if d.arity == 1 else _binary_function(d))
            special.update(dict.fromkeys(d.special, fn))
            if d.function:
                made[d.name] = fn
        if d.surface not in (op.GENERATED, op.WRITTEN) or not d.function:
            continue
        for alias in d.aliases:
            made[alias] = made.get(d.name) or getattr(elementwise, d.name)
        if d.inplace_function:
            made[d.name + "_"] = tensor_args(_method_function(d.name + "_"))
            if d.alias_inplace_functions:
                made.update(dict.fromkeys((alias + "_" for alias in d.aliases), made[d.name + "_"]))
    made.update({name: tensor_args(_method_function(name)) for name in _METHOD_FUNCTIONS})
    for alias, name in _WRITTEN_ALIASES.items():
        made[alias], made[alias + "_"] = getattr(elementwise, name), made[name + "_"]
    return made, special


_FUNCTIONS, SPECIAL = _functions()
__all__ = sorted(_FUNCTIONS)
globals().update(_FUNCTIONS)
