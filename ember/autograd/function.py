"""Graph nodes and ``Function``, the one way every differentiable op is written.

A call to ``SomeFunction.apply(*args)`` runs ``forward`` with grad mode off
and, when grad mode is on and some input requires grad, makes a node (the
outputs' ``grad_fn``) that remembers where each input's gradient goes next.
The node *is* the ``ctx`` that ``forward`` and ``backward`` receive.
"""
from __future__ import annotations

import functools
import threading
import traceback
from typing import Any, Callable

import numpy as np

from .._grad_state import INFERENCE_SEEN as _INFERENCE_SEEN, state as _grad_modes
from ..tensor.tensor import Tensor
from . import node_names, saved_attributes
from .grad_mode import no_grad

# Anomaly mode (``anomaly_mode.set_detect_anomaly`` rebinds these): when on, a recorded call keeps its forward
# traceback on the node and the engine checks backward results for NaN. Off costs one global check per recorded call.
_ANOMALY = False
_ANOMALY_CHECK_NAN = True
# The stack of active ``graph.saved_tensors_hooks`` as (pack_hook, unpack_hook) pairs; the innermost is last.
_SAVED_HOOKS: list = []


# The edge of an input tensor that needs no gradient: torch lists it as ``(None, 0)`` in ``next_functions``, while
# inputs that are not (floating) tensors (None) get no entry. Empty, so false as None is: the engine passes over
# both with one truth test per edge.
NO_EDGE = ()
_LISTED_NO_EDGE = (None, 0)


class Node:
    """A step of the backward graph (torch's ``grad_fn``)."""

    # One entry per argument of the call that made the node: (node, output index) where its gradient goes,
    # ``NO_EDGE`` for a tensor that needs none, None for an argument that is not a floating tensor.
    _edges: tuple = ()
    _output_meta: tuple = ()
    _hooked = False  # set once any hook is registered on the node: the engine looks for hooks only then
    _lists_numbers = False  # whether Python-number arguments are inputs too (binary ops: torch wraps them)

    def name(self) -> str:
        """torch's name of the node (``MulBackward0``; C++ nodes with their namespace)."""
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        """``(node, input_nr)`` per input, as torch lists them: ``(None, 0)`` for an input that needs no grad."""
        if self._lists_numbers:
            return tuple(e or _LISTED_NO_EDGE for e in self._edges)
        return tuple(e or _LISTED_NO_EDGE for e in self._edges if e is not None)

    @property
    def metadata(self) -> dict:
        """A dict for the user's own notes about this node (empty until written to)."""
        return self.__dict__.setdefault("_metadata", {})

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def register_hook(self, hook: Callable) -> "RemovableHandle":
        """``hook(grad_inputs, grad_outputs)`` runs after this node computed its input gradients."""
        return RemovableHandle.add(self._hook_table("_post_hooks"), hook)

    def register_prehook(self, hook: Callable) -> "RemovableHandle":
        """``hook(grad_outputs)`` runs before this node; it may return replacement gradients."""
        return RemovableHandle.add(self._hook_table("_node_pre_hooks"), hook)

    def _hook_table(self, name: str) -> dict:
        """The node's hook dict ``name`` (made on first use), marking the node as one whose hooks backward runs."""
        self._hooked = True
        return self.__dict__.setdefault(name, {})

    def _release(self) -> None:
        """Free what backward needed once the graph is not retained."""


class RemovableHandle:
    """Returned by hook registration; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict, key: int) -> None:
        self._hooks = hooks
        self.id = key

    @classmethod
    def add(cls, hooks: dict, hook: Callable) -> "RemovableHandle":
        cls._next_id += 1
        hooks[cls._next_id] = hook
        return cls(hooks, cls._next_id)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient to ``leaf.grad``."""

    def __init__(self, variable: Any) -> None:
        self.variable = variable
        self.edge = (self, 0)  # every op on the leaf points here through this one tuple (no new one per op)

    def name(self) -> str:
        return node_names.QUALIFIED["AccumulateGrad"]

    @property
    def _output_meta(self) -> tuple:
        """Read from the leaf each time: ``leaf.data = ...`` (``Module.to``) may change its device or dtype."""
        v = self.variable
        return ((v._array.shape, v.dtype, v.device),)

    def run_post_accumulate_hooks(self) -> None:
        """Call each ``Tensor.register_post_accumulate_grad_hook`` hook with the leaf, once its ``.grad`` has this
        backward's gradient (torch's rule: they must return None)."""
        for hook in list(self.__dict__.get("_post_accumulate_hooks", {}).values()):
            result = hook(self.variable)
            if result is not None:
                if hasattr(result, "_array"):
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")


_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
)


