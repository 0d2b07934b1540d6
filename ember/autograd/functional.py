"""Derivative operators of a whole function: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp``.

They take the same arguments as ``torch.autograd.functional`` and return results nested the same way, and
all of them rest on one primitive: ``_Call`` runs the user's function on fresh copies of its inputs with
grad mode on, and ``_pullback`` pushes cotangents back through such a graph with ``ember.autograd.grad``,
turning gradients that do not exist into zeros (or, with ``strict=True``, into torch's error for that step).

- ``vjp`` is a single pullback.
- ``jvp`` pushes ``v`` forward with forward-mode AD (``forward_ad``). Where a graph of the result is wanted
  (``create_graph``), in strict mode, or inside an open dual level, it pulls back a dummy cotangent ``u`` with
  ``create_graph=True`` instead; the result ``J^T u`` is linear in ``u``, so pulling ``v`` back through it to ``u``
  gives ``J v``.
- ``jacobian`` pulls back the rows of the identity: one at a time, or all at once with ``vectorize=True``
  (``grad(..., is_grads_batched=True)``); ``strategy="forward-mode"`` pushes its columns forward instead, one
  forward-mode pass per input element.
- ``hessian`` is the jacobian of the gradient; ``vhp`` pulls ``v`` back through the gradient and ``hvp`` does
  the same with the dummy-cotangent trick of ``jvp``.
"""
from __future__ import annotations

from typing import Any, Callable

from ..tensor.tensor import Tensor
from ..tensor.joins import stack
from . import dual_levels, forward_ad
from .grad_mode import enable_grad
from .gradients import grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_OUTPUTS = "outputs of the user-provided function"
_STRATEGIES = ("forward-mode", "reverse-mode")
_NOT_ALLOWED = "This is not allowed in strict mode."


def _with_graph(what: str, index: str = "{i}") -> str:
    return (f"The {what} of the user-provided function is independent of input {index}. This is not allowed in "
            "strict mode when create_graph=True.")


# What strict mode says at each kind of pullback: (a gradient that is missing, a gradient that is a constant,
# whether the constant check only applies with create_graph). {i} is the input, {o} the output.
_VJP = (f"The output of the user-provided function is independent of input {{i}}. {_NOT_ALLOWED}",
        _with_graph("jacobian"), True)
_JACOBIAN_ROW = (f"Output {{o}} of the user-provided function is independent of input {{i}}. {_NOT_ALLOWED}",
                 _with_graph("jacobian", "{o}"), True)
