"""A compiled callable: its graphs by call key, the recompile limit, and what runs each call.

The first call with a new key (``guards``) is captured (``capture``): it runs eagerly, so its result is the eager
result, while the recorder builds the graph; later calls with that key replay the graph. A capture that cannot
be replayed (a *break*) leaves an eager entry, logged once with its reason, so later calls run eagerly without
capturing again. Past ``config.recompile_limit`` keys (shape changes counted as ``dynamic`` says) new keys run
eagerly, with a warning. Before a graph is kept it is replayed once on the captured call's inputs (when it has no
side effects) and compared with the eager result: its kernels compile during the first call, as torch's do, and
a graph that disagreed would run eagerly instead, logged as an internal error.
"""
from __future__ import annotations

import functools
import inspect
import logging
import types
import warnings
import weakref
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..autograd.dual_levels import OPEN as _DUAL_LEVELS
from ..nn.modules.module import Module
from ..tensor.tensor import Tensor
from . import capture as _capture
from .config import config
from .fusion import fuse
from .graph import Graph, build_graph
from .guards import CallKey, StateSnapshot, arguments, describe_change, global_key, global_names, state_key, \
    watched_names
from .structure import leaves

__all__ = ["CompiledFunction", "Options", "Unsupported", "log", "reset_all"]

log = logging.getLogger("ember.compiler")

_REGISTRY: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()


class Unsupported(RuntimeError):
    """A call ``fullgraph=True`` cannot capture whole (torch's ``torch._dynamo.exc.Unsupported``)."""


@dataclass(frozen=True)
class Options:
    """What ``ember.compile`` was asked for (validated there)."""

    backend: Any = "inductor"
    fullgraph: bool = False
    dynamic: bool | None = None
    mode: str | None = None
    max_fusion_size: int = 64


@dataclass(eq=False)
class Entry:
    """One cache entry: its key, its graph and replay (None: the call runs eagerly, for ``reasons``)."""

    key: CallKey
    graph: Graph | None
    run: Callable[[list[Tensor]], Any] | None
    reasons: list[str]


