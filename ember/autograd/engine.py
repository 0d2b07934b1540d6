"""The backward engine: walks the graph from the outputs to the leaves.

It first counts, for every node that matters, how many gradient contributions
it will receive; a node runs once all have arrived. No recursion, so graphs of
any depth work.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ..tensor.tensor import Tensor
from ..tensor.conversion import in_leaf_layout
from ..tensor.creation import zeros
from ..tensor.elementwise import add_into
from . import function as _function
from .function import AccumulateGrad, FunctionCtx, Node
from .grad_mode import _set_enabled, is_grad_enabled


# Code that watches backward (the profiler) sets ``wrapper(call, node, grads)``, which runs the node with
# ``call(node, grads)``. None costs nothing: ``run_backward`` picks how to call nodes once per pass.
_NODE_WRAPPER: Callable | None = None


def set_node_wrapper(wrapper: Callable | None) -> Callable | None:
    """Route every backward node call through ``wrapper`` (None: call nodes directly); returns the previous one."""
    global _NODE_WRAPPER
    previous, _NODE_WRAPPER = _NODE_WRAPPER, wrapper
    return previous


def _collect(roots: list[Node]) -> tuple[list[Node], dict[Node, list[Node]]]:
    """Every node reachable from ``roots``, parents before children (iterative DFS post-order, reversed), and
    each node's children (listed once here, read by every later pass). Nodes key the dicts themselves: they hash
    by identity, which saves an ``id()`` call per lookup on a path that runs for every node."""
    order: list[Node] = []
    kids: dict[Node, list[Node]] = {}
    stack: list = [(None, iter(roots))]  # the roots are the children of a stand-in for the top
    while stack:
        node, it = stack[-1]
        child = next(it, None)
        if child is None:
            stack.pop()
            order.append(node)
        elif child not in kids:
            # the nodes ``child`` sends gradients to, one entry per edge (inline: this runs for every node)
            kids[child] = grandchildren = [e[0] for e in child._edges if e]  # None and NO_EDGE are false
            stack.append((child, iter(grandchildren)))
    order.pop()  # the stand-in, the last to finish
    order.reverse()
    return order, kids


def _needed(order: list[Node], kids: dict[Node, list[Node]], targets: set[Node] | None) -> set[Node] | None:
    """The nodes whose execution can reach a target node; None (every node) when there are no targets."""
    if targets is None:
        return None
    needed = set()
    for node in reversed(order):  # children first
        if node in targets or any(c in needed for c in kids[node]):
            needed.add(node)
    return needed


def _pending(kids: dict[Node, list[Node]], needed: set[Node] | None) -> dict[Node, int]:
    """How many gradient contributions each needed node waits for."""
    if needed is None:
        pending = dict.fromkeys(kids, 0)
        for children in kids.values():
            for child in children:
                pending[child] += 1
        return pending
    pending = dict.fromkeys(needed, 0)
    for node in needed:
        for child in kids[node]:
            if child in needed:
                pending[child] += 1
    return pending


def _accumulate(buffer: list, index: int, grad: Any, owned: dict[int, Any] | None = None) -> None:
    """Add ``grad`` into ``buffer[index]``. With ``owned`` (no graph of the backward is built), the first sum is a
    new tensor only the engine holds, and later contributions are added into it in place by ``add_into`` (the
    tensor layer's): a leaf used by many ops (a weight shared across time steps) costs one NumPy add per use, not
    a whole tensor op."""
    current = buffer[index]
    if current is None:
        buffer[index] = grad
    elif owned is not None and id(current) in owned and add_into(current, grad):
        return
    else:
        total = buffer[index] = current + grad
        if owned is not None:
            owned[id(total)] = total


def _check_grad(node: Node, index: int, grad: Any, meta: tuple) -> Any:
    """``grad`` for an output with metadata ``meta``: torch's error for a wrong shape or device, cast to the
    output's dtype."""
    shape, dtype, device = meta
    if grad._array.shape != shape:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {index} - got {list(grad.shape)} "
            f"but expected shape compatible with {list(shape)}"
        )
    if grad.device != device:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - expected device "
                           f"{device} but got {grad.device}")
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    return grad


