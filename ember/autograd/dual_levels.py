"""The open forward-AD level and the tangents attached in it: what the ops need of forward-mode AD.

``forward_ad`` opens and closes levels and computes the tangents of op outputs, running ops to do so; the ops only
keep tangents right through in-place writes (``carry_tangent``, ``after_inplace``). So the ops import this module,
and ``forward_ad`` sits above them.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

from .grad_mode import no_grad


class Level:
    """An open level: its number, and the tensors given a tangent in it (so closing it can drop them)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.duals: weakref.WeakSet = weakref.WeakSet()


OPEN: list[Level] = []  # the open level, if any (a list so no ``global`` statement is needed)
_LOCAL = threading.local()  # ``depth`` > 0 while an op runs or its tangents are computed: no tangents then


def level_named(level: int | None) -> Level | None:
    """The open level ``level`` names (the open one when None), or None."""
    if not OPEN or (level is not None and level != OPEN[-1].number):
        return None
    return OPEN[-1]


def get_tangent(t: Any) -> Any:
    """``t``'s tangent at the open level (None when it has none, or ``t`` is not a tensor)."""
    entry = getattr(t, "_fw_grad", None)
    if entry is None or not OPEN or entry[0] is not OPEN[-1]:
        return None
    return entry[1]


def attach(t: Any, tangent: Any) -> None:
    """Give tensor ``t`` the tangent ``tangent`` at the open level."""
    level = OPEN[-1]
    t._fw_grad = (level, tangent)
    level.duals.add(t)


class no_tangents:
    """Ops in this block carry no tangents (they compute tangents, or run inside another op)."""

    def __enter__(self) -> None:
        _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1

    def __exit__(self, *exc: Any) -> None:
        _LOCAL.depth -= 1


def paused() -> bool:
    """Whether ops carry no tangents here (inside ``no_tangents``)."""
    return getattr(_LOCAL, "depth", 0) > 0


# ----------------------------------------------------------------------------------------------------- in place
def carry_tangent(src: Any, dst: Any) -> None:
    """Give ``dst`` (a stand-in for ``src``, such as an in-place op's snapshot) ``src``'s tangent."""
    tangent = get_tangent(src)
    if tangent is not None:
        attach(dst, tangent)


def after_inplace(target: Any, result: Any) -> None:
    """``target`` took ``result``'s values in place: its tangent takes ``result``'s, in place as well, so views
    of ``target`` and the base ``target`` views see it (a base without a tangent gets zeros first)."""
    new = get_tangent(result)
    old = get_tangent(target)
    if new is None and old is None:
        return
    with no_tangents(), no_grad():
        if old is None:
            old = _tangent_slot(target)
            if old is None:
                attach(target, new.clone())
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
        attach(base, base_tangent)
    slot = type(view)._make(view_fn(base_tangent._array), version=base_tangent._version, base=base_tangent)
    slot._view_fn = view_fn
    attach(view, slot)
    return slot