class FunctionCtx(Node):
    """The ``ctx`` of a Function call; also the graph node its outputs point to."""

    _forward_cls: type = None  # set on the per-Function backward class
    materialize_grads = True
    # Defaults live on the class: most calls record nothing, so a ctx is created with no attribute writes.
    _entries = ()  # what ``save_for_backward`` kept: (tensor, version) pairs, ``_Packed`` or None, one per tensor
    _freed = False
    needs_input_grad = ()
    _dirty = ()
    _non_differentiable = ()
    _packed = False  # whether some entry is a ``_Packed`` (saved through hooks)
    _forward_trace = None  # the forward call's stack, recorded only in anomaly mode
    _kept_for_jvp = ()  # what ``save_for_forward`` kept; ``saved_tensors`` returns it while ``jvp`` runs
    _in_jvp = False

    # -- saving tensors ------------------------------------------------------
    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for backward; an in-place change to one before backward is an error."""
        if self.needs_input_grad:  # a recorded call (forward also runs unrecorded, where nothing is kept for long)
            if _INFERENCE_SEEN[0]:
                for t in tensors:
                    if t is not None and t._version.inference:
                        raise RuntimeError(_INFERENCE_SAVED)
            if _SAVED_HOOKS:
                self._pack_saved(tensors)
                return
        self._entries = tuple((t, t._version.value) if t is not None else None for t in tensors)

    def _pack_saved(self, tensors: tuple) -> None:
        """Save through the innermost ``saved_tensors_hooks``: pack now, unpack on each read."""
        pack, unpack = _SAVED_HOOKS[-1]
        self._entries = tuple(_Packed(pack(t), unpack) if t is not None else None for t in tensors)
        self._packed = True

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for ``jvp`` (forward-mode AD), where ``saved_tensors`` returns them."""
        self._kept_for_jvp = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp:
            return self._kept_for_jvp
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE)
        if self._packed:
            return tuple([_unpacked(entry) for entry in self._entries])
        out = []
        for entry in self._entries:
            if entry is None:
                out.append(None)
                continue
            t, version = entry
            if t._version.value != version:
                raise _modified_error(t, version)
            out.append(t)
        return tuple(out)

    def _read_saved(self, slot: int) -> Any:
        """The tensor saved in ``slot`` (None for an empty or missing slot), read as backward reads it."""
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE)
        return _unpacked(self._entries[slot]) if slot < len(self._entries) else None

    def _hook_saved(self, slot: int, pack_hook: Callable, unpack_hook: Callable) -> None:
        """Repack the tensor in ``slot`` with ``pack_hook`` now; reads of it call ``unpack_hook`` from then on."""
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE)
        entry = self._entries[slot] if slot < len(self._entries) else None
        if entry is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        if type(entry) is _Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: "
                               "only one pair of hooks is allowed at a time.")
        packed = _Packed(pack_hook(_unpacked(entry)), unpack_hook)
        self._entries = self._entries[:slot] + (packed,) + self._entries[slot + 1:]
        self._packed = True

    @property
    def saved_variables(self) -> tuple:
        return self.saved_tensors

    def mark_dirty(self, *tensors: Any) -> None:
        """Declare inputs that ``forward`` modified in place."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Declare outputs that get no gradient (indices, masks)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zero tensors (True) or None for outputs that got no gradient."""
        self.materialize_grads = value

    def _release(self) -> None:
        self._entries = ()
        self._freed = True


def _modified_error(t: Any, version: int) -> RuntimeError:
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{t.type()} {list(t.shape)}], which is output {t._output_nr} of "
        f"{t.grad_fn.name() if t.grad_fn is not None else 'a leaf'}, is at version {t._version.value}; "
        f"expected version {version} instead."
    )


def _unpacked(entry: Any) -> Any:
    """A saved entry's tensor: unpacked through its hook, or version-checked as saved (None stays None)."""
    if entry is None:
        return None
    if type(entry) is _Packed:
        return entry.unpack()
    t, version = entry
    if t._version.value != version:
        raise _modified_error(t, version)
    return t


class _Packed:
    """A tensor saved through a pack hook: what the hook returned, and the unpack hook to call on it."""

    __slots__ = ("value", "unpack_hook")

    def __init__(self, value: Any, unpack_hook: Callable) -> None:
        self.value = value
        self.unpack_hook = unpack_hook

    def unpack(self) -> Any:
        t = self.unpack_hook(self.value)
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        return t


_NODE_CLASSES: dict[tuple[type, str], type] = {}


def node_class(function: type, name: str) -> type:
    """The class of the nodes Function ``function`` makes under torch's node name ``name`` (made once): it
    carries the name and the ``_saved_*`` attributes torch's node of that name has."""
    found = _NODE_CLASSES.get((function, name))
    if found is None:
        attrs: dict[str, Any] = {"_forward_cls": function, "__doc__": f"Graph node of {function.__name__}.",
                                 "_lists_numbers": node_names.lists_numbers(function, name)}
        attrs.update(saved_attributes.attributes_for(function, name))
        if name in node_names.QUALIFIED:
            qualified = node_names.QUALIFIED[name]
            attrs["name"] = lambda self: qualified
        found = _NODE_CLASSES[(function, name)] = type(name, (FunctionCtx,), attrs)
    return found