_DUMMY_VJP = (_VJP[0], "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                       f"function. {_NOT_ALLOWED}", False)
_JVP = ("The gradient with respect to the input is independent of entry {i} in the grad_outputs when using the "
        f"double backward trick to compute forward mode gradients. {_NOT_ALLOWED}", _with_graph("jacobian"), True)
_GRADIENT = (_VJP[0], "While computing the hessian, found that the jacobian of the user-provided function with "
                      "respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                      "should ensure that your function is twice differentiable and that the jacobian depends on "
                      "the inputs (this would be violated by a linear function for example).", False)
_VHP = (f"The jacobian of the user-provided function is independent of input {{i}}. {_NOT_ALLOWED}",
        _with_graph("hessian"), True)
_HVP = ("The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. This is not "
        "allowed in strict mode as it prevents from using the double backward trick to replace forward mode AD.",
        _with_graph("hessian"), True)


def _tensors(value: Any, what: str, name: str) -> tuple[bool, tuple]:
    """``(given_as_tuple, tensors)``, refusing anything but a Tensor or a tuple of Tensors."""
    given_as_tuple = isinstance(value, tuple)
    items = value if given_as_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"the value at index {i}" if given_as_tuple else f"the given {what}"
            raise TypeError(f"The {what} given to {name} must be either a Tensor or a tuple of Tensors but {where} "
                            f"has type {type(item)}.")
    return given_as_tuple, items


def _outputs(value: Any, name: str, strict: bool) -> tuple[bool, tuple]:
    """The user function's result as ``_tensors`` gives it; with ``strict`` every output must require grad."""
    given_as_tuple, outs = _tensors(value, _OUTPUTS, name)
    for i, out in enumerate(outs):
        if strict and not out.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")
    return given_as_tuple, outs


def _single_element(given_as_tuple: bool, outs: tuple, name: str) -> Any:
    if given_as_tuple:
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    return outs[0]


def _fresh(t: Any, create_graph: bool, leaf_requires_grad: bool) -> Any:
    """A new tensor object for ``t``: still linked to the caller's graph when they want one, else a detached leaf
    (so a tensor the function captures is never mistaken for its argument). A tangent of ``t`` stays with it, so
    a jacobian pushed forward through these functions (forward-over-reverse hessian) sees it."""
    if create_graph and t.requires_grad:
        return t.view_as(t)
    leaf = t.detach().requires_grad_(leaf_requires_grad)
    tangent = forward_ad.get_tangent(t)
    return leaf if tangent is None else forward_ad.make_dual(leaf, tangent)


def _settle(grads: tuple, refs: tuple, batch: tuple, strict: bool, checks: tuple | None, create_graph: bool,
            **where: int) -> tuple:
    """Zeros (shaped ``batch + ref.shape``) for missing gradients, after strict mode's checks, input by input."""
    missing, constant, only_with_graph = checks or (None, None, True)
    settled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if strict and checks is not None:
            if g is None:
                raise RuntimeError(missing.format(i=i, **where))
            if not g.requires_grad and (create_graph or not only_with_graph):
                raise RuntimeError(constant.format(i=i, **where))
        settled.append(ref.new_zeros(batch + tuple(ref.shape)) if g is None else g)
    return tuple(settled)


def _pullback(outs: tuple, wrt: tuple, cotangents: tuple, create_graph: bool, strict: bool = False,
              checks: tuple | None = None, batched: bool = False, **where: int) -> tuple:
    """The cotangents pulled back from ``outs`` to ``wrt`` (outputs that do not require grad take no part)."""
    used = [(out, c) for out, c in zip(outs, cotangents) if out.requires_grad]
    grads = (None,) * len(wrt)
    if used:
        grads = grad(tuple(u[0] for u in used), wrt, tuple(u[1] for u in used), retain_graph=True,
                     create_graph=create_graph, allow_unused=True, is_grads_batched=batched)
    batch = (cotangents[0].shape[0],) if batched else ()
    return _settle(grads, wrt, batch, strict, checks, create_graph, **where)


def _detached(value: Any, keep_graph: bool) -> Any:
    if isinstance(value, tuple):
        return tuple(_detached(v, keep_graph) for v in value)
    return value if keep_graph else value.detach()


def _unwrap(value: tuple, outer: bool, inner: bool = True) -> Any:
    """Undo the tuple wrapping of single tensors: ``inner`` for each element, ``outer`` for the whole."""
    if not inner:
        value = tuple(v[0] for v in value)
    return value if outer else value[0]


class _Call:
    """The user's function evaluated once, differentiably, at fresh copies of the inputs."""

    def __init__(self, name: str, inputs: Any, create_graph: bool, requires_grad: bool = True):
        self.name, self.create_graph = name, create_graph
        self.inputs_tuple, given = _tensors(inputs, "inputs", name)
        self.inputs = tuple(_fresh(t, create_graph, requires_grad) for t in given)

    def run(self, func: Callable, strict: bool, scalar: bool = False) -> "_Call":
        self.outputs_tuple, self.outputs = _outputs(func(*self.inputs), self.name, strict)
        if scalar:
            _single_element(self.outputs_tuple, self.outputs, self.name)
        return self

    def vector(self, v: Any, like_outputs: bool) -> tuple:
        """``v`` checked against the outputs (vjp) or the inputs (the others); ``None`` is allowed where those
        are a single one-element tensor."""
        like, like_tuple = (self.outputs, self.outputs_tuple) if like_outputs else (self.inputs, self.inputs_tuple)
        if v is None:
            if len(like) != 1 or like[0].nelement() != 1:
                which = ("the user-provided function returns" if like_outputs
                         else "the input to the user-provided function is")
                raise RuntimeError(f"The vector v can only be None if {which} a single Tensor with a single element.")
            return (None,)
        v = tuple(_fresh(t, self.create_graph, False) for t in _tensors(v, "v", self.name)[1])
        if len(v) != len(like):
            if like_tuple:
                raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
            raise RuntimeError("The given v should contain a single Tensor.")
        for i, (a, b) in enumerate(zip(v, like)):
            if a.size() != b.size():
                entry = f"Entry {i} in " if like_tuple else ""
                raise RuntimeError(f"{entry}v has invalid size: should be {b.size()} but got {a.size()}.")
        return v

    def pullback(self, cotangents: tuple, strict: bool, checks: tuple, create_graph: bool | None = None) -> tuple:
        graph = self.create_graph if create_graph is None else create_graph
        return _pullback(self.outputs, self.inputs, cotangents, graph, strict, checks)

    def gradient(self, strict: bool) -> tuple:
        """The gradient of the (scalar) output, itself differentiable."""
        return self.pullback((None,), strict, _GRADIENT, create_graph=True)

    def result(self, grads: tuple, grads_tuple: bool) -> tuple:
        """``(outputs, grads)`` detached unless ``create_graph``, single tensors unwrapped."""
        keep = self.create_graph
        return (_unwrap(_detached(self.outputs, keep), self.outputs_tuple),
                _unwrap(_detached(grads, keep), grads_tuple))


def _dummies(like: tuple) -> tuple:
    # J^T u is linear in u, so the value of the dummy never shows in the result: zeros keep it finite
    return tuple(t.new_zeros(tuple(t.shape)).requires_grad_(True) for t in like)


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False):
    """``(func(*inputs), v^T J)``, the vector-Jacobian product of ``func`` at ``inputs``."""
    with enable_grad():
        call = _Call("vjp", inputs, create_graph).run(func, strict)
        grads = call.pullback(call.vector(v, like_outputs=True), strict, _VJP)
    return call.result(grads, call.inputs_tuple)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False):
    """``(func(*inputs), J v)``, the Jacobian-vector product: pushed forward in forward mode, or by pulling back
    twice where the result must be differentiable, in strict mode, or inside an open dual level."""
    if not (create_graph or strict or dual_levels.OPEN):
        call = _Call("jvp", inputs, False, requires_grad=False)
        v = call.vector(v, like_outputs=False)
        tangents = tuple(t if t is not None else x.new_ones(tuple(x.shape)) for x, t in zip(call.inputs, v))
        return call.result(_push_forward(call, func, (tangents,))[0], call.outputs_tuple)
    with enable_grad():
        call = _Call("jvp", inputs, create_graph)
        v = call.vector(v, like_outputs=False)
        call.run(func, strict)
        u = _dummies(call.outputs)
        ju = call.pullback(u, strict, _DUMMY_VJP, create_graph=True)
        grads = _pullback(ju, u, v, create_graph, strict, _JVP)
    return call.result(grads, call.outputs_tuple)


