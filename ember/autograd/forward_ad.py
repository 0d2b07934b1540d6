"""Forward-mode automatic differentiation, as ``torch.autograd.forward_ad``.

Inside a ``dual_level``, ``make_dual(primal, tangent)`` gives a tensor that carries a tangent, and every op on it
gives outputs that carry ``J @ tangent``; ``unpack_dual`` reads it back. One level is open at a time (torch does
not nest them either); closing it drops every tangent made in it.

How tangents travel: while a level is open, a wrapper sits on ``Function.apply`` (``add_apply_wrapper``). After
an op ran, if some argument carries a tangent, the outputs get theirs from, in this order:

- the Function's own ``jvp(ctx, *tangents)`` (torch's custom-Function API, with ``ctx.save_for_forward``);
- a tangent formula of ``forward_rules`` (the elementwise, reduction, matmul and view ops);
- the generic rule for every other built-in op: its backward is linear in the output gradient ``u``, so
  ``J t = d/du <J^T u, t>``, the double-backward trick on this one op, re-run at fresh leaves.

Tangents are plain tensors, computed without recording a graph and with tangent propagation switched off (a
thread-local depth), so the ops that compute them, and the ops nested inside a forward, carry no tangents of
their own.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from collections import namedtuple
from typing import Any, Callable

from . import forward_rules
from .function import _tensor_class, add_apply_wrapper
from .grad_mode import _GradModeContext, enable_grad, no_grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _Level:
    """An open level: its number, and the tensors given a tangent in it (so closing it can drop them)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.duals: weakref.WeakSet = weakref.WeakSet()


_OPEN: list[_Level] = []  # the open level, if any (a list so no ``global`` statement is needed)
_REMOVE_WRAPPER: list[Callable[[], None]] = []
_LOCAL = threading.local()  # ``depth`` > 0 while an op runs or its tangents are computed: no tangents then


# ----------------------------------------------------------------------------------------------------- levels
def enter_dual_level() -> int:
    """Open a forward-AD level and make it the default of ``make_dual``/``unpack_dual``; returns its number."""
    if _OPEN:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _OPEN.append(_Level(0))
    _REMOVE_WRAPPER.append(add_apply_wrapper(_propagate))
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level; every tangent made in it is dropped."""
    current = _OPEN[-1].number if _OPEN else -1
    level = current if level is None else level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    closing = _OPEN.pop()
    _REMOVE_WRAPPER.pop()()
    for t in list(closing.duals):
        t.__dict__.pop("_fw_grad", None)


class dual_level(_GradModeContext):
    """Context manager (or decorator) that opens a level for its block: ``with dual_level(): ...``."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


def _level(level: int | None) -> _Level | None:
    """The open level ``level`` names (the open one when None), or None."""
    if not _OPEN or (level is not None and level != _OPEN[-1].number):
        return None
    return _OPEN[-1]


# ----------------------------------------------------------------------------------------------------- tangents
def get_tangent(t: Any) -> Any:
    """``t``'s tangent at the open level (None when it has none, or ``t`` is not a tensor)."""
    entry = getattr(t, "_fw_grad", None)
    if entry is None or not _OPEN or entry[0] is not _OPEN[-1]:
        return None
    return entry[1]


def _attach(t: Any, tangent: Any) -> None:
    level = _OPEN[-1]
    t._fw_grad = (level, tangent)
    level.duals.add(t)


class _no_tangents:
    """Ops in this block carry no tangents (they compute tangents, or run inside another op)."""

    def __enter__(self) -> None:
        _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1

    def __exit__(self, *exc: Any) -> None:
        _LOCAL.depth -= 1