def name_node(t: Any, name: str) -> Any:
    """Give the node that just made ``t`` torch's name ``name`` for the op the caller implements (``t`` is
    returned; nothing changes when no node was recorded). Only for a ``t`` the caller's own op call made: the
    result of a composite op (``mean`` ends in a division). A public op that is one Function call takes
    ``Function.named`` instead, which costs nothing per call."""
    node = t._grad_fn
    if node is not None:
        node.__class__ = node_class(node._forward_cls, name)
    return t


class FunctionMeta(type):
    """Gives each Function subclass its node class: ``<Name>Backward`` for a user's Function, torch's node name for
    ember's own ops (``node_names``), and the per-call namer of those that serve several torch ops."""

    def __init__(cls, name: str, bases: tuple, namespace: dict) -> None:
        super().__init__(name, bases, namespace)
        if "_backward_cls" not in namespace:  # else a ``Function.named`` variant, whose name is given
            cls._backward_cls = node_class(cls, node_names.default_name(cls))
            cls._node_namer = node_names.namer(cls)


_NAMED: dict[tuple[type, str], type] = {}


_FLAG_TUPLES: dict[tuple, tuple] = {}  # interned ``needs_input_grad`` patterns (up to 6 arguments: at most 127)


class Function(metaclass=FunctionMeta):
    """Base class of differentiable ops, built-in and custom, as ``torch.autograd.Function``.

    Subclasses define ``forward(ctx, *args)`` (returning Tensors, or NumPy arrays
    that ``apply`` wraps) and ``backward(ctx, *grad_outputs)`` written in
    differentiable tensor ops, returning one gradient (or None) per input.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a Function subclass must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError("a Function subclass must implement backward(ctx, *grad_outputs)")

    @classmethod
    def named(cls, node_name: str) -> type:
        """This Function recording its nodes under torch's name ``node_name``: for a public op that shares the
        Function with others and is told apart only by its caller (``sum`` over given dims is SumBackward1, over
        all SumBackward0). Made once per name, and kept by the caller, so the choice costs nothing per call."""
        found = _NAMED.get((cls, node_name))
        if found is None:
            namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                         "_backward_cls": node_class(cls, node_name), "_node_namer": None}
            found = _NAMED[(cls, node_name)] = type(cls)(cls.__name__, (cls,), namespace)
        return found

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and, when some input requires grad under grad mode, record the graph node."""
        ctx = cls._backward_cls()
        record = False
        modes = _grad_modes  # the grad-mode flag read and written directly: this runs for every op
        if modes.enabled:
            flags = tuple([getattr(a, "_requires_grad", False) is True for a in args])
            if True in flags:
                record = True
                # one shared tuple per pattern: a graph node keeps no flags tuple of its own alive
                ctx.needs_input_grad = _FLAG_TUPLES.setdefault(flags, flags) if len(flags) <= 6 else flags
                edges = tuple([_input_edge(a) if getattr(a, "_array", None) is not None else None for a in args])
                if _ANOMALY:
                    ctx._forward_trace = traceback.extract_stack()[:-1]
            modes.enabled = False
            try:
                raw = cls.forward(ctx, *args, **kwargs)
            finally:
                modes.enabled = True
        else:
            raw = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(raw, tuple)
        outputs = tuple([_wrap_output(o, args, ctx) for o in raw]) if is_tuple else (_wrap_output(raw, args, ctx),)
        for t in ctx._dirty:
            t._version.value += 1
        if record:
            if cls._node_namer is not None:
                ctx.__class__ = node_class(cls, cls._node_namer(*args))
            _link(ctx, edges, outputs)
        if _APPLY_WRAPPERS:
            _WATCHED.ctx = ctx
        return outputs if is_tuple else outputs[0]


# Code that watches every op (the profiler, forward-mode AD) wraps ``Function.apply``: each wrapper is called as
# ``wrapper(cls, args, kwargs, proceed)`` and runs the op (and inner wrappers) with ``proceed(args, kwargs)``. With
# no wrapper installed ``Function.apply`` is the plain method: watching costs nothing when nobody watches.
_APPLY_WRAPPERS: list[Callable] = []
_PLAIN_APPLY = Function.__dict__["apply"]
_WATCHED = threading.local()  # ``ctx``: the ctx of this thread's latest call, kept while wrappers are installed


def last_ctx() -> FunctionCtx | None:
    """The ctx of this thread's latest ``Function.apply`` (for a wrapper, right after ``proceed`` returned)."""
    return getattr(_WATCHED, "ctx", None)