def _push_forward(call: _Call, func: Callable, columns: Any) -> list:
    """Run ``func`` once per column (one tangent per input) at dual inputs; per column, the outputs' tangents
    (zeros for an output that does not depend on the inputs). ``call`` keeps the primal inputs and outputs."""
    primals, pushed = call.inputs, []
    with forward_ad.dual_level():
        for column in columns:
            call.inputs = tuple(forward_ad.make_dual(x, t) for x, t in zip(primals, column))
            call.run(func, strict=False)
            pushed.append(tuple(_tangent_or_zeros(out) for out in call.outputs))
        call.outputs = tuple(out.detach() for out in call.outputs)
    call.inputs = primals
    return pushed


def _tangent_or_zeros(out: Any) -> Any:
    tangent = forward_ad.unpack_dual(out).tangent
    return tangent if tangent is not None else out.new_zeros(tuple(out.shape))


def _identity_columns(inputs: tuple) -> Any:
    """The columns of the identity over all input elements, each split into one tangent per input."""
    for j, x in enumerate(inputs):
        for k in range(x.numel()):
            column = [t.new_zeros(tuple(t.shape)) for t in inputs]
            column[j].view(-1)[k] = 1
            yield tuple(column)


def _forward_jacobian(func: Callable, inputs: Any) -> Any:
    """``jacobian(strategy="forward-mode")``: the identity's columns pushed forward, one pass per input element
    (a loop over the columns, not one batched pass)."""
    call = _Call("jacobian", inputs, False, requires_grad=False)
    if any(x.numel() for x in call.inputs):
        columns = _push_forward(call, func, _identity_columns(call.inputs))
    else:
        columns = []
        call.run(func, strict=False)
    spans, start = [], 0
    for x in call.inputs:
        spans.append((x, columns[start:start + x.numel()]))
        start += x.numel()
    blocks = tuple(tuple(_jacobian_block(out, o, x, cols) for x, cols in spans) for o, out in enumerate(call.outputs))
    return _unwrap(blocks, call.outputs_tuple, call.inputs_tuple)


