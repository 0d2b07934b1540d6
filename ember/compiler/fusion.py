"""Fusion: which recorded elementwise ops run together as one generated kernel, and the graph rewritten so.

An op is *fusible* when it has a symbolic form (``symbolic``): a declared unary or binary op, a fused activation,
a dtype cast or a clone, on host tensors of the dtypes kernels compute in, and (when its result needs a
gradient) a declared gradient the symbolic scalars can evaluate. Fusible ops of one output shape and grad mode are
grouped greedily in recorded order: an op joins the chains that produced its inputs when no path leads from the
chain to the op through other ops (the merged chain would have to run both before and after them). Ops that draw
random numbers, change tensors in place or run eager Python (``Node.barrier``) keep their place, and no chain
spans one. A chain of one op stays the eager op.

A ``Linear`` whose output feeds a chain gives its bias addition to the chain (``_Linear(x, W, None)`` and an
``add``), so bias, activation and residual run in one pass over memory.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable

from .. import opcodes as op
from ..tensor import conversion, dtypes, elementwise
from ..tensor.fused.activations import _Activation
from ..tensor.fused.linear import _Linear
from .capture import Ref
from .fused_op import FusedChain
from .graph import FusedNode, Graph, Node, Value
from .structure import leaves
from .symbolic import COMPUTE, Builder, NotFusible, Sym, activation, activation_grad, binary, power, to, unary

__all__ = ["OpRule", "fuse", "rule_for"]

# dtypes a chain may read (computing in float or bool) and write
_STORED = COMPUTE + (dtypes.int64, dtypes.int32, dtypes.int16, dtypes.int8, dtypes.uint8)


@dataclass(frozen=True)
class OpRule:
    """An op's symbolic form: ``forward(args) -> Sym`` over its arguments (``Sym``s where tensors were) and
    ``backward(args, y, g, needs) -> grads`` (one per argument, None where there is none)."""

    name: str
    forward: Callable[[tuple], Sym]
    backward: Callable[[tuple, Sym, Sym, tuple], tuple]


def _no_grad(name: str) -> Callable:
    def backward(args, y, g, needs):
        raise NotFusible(f"{name} has no derivative")
    return backward


def _unary_rule(d: op.Unary) -> OpRule:
    back = (lambda args, y, g, needs: (d.grad(args[0], y, g),)) if d.grad else _no_grad(d.name)
    return OpRule(d.name, lambda args: unary(d.name, args[0]), back)


def _binary_rule(d: op.Binary) -> OpRule:
    forward = (lambda args: power(args[0], args[1])) if d.name == "pow" else \
        (lambda args: binary(d.name, args[0], args[1]))
    back = (lambda args, y, g, needs: d.grad(args[0], args[1], y, g, needs)) if d.grad else _no_grad(d.name)
    return OpRule(d.name, forward, back)


_ACTIVATION_RULE = OpRule(
    "activation",
    lambda args: activation(args[1], args[0], args[2]),
    lambda args, y, g, needs: (activation_grad(args[1], args[0], y, g, args[2]), None, None))
_CAST_RULE = OpRule("to", lambda args: to(args[0], args[1]), lambda args, y, g, needs: (to(g, args[0].dtype), None))
_CLONE_RULE = OpRule("clone", lambda args: args[0], lambda args, y, g, needs: (g,))


def rule_for(target: Any) -> OpRule | None:
    """The symbolic form of a recorded Function class, or None."""
    if not isinstance(target, type):
        return None
    if issubclass(target, elementwise._Unary):
        return _unary_rule(op.UNARY[target.code])
    if issubclass(target, elementwise._Binary):
        return _binary_rule(op.BINARY[target.code])
    if issubclass(target, _Activation):
        return _ACTIVATION_RULE
    if issubclass(target, conversion.Cast):
        return _CAST_RULE
    if issubclass(target, conversion.Clone):
        return _CLONE_RULE
    return None


def evaluate(rule: OpRule, args: tuple, syms: dict[int, Sym]) -> Sym:
    """``rule``'s forward over a node's arguments, ``Value``s read from ``syms``; always a new ``Sym`` (an op that
    returns its input, a clone, still writes a value of its own)."""
    sym_args = tuple(syms[id(a)] if isinstance(a, Value) else a for a in args)
    result = rule.forward(sym_args)
    if not isinstance(result, Sym):
        raise NotFusible("an op without a tensor result")
    if any(result is a for a in sym_args):
        result = result.builder.emit(result.name, result.dtype, result.ndim, result.requires_grad)
    return result


# ------------------------------------------------------------------------------------------------ chains
@dataclass(eq=False)
class ChainSpec:
    """One fused chain: its member nodes, the tensors it reads (``inputs``) and the values it hands on
    (``outputs``: those read after it or returned), its forward body and, per gradient mask, its backward."""

    name: str
    members: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    shape: tuple[int, ...]
    forward_lines: list[str]
    forward_results: list[str]

    @property
    def op_names(self) -> list[str]:
        return [_op_name(n) for n in self.members]

    def backward_body(self, needs: tuple[bool, ...]) -> tuple[list[str], list[str], list[int], list[int]]:
        """(lines, results, the output positions whose gradients it reads, the input positions it gives a
        gradient) of the backward for the inputs ``needs`` marks: the forward recomputed, then each member's
        declared gradient in reverse order. An input no member differentiates gets none (None, as eagerly)."""
        builder = Builder()
        syms = _input_syms(builder, self.inputs, needs)
        inputs = [syms[id(v)] for v in self.inputs]
        for node in self.members:
            syms[id(node.outputs)] = evaluate(rule_for(node.target), node.args, syms)
        graded = [i for i, v in enumerate(self.outputs) if v.info.dtype.is_floating_point]
        grads: dict[int, Sym] = {}
        for k, i in enumerate(graded):
            out = syms[id(self.outputs[i])]
            grads[id(out)] = builder.named(f"a{len(self.inputs) + k}", out.dtype, len(self.shape))
        for node in reversed(self.members):
            y = syms[id(node.outputs)]
            g = grads.get(id(y))
            if g is None or not y.requires_grad:
                continue
            args = tuple(syms[id(a)] if isinstance(a, Value) else a for a in node.args)
            needs_args = tuple(isinstance(a, Sym) and a.requires_grad for a in args)
            for a, contribution in zip(args, rule_for(node.target).backward(args, y, g, needs_args)):
                if contribution is None or not isinstance(a, Sym) or not a.requires_grad:
                    continue
                if not isinstance(contribution, Sym):
                    raise NotFusible("a gradient without a tensor value")
                known = grads.get(id(a))
                grads[id(a)] = contribution if known is None else binary("add", known, contribution)
        results, given = [], []
        for k, (sym, need) in enumerate(zip(inputs, needs)):
            if need and id(sym) in grads:
                results.append(to(grads[id(sym)], sym.dtype).name)
                given.append(k)
        return builder.lines, results, graded, given


def _op_name(node: Node) -> str:
    rule = rule_for(node.target)
    if rule is _ACTIVATION_RULE:
        return node.args[1]
    return rule.name if rule is not None else node.name


def _input_syms(builder: Builder, inputs: list[Value], needs: tuple[bool, ...] | None) -> dict[int, Sym]:
    syms = {}
    for k, v in enumerate(inputs):
        grad = v.info.dtype.is_floating_point and (v.info.requires_grad if needs is None else needs[k])
        syms[id(v)] = builder.named(f"a{k}", v.info.dtype, len(v.info.shape), grad)
    return syms


def _build_chain(name: str, members: list[Node], inputs: list[Value], outputs: list[Value]) -> ChainSpec:
    builder = Builder()
    syms = _input_syms(builder, inputs, None)
    for node in members:
        syms[id(node.outputs)] = evaluate(rule_for(node.target), node.args, syms)
    results = [syms[id(v)].name for v in outputs]
    spec = ChainSpec(name, members, inputs, outputs, members[0].outputs.info.shape, builder.lines, results)
    if any(v.info.requires_grad for v in inputs) and members[0].grad_enabled:
        spec.backward_body(tuple(v.info.requires_grad for v in inputs))  # fails now, not in a backward pass
    return spec


# ------------------------------------------------------------------------------------------ fusibility
def _fusible(node: Node) -> bool:
    """Whether ``node`` may join a chain (see the module docstring)."""
    if node.barrier or node.kwargs or not isinstance(node.outputs, Value):
        return False
    rule = rule_for(node.target)
    if rule is None:
        return False
    tensors = [a for a in node.args if isinstance(a, Value)]
    out = node.outputs.info
    if not tensors or out.device.type != "cpu" or out.dtype not in COMPUTE:
        return False
    if any(t.info.device.type != "cpu" or t.info.dtype not in _STORED for t in tensors):
        return False
    builder = Builder()
    syms = _input_syms(builder, tensors, None)
    try:
        y = evaluate(rule, node.args, syms)
        if y.dtype is not out.dtype:
            return False
        if out.requires_grad and node.grad_enabled:
            args = tuple(syms[id(a)] if isinstance(a, Value) else a for a in node.args)
            g = builder.named("g", y.dtype, len(out.shape))
            rule.backward(args, y, g, tuple(isinstance(a, Sym) and a.requires_grad for a in args))
    except (NotFusible, KeyError, AttributeError, TypeError, ValueError):
        return False
    return True


# ------------------------------------------------------------------------------------------ partition
class _Partition:
    """Greedy grouping of fusible nodes in recorded order (see the module docstring)."""

    def __init__(self, nodes: list[Node], fusible: list[bool], max_size: int) -> None:
        self.nodes, self.fusible, self.max_size = nodes, fusible, max_size
        self.group_of: dict[int, int] = {}
        self.groups: dict[int, list[int]] = {}
        self.producer: dict[int, int] = {}
        self.consumers: dict[int, list[int]] = {}
        segment = 0
        self.segment = []
        for node in nodes:
            if node.barrier:
                segment += 1
            self.segment.append(segment)
        for i, node in enumerate(nodes):
            if fusible[i]:
                self._place(i)
            for v in node.inputs:
                self.consumers.setdefault(id(v), []).append(i)
            for v in node.produced:
                self.producer[id(v)] = i

    def _compatible(self, gid: int, i: int) -> bool:
        first = self.nodes[self.groups[gid][0]]
        node = self.nodes[i]
        return (first.outputs.info.shape == node.outputs.info.shape and first.grad_enabled == node.grad_enabled
                and self.segment[self.groups[gid][0]] == self.segment[i]
                and len(self.groups[gid]) < self.max_size)

    def _legal(self, members: set[int], i: int) -> bool:
        """No path from ``members`` to node ``i`` (or back into ``members``) through a node outside them."""
        feeds_i = {self.producer.get(id(v)) for v in self.nodes[i].inputs}
        stack = [c for m in members for v in self.nodes[m].produced for c in self.consumers.get(id(v), ())
                 if c not in members]
        seen: set[int] = set()
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            if j in feeds_i:
                return False
            for v in self.nodes[j].produced:
                for c in self.consumers.get(id(v), ()):
                    if c in members:
                        return False
                    stack.append(c)
        return True

    def _place(self, i: int) -> None:
        producers = {self.producer[id(v)] for v in self.nodes[i].inputs if id(v) in self.producer}
        candidates = sorted({self.group_of[p] for p in producers if p in self.group_of}, reverse=True)
        candidates = [g for g in candidates if self._compatible(g, i)]
        chosen: list[int] = []
        union = {m for g in candidates for m in self.groups[g]}
        if candidates and len(union) < self.max_size and self._legal(union, i):
            chosen = candidates
        else:
            chosen = next(([g] for g in candidates if self._legal(set(self.groups[g]), i)), [])
        if not chosen:
            gid = i
            self.groups[gid] = []
        else:
            gid = chosen[0]
            for other in chosen[1:]:
                for m in self.groups.pop(other):
                    self.group_of[m] = gid
                    self.groups[gid].append(m)
        self.groups[gid].append(i)
        self.group_of[i] = gid

    def chains(self) -> list[list[int]]:
        return [sorted(g) for g in self.groups.values() if len(g) > 1]


# ------------------------------------------------------------------------------------------------ rewrite
def _split_linear_bias(graph: Graph) -> dict[int, tuple[Node, Node]]:
    """Rewrite each ``Linear`` whose output feeds an elementwise op into ``_Linear(x, W, None)`` and an ``add``
    of the bias; returns the added nodes (by id) with the original and the new ``Linear`` node, so a bias add that
    joins no chain can be put back."""
    readers: dict[int, list[Node]] = {}
    for node in graph.nodes:
        for v in node.inputs:
            readers.setdefault(id(v), []).append(node)
    added: dict[int, tuple[Node, Node]] = {}
    nodes: list[Node] = []
    fresh = max((v.ref.index for n in graph.nodes for v in n.produced), default=-1) + 1
    add_class = elementwise._BINARY_CLASSES["add"]
    for node in graph.nodes:
        out = node.outputs
        if (isinstance(node.target, type) and issubclass(node.target, _Linear) and not node.kwargs
                and len(node.args) == 3 and isinstance(node.args[2], Value) and isinstance(out, Value)
                and any(rule_for(r.target) is not None for r in readers.get(id(out), ()))):
            x, weight, bias = node.args
            product = Value(Ref("op", fresh), f"{out.name}_mm", out.info)
            fresh += 1
            linear = Node(node.target, (x, weight, None), {}, product, node.grad_enabled)
            add = Node(add_class, (product, bias), {}, out, node.grad_enabled)
            nodes += [linear, add]
            added[id(add)] = (node, linear)
        else:
            nodes.append(node)
    graph.nodes = nodes
    return added


def _ordered(units: list[Any], first_index: dict[int, int]) -> list[Any]:
    """The units (nodes and fused nodes) in an order their inputs allow, closest to the recorded one, with each
    barrier after everything recorded before it and before everything after: Kahn's algorithm by first index."""
    producer = {id(v): u for u in units for v in u.produced}
    deps = {id(u): {id(producer[id(v)]) for v in u.inputs if id(v) in producer} - {id(u)} for u in units}
    for b in (u for u in units if u.barrier):
        for u in units:
            if u is not b:
                if first_index[id(u)] < first_index[id(b)]:
                    deps[id(b)].add(id(u))
                else:
                    deps[id(u)].add(id(b))
    by_id = {id(u): u for u in units}
    users: dict[int, list[Any]] = {}
    for uid, needs in deps.items():
        for d in needs:
            users.setdefault(d, []).append(by_id[uid])
    ready = [(first_index[id(u)], id(u)) for u in units if not deps[id(u)]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, uid = heapq.heappop(ready)
        order.append(by_id[uid])
        for user in users.get(uid, ()):
            pending = deps[id(user)]
            pending.discard(uid)
            if not pending:
                heapq.heappush(ready, (first_index[id(user)], id(user)))
    return order


def fuse(graph: Graph, max_size: int = 64) -> Graph:
    """Replace the graph's chains of fusible ops by ``FusedNode``s (in place; returns ``graph``)."""
    added = _split_linear_bias(graph)
    nodes = graph.nodes
    chains = _Partition(nodes, [_fusible(n) for n in nodes], max_size).chains()
    chained = {id(nodes[i]) for chain in chains for i in chain}
    # a bias add that joined no chain goes back into its Linear
    dropped = {add_id for add_id in added if add_id not in chained}
    restored = {id(linear): original for add_id, (original, linear) in added.items() if add_id in dropped}
    returned = {id(v) for v in leaves(graph.output) if isinstance(v, Value)}
    units: list[Any] = []
    first_index: dict[int, int] = {}
    for c, chain in enumerate(chains):
        members = [nodes[i] for i in chain]
        member_ids = {id(m) for m in members}
        produced = {id(m.outputs) for m in members}
        inputs: list[Value] = []
        for m in members:
            inputs += [v for v in m.inputs if id(v) not in produced and all(v is not seen for seen in inputs)]
        read_after = {id(v) for n in nodes if id(n) not in member_ids for v in n.inputs}
        outputs = [m.outputs for m in members if id(m.outputs) in read_after or id(m.outputs) in returned]
        if not outputs:  # nothing reads the chain's values: pure ops, left out
            continue
        spec = _build_chain(f"fused_{c}", members, inputs, outputs)
        unit = FusedNode(FusedChain(spec), members, inputs, outputs, members[0].grad_enabled)
        units.append(unit)
        first_index[id(unit)] = chain[0]
        graph.notes.append(f"{spec.name}: {' -> '.join(spec.op_names)} ({len(members)} ops in one kernel)")
    for i, node in enumerate(nodes):
        if id(node) in chained or id(node) in dropped:
            continue
        node = restored.get(id(node), node)
        units.append(node)
        first_index[id(node)] = i
    graph.nodes = _ordered(units, first_index)
    return graph
