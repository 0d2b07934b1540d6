"""``ember._dynamo.explain(fn)(*args)``: what compiling ``fn`` on those arguments gives, as torch's report.

The report counts the graphs and ops, lists the fused chains (one generated kernel each, forward and backward),
the ops per graph, and the break reasons of a call that runs eagerly instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..nn.modules.module import Module
from .frame import CompiledFunction, Options
from .graph import FusedNode, Graph

__all__ = ["ExplainOutput", "explain"]


@dataclass
class ExplainOutput:
    """torch's ``ExplainOutput`` fields (graphs, counts, break reasons) and ember's fused chains."""

    graphs: list[Graph] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[str] = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list[list[str]] = field(default_factory=list)
    fused_chains: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", f"Fused Chains: {len(self.fused_chains)}"]
        lines += [f"  {chain}" for chain in self.fused_chains]
        lines.append("Break Reasons:")
        for i, reason in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {reason}"]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines += [f"    {name}" for name in ops]
        return "\n".join(lines)


def _op_names(graph: Graph) -> list[str]:
    names = []
    for node in graph.nodes:
        if isinstance(node, FusedNode):
            names.append(f"{node.name}[{', '.join(node.chain.op_names)}]")
        else:
            names.append(node.name)
    return names


def explain(fn: Callable, *, backend: Any = "inductor", dynamic: bool | None = None) -> Callable[..., ExplainOutput]:
    """A function that compiles ``fn`` afresh, calls it with its arguments and reports (see the module
    docstring)."""
    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
        modules = [owner] if isinstance(owner, Module) else []
        call = fn.__call__ if isinstance(fn, Module) else fn
        compiled = CompiledFunction(call, Options(backend=backend, dynamic=dynamic), modules,
                                    source=fn.forward if isinstance(fn, Module) else fn)
        compiled(*args, **kwargs)
        out = ExplainOutput()
        for entry in compiled.entries:
            out.break_reasons += entry.reasons
            if entry.graph is not None and entry.run is not None:
                out.graphs.append(entry.graph)
                out.ops_per_graph.append(_op_names(entry.graph))
                out.op_count += entry.graph.op_count
                out.fused_chains += entry.graph.notes
        out.graph_count = len(out.graphs)
        out.graph_break_count = len(out.break_reasons)
        return out

    return run