class CompiledFunction:
    """``fn`` compiled (see the module docstring). ``modules`` are guarded as state; ``source`` is the function
    whose globals and closure are watched and whose signature names the graph's inputs (default ``fn``)."""

    def __init__(self, fn: Callable, options: Options, modules: list[Module] = (), source: Callable | None = None
                 ) -> None:
        self._fn = fn
        self._options = options
        self._modules = list(modules)
        source = source or fn
        self._source = source
        self._watched = watched_names(source)
        self._signature = _signature(source)
        self._entries: dict[CallKey, Entry] = {}
        self._variants: dict[tuple, list[CallKey]] = {}
        self._warned: set[str] = set()
        self._free = frozenset(_free_names(self._modules, self._watched))
        self._snapshot: StateSnapshot | None = None
        self._label = _label(source)
        functools.update_wrapper(self, fn, updated=())
        _REGISTRY.add(self)

    def __deepcopy__(self, memo: dict) -> "CompiledFunction":
        """A fresh compiled function of the copy: methods of an object being copied (a module that
        ``Module.compile`` compiled in place, an ``OptimizedModule``'s module) bind to its copy."""
        def rebound(fn: Callable) -> Callable:
            owner = getattr(fn, "__self__", None)
            if isinstance(fn, types.MethodType) and id(owner) in memo:
                return types.MethodType(fn.__func__, memo[id(owner)])
            return fn

        return CompiledFunction(rebound(self._fn), self._options, [memo.get(id(m), m) for m in self._modules],
                                rebound(self._source))

    # ------------------------------------------------------------------------------------------------- calls
    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """A compiled function in a class body binds as a method does."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _capture.is_capturing() or _DUAL_LEVELS:  # inside a capture: traced inline; forward AD: eager
            return self._fn(*args, **kwargs)
        structure, facts, shapes, tensors, modules = arguments(args, kwargs, self._free)
        key = CallKey(structure, facts, shapes, self._state(modules), global_key())
        entry = self._entries.get(key)
        if entry is None:
            return self._compile(key, args, kwargs, tensors, modules)
        if entry.run is None:
            return self._fn(*args, **kwargs)
        return entry.run(tensors)

    def _state(self, arg_modules: list[Module]) -> tuple:
        """The state key: from the kept snapshot while nothing it watches changed (modules passed as arguments
        are keyed afresh each call)."""
        if arg_modules:
            return state_key(self._modules + arg_modules, self._watched)
        snapshot = self._snapshot
        if snapshot is None or not snapshot.unchanged():
            snapshot = self._snapshot = StateSnapshot(self._modules, self._watched)
        return snapshot.key

    @property
    def entries(self) -> list[Entry]:
        """The cache entries, oldest first."""
        return list(self._entries.values())

    def reset(self) -> None:
        """Forget every entry (``ember.compiler.reset``)."""
        self._entries.clear()
        self._variants.clear()
        self._warned.clear()
        self._snapshot = None

    # ----------------------------------------------------------------------------------------------- compile
    def _counted(self, key: CallKey) -> int:
        """How many entries count against the recompile limit once ``key`` is added."""
        groups = {k: len(v) for k, v in self._variants.items()}
        group = key.without_shapes()
        groups[group] = groups.get(group, 0) + 1
        if self._options.dynamic is False:
            return sum(groups.values())
        if self._options.dynamic is True:
            return len(groups)
        return sum(min(n, 2) for n in groups.values())  # torch's automatic dynamic: one recompile for a new shape

    def _store(self, entry: Entry) -> None:
        key = entry.key
        variants = self._variants.setdefault(key.without_shapes(), [])
        variants.append(key)
        if self._options.dynamic is not False and len(variants) > config.shape_variants_limit:
            self._entries.pop(variants.pop(0), None)
        self._entries[key] = entry

    def _warn_once(self, reason: str, message: str, category: type[Warning] | None = None) -> None:
        if reason in self._warned:
            return
        self._warned.add(reason)
        log.warning(message)
        if category is not None:
            warnings.warn(message, category, stacklevel=4)

    def _compile(self, key: CallKey, args: tuple, kwargs: dict, tensors: list[Tensor],
                 arg_modules: list[Module]) -> Any:
        names = _input_names(self._signature, args, kwargs)
        if self._entries:
            why = describe_change(key, _closest(key, self._entries), names)
            if self._counted(key) > config.recompile_limit:
                self._warn_once("limit", f"ember.compile hit config.recompile_limit ({config.recompile_limit})\n"
                                f"   function: {self._label}\n   last reason: {why}\n"
                                "Calls that match no compiled graph run eagerly from here on.", UserWarning)
                return self._fn(*args, **kwargs)
            log.info("recompiling %s: %s", self._label, why)
        backend = self._options.backend
        if backend == "eager":
            self._store(Entry(key, None, None, []))
            return self._fn(*args, **kwargs)
        result, trace, breaks = _capture.capture(self._fn, args, kwargs, tensors)
        modules = self._modules + arg_modules
        if state_key(modules, self._watched) != key.state:
            breaks.append("the function changed a module attribute, parameter or watched global")
        if global_key() != key.modes:
            breaks.append("the function changed a global mode (grad mode, default dtype, ...)")
        helpers = self._helper_globals(trace.code)
        if helpers:  # what the functions it called read is guarded from now on too
            self._watched += helpers
            self._snapshot = None
            key = replace(key, state=state_key(modules, self._watched))
        if breaks:
            if self._options.fullgraph:
                raise Unsupported(f"ember.compile(fullgraph=True) cannot capture {self._label}: {breaks[0]}")
            self._warn_once(breaks[0], f"ember.compile: graph break in {self._label}: {'; '.join(breaks)}; it "
                                       "runs eagerly")
            self._store(Entry(key, None, None, breaks))
            return result
        try:
            entry = self._build(key, trace, names, modules, tensors, result)
        except Exception as exc:  # a failure of the compiler itself
            if not config.suppress_errors:
                raise
            log.exception("ember.compile failed on %s; it runs eagerly", self._label)
            entry = Entry(key, None, None, [f"internal error: {exc!r}"])
        self._store(entry)
        return result

    def _helper_globals(self, code: dict) -> list[tuple[str, Callable[[], Any]]]:
        """Readers of the globals the called functions name that are not watched yet."""
        known = {name for name, _ in self._watched}
        found = []
        for code_object, scope in code.items():
            prefix = f"{scope.get('__name__', '?')}."
            found += [(name, read) for name, read in global_names(code_object, scope, prefix)
                      if name not in known and name[len(prefix):] not in known]
            known.update(name for name, _ in found)
        return found

    def _build(self, key: CallKey, trace: Any, names: list[str], modules: list[Module], tensors: list[Tensor],
               result: Any) -> Entry:
        free_names = _free_names(modules, self._watched)
        self._free = frozenset(free_names)
        graph = build_graph(trace, names, free_names)
        backend = self._options.backend
        if backend == "inductor":
            fuse(graph, self._options.max_fusion_size)
        if callable(backend):
            compiled = backend(graph, list(tensors))
            run = lambda inputs: compiled(*inputs)  # noqa: E731 - the backend's callable over the flat inputs
        else:
            run = graph.program().run
            if not any(n.barrier for n in graph.nodes):
                mismatch = _check_replay(run, tensors, result)
                if mismatch:
                    log.error("ember.compile: the graph of %s disagreed with eager (%s); it runs eagerly:\n%s",
                              self._label, mismatch, graph)
                    return Entry(key, graph, None, [f"internal error: the replay disagreed with eager ({mismatch})"])
        return Entry(key, graph, run, [])


def _check_replay(run: Callable, tensors: list[Tensor], expected: Any) -> str | None:
    """Replay once on the captured inputs and compare with the eager result (the replay's own graph is dropped):
    this also compiles the forward kernels now. Returns what differed (a compiler bug), or None."""
    got = run(tensors)
    for i, (a, b) in enumerate(zip(leaves(got), leaves(expected))):
        if isinstance(b, Tensor):
            x, y = a._array, b._array
            if type(x) is not np.ndarray or type(y) is not np.ndarray:
                continue
            if x.shape != y.shape or x.dtype != y.dtype:
                return f"output {i}: {x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)}"
            if not np.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True):
                return f"output {i}: values differ by up to {np.max(np.abs(x.astype(np.float64) - y)):.3g}"
    return None


def _closest(key: CallKey, entries: dict[CallKey, Entry]) -> CallKey:
    """The entry key that differs from ``key`` in the fewest parts (the latest of those): the one whose failed
    guard explains a recompile best."""
    def differences(other: CallKey) -> int:
        facts = sum(x != y for a, b in zip(key.tensors, other.tensors) for x, y in zip(a, b))
        return facts + sum(a != b for a, b in zip((key.structure, key.shapes, key.state, key.modes),
                                                  (other.structure, other.shapes, other.state, other.modes)))
    return min(reversed(list(entries)), key=differences)


def _signature(fn: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _label(fn: Callable) -> str:
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", type(fn).__name__)
    return f"'{name}' ({code.co_filename}:{code.co_firstlineno})" if code is not None else f"'{name}'"


def _input_names(signature: inspect.Signature | None, args: tuple, kwargs: dict) -> list[str]:
    """Names of the tensor inputs, in the order ``guards.arguments`` finds them ("x", "args[2]", "h[0]")."""
    params = [p for p in (signature.parameters.values() if signature else ())
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names: list[str] = []
    seen: set[int] = set()

    def walk(value: Any, name: str) -> None:
        if isinstance(value, Tensor):
            if id(value) not in seen:
                seen.add(id(value))
                names.append(name)
        elif isinstance(value, (tuple, list)):
            for i, v in enumerate(value):
                walk(v, f"{name}[{i}]")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{name}[{k!r}]")

    for i, a in enumerate(args):
        walk(a, params[i].name if i < len(params) else f"args[{i}]")
    for k, v in kwargs.items():
        walk(v, k)
    return names


def _free_names(modules: list[Module], watched: list[tuple[str, Callable[[], Any]]]) -> dict[int, str]:
    """id -> name of the tensors the function reaches outside its arguments: module parameters and buffers
    ("self.fc1.weight", "norm.weight" for a module in a global), watched globals."""
    found: dict[int, str] = {}
    roots = [(m, "self") for m in modules] + [(read(), name) for name, read in watched]
    for root, root_name in roots:
        if isinstance(root, Tensor):
            found.setdefault(id(root), root_name)
        elif isinstance(root, Module):
            for m, prefix in _named_modules(root):
                for table in ("_parameters", "_buffers"):
                    for name, t in m.__dict__.get(table, {}).items():
                        if t is not None:
                            found.setdefault(id(t), f"{root_name}{prefix}.{name}")
    return found


def _named_modules(root: Module) -> list[tuple[Module, str]]:
    out, stack, seen = [], [(root, "")], set()
    while stack:
        m, prefix = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append((m, prefix))
        for name, sub in reversed(list(m.__dict__.get("_modules", {}).items())):
            if sub is not None:
                stack.append((sub, f"{prefix}.{name}"))
    return out


def reset_all() -> None:
    """Forget the entries of every compiled function in the process."""
    for compiled in list(_REGISTRY):
        compiled.reset()