def _jacobian_block(out: Any, o: int, x: Any, columns: list) -> Any:
    """d out / d x shaped ``out.shape + x.shape``, from output ``o``'s tangent in each of ``x``'s columns."""
    shape = tuple(out.shape) + tuple(x.shape)
    if not columns:
        return out.new_zeros(shape)
    return stack([c[o].reshape(-1) for c in columns], 1).reshape(shape)


def _check_forward_mode(create_graph: bool, strict: bool, vectorize: bool) -> None:
    """torch's errors for what forward-mode jacobians do not support."""
    if create_graph:
        raise NotImplementedError('ember.autograd.functional.jacobian: `create_graph=True` and '
                                  '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                  '`create_graph=False` or `strategy="reverse-mode"`.')
    if strict:
        raise RuntimeError('ember.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    if not vectorize:  # sic: torch's message lacks the space
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")


def _jacobian_rows(call: _Call, strict: bool, vectorize: bool) -> tuple:
    """Per input, every output element's vjp stacked along dim 0: ``(sum of output numels, *input.shape)``."""
    numels = [out.numel() for out in call.outputs]
    total = sum(numels)
    if vectorize and total:
        identity, start = [], 0  # the (total, total) identity, cut into one column block per output
        for out, n in zip(call.outputs, numels):
            block = out.new_zeros((total, n))
            block.diagonal(-start).fill_(1)
            identity.append(block)
            start += n
        flat = tuple(out.reshape(-1) for out in call.outputs)
        return _pullback(flat, call.inputs, tuple(identity), call.create_graph, batched=True)
    rows: list[list] = [[] for _ in call.inputs]
    for o, out in enumerate(call.outputs):
        flat = out.reshape(-1)
        for k in range(numels[o]):
            grads = _pullback((flat[k],), call.inputs, (None,), call.create_graph, strict, _JACOBIAN_ROW, o=o)
            for acc, g in zip(rows, grads):
                acc.append(g)
    return tuple(stack(acc) if acc else inp.new_zeros((0,) + tuple(inp.shape)) for acc, inp in zip(rows, call.inputs))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: block ``[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``,
    with the tuple levels dropped where the outputs or the inputs are a single Tensor."""
    if strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        _check_forward_mode(create_graph, strict, vectorize)
        return _forward_jacobian(func, inputs)
    with enable_grad():
        call = _Call("jacobian", inputs, create_graph).run(func, strict)
        if strict and vectorize:
            raise RuntimeError("ember.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        rows = _jacobian_rows(call, strict, vectorize)
    blocks, start = [], 0
    for out in call.outputs:
        stop = start + out.numel()
        blocks.append(tuple(r[start:stop].reshape(tuple(out.shape) + tuple(inp.shape))
                            for r, inp in zip(rows, call.inputs)))
        start = stop
    return _unwrap(_detached(tuple(blocks), create_graph), call.outputs_tuple, call.inputs_tuple)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a function with one single-element output: the jacobian of its gradient (a tuple of tuples
    when ``inputs`` is a tuple)."""
    inputs_tuple, inputs = _tensors(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar(*xs):
        return _single_element(*_outputs(func(*xs), "hessian", strict), "hessian").squeeze()

    def gradient(*xs):
        g = jacobian(scalar, xs, create_graph=True)
        return _settle(g, xs, (), strict, _GRADIENT, True)

    h = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                 strategy=outer_jacobian_strategy)
    return _unwrap(h, inputs_tuple, inputs_tuple)


def _hessian_product(name: str, func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool):
    with enable_grad():
        call = _Call(name, inputs, create_graph)
        v = call.vector(v, like_outputs=False)
        g = call.run(func, strict, scalar=True).gradient(strict)
        if name == "vhp":
            grads = _pullback(g, call.inputs, v, create_graph, strict, _VHP)
        else:
            u = _dummies(call.inputs)
            hu = _pullback(g, call.inputs, u, True)
            grads = _pullback(hu, u, v, create_graph, strict, _HVP)
    return call.result(grads, call.inputs_tuple)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False):
    """``(func(*inputs), v^T H)`` for a function with one single-element output."""
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False):
    """``(func(*inputs), H v)`` for a function with one single-element output (pulling back twice)."""
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)
