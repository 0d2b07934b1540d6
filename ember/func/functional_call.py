"""``functional_call`` (a module run with parameters and buffers it is handed instead of its own) and
``stack_module_state`` (an ensemble's states stacked, for ``vmap`` over the models)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ..nn.modules.module import Module
from ..tensor.joins import stack
from ..tensor.tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _merged(dicts: Any) -> dict:
    """One dict of name -> tensor from a dict or a sequence of them (a name given twice is an error)."""
    if isinstance(dicts, dict):
        return dict(dicts)
    merged: dict = {}
    for d in dicts:
        for name, value in d.items():
            if name in merged:
                raise ValueError(f"{name} appeared in multiple dictionaries; behavior of functional call is "
                                 "ambiguous")
            merged[name] = value
    return merged


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


@contextlib.contextmanager
def _swapped(module: Module, values: dict) -> Iterator[None]:
    """``module``'s parameters, buffers and attributes named in ``values`` replaced, restored on exit."""
    saved = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            for table in (owner._parameters, owner._buffers):
                if leaf in table:
                    saved.append((table, leaf, table[leaf], True))
                    table[leaf] = value
                    break
            else:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf), leaf in owner.__dict__))
                owner.__dict__[leaf] = value
        yield
    finally:
        for table, leaf, old, existed in reversed(saved):
            if existed:
                table[leaf] = old
            else:
                del table[leaf]


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: dict | None = None,
                    *, tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the parameters and buffers of ``parameter_and_buffer_dicts`` (a dict of
    dotted names, or a sequence of them) in place of its own. With ``tie_weights`` a tensor given for one of
    several tied names (the same Parameter) serves them all; with ``strict`` every parameter and buffer must be
    given and no other name."""
    values = _merged(parameter_and_buffer_dicts)
    for name, value in values.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"functional_call: expected a Tensor for {name!r}, got {type(value).__name__}")
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:
        given_by_identity = {id(own[name]): values[name] for name in values if name in own}
        for name, tensor in own.items():
            if name not in values and id(tensor) in given_by_identity:
                values[name] = given_by_identity[id(tensor)]
    if strict:
        missing = sorted(set(own) - set(values))
        unexpected = sorted(set(values) - set(own))
        if missing or unexpected:
            parts = ([f"Unexpected key(s): {', '.join(map(repr, unexpected))}."] if unexpected else []) + \
                    ([f"Missing key(s): {', '.join(map(repr, missing))}."] if missing else [])
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(parts))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, values):
        return module(*args, **(kwargs or {}))


def stack_module_state(models: Any) -> tuple[dict, dict]:
    """``(params, buffers)``: each name's tensors of the models stacked on a new leading dimension; the stacked
    parameters are new leaves that require grad where the models' do."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named: str) -> dict:
        tables = [dict(getattr(m, named)()) for m in models]
        result = {}
        for name, first in tables[0].items():
            value = stack([t[name].detach() for t in tables])
            result[name] = value.requires_grad_() if first.requires_grad else value
        return result

    return stacked("named_parameters"), stacked("named_buffers")