def _check_tangent(tensor: Any, tangent: Any) -> None:
    Tensor = _tensor_class()
    if not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual(): argument 'tangent' must be Tensor, not {type(tangent).__name__}")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError("Trying to set a forward gradient that is on a different device than that of the "
                           f"original Tensor, this is not supported. Tensor is on {tensor.device} while the given "
                           f"forward gradient is on {tangent.device}.")
    if get_tangent(tangent) is not None:
        raise RuntimeError("Setting a forward grad that itself has a forward gradient at the same level "
                           f"{_OPEN[-1].number} is not supported.")


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A view of ``tensor`` that carries ``tangent`` (kept as-is) at ``level``; differentiable backward."""
    if not isinstance(tensor, _tensor_class()):
        raise TypeError(f"make_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if not _OPEN:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if _level(level) is None:
        raise RuntimeError("Invalid level given to _make_dual")
    _check_tangent(tensor, tangent)
    if get_tangent(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {_OPEN[-1].number} is not supported.")
    with _no_tangents():
        dual = tensor.view_as(tensor)
    _attach(dual, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a tangent-free view of ``tensor`` and its tangent at ``level`` (None if it has none,
    or outside a level)."""
    if not isinstance(tensor, _tensor_class()):
        raise TypeError(f"unpack_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    tangent = get_tangent(tensor) if _level(level) is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _no_tangents():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


# ----------------------------------------------------------------------------------------------------- in place
def carry_tangent(src: Any, dst: Any) -> None:
    """Give ``dst`` (a stand-in for ``src``, such as an in-place op's snapshot) ``src``'s tangent."""
    tangent = get_tangent(src)
    if tangent is not None:
        _attach(dst, tangent)


def after_inplace(target: Any, result: Any) -> None:
    """``target`` took ``result``'s values in place: its tangent takes ``result``'s, in place as well, so views
    of ``target`` and the base ``target`` views see it (a base without a tangent gets zeros first)."""
    new = get_tangent(result)
    old = get_tangent(target)
    if new is None and old is None:
        return
    with _no_tangents(), no_grad():
        if old is None:
            old = _tangent_slot(target)
            if old is None:
                _attach(target, new.clone())
                return
        if new is None:
            old.zero_()
        else:
            old.copy_(new)


def _tangent_slot(view: Any) -> Any:
    """For a view whose base has no tangent: give the base a zero tangent and the view the matching view of it."""
    base, view_fn = view._base, view._view_fn
    if base is None or view_fn is None:
        return None
    base_tangent = get_tangent(base)
    if base_tangent is None:
        base_tangent = base.new_zeros(tuple(base.shape))
        _attach(base, base_tangent)
    slot = type(view)._make(view_fn(base_tangent._array), version=base_tangent._version, base=base_tangent)
    slot._view_fn = view_fn
    _attach(view, slot)
    return slot


# ----------------------------------------------------------------------------------------------------- propagation
def _propagate(cls: type, args: tuple, kwargs: dict, proceed: Callable) -> Any:
    """The ``Function.apply`` wrapper: run the op, then give its outputs tangents when an argument has one."""
    if getattr(_LOCAL, "depth", 0):
        return proceed(args, kwargs)
    tangents = tuple(get_tangent(a) for a in args)
    if not any(t is not None for t in tangents):
        return proceed(args, kwargs)
    with _no_tangents():
        rewound = forward_rules.rewinder(cls, args)
        result = proceed(args, kwargs)
        outputs = result if isinstance(result, tuple) else (result,)
        with no_grad(), (rewound() if rewound is not None else contextlib.nullcontext()):
            found = _output_tangents(cls, args, kwargs, outputs, tangents)
        for out, tangent in zip(outputs, found):
            if tangent is not None:
                _attach(out, tangent)
    return result


def _differentiable(t: Any) -> bool:
    return isinstance(t, _tensor_class()) and t.dtype.is_floating_point


def _output_tangents(cls: type, args: tuple, kwargs: dict, outputs: tuple, tangents: tuple) -> tuple:
    """One tangent (or None) per output, by the op's ``jvp``, a tangent formula, or the generic rule."""
    if not any(_differentiable(o) for o in outputs):
        return (None,) * len(outputs)
    jvp = getattr(cls, "jvp", None)
    if jvp is not None:
        found = _custom_jvp(cls, jvp, outputs, tangents)
    elif not cls.__module__.startswith("ember."):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")
    else:
        rule = forward_rules.rule_for(cls)
        found = rule(cls, args, outputs, tangents) if rule is not None else _generic(cls, args, kwargs, tangents)
    found = found if isinstance(found, tuple) else (found,)
    return tuple(_owned(t, tangents) if _differentiable(o) else None for o, t in zip(outputs, found))


def _owned(tangent: Any, inputs: tuple) -> Any:
    """A tangent that is an input's tangent itself is copied, so an in-place op on the output leaves the input's
    alone (views of an input's tangent are other objects and stay views, as torch's)."""
    if tangent is not None and any(tangent is t for t in inputs):
        return tangent.clone()
    return tangent


def _custom_jvp(cls: type, jvp: Callable, outputs: tuple, tangents: tuple) -> tuple:
    """A custom Function's ``jvp(ctx, *tangents)`` (where ``ctx.saved_tensors`` gives what ``save_for_forward``
    kept), checked against the outputs' shapes."""
    from .function import last_ctx

    ctx = last_ctx()
    ctx._in_jvp = True
    try:
        found = jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    found = found if isinstance(found, tuple) else (found,)
    if len(found) != len(outputs):
        raise RuntimeError(f"{cls.__name__}.jvp returned {len(found)} tangents but forward returned "
                           f"{len(outputs)} outputs.")
    for out, t in zip(outputs, found):
        if t is not None and _differentiable(out) and t.shape != out.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(out.shape)} while "
                               f"the given forward gradient is of size {list(t.shape)}.")
    return found


