"""Guards: what a compiled graph assumes of a call, as keys a call is looked up by.

A call's key (``CallKey``) has these parts, compared part by part to say which guard failed in the recompile log
("tensor 'x' size mismatch: expected [2, 3], actual [4, 3]"):

- the arguments: their structure, each tensor's dtype, device, requires_grad, layout (C-contiguous, or strides) and
  aliasing (the same tensor passed twice), each other value (by value for numbers, strings, dtypes and the
  like, by identity otherwise), and, apart, each tensor's shape (``dynamic`` decides whether a new shape counts
  as a recompile);
- the state: the modules the function reads (each module's training flag, hooks, parameters and buffers by
  identity with their metadata, submodules and plain attributes), the globals and closure variables its code
  names, and the tensors among them;
- the global modes: grad mode, inference mode, the default dtype, deterministic algorithms.

Only what a replay depends on is keyed; a module attribute holding a list is guarded by identity, not contents.
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from .. import _determinism
from .._grad_state import state as _grad_modes
from ..nn.modules.module import Module
from ..tensor import dtypes
from ..tensor.tensor import Tensor

__all__ = ["CallKey", "StateSnapshot", "arguments", "describe_change", "global_key", "global_names", "modules_in",
           "state_key", "watched_names"]

_SIMPLE = (int, float, bool, str, bytes, type(None), complex, dtypes.dtype, np.dtype, np.generic)
_MODULE_TABLES = ("_parameters", "_buffers")
# Module bookkeeping keyed by its contents rather than identity (hooks registered or removed change the call).
_SKIPPED = ("forward",)  # ``Module.compile`` puts the compiled forward here


def _simple(value: Any) -> Any:
    """A hashable fact about a non-tensor value: the value itself for plain values, else its identity."""
    if isinstance(value, float):
        return ("float", value.hex())  # -0.0 and NaN keyed exactly
    if isinstance(value, _SIMPLE):
        return (type(value).__name__, value)
    if isinstance(value, tuple) and all(isinstance(v, _SIMPLE) and not isinstance(v, float) for v in value):
        return ("tuple", value)
    return ("id", id(value))


def _tensor_facts(t: Tensor) -> tuple:
    """dtype, device, requires_grad and layout: "C" for C-contiguous, else the strides (a recorded view of a
    strided input is valid for those strides only)."""
    a = t._array
    host = type(a) is np.ndarray
    contiguous = a.flags.c_contiguous if host else a.is_contiguous
    return (a.dtype.char, -1 if host else a.device_index, t._requires_grad, "C" if contiguous else a.strides)


@dataclass(frozen=True)
class CallKey:
    """The key a call is looked up by (see the module docstring): hashable, compared part by part."""

    structure: tuple   # the containers and the non-tensor values
    tensors: tuple     # per tensor input: dtype, device, requires_grad, contiguity (and identity if also free)
    shapes: tuple      # per tensor input: its shape
    state: tuple       # the modules and watched variables
    modes: tuple       # the global modes

    def without_shapes(self) -> tuple:
        return (self.structure, self.tensors, self.state, self.modes)


def arguments(args: tuple, kwargs: dict, free: frozenset[int] = frozenset()
              ) -> tuple[tuple, tuple, tuple, list[Tensor], list[Module]]:
    """(structure, tensor facts, shapes, tensors in graph-input order, modules) of a call's arguments. ``free``:
    ids of tensors the function also reaches otherwise (a parameter passed as an argument must stay that
    parameter). A module among the arguments is keyed by identity; its state joins the state key."""
    structure: list = []
    facts: list = []
    shapes: list = []
    tensors: list[Tensor] = []
    modules: list[Module] = []
    seen: dict[int, int] = {}

    def walk(value: Any) -> None:
        if isinstance(value, Module):
            modules.append(value)
            structure.append(("id", id(value)))
        elif isinstance(value, Tensor):
            first = seen.get(id(value))
            if first is not None:
                structure.append(("alias", first))
                return
            seen[id(value)] = len(tensors)
            structure.append("tensor")
            tensors.append(value)
            facts.append(_tensor_facts(value) + ((id(value),) if id(value) in free else ()))
            shapes.append(value._array.shape)
        elif isinstance(value, (tuple, list)):
            structure.append((type(value), len(value)))
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            structure.append((type(value), tuple(value)))
            for v in value.values():
                walk(v)
        else:
            structure.append(_simple(value))

    walk(args)
    walk(kwargs)
    return tuple(structure), tuple(facts), tuple(shapes), tensors, modules


def global_key() -> tuple:
    """The global modes a replay depends on."""
    return (_grad_modes.enabled, _grad_modes.inference, dtypes.get_default_dtype().name,
            _determinism.are_deterministic_algorithms_enabled())


def _module_facts(m: Module, out: list) -> None:
    d = m.__dict__
    out.append(("module", id(m), d.get("training")))
    for table in _MODULE_TABLES:
        for name, t in d.get(table, {}).items():
            out.append((table, name, id(t), None if t is None else _tensor_facts(t) + (t._array.shape,)))
    for name, value in d.items():
        if name in _MODULE_TABLES or name in _SKIPPED or name == "training":
            continue
        if isinstance(value, Tensor):
            out.append((name, id(value), _tensor_facts(value) + (value._array.shape,)))
        elif isinstance(value, dict):
            out.append((name, tuple((k, id(v)) for k, v in value.items())))
        elif isinstance(value, (set, frozenset)):
            out.append((name, tuple(sorted(map(repr, value)))))
        else:
            out.append((name, _simple(value)))


def modules_in(roots: Iterable[Module]) -> list[Module]:
    """``roots`` and every submodule, each once."""
    found: dict[int, Module] = {}
    stack = list(roots)
    while stack:
        m = stack.pop()
        if id(m) in found:
            continue
        found[id(m)] = m
        stack.extend(sub for sub in reversed(list(m.__dict__.get("_modules", {}).values())) if sub is not None)
    return list(found.values())


_UNBOUND = object()


def global_names(code: Any, scope: dict, prefix: str = "") -> list[tuple[str, Callable[[], Any]]]:
    """(name, reader) for each global of ``scope`` that ``code`` names (modules aside)."""
    return [(prefix + name, lambda name=name: scope.get(name, _UNBOUND)) for name in code.co_names
            if name in scope and not isinstance(scope[name], types.ModuleType)]


def watched_names(fn: Callable) -> list[tuple[str, Callable[[], Any]]]:
    """(name, reader) for each global and closure variable ``fn``'s own code names: what a recompile watches."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    readers = global_names(code, getattr(fn, "__globals__", {}))
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        readers.append((name, lambda cell=cell: _cell_value(cell, _UNBOUND)))
    return readers