def _apply_wrapped(cls: type, *args: Any, **kwargs: Any) -> Any:
    wrappers = tuple(_APPLY_WRAPPERS)
    plain = _PLAIN_APPLY.__func__

    def proceed_from(i: int) -> Callable:
        if i == len(wrappers):
            return lambda a, k: plain(cls, *a, **k)
        return lambda a, k: wrappers[i](cls, a, k, proceed_from(i + 1))

    return proceed_from(0)(args, kwargs)


def add_apply_wrapper(wrapper: Callable) -> Callable[[], None]:
    """Route every ``Function.apply`` through ``wrapper`` (innermost when several); returns its remover."""
    _APPLY_WRAPPERS.append(wrapper)
    Function.apply = classmethod(_apply_wrapped)

    def remove() -> None:
        if wrapper in _APPLY_WRAPPERS:
            _APPLY_WRAPPERS.remove(wrapper)
        if not _APPLY_WRAPPERS:
            Function.apply = _PLAIN_APPLY

    return remove


def must_apply(x: Any, y: Any = None) -> bool:
    """Whether an op on ``x`` (and ``y``; either may be a number) must go through its Function's ``apply``: it
    records a graph node (grad mode is on and one of them requires grad), or something watches every ``apply``
    (the profiler, forward-mode AD). Otherwise the op takes the fast road: its kernel alone, or its ``forward``
    with ``NO_RECORD``. Every op with a fast road asks this, and nothing else; it runs for each such op, so it reads
    the flags directly."""
    if _APPLY_WRAPPERS:
        return True
    if getattr(x, "_requires_grad", False) or (y is not None and getattr(y, "_requires_grad", False)):
        return _grad_modes.enabled
    return False


class _NoRecord:
    """The ctx of a ``forward`` run on the fast road (see ``must_apply``): no input needs a gradient, so
    ``forward`` saves nothing."""

    needs_input_grad = ()


NO_RECORD = _NoRecord()


def _wrap_output(value: Any, inputs: tuple, ctx: FunctionCtx) -> Any:
    if type(value) is np.ndarray or hasattr(value, "__ember_device_array__"):
        return Tensor._make(value)
    if isinstance(value, Tensor):
        for a in inputs:
            if value is a:  # an input returned as is gets its own tensor object (unless modified in place)
                return value if any(value is d for d in ctx._dirty) else value._alias()
    return value


def _edge(t: Any) -> tuple | None:
    """Where the gradient for tensor ``t`` goes: its grad_fn, its leaf accumulator, or nowhere (None)."""
    edge = _input_edge(t)
    return edge or None


def _input_edge(t: Any) -> tuple | None:
    """Tensor ``t``'s entry in the edges of a node it is an input of: its grad_fn or leaf accumulator; else
    ``NO_EDGE`` for a floating tensor, None for an integer or bool one (never differentiable: torch does not
    list it). Inline on purpose: this runs for every tensor argument of every recorded op."""
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        accumulator = t._accumulator  # made once per leaf; read directly on every op that uses the leaf
        return (accumulator if accumulator is not None else grad_accumulator(t)).edge
    return NO_EDGE if t._array.dtype.kind in "fV" else None  # kind V: bfloat16 (ml_dtypes' type), the one non-f float


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The sink of leaf ``t``'s gradient (made on first use, then kept on the leaf)."""
    if t._accumulator is None:
        t._accumulator = AccumulateGrad(t)
    return t._accumulator


def _link(ctx: FunctionCtx, edges: tuple, outputs: tuple) -> None:
    ctx._edges = edges
    meta = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            meta.append(None)
            continue
        dtype = out.dtype
        meta.append((out._array.shape, dtype, out.device))
        if not dtype.is_floating_point or (ctx._non_differentiable and any(out is t for t in ctx._non_differentiable)):
            continue
        if ctx._dirty and any(out is t for t in ctx._dirty) and out._grad_fn is None and out._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        out._grad_fn = ctx
        out._output_nr = i
        out._requires_grad = True
    ctx._output_meta = _interned_meta(tuple(meta))


# Output metadata ((shape, dtype, device) per output) shared between graph nodes: a graph of like-shaped ops keeps
# no metadata tuples of its own alive for the garbage collector to walk. Interned whole (one lookup per node: on a
# hit the fresh per-output tuples die at once). Bounded: cleared when full.
_METAS: dict[tuple, tuple] = {}
_METAS_MAX = 4096


def _interned_meta(meta: tuple) -> tuple:
    found = _METAS.get(meta)
    if found is None:
        if len(_METAS) >= _METAS_MAX:
            _METAS.clear()
        found = _METAS[meta] = meta
    return found


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a ``backward`` that is not itself differentiable; it then runs without recording."""

    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with no_grad():
            return backward(ctx, *grads)

    return wrapper
