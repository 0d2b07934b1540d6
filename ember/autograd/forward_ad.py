"""Forward-mode automatic differentiation, as ``torch.autograd.forward_ad``.

Inside a ``dual_level``, ``make_dual(primal, tangent)`` gives a tensor that carries a tangent, and every op on it
gives outputs that carry ``J @ tangent``; ``unpack_dual`` reads it back. One level is open at a time (torch does
not nest them either); closing it drops every tangent made in it.

How tangents travel: while a level is open, a wrapper sits on ``Function.apply`` (``add_apply_wrapper``). After
an op ran, if some argument carries a tangent, the outputs get theirs from, in this order:

- the Function's own ``jvp(ctx, *tangents)`` (torch's custom-Function API, with ``ctx.save_for_forward``);
- the ``jvp_rule(args, outputs, tangents)`` classmethod an op of ember's own defines next to its backward (the
  elementwise, reduction, matmul, view and common nn ops; see ``tangents``);
- the generic rule for every other built-in op: its backward is linear in the output gradient ``u``, so
  ``J t = d/du <J^T u, t>``, the double-backward trick on this one op, re-run at fresh leaves.

An op that draws random numbers (dropout) must see the same draws when its tangent is computed: its Function's
``jvp_rewinder(args)``, called before the op runs, returns a context manager inside which the generators are back
where the op started (and, on leaving, where the op left them); the tangent is computed inside it.

Tangents are plain tensors, computed without recording a graph and with tangent propagation switched off (a
thread-local depth), so the ops that compute them, and the ops nested inside a forward, carry no tangents of
their own.
"""
from __future__ import annotations

import contextlib
from collections import namedtuple
from typing import Any, Callable

from ..tensor.tensor import Tensor
from .dual_levels import OPEN, Level, attach, get_tangent, level_named, no_tangents, paused
from .function import add_apply_wrapper, last_ctx
from .grad_mode import _GradModeContext, enable_grad, no_grad
from .gradients import grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


_REMOVE_WRAPPER: list[Callable[[], None]] = []


# ----------------------------------------------------------------------------------------------------- levels
def enter_dual_level() -> int:
    """Open a forward-AD level and make it the default of ``make_dual``/``unpack_dual``; returns its number."""
    if OPEN:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    OPEN.append(Level(0))
    _REMOVE_WRAPPER.append(add_apply_wrapper(_propagate))
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the open level; every tangent made in it is dropped."""
    current = OPEN[-1].number if OPEN else -1
    level = current if level is None else level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    closing = OPEN.pop()
    _REMOVE_WRAPPER.pop()()
    for t in list(closing.duals):
        t.__dict__.pop("_fw_grad", None)


class dual_level(_GradModeContext):
    """Context manager (or decorator) that opens a level for its block: ``with dual_level(): ...``."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


# ----------------------------------------------------------------------------------------------------- tangents
def _check_tangent(tensor: Any, tangent: Any) -> None:
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
                           f"{OPEN[-1].number} is not supported.")


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A view of ``tensor`` that carries ``tangent`` (kept as-is) at ``level``; differentiable backward."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if not OPEN:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if level_named(level) is None:
        raise RuntimeError("Invalid level given to _make_dual")
    _check_tangent(tensor, tangent)
    if get_tangent(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {OPEN[-1].number} is not supported.")
    with no_tangents():
        dual = tensor.view_as(tensor)
    attach(dual, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a tangent-free view of ``tensor`` and its tangent at ``level`` (None if it has none,
    or outside a level)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    tangent = get_tangent(tensor) if level_named(level) is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with no_tangents():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


# ----------------------------------------------------------------------------------------------------- propagation
def _propagate(cls: type, args: tuple, kwargs: dict, proceed: Callable) -> Any:
    """The ``Function.apply`` wrapper: run the op, then give its outputs tangents when an argument has one."""
    if paused():
        return proceed(args, kwargs)
    tangents = tuple(get_tangent(a) for a in args)
    if not any(t is not None for t in tangents):
        return proceed(args, kwargs)
    with no_tangents():
        rewinder = getattr(cls, "jvp_rewinder", None)
        rewound = rewinder(args) if rewinder is not None else contextlib.nullcontext()
        result = proceed(args, kwargs)
        outputs = result if isinstance(result, tuple) else (result,)
        with no_grad(), rewound:
            found = _output_tangents(cls, args, kwargs, outputs, tangents)
        for out, tangent in zip(outputs, found):
            if tangent is not None:
                attach(out, tangent)
    return result


def _differentiable(t: Any) -> bool:
    return isinstance(t, Tensor) and t.dtype.is_floating_point


def _output_tangents(cls: type, args: tuple, kwargs: dict, outputs: tuple, tangents: tuple) -> tuple:
    """One tangent (or None) per output, by the op's ``jvp``, its ``jvp_rule``, or the generic rule."""
    if not any(_differentiable(o) for o in outputs):
        return (None,) * len(outputs)
    jvp = getattr(cls, "jvp", None)
    if jvp is not None:
        found = _custom_jvp(cls, jvp, outputs, tangents)
    elif not cls.__module__.startswith("ember."):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")
    else:
        rule = getattr(cls, "jvp_rule", None)
        found = rule(args, outputs, tangents) if rule is not None else _generic(cls, args, kwargs, tangents)
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
    if hasattr(cls.backward, "__wrapped__"):  # once_differentiable: J^T u would be a constant, not a function of u
        raise NotImplementedError(f"forward-mode AD of {cls.__name__}: its backward is once_differentiable, so the "
                                  "double-backward rule cannot give its jvp (and it has no jvp_rule).")
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
        pushed = grad(tuple(g for g, _ in linear), dummies, tuple(t for _, t in linear),
                      allow_unused=True) if linear else (None,) * len(dummies)
    found: list = [None] * len(outputs)
    for i, d, p in zip(used, dummies, pushed):
        found[i] = p if p is not None else d.detach()
    return tuple(found)


def _fresh_leaf(arg: Any, tangent: Any) -> Any:
    """The argument cut from every graph (a new leaf that requires grad when it has a tangent)."""
    if not isinstance(arg, Tensor):
        return arg
    leaf = arg.detach()
    return leaf.requires_grad_(True) if tangent is not None else leaf