def _zeros_for(node: Node, index: int):
    meta = node._output_meta[index]
    if meta is None:  # a non-tensor output gets no gradient
        return None
    shape, dtype, device = meta
    return zeros(shape, dtype=dtype, device=device)


def run_backward(
    roots: Sequence[tuple[Node, int]],
    grads: Sequence[Any],
    retain_graph: bool,
    create_graph: bool,
    capture: Sequence[tuple[Node, int]] | None = None,
    accumulate_into: set[Node] | None = None,
) -> list | None:
    """Propagate ``grads`` from ``roots`` back through the graph.

    Without ``capture``, gradients accumulate into the ``.grad`` of leaves (all
    leaves, or only the AccumulateGrad nodes in ``accumulate_into``).
    With ``capture`` (``autograd.grad``), the total gradient arriving at each
    (node, output index) is returned instead and no ``.grad`` is touched.
    """
    root_nodes = [r[0] for r in roots]
    order, kids = _collect(root_nodes)
    targets = None
    if capture is not None:
        targets = {n for n, _ in capture}
    elif accumulate_into is not None:
        targets = accumulate_into
    needed = _needed(order, kids, targets)
    pending = _pending(kids, needed)

    buffers: dict[Node, list] = {}
    for (node, index), grad in zip(roots, grads):
        if node not in pending:
            continue
        buf = buffers.setdefault(node, [None] * max(1, len(node._output_meta)))
        _accumulate(buf, index, grad)
    owned: dict[int, Any] | None = None if create_graph else {}  # sums only the engine holds (see _accumulate)

    captured: dict[tuple[Node, int], Any] = {}
    capture_nodes = {n for n, _ in capture} if capture is not None else set()
    ready = [n for n in dict.fromkeys(root_nodes) if pending.get(n) == 0]
    prev_mode = is_grad_enabled()
    call = _call_node_anomaly if _function._ANOMALY else _call_node  # chosen once per backward call
    if _NODE_WRAPPER is not None:
        call = functools.partial(_NODE_WRAPPER, call)
    _set_enabled(create_graph)
    try:
        while ready:
            node = ready.pop()
            buf = buffers.pop(node, None) or [None] * max(1, len(node._output_meta))
            if owned:
                for g in buf:
                    owned.pop(id(g), None)  # handed on from here: no longer the engine's alone
            if node._hooked:
                buf = _run_pre_hooks(node, buf)
            if node in capture_nodes:
                for i, g in enumerate(buf):
                    captured[(node, i)] = g
            if isinstance(node, AccumulateGrad):
                if capture is None and buf[0] is not None:
                    _accumulate_leaf(node.variable, buf[0], create_graph)
                    if node._hooked:
                        node.run_post_accumulate_hooks()
                if node._hooked:
                    for hook in list(node.__dict__.get("_post_hooks", {}).values()):
                        hook((), tuple(buf))
                continue
            in_grads = call(node, buf)
            if not retain_graph:
                node._release()
            n_grads = len(in_grads)
            for i, edge in enumerate(node._edges):
                if not edge:  # None or NO_EDGE: no gradient goes there
                    continue
                child, child_index = edge
                if needed is not None and child not in needed:
                    continue
                g = in_grads[i] if i < n_grads else None
                if g is not None:
                    metas = child._output_meta
                    meta = metas[child_index] if child_index < len(metas) else None
                    array = g._array  # checked inline when it fits: a call per edge is a noticeable share
                    if meta is not None and not (type(array) is np.ndarray and array.shape == meta[0]
                                                 and array.dtype is meta[1].np and meta[2].type == "cpu"):
                        g = _check_grad(node, i, g, meta)
                    child_buf = buffers.get(child)
                    if child_buf is None:
                        child_buf = buffers[child] = [None] * max(1, len(metas))
                    if child_buf[child_index] is None:  # the first contribution: ``_accumulate``'s first case
                        child_buf[child_index] = g
                    else:
                        _accumulate(child_buf, child_index, g, owned)
                left = pending[child] - 1
                pending[child] = left
                if left == 0:
                    ready.append(child)
    finally:
        _set_enabled(prev_mode)
    if capture is None:
        return None
    return [captured.get((n, i)) for n, i in capture]