def _cell_value(cell: Any, missing: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return missing


def state_key(modules: list[Module], names: list[tuple[str, Callable[[], Any]]]) -> tuple:
    """The key of the state the function reads: its modules (and their submodules) and watched variables."""
    out: list = []
    values = [(name, read()) for name, read in names]
    roots = list(modules) + [v for _, v in values if isinstance(v, Module)]
    for m in modules_in(roots):
        _module_facts(m, out)
    for name, value in values:
        if isinstance(value, Tensor):
            out.append((name, id(value), _tensor_facts(value) + (value._array.shape,)))
        else:
            out.append((name, _simple(value)))
    return tuple(out)


_MODE_NAMES = ("grad mode", "inference mode", "default dtype", "deterministic algorithms")
_FACT_NAMES = ("dtype", "device", "requires_grad", "layout", "identity")


_MISSING = object()


class StateSnapshot:
    """The state key of some modules and watched variables, with a fast test that nothing it was made from
    changed: the same objects (by identity) in every module's ``__dict__``, parameter table and hook table, the
    same array and requires_grad in every tensor, the same watched values. Identity implies the key's facts
    (which read only those objects), so a call pays the identity tests, not the key, while nothing changes."""

    def __init__(self, modules: list[Module], names: list[tuple[str, Callable[[], Any]]]) -> None:
        self.key = state_key(modules, names)
        self._sizes: list[tuple[Any, int]] = []
        self._items: list[tuple[dict, str, Any]] = []
        self._tensors: list[tuple[Tensor, Any, bool]] = []
        values = [(read, read()) for _, read in names]
        roots = list(modules) + [v for _, v in values if isinstance(v, Module)]
        for m in modules_in(roots):
            self._watch(m.__dict__)
        for read, value in values:
            if isinstance(value, Tensor):
                self._tensors.append((value, value._array, value._requires_grad))
        self._values = values

    def _watch(self, d: dict) -> None:
        self._sizes.append((d, len(d)))
        for name, value in d.items():
            self._items.append((d, name, value))
            if isinstance(value, Tensor):
                self._tensors.append((value, value._array, value._requires_grad))
            elif isinstance(value, dict) and name != "_modules":
                self._watch(value)
            elif isinstance(value, (set, frozenset)):
                self._sizes.append((value, len(value)))

    def unchanged(self) -> bool:
        for container, size in self._sizes:
            if len(container) != size:
                return False
        for d, name, value in self._items:
            if d.get(name, _MISSING) is not value:
                return False
        for t, array, requires_grad in self._tensors:
            if t._array is not array or t._requires_grad is not requires_grad:
                return False
        for read, value in self._values:
            if read() is not value:
                return False
        return True


def describe_change(new: CallKey, old: CallKey, names: list[str]) -> str:
    """The first guard ``new`` fails of an entry keyed ``old``, in words: why a call recompiled."""
    if new.structure != old.structure:
        return _first_difference("the arguments", new.structure, old.structure)
    for name, a, b in zip(names, new.tensors, old.tensors):
        for fact, x, y in zip(_FACT_NAMES, a, b):
            if x != y:
                if fact == "dtype":
                    x, y = np.dtype(x).name, np.dtype(y).name
                return f"tensor '{name}' {fact} mismatch: expected {y}, actual {x}"
        if len(a) != len(b):
            return f"tensor '{name}' identity changed"
    for name, a, b in zip(names, new.shapes, old.shapes):
        if a != b:
            return f"tensor '{name}' size mismatch: expected {list(b)}, actual {list(a)}"
    for label, a, b in zip(_MODE_NAMES, new.modes, old.modes):
        if a != b:
            return f"{label}: expected {b}, actual {a}"
    return _first_difference("the module or global state", new.state, old.state)


def _first_difference(what: str, new: tuple, old: tuple) -> str:
    for a, b in zip(new, old):
        if a != b:
            return f"{what} changed: {b!r} -> {a!r}"
    return f"{what} changed"
