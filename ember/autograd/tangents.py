"""Building blocks of the forward-mode rules that ember's own ops carry.

An op's Function may define ``jvp_rule(args, outputs, tangents)`` (a static or class method) next to its
backward: given the positional arguments of its call, its outputs and one tangent (or None) per argument, it
returns the output's tangent (or a tuple, one per output). Rules run with tangent propagation and grad mode off,
and may call any op. The pieces here are shared by the rules of several op modules: ``linear_jvp`` for ops
linear in their tensor arguments, ``total_tangent`` to add up the contributions of several arguments.
"""
from __future__ import annotations

from typing import Any

from ..tensor.tensor import Tensor


def total_tangent(parts: list, out: Any) -> Any:
    """The sum of the non-None tangent contributions, as a tensor of its own shaped like ``out``."""
    parts = [p for p in parts if p is not None]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    if total.shape != out.shape:
        total = total.expand(tuple(out.shape))
    if total._base is not None:  # a view of some input's tangent: the output must not share it
        total = total.clone()
    return total if total.dtype is out.dtype else total.to(out.dtype)


def _linear(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """The op itself applied to the tangents, zeros standing in for floating tensor arguments without one."""
    swapped = tuple((t if t is not None else a.new_zeros(tuple(a.shape)))
                    if isinstance(a, Tensor) and a.dtype.is_floating_point else a for a, t in zip(args, tangents))
    return cls.apply(*swapped)


# The ``jvp_rule`` of ops linear in their floating tensor arguments taken together (sums, views, copies, joins,
# gathers): such an op's class sets ``jvp_rule = linear_jvp``.
linear_jvp = classmethod(_linear)
