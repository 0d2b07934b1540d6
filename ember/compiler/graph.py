"""The captured graph: the ops a call ran, as data (printable), and its replay.

A ``Graph`` is built from a capture's ``Trace``: each tensor is a ``Value`` (an input of the function, a tensor that
existed before the call such as a parameter, a constant the function made, or an op's output), each recorded op a
``Node`` whose arguments hold ``Value``s where tensors were. Fusion (``fusion.py``) replaces runs of elementwise
nodes by ``FusedNode``s. ``Graph.program()`` turns it into a ``Program``: one closure per node over a list of
slots, each slot cleared after its last use so a replay holds no more memory than the eager call did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .._grad_state import state as _grad_modes
from ..tensor.tensor import Tensor
from .capture import Ref, Trace, TensorInfo
from .structure import leaves, rebuild

__all__ = ["FusedNode", "Graph", "Node", "Program", "Value", "build_graph"]


@dataclass(frozen=True, eq=False)
class Value:
    """One tensor of the graph: where it comes from (``ref``), its name in the printed graph, its metadata."""

    ref: Ref
    name: str
    info: TensorInfo

    def __repr__(self) -> str:
        return self.name


@dataclass(eq=False)
class Node:
    """One recorded op: a Function class (run with ``apply``) or, for an ``opaque`` node, a function that
    ``ember.compiler.disable`` keeps eager (called as it is)."""

    target: Any
    args: tuple
    kwargs: dict
    outputs: Any
    grad_enabled: bool
    random: bool = False
    dirty: bool = False
    opaque: bool = False

    @property
    def inputs(self) -> list[Value]:
        return [v for v in leaves((self.args, self.kwargs)) if isinstance(v, Value)]

    @property
    def produced(self) -> list[Value]:
        return [v for v in leaves(self.outputs) if isinstance(v, Value)]

    @property
    def barrier(self) -> bool:
        """Whether the node must keep its place among the others (it draws random numbers, changes a tensor in
        place or runs Python the graph does not see)."""
        return self.random or self.dirty or self.opaque

    @property
    def name(self) -> str:
        return getattr(self.target, "__qualname__", None) or repr(self.target)

    def describe(self) -> str:
        args = [_show(a) for a in self.args] + [f"{k}={_show(v)}" for k, v in self.kwargs.items()]
        notes = [n for n, on in (("no_grad", not self.grad_enabled), ("random", self.random),
                                 ("in-place", self.dirty), ("eager", self.opaque)) if on]
        return f"{_show(self.outputs)} = {self.name}({', '.join(args)})" + (f"  # {', '.join(notes)}" if notes else "")


@dataclass(eq=False)
class FusedNode:
    """A chain of elementwise nodes run as one generated kernel (``fused_op.FusedChain``) forward and backward."""

    chain: Any
    members: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    grad_enabled: bool
    barrier = False
    opaque = False

    @property
    def produced(self) -> list[Value]:
        return self.outputs

    @property
    def name(self) -> str:
        return self.chain.name

    def describe(self) -> str:
        outs = ", ".join(v.name for v in self.outputs)
        ops = " -> ".join(self.chain.op_names)
        return f"{outs} = {self.chain.name}({', '.join(v.name for v in self.inputs)})  # fused: {ops}"


def _show(value: Any) -> str:
    if isinstance(value, Value):
        return value.name
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        inner = ", ".join(_show(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in value.items()) + "}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"<{value.__qualname__}>"
    return repr(value)


_SHORT_DTYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "bool": "b8",
                 "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8"}


def _typed(v: Value) -> str:
    info = v.info
    dt = _SHORT_DTYPES.get(info.dtype.name, info.dtype.name)
    device = "" if info.device.type == "cpu" else f", {info.device}"
    grad = ", requires_grad" if info.requires_grad else ""
    return f"{v.name}: {dt}{list(info.shape)}{device}{grad}"


@dataclass(eq=False)
class Graph:
    """The captured ops of one compiled call (one cache entry); ``print(graph)`` lists them."""

    inputs: list[Value]
    free: list[tuple[Value, Tensor]]
    constants: list[tuple[Value, Tensor]]
    nodes: list[Any]
    output: Any
    notes: list[str] = field(default_factory=list)  # what fusion decided and why (for ``explain``)

    @property
    def op_count(self) -> int:
        """The recorded ops (a fused chain counts its members)."""
        return sum(len(n.members) if isinstance(n, FusedNode) else 1 for n in self.nodes)

    @property
    def fused(self) -> list[FusedNode]:
        return [n for n in self.nodes if isinstance(n, FusedNode)]

    def __str__(self) -> str:
        params = [_typed(v) for v in self.inputs] + [_typed(v) for v, _ in self.free + self.constants]
        lines = ["graph(" + ", ".join(params) + "):"]
        lines += ["    " + n.describe() for n in self.nodes]
        lines.append(f"    return {_show(self.output)}")
        return "\n".join(lines)

    __repr__ = __str__

    def program(self) -> "Program":
        return Program(self)

    def forward(self, *inputs: Tensor) -> Any:
        """Replay the graph on new inputs (in ``inputs`` order): what a custom backend may return."""
        program = self.__dict__.get("_program")
        if program is None:
            program = self.__dict__["_program"] = Program(self)
        return program.run(list(inputs))


def build_graph(trace: Trace, input_names: list[str], free_names: dict[int, str]) -> Graph:
    """The graph of ``trace``; inputs are named by ``input_names``, free tensors by ``free_names`` (id -> name,
    e.g. a module's parameter paths) or ``free<n>``."""
    values: dict[Ref, Value] = {}

    def value(ref: Ref) -> Value:
        found = values.get(ref)
        if found is None:
            if ref.kind == "input":
                name = input_names[ref.index]
            elif ref.kind == "free":
                name = free_names.get(id(trace.free[ref.index]), f"free{ref.index}")
            elif ref.kind == "constant":
                name = f"const{ref.index}"
            else:
                name = f"v{ref.index}"
            found = values[ref] = Value(ref, name, trace.infos[ref])
        return found

    def swap(template: Any) -> Any:
        return rebuild(template, lambda leaf: value(leaf) if isinstance(leaf, Ref) else leaf)

    nodes = [Node(c.target, swap(c.args), swap(c.kwargs), swap(c.result), c.grad_enabled, c.random, c.dirty,
                  c.opaque) for c in trace.calls]
    output = swap(trace.result)
    inputs = [value(Ref("input", i)) for i in range(trace.inputs)]
    free = [(value(Ref("free", i)), t) for i, t in enumerate(trace.free)]
    constants = [(value(Ref("constant", i)), t) for i, t in enumerate(trace.constants)]
    return Graph(inputs, free, constants, nodes, output)


# ----------------------------------------------------------------------------------------------------- replay
class Program:
    """A graph as closures over a slot list: ``run(inputs)`` replays the ops on new inputs."""

    def __init__(self, graph: Graph) -> None:
        slots: dict[int, int] = {}

        def slot(v: Value) -> int:
            return slots.setdefault(id(v), len(slots))

        self._input_slots = [slot(v) for v in graph.inputs]
        self._held = [(slot(v), t) for v, t in graph.free + graph.constants]
        for node in graph.nodes:
            for v in node.produced:
                slot(v)
        last_use: dict[int, int] = {}
        for i, node in enumerate(graph.nodes):
            for v in node.inputs:
                last_use[slot(v)] = i
        kept = {slot(v) for v in leaves(graph.output) if isinstance(v, Value)}
        fixed = set(self._input_slots) | {s for s, _ in self._held} | kept
        frees: list[list[int]] = [[] for _ in graph.nodes]
        for s, i in last_use.items():
            if s not in fixed:
                frees[i].append(s)
        self._size = len(slots)
        self._steps = [_step(node, slot, frees[i]) for i, node in enumerate(graph.nodes)]
        constant_slots = {slot(v) for v, _ in graph.constants}
        self._output = _output_builder(graph.output, slot, constant_slots)

    def run(self, inputs: list[Tensor]) -> Any:
        env: list[Any] = [None] * self._size
        for s, t in zip(self._input_slots, inputs):
            env[s] = t
        for s, t in self._held:
            env[s] = t
        modes = _grad_modes
        entry = modes.enabled
        try:
            for step in self._steps:
                step(env)
        finally:
            modes.enabled = entry
        return self._output(env)


def _arguments(template: Any, slot: Callable[[Value], int]) -> Callable[[list], Any]:
    """A function of the slot list that builds ``template`` with each ``Value`` read from its slot."""
    if isinstance(template, Value):
        s = slot(template)
        return lambda env: env[s]
    if not any(isinstance(v, Value) for v in leaves(template)):
        return lambda env: template
    if type(template) is tuple and all(isinstance(v, Value) or not isinstance(v, (tuple, list, dict))
                                       for v in template):
        parts = [(True, slot(v)) if isinstance(v, Value) else (False, v) for v in template]
        return lambda env: tuple([env[p] if is_slot else p for is_slot, p in parts])
    return lambda env: rebuild(template, lambda leaf: env[slot(leaf)] if isinstance(leaf, Value) else leaf)


def _storer(template: Any, slot: Callable[[Value], int]) -> Callable[[list, Any], None]:
    """A function storing a result shaped like ``template`` into the slots of its ``Value``s."""
    if isinstance(template, Value):
        s = slot(template)

        def store(env: list, result: Any) -> None:
            env[s] = result
        return store
    pairs = []

    def walk(t: Any, path: tuple) -> None:
        if isinstance(t, Value):
            pairs.append((path, slot(t)))
        elif isinstance(t, (tuple, list)):
            for i, v in enumerate(t):
                walk(v, path + (i,))
        elif isinstance(t, dict):
            for k, v in t.items():
                walk(v, path + (k,))

    walk(template, ())

    def store_all(env: list, result: Any) -> None:
        for path, s in pairs:
            r = result
            for key in path:
                r = r[key]
            env[s] = r
    return store_all


def _step(node: Any, slot: Callable[[Value], int], frees: list[int]) -> Callable[[list], None]:
    grad_enabled = node.grad_enabled
    modes = _grad_modes
    if isinstance(node, FusedNode):
        chain = node.chain
        in_slots = [slot(v) for v in node.inputs]
        out_slots = [slot(v) for v in node.outputs]

        def fused(env: list) -> None:
            modes.enabled = grad_enabled
            results = chain.run(*[env[s] for s in in_slots])
            for s, r in zip(out_slots, results):
                env[s] = r
            for s in frees:
                env[s] = None
        return fused
    build_args = _arguments(node.args, slot)
    build_kwargs = _arguments(node.kwargs, slot) if node.kwargs else None
    store = _storer(node.outputs, slot)
    run = node.target if node.opaque else node.target.apply

    def call(env: list) -> None:
        modes.enabled = grad_enabled
        result = run(*build_args(env), **build_kwargs(env)) if build_kwargs else run(*build_args(env))
        store(env, result)
        for s in frees:
            env[s] = None
    return call


def _output_builder(template: Any, slot: Callable[[Value], int], constants: set[int]) -> Callable[[list], Any]:
    """The function's result from the slots; a constant the function made is returned as a fresh copy."""
    def read(env: list, v: Value) -> Any:
        s = slot(v)
        return env[s].clone() if s in constants else env[s]

    if isinstance(template, Value):
        return lambda env: read(env, template)
    return lambda env: rebuild(template, lambda leaf: read(env, leaf) if isinstance(leaf, Value) else leaf)
