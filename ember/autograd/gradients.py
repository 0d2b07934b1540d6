"""``backward`` and ``grad``: the two ways to ask for gradients, over the engine's walk of the graph.

``backward`` accumulates into the leaves' ``.grad``; ``grad`` returns the gradients of chosen inputs. Both start
from the outputs' gradients (ones for a scalar output) and run ``engine.run_backward``.
"""
from __future__ import annotations

import warnings
from typing import Any

from ..tensor.creation import ones_like, zeros_like
from ..tensor.joins import stack
from .engine import run_backward
from .function import _edge

__all__ = ["backward", "grad"]


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _root_grads(outputs: tuple, grad_outputs: tuple, create_graph: bool) -> list:
    if grad_outputs and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} for {len(outputs)}")
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = ones_like(out)
        elif g.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and output[{i}] has a shape of "
                f"{list(out.shape)}."
            )
        grads.append(g)
    return grads


def _edges(outputs: tuple) -> list:
    edges = []
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(_edge(out))
    return edges


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or only of ``inputs``)."""
    outputs = _as_tuple(tensors)
    grads = _root_grads(outputs, _as_tuple(grad_tensors), create_graph)
    roots = _edges(outputs)
    retain = create_graph if retain_graph is None else retain_graph
    targets = None
    if inputs is not None:
        targets = set()
        for t in _as_tuple(inputs):
            edge = _edge(t)
            if edge is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if t.grad_fn is not None:
                t.retain_grad()
            targets.add(edge[0])
    run_backward(roots, grads, retain, create_graph, accumulate_into=targets)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated.

    ``only_inputs`` is torch's deprecated flag: ignored (gradients only ever go to ``inputs``), with torch's
    warning when it is False.

    With ``is_grads_batched`` every grad_output has a leading batch dimension and each input's gradient gets one
    too: one backward pass per batch row over the retained graph (torch vectorises this with vmap).
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", stacklevel=2)
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    grads = _root_grads(outs, _as_tuple(grad_outputs), create_graph)
    roots = _edges(outs)
    capture = []
    for t in ins:
        edge = _edge(t)
        if edge is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.append(edge)
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(roots, grads, retain, create_graph, capture=capture)
    allow_unused = allow_unused or materialize_grads
    for i, g in enumerate(result):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                result[i] = zeros_like(ins[i])
    return tuple(result)


def _batched_grad(outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: bool | None, create_graph: bool,
                  allow_unused: bool | None, materialize_grads: bool) -> tuple:
    """``grad`` for each row of batched ``grad_outputs``, stacked along a new leading dimension."""
    rows = _as_tuple(grad_outputs)
    if not rows or any(g is None or g.ndim == 0 for g in rows):
        raise RuntimeError("autograd.grad with is_grads_batched=True needs grad_outputs with a leading batch "
                           "dimension for every output")
    count = rows[0].shape[0]
    if any(g.shape[0] != count for g in rows):
        raise RuntimeError(f"autograd.grad with is_grads_batched=True: the grad_outputs have different batch sizes "
                           f"{[g.shape[0] for g in rows]}")
    per_row = [grad(outputs, inputs, tuple(g[i] for g in rows),
                    retain_graph=True if i < count - 1 else retain_graph, create_graph=create_graph,
                    allow_unused=allow_unused, materialize_grads=materialize_grads) for i in range(count)]
    return tuple(None if column[0] is None else stack(list(column)) for column in zip(*per_row))
