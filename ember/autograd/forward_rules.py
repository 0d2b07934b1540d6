"""Tangent formulas (``J @ t``) for the ops forward-mode AD meets most, so they skip the generic rule.

A rule is ``rule(cls, args, outputs, tangents)``: the op's Function class, its positional arguments, its
outputs, and one tangent (or None) per argument; it returns the output's tangent (or a tuple, one per output).
Rules run with tangent propagation off and may call any op. Kept apart from the op modules so those stay about
the forward and backward passes; ``rule_for`` builds the table on first use (the ops sit above autograd).

An op that draws random numbers (dropout) must see the same draws when its tangent is computed: ``rewinder``
captures its generator before the op runs, and the rule runs with the generator rewound to that point.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from .function import _tensor_class

Rule = Callable[[type, tuple, tuple, tuple], Any]
_TABLE: dict[type, Rule] = {}
_FOUND: dict[type, Rule | None] = {}


def rule_for(cls: type) -> Rule | None:
    """The tangent formula of Function ``cls`` (or of the op family it belongs to), or None."""
    if cls not in _FOUND:
        if not _TABLE:
            _TABLE.update(_build_table())
        _FOUND[cls] = next((_TABLE[k] for k in cls.__mro__ if k in _TABLE), None)
    return _FOUND[cls]


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, _tensor_class()) and x.dtype.is_floating_point


def _total(parts: list, out: Any) -> Any:
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


# --------------------------------------------------------------------------------------------- elementwise
def _unary(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """Elementwise: the backward formula ``g * f'(x)`` taken at ``g = t``."""
    if cls.grad is None:
        raise RuntimeError(f"the derivative for '{cls.__name__.lower()}' is not implemented.")
    return cls.grad(args[0], outputs[0], tangents[0])


def _binary(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """Elementwise: each operand's backward formula at its tangent broadcast to the output, summed."""
    a, b = args
    out = outputs[0]
    parts = []
    for i, t in enumerate(tangents):
        if t is not None:
            g = t if t.shape == out.shape else t.expand(tuple(out.shape))
            parts.append(cls.grad(a, b, out, g, (i == 0, i == 1))[i])
    return _total(parts, out)


def _where(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    from ..tensor.elementwise import where

    _, ta, tb = tangents
    return _total([where(args[0], 0.0 if ta is None else ta, 0.0 if tb is None else tb)], outputs[0])


def _activation(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """Fused activations: their fused backward ``g * f'(x)`` at ``g = t``."""
    from ..nn.functional.activation import _ActivationGrad

    x, name, params = args
    return _ActivationGrad.apply(x, tangents[0], name, params)


def _softmax(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """softmax: ``y * (t - <y, t>)``; log_softmax: ``t - <softmax, t>`` (inner products along ``dim``)."""
    _, dim, log = args
    y, t = outputs[0], tangents[0]
    p = y.exp() if log else y
    centred = t - (p * t).sum(dim, keepdim=True)
    return centred if log else y * centred


# --------------------------------------------------------------------------------------------- linear ops
def _linear_op(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """Ops linear in their floating tensor arguments together (sums, views, copies, joins, gathers): the op itself
    applied to the tangents, zeros standing in for arguments without one."""
    swapped = tuple(_tangent_or_zeros(a, t) if _is_float_tensor(a) else a for a, t in zip(args, tangents))
    return cls.apply(*swapped)


def _tangent_or_zeros(a: Any, t: Any) -> Any:
    return t if t is not None else a.new_zeros(tuple(a.shape))


def _constant_pad(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """Padding with a constant is affine: the tangent is padded with zeros."""
    return cls.apply(tangents[0], args[1], 0)


def _matmul(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """Product rule: ``ta @ b + a @ tb``."""
    (a, b), (ta, tb) = args, tangents
    return _total([cls.apply(ta, b) if ta is not None else None, cls.apply(a, tb) if tb is not None else None],
                  outputs[0])


def _nn_linear(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """``tx @ W.T + x @ tW.T + tb``."""
    (x, w, _), (tx, tw, tb) = args, tangents
    return _total([cls.apply(tx, w, None) if tx is not None else None,
                   cls.apply(x, tw, None) if tw is not None else None, tb], outputs[0])


def _dropout(cls: type, args: tuple, outputs: tuple, tangents: tuple) -> Any:
    """``y = x * mult + add`` with a random 0/scale ``mult``: the same draws applied to ``t`` with no ``add``."""
    _, p, scale, _, _ = args
    return cls.apply(tangents[0], p, scale, 0.0, 0.0)


def rewinder(cls: type, args: tuple) -> Callable[[], contextlib.AbstractContextManager] | None:
    """For an op that draws random numbers: a context factory that, inside, puts the generator of the op's device
    back to where it is now and, on leaving, where the op left it. None for the other ops."""
    from ..nn.functional.dropout import _Dropout

    if not issubclass(cls, _Dropout):
        return None
    device = args[0].device
    get, put = _generator_access(device)
    before = get()

    @contextlib.contextmanager
    def rewound() -> Iterator[None]:
        after = get()
        put(before)
        try:
            yield
        finally:
            put(after)

    return rewound


def _generator_access(device: Any) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """(get the state, set the state) of ``device``'s default generator."""
    if device.type == "cuda":
        from ..cuda import random as cuda_random

        return (lambda: cuda_random.get_rng_state(device)), (lambda s: cuda_random.set_rng_state(s, device))
    from ..tensor.random import default_generator

    return default_generator.get_state, default_generator.set_state


def _build_table() -> dict[type, Rule]:
    from ..nn.functional.activation import _Activation, _Softmax
    from ..nn.functional.dropout import _Dropout
    from ..nn.functional.linear import _Linear
    from ..nn.functional.vision import ConstantPad
    from ..tensor import conversion, elementwise, indexing, joins, reduce, views
    from ..tensor.matmul import MatMul

    linear_ops = (reduce.Sum, views.View, views.Reshape, views.Copy, views.EmbedIntoView, views.MovePositions,
                  conversion.Clone, conversion.Cast, conversion.ToDevice, conversion.CopyInto, joins.Cat, joins.Flip,
                  joins.Roll, joins.Repeat, joins.Triangle, joins.DiagEmbed, joins.BlockDiag, indexing.IndexGet,
                  indexing.IndexPut, indexing.Gather)
    table: dict[type, Rule] = {op: _linear_op for op in linear_ops}
    table.update({
        elementwise._Unary: _unary, elementwise._Binary: _binary, elementwise.Where: _where,
        _Activation: _activation, _Softmax: _softmax, ConstantPad: _constant_pad, MatMul: _matmul,
        _Linear: _nn_linear, _Dropout: _dropout,
    })
    return table