def _run_pre_hooks(node: Node, buf: list) -> list:
    tensor_hooks = getattr(node, "_tensor_hooks", None)
    if tensor_hooks:
        for index, hooks in tensor_hooks.items():
            for hook in list(hooks.values()):
                if buf[index] is not None:
                    result = hook(buf[index])
                    if result is not None:
                        buf[index] = result
    node_hooks = node.__dict__.get("_node_pre_hooks")
    if node_hooks:
        for hook in list(node_hooks.values()):
            result = hook(tuple(buf))
            if result is not None:
                buf = list(_check_hook_result(hook, result, tuple(buf)))
    return buf


def _check_hook_result(hook: Any, result: Any, expected: tuple) -> tuple:
    """A Node hook's replacement gradients, validated as torch does (a tuple of the same length, None kept None)."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(expected):
        name = getattr(hook, "__name__", type(hook).__name__)
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {len(result)}, but "
                           f"expected {len(expected)})")
    for new, old in zip(result, expected):
        if old is None and new is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
    return result


def _call_node_anomaly(node: FunctionCtx, buf: list) -> tuple:
    """``_call_node`` in anomaly mode: an error names the node and shows its forward traceback; NaN or inf is an
    error."""
    import warnings

    try:
        result = _call_node(node, buf)
        if _function._ANOMALY_CHECK_NAN:
            _check_nan(node, result)
    except Exception:
        trace = node._forward_trace
        if trace is not None:
            import traceback

            warnings.warn(
                f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                + "".join(traceback.format_list(trace)),
                stacklevel=2,
            )
        raise
    return result


def _check_nan(node: Node, result: tuple) -> None:
    """NaN in any output first (torch's check and message), then inf (torch checks NaN only; the issue asks for
    both: an infinite gradient is as much a bug to find)."""
    grads = [(i, g.detach()) for i, g in enumerate(result) if isinstance(g, Tensor) and g.dtype.is_floating_point]
    for kind, test in (("nan", Tensor.isnan), ("inf", Tensor.isinf)):
        for i, g in grads:
            if bool(test(g).any()):
                raise RuntimeError(f"Function '{node.name()}' returned {kind} values in its {i}th output.")


def _call_node(node: FunctionCtx, buf: list) -> tuple:
    if node.materialize_grads:
        for g in buf:
            if g is None:  # an identity test: ``None in buf`` would call Tensor.__eq__ on every gradient
                buf = [g if g is not None else _zeros_for(node, i) for i, g in enumerate(buf)]
                break
    result = node._forward_cls.backward(node, *buf)
    if not isinstance(result, tuple):
        result = (result,)
    n_inputs = len(node._edges)
    if len(result) < n_inputs:
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected {n_inputs}, "
            f"got {len(result)})"
        )
    if node._hooked:
        for hook in list(node.__dict__.get("_post_hooks", {}).values()):
            replaced = hook(tuple(result), tuple(buf))
            if replaced is not None:
                result = _check_hook_result(hook, replaced, tuple(result))
    return result


def _accumulate_leaf(leaf: Any, grad: Any, create_graph: bool) -> None:
    if not create_graph:
        grad = grad.detach()
    leaf.grad = in_leaf_layout(grad, leaf) if leaf.grad is None else leaf.grad + grad  # torch's layout contract
