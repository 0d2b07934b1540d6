"""Capture: run a function once, eagerly, while a recorder watches every op it runs; the trace ``ember.compile``
builds its graph from.

The recorder sits on ``Function.apply`` (``add_apply_wrapper``, the hook the profiler uses), so every
differentiable op is seen with its arguments and results; it records the outermost calls only (an op's inner ops
run again whenever it does). While a capture runs, it also watches what a replay could not repeat and notes it as
a *break* (torch's graph break; the function then runs eagerly, never with a wrong result):

- reading tensor values in Python (``item``, ``tolist``, ``bool(t)``, ``numpy``, printing): control flow on data;
- tensors made outside the recorded ops (by NumPy code on raw arrays, ``detach``...), except by the creation
  functions (``zeros``, ``arange``, ``tensor(list)``...) called from the function itself, whose tensors are
  constants of the graph;
- in-place changes outside the recorded ops (``x.add_(1)``: every version-counter bump is seen), random draws
  outside them (the generators' states are compared between recorded ops), backward passes, hooks and
  ``requires_grad`` changes, ops on the capture list's outside (``REPLAYABLE``), NumPy arrays or tensors hidden
  in an op's arguments.

It also notes the user's Python functions the call ran (a profile function), so that the globals they name are
guarded along with the compiled function's own.

All of this is installed for the capture only and removed after, so eager ops pay nothing for it. Captures are
serialised by a lock, and only the capturing thread's calls are recorded.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
import sysconfig
import threading
import types
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from .._grad_state import state as _grad_modes
from ..autograd import engine
from ..autograd.function import add_apply_wrapper, last_ctx
from ..tensor import creation, conversion
from ..tensor.random import capture_rng_states
from ..tensor.tensor import Tensor, _Version
from .structure import rebuild

__all__ = ["Call", "Recorder", "Ref", "TensorInfo", "Trace", "capture", "is_capturing", "record_opaque"]

# Modules whose Functions a replay may run again as recorded: their entry points validate and prepare on shapes
# and Python arguments only (anything read from tensor values reaches their Functions as an argument, which the
# recorder refuses). A user's own Functions (outside ember) are replayable too.
REPLAYABLE = ("ember.tensor.elementwise", "ember.tensor.views", "ember.tensor.matmul", "ember.tensor.reduce",
              "ember.tensor.conversion", "ember.tensor.joins", "ember.tensor.fused", "ember.tensor.contractions",
              "ember.tensor.blas_like", "ember.tensor.activation_ops", "ember.tensor.composite",
              "ember.tensor.optimizer_updates", "ember.nn")

# Tensor methods that read values into Python (the function's control flow may depend on them).
_VALUE_READS = ("item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__",
                "__complex__", "__repr__", "__str__", "__format__")
# Tensor methods that change the graph or what a backward pass does, which a replay would not repeat.
_GRAPH_CHANGES = ("register_hook", "retain_grad", "register_post_accumulate_grad_hook", "backward", "detach_",
                  "requires_grad_")
# Tensor properties whose setters change a tensor behind the recorder's back.
_WATCHED_SETTERS = ("requires_grad", "data", "grad")

# The creation functions whose tensors are graph constants when the function calls them itself: their values
# depend on their Python arguments only.
_FACTORIES = (creation.zeros, creation.ones, creation.full, creation.empty, creation.zeros_like,
              creation.ones_like, creation.full_like, creation.empty_like, creation.arange, creation.linspace,
              creation.logspace, creation.eye, creation.tensor, creation.as_tensor, creation.scalar_tensor,
              conversion.new_zeros, conversion.new_ones, conversion.new_empty, conversion.new_full,
              conversion.new_tensor)
# their own code (decorators' wrappers share one code object among every function they wrap)
_FACTORY_CODES = frozenset(inspect.unwrap(f).__code__ for f in _FACTORIES)
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_WRAPPER_FILES = tuple(os.path.join(_EMBER_DIR, "tensor", name) for name in ("arguments.py", "out_arg.py"))
# ember code that may call a creation function for the graph (a module's forward making its initial state)
_FACTORY_CALLERS = (os.path.join(_EMBER_DIR, "nn", "modules") + os.sep,)

# Where Python code that is not the user's lives: ember, the standard library, installed packages (whose globals
# go unguarded), frozen modules; read on the first capture (``sysconfig`` takes milliseconds)
_NOT_USER_CODE: list[tuple[str, ...]] = []


def _not_user_code() -> tuple[str, ...]:
    if not _NOT_USER_CODE:
        paths = sysconfig.get_paths()
        _NOT_USER_CODE.append(tuple({_EMBER_DIR, "<frozen"} | {paths[k] for k in ("stdlib", "purelib", "platlib")}))
    return _NOT_USER_CODE[0]

_LOCK = threading.RLock()
_ACTIVE: list["Recorder"] = []


def is_capturing() -> bool:
    """Whether a capture is running (``ember.compiler.is_compiling``)."""
    return bool(_ACTIVE)


@dataclass(frozen=True)
class TensorInfo:
    """What the graph knows of one tensor of the capture: its metadata when first seen."""

    shape: tuple[int, ...]
    dtype: Any
    device: Any
    requires_grad: bool

    @classmethod
    def of(cls, t: Tensor) -> "TensorInfo":
        return cls(tuple(t._array.shape), t.dtype, t.device, bool(t._requires_grad))


@dataclass(frozen=True)
class Ref:
    """A tensor in a recorded call, by where it comes from: an input of the function (``"input"``, its position
    among the flattened inputs), a tensor that existed before the call (``"free"``), a constant the function made
    (``"constant"``) or the output of an earlier call (``"op"``, the value's number)."""

    kind: str
    index: int


@dataclass
class Call:
    """One recorded outermost op: its Function (or a function ``ember.compiler.disable`` keeps eager), the
    arguments with tensors replaced by ``Ref``s, and its result likewise."""

    target: Any
    args: tuple
    kwargs: dict
    result: Any
    grad_enabled: bool
    random: bool = False
    dirty: bool = False
    opaque: bool = False


@dataclass
class Trace:
    """What a capture saw: the calls in order, every tensor's info by ``Ref``, the tensors the graph holds
    (``free``, ``constants``) and the function's result with tensors replaced by ``Ref``s."""

    calls: list[Call]
    infos: dict[Ref, TensorInfo]
    free: list[Tensor]
    constants: list[Tensor]
    result: Any
    inputs: int
    code: dict[Any, dict]  # the Python functions outside ember the call ran (code -> their globals)


@dataclass
class _Made:
    """A tensor made during the capture: a weak reference, what made it, whether it is a graph constant."""

    ref: weakref.ref
    maker: str
    constant: bool


class Recorder:
    """The state of one capture (see the module docstring)."""

    def __init__(self, inputs: list[Tensor]) -> None:
        self.thread = threading.get_ident()
        self.depth = 0
        self.paused = 0
        self.calls: list[Call] = []
        self.breaks: list[str] = []
        self.infos: dict[Ref, TensorInfo] = {}
        self.free: list[Tensor] = []
        self.constants: list[Tensor] = []
        self._refs: dict[int, tuple[weakref.ref, Ref]] = {}
        self._made: dict[int, _Made] = {}
        self._values = 0
        self._rng = self._rng_state()
        self.inference = _grad_modes.inference
        self.code: dict[Any, dict] = {}
        self._not_user = _not_user_code()
        for i, t in enumerate(inputs):
            if id(t) not in self._refs:
                self._bind(t, Ref("input", i))

    # ------------------------------------------------------------------------------------------ bookkeeping
    def mine(self) -> bool:
        """Whether the running code is the capture's own, outside any recorded op (what the hooks judge)."""
        return self.depth == 0 and not self.paused and threading.get_ident() == self.thread

    def note(self, reason: str) -> None:
        if reason not in self.breaks:
            self.breaks.append(reason)

    def _bind(self, t: Tensor, ref: Ref) -> Ref:
        self._refs[id(t)] = (weakref.ref(t), ref)
        self.infos[ref] = TensorInfo.of(t)
        return ref

    def _known(self, t: Tensor) -> Ref | None:
        found = self._refs.get(id(t))
        if found is not None and found[0]() is t:
            return found[1]
        return None

    def ref_of(self, t: Tensor, where: str) -> Ref:
        """The ``Ref`` of a tensor met in ``where`` (a recorded call's arguments, or the result)."""
        known = self._known(t)
        if known is not None:
            return known
        made = self._made.get(id(t))
        if made is not None and made.ref() is t:
            if not made.constant:
                self.note(f"{where} uses a tensor made outside the recorded ops (by {made.maker})")
            elif t._requires_grad:
                self.note(f"{where} uses a tensor that requires grad made inside the function (by {made.maker})")
            self.constants.append(t)
            return self._bind(t, Ref("constant", len(self.constants) - 1))
        self.free.append(t)
        return self._bind(t, Ref("free", len(self.free) - 1))

    def template(self, value: Any, where: str) -> Any:
        """``value`` with each tensor replaced by its ``Ref`` (containers walked, see ``structure``)."""
        def leaf(v: Any) -> Any:
            if isinstance(v, Tensor):
                return self.ref_of(v, where)
            self._check_hidden(v, where, 0)
            return v

        return rebuild(value, leaf)

    def _check_hidden(self, value: Any, where: str, depth: int) -> None:
        """Refuse arguments that hide a tensor or an array (a closure's cell, a partial's arguments): a replay
        would see the capture's values in them."""
        if type(value) is np.ndarray or hasattr(value, "__ember_device_array__"):
            self.note(f"{where} takes an array computed outside the recorded ops")
        elif isinstance(value, Tensor):
            self.note(f"{where} holds a tensor inside an argument")
        elif depth < 4:
            inner: tuple = ()
            if isinstance(value, types.FunctionType) and value.__closure__:
                inner = tuple(c.cell_contents for c in value.__closure__ if _filled(c))
            elif isinstance(value, types.MethodType):
                inner = (value.__self__,) if isinstance(value.__self__, Tensor) else ()
            elif isinstance(value, (tuple, list)):
                inner = tuple(value)
            elif isinstance(getattr(value, "__dict__", None), dict) and not isinstance(value, type):
                inner = tuple(v for v in vars(value).values() if isinstance(v, Tensor))
            for v in inner:
                self._check_hidden(v, where, depth + 1)

    def output(self, value: Any) -> Any:
        """``value`` (a recorded call's result) with each tensor bound to a new op value."""
        def leaf(v: Any) -> Any:
            if isinstance(v, Tensor):
                self._values += 1
                return self._bind(v, Ref("op", self._values - 1))
            if v is not None:
                self.note(f"an op returned a {type(v).__name__}, which the graph cannot hold")
            return v

        return rebuild(value, leaf)

    # --------------------------------------------------------------------------------------------- random
    def _rng_state(self) -> bytes:
        self.paused += 1
        try:
            cpu, cuda = capture_rng_states()
            return cpu._array.tobytes() + repr(cuda).encode()
        finally:
            self.paused -= 1

    def rng_boundary(self, what: str | None) -> None:
        """Compare the generators with where the last recorded op left them (a change is a draw outside, before
        ``what``), then remember where they are (``what`` None: right after a recorded op, which may draw)."""
        state = self._rng_state()
        if what is not None and state != self._rng:
            self.note(f"random numbers were drawn outside the recorded ops (before {what})")
        self._rng = state

    # ---------------------------------------------------------------------------------------------- hooks
    def on_apply(self, cls: type, args: tuple, kwargs: dict, proceed: Callable) -> Any:
        if not self.mine():
            if threading.get_ident() != self.thread:
                return proceed(args, kwargs)
            self.depth += 1
            try:
                return proceed(args, kwargs)
            finally:
                self.depth -= 1
        return self._record(cls, args, kwargs, lambda: proceed(args, kwargs), opaque=False)

    def _record(self, target: Any, args: tuple, kwargs: dict, run: Callable[[], Any], opaque: bool) -> Any:
        name = getattr(target, "__qualname__", repr(target))
        if not opaque and not _replayable(target):
            self.note(f"op {target.__module__}.{name} is not on the capture list")
        self.rng_boundary(name)
        where = f"op {name}"
        call_args, call_kwargs = self.template(args, where), self.template(kwargs, where)
        grad_enabled = _grad_modes.enabled
        if _grad_modes.inference != self.inference:
            self.note("inference_mode changed inside the function")
        before = self._rng
        self.depth += 1
        try:
            result = run()
        finally:
            self.depth -= 1
        self.rng_boundary(None)
        ctx = None if opaque else last_ctx()
        dirty = bool(ctx is not None and getattr(ctx, "_dirty", ()))
        self.calls.append(Call(target, call_args, call_kwargs, self.output(result), grad_enabled,
                               random=self._rng != before, dirty=dirty, opaque=opaque))
        return result

    def on_make(self, t: Tensor) -> None:
        if threading.get_ident() != self.thread or self.paused:
            return
        if self.depth:
            self._made[id(t)] = _Made(weakref.ref(t), "a recorded op's inside", False)
            return
        maker, constant = _maker(sys._getframe(2))
        self._made[id(t)] = _Made(weakref.ref(t), maker, constant)

    def on_method(self, name: str, t: Tensor) -> None:
        if not self.mine():
            return
        if name in _VALUE_READS:
            self.note(f"Tensor.{name} reads tensor values into Python (data-dependent control flow)")
        elif name in ("requires_grad_", "requires_grad") and id(t) in self._made:
            return  # a new tensor's flag: the constant check refuses one that requires grad
        else:
            self.note(f"Tensor.{name} changes the graph outside the recorded ops")

    def on_version(self) -> None:
        if self.mine():
            self.note("a tensor was changed in place outside the recorded ops (x.add_(...), x[i] = ...)")

    def on_backward(self) -> None:
        if self.mine():
            self.note("a backward pass ran inside the function")

    def run_opaque(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        """Run ``fn`` (kept eager by ``ember.compiler.disable``) as one recorded call, replayed by calling it."""
        return self._record(fn, args, kwargs, lambda: fn(*args, **kwargs), opaque=True)

    def trace(self, result: Any, inputs: int) -> Trace:
        """The trace, once the function returned ``result``."""
        self.rng_boundary("the return")
        return Trace(self.calls, self.infos, self.free, self.constants, self.template(result, "the result"), inputs,
                     self.code)

    def on_call(self, frame: Any, event: str, arg: Any) -> None:
        """``sys.setprofile``'s callback: note each function of the user's code the call runs (their globals are
        guarded, as the compiled function's own are)."""
        if event == "call" and threading.get_ident() == self.thread:
            code = frame.f_code
            if code not in self.code and not code.co_filename.startswith(self._not_user):
                self.code[code] = frame.f_globals


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _replayable(cls: Any) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return not module.startswith("ember.") or module.startswith(REPLAYABLE)


def _maker(frame: Any) -> tuple[str, bool]:
    """What made a tensor outside the recorded ops, from the frames above ``Tensor._make`` (the outermost ember
    function the code called, a module's forward aside), and whether it is a graph constant: a creation function
    called by the function itself (or by a module's forward)."""
    maker = None
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not filename.startswith(_EMBER_DIR) or filename.startswith(os.path.join(_EMBER_DIR, "compiler")):
            break
        if filename not in _WRAPPER_FILES and not filename.startswith(_FACTORY_CALLERS):
            maker = f"{frame.f_globals.get('__name__', '?')}.{code.co_name}"
        if code in _FACTORY_CODES:
            caller = frame.f_back
            while caller is not None and caller.f_code.co_filename in _WRAPPER_FILES:
                caller = caller.f_back
            name = f"{frame.f_globals.get('__name__', '?')}.{code.co_name}"
            caller_file = caller.f_code.co_filename if caller is not None else ""
            user_code = not caller_file.startswith(_EMBER_DIR) or caller_file.startswith(_FACTORY_CALLERS)
            return name, user_code
        frame = frame.f_back
    return maker or "the function's own code", False


# --------------------------------------------------------------------------------------- installing the hooks
@contextlib.contextmanager
def _installed(recorder: Recorder) -> Iterator[None]:
    """Install every hook of ``recorder`` for the block (and restore what was there, whatever happens)."""
    undo: list[Callable[[], None]] = []
    try:
        undo.append(add_apply_wrapper(recorder.on_apply))
        undo.append(_patch_make(recorder))
        for name in _VALUE_READS + _GRAPH_CHANGES:
            undo.append(_patch_method(name, recorder))
        for name in _WATCHED_SETTERS:
            undo.append(_patch_setter(name, recorder))
        undo.append(_patch_version(recorder))
        undo.append(_watch_backward(recorder))
        undo.append(_watch_calls(recorder))
        yield
    finally:
        for restore in reversed(undo):
            restore()


def _restorer(cls: type, name: str) -> Callable[[], None]:
    """Put ``cls``'s own attribute ``name`` back as it is now (or remove it if ``cls`` has none)."""
    had = name in cls.__dict__
    original = cls.__dict__.get(name)

    def restore() -> None:
        if had:
            type.__setattr__(cls, name, original)
        else:
            type.__delattr__(cls, name)

    return restore


def _patch_make(recorder: Recorder) -> Callable[[], None]:
    restore = _restorer(Tensor, "_make")
    make = Tensor.__dict__["_make"].__func__

    def watched(cls, array, requires_grad=False, version=None, base=None):
        t = make(cls, array, requires_grad, version, base)
        recorder.on_make(t)
        return t

    type.__setattr__(Tensor, "_make", classmethod(watched))
    return restore


def _patch_method(name: str, recorder: Recorder) -> Callable[[], None]:
    method = getattr(Tensor, name, None)
    if method is None:
        return lambda: None
    restore = _restorer(Tensor, name)

    def watched(self, *args, **kwargs):
        recorder.on_method(name, self)
        return method(self, *args, **kwargs)

    type.__setattr__(Tensor, name, watched)
    return restore


def _patch_setter(name: str, recorder: Recorder) -> Callable[[], None]:
    prop = Tensor.__dict__.get(name)
    if not isinstance(prop, property) or prop.fset is None:
        return lambda: None
    restore = _restorer(Tensor, name)

    def setter(self, value):
        recorder.on_method(name, self)
        prop.fset(self, value)

    type.__setattr__(Tensor, name, property(prop.fget, setter, prop.fdel, prop.__doc__))
    return restore


def _patch_version(recorder: Recorder) -> Callable[[], None]:
    """Every write of a plain version counter (the in-place bump) tells the recorder."""
    slot = _Version.__dict__["value"]
    restore = _restorer(_Version, "value")

    def write(self, value):
        try:
            slot.__get__(self, _Version)
        except AttributeError:  # a new counter's first value
            pass
        else:
            recorder.on_version()
        slot.__set__(self, value)

    type.__setattr__(_Version, "value", property(lambda self: slot.__get__(self, _Version), write))
    return restore


def _watch_backward(recorder: Recorder) -> Callable[[], None]:
    def wrapper(call, node, grads):
        recorder.on_backward()
        return previous(call, node, grads) if previous is not None else call(node, grads)

    previous = engine.set_node_wrapper(wrapper)
    return lambda: engine.set_node_wrapper(previous)


def _watch_calls(recorder: Recorder) -> Callable[[], None]:
    """Profile the capturing thread's Python calls (``Recorder.on_call``), unless a profiler already does (its
    helpers' globals then go unguarded)."""
    if sys.getprofile() is not None:
        return lambda: None
    sys.setprofile(recorder.on_call)
    return lambda: sys.setprofile(None)


def capture(fn: Callable, args: tuple, kwargs: dict, inputs: list[Tensor]) -> tuple[Any, Trace, list[str]]:
    """Run ``fn(*args, **kwargs)`` once, eagerly, recording it: (its result, the trace, the break reasons).
    ``inputs`` are the tensors among the arguments, in the order the graph numbers its inputs."""
    with _LOCK:
        recorder = Recorder(inputs)
        _ACTIVE.append(recorder)
        try:
            with _installed(recorder):
                result = fn(*args, **kwargs)
                trace = recorder.trace(result, len(inputs))
        finally:
            _ACTIVE.pop()
    return result, trace, recorder.breaks


def record_opaque(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Call ``fn`` as one recorded op of the running capture when the function called it itself (else plainly)."""
    recorder = _ACTIVE[-1] if _ACTIVE else None
    if recorder is None or not recorder.mine():
        return fn(*args, **kwargs)
    return recorder.run_opaque(fn, args, kwargs)