def _generic(cls: type, args: tuple, kwargs: dict, tangents: tuple) -> tuple:
    """``J t`` for any op whose backward is differentiable: re-run it at fresh leaves, pull back dummies ``u``
    (``J^T u``), then pull the tangents back through that to ``u``."""
    from . import grad

    if hasattr(cls.backward, "__wrapped__"):  # once_differentiable: J^T u would be a constant, not a function of u
        raise NotImplementedError(f"forward-mode AD of {cls.__name__}: its backward is once_differentiable, so the "
                                  "double-backward rule cannot give its jvp (and it has no tangent formula).")
    with enable_grad():
        fresh = tuple(_fresh_leaf(a, t) for a, t in zip(args, tangents))
        result = cls.apply(*fresh, **kwargs)
        outputs = result if isinstance(result, tuple) else (result,)
        used = [i for i, o in enumerate(outputs) if _differentiable(o) and o.requires_grad]
        dummies = tuple(outputs[i].new_zeros(tuple(outputs[i].shape)).requires_grad_(True) for i in used)
        leaves = [(leaf, t.to(leaf.dtype)) for leaf, t in zip(fresh, tangents) if t is not None]
        pulled = grad(tuple(outputs[i] for i in used), tuple(leaf for leaf, _ in leaves), dummies,
                      create_graph=True, allow_unused=True) if used else ()
        linear = [(g, t) for g, (_, t) in zip(pulled, leaves) if g is not None and g.requires_grad]
        pushed = grad(tuple(g for g, _ in linear), dummies, tuple(t for _, t in linear), allow_unused=True) \
            if linear else (None,) * len(dummies)
    found: list = [None] * len(outputs)
    for i, d, p in zip(used, dummies, pushed):
        found[i] = p if p is not None else d.detach()
    return tuple(found)


def _fresh_leaf(arg: Any, tangent: Any) -> Any:
    """The argument cut from every graph (a new leaf that requires grad when it has a tangent)."""
    if not isinstance(arg, _tensor_class()):
        return arg
    leaf = arg.detach()
    return leaf.requires_grad_(True) if tangent is not None else leaf
