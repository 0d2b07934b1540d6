"""``ember.compile`` and ``ember.compiler``'s functions, with torch.compile's contract.

``ember.compile(fn)`` returns a compiled function, ``ember.compile(module)`` an ``OptimizedModule`` (its
parameters and ``state_dict`` keys under ``_orig_mod.``, as torch's), ``ember.compile(**options)`` a decorator,
``module.compile()`` compiles a module in place; ``disable=True`` gives the input back unchanged.

Backends: ``"inductor"`` (the default: capture, fuse elementwise chains into generated Numba kernels, replay),
``"aot_eager"`` (capture and replay the recorded ops, no fusion), ``"eager"`` (no capture: the guards are kept and
every call runs eagerly), or a callable ``backend(graph, example_inputs)`` returning the function to run on the
graph's inputs (``graph.forward`` replays it). ``mode`` takes torch's names; every mode runs the same pipeline
here (there are no CUDA graphs or autotuning to choose). ``options`` takes ``max_fusion_size``, the longest chain
fused into one kernel (torch's inductor option of that name).

Graphs are specialised to their inputs' shapes (a recorded ``view(b, -1)`` holds the sizes it saw), but the
generated kernels take any shape, so a new shape costs one captured call and no kernel compile. ``dynamic``
decides what counts against ``ember._dynamo.config.recompile_limit``: every new shape (``False``), none
(``True``), or, as torch's automatic dynamic shapes (``None``), the first change of shape only. ``fullgraph=True``
raises ``ember.compiler.Unsupported`` where a call would run eagerly. A call that cannot be replayed runs eagerly,
with the reason logged once on the ``ember.compiler`` logger (see ``capture``); Python side effects other than
tensor ops (appending to a list, printing a shape) happen during the capturing call only, where torch replays
them.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..nn.modules import module as _module_file
from ..nn.modules.module import Module
from . import capture as _capture, kernel_cache
from .frame import CompiledFunction, Options, reset_all

__all__ = ["InvalidBackend", "OptimizedModule", "compile", "compile_in_place", "disable", "is_compiling",
           "is_dynamo_compiling", "list_backends", "reset"]

_BACKENDS = {"inductor": (), "aot_eager": ("debug",), "eager": ("debug",)}
_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_OPTIONS = {"max_fusion_size": int}


class InvalidBackend(RuntimeError):
    """An unknown backend name (torch's ``torch._dynamo.exc.InvalidBackend``)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for available backends.")


def list_backends(exclude_tags: tuple[str, ...] | None = ("debug", "experimental")) -> list[str]:
    """The backend names ``ember.compile`` takes (the debugging ones, ``eager`` and ``aot_eager``, with
    ``exclude_tags=()``)."""
    excluded = set(exclude_tags or ())
    return sorted(name for name, tags in _BACKENDS.items() if not excluded & set(tags))


def _options(fullgraph: bool, dynamic: bool | None, backend: Any, mode: str | None, options: dict | None) -> Options:
    """The validated arguments, with torch's errors."""
    if backend is None:
        backend = "inductor"
    if isinstance(backend, str):
        if backend not in _BACKENDS:
            raise InvalidBackend(backend)
    elif not callable(backend):
        raise InvalidBackend(repr(backend))
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    settings = {"max_fusion_size": 64}
    for key, value in (options or {}).items():
        kind = _OPTIONS.get(key)
        if kind is None:
            raise RuntimeError(f"Unexpected optimization option {key}, known options are {sorted(_OPTIONS)}")
        if not isinstance(value, kind) or isinstance(value, bool) or value < 1:
            raise RuntimeError(f"option {key} must be a positive {kind.__name__}, got {value!r}")
        settings[key] = value
    if dynamic not in (None, True, False):
        raise TypeError(f"dynamic must be None, True or False, got {dynamic!r}")
    return Options(backend, bool(fullgraph), dynamic, mode, settings["max_fusion_size"])


class OptimizedModule(Module):
    """What ``ember.compile(module)`` returns: calls run ``_orig_mod``'s call compiled; the original module is a
    submodule named ``_orig_mod`` (so ``state_dict`` keys carry that prefix, as torch's) and its attributes read
    through."""

    def __init__(self, mod: Module, options: Options) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", CompiledFunction(mod.__call__, options, [mod], source=mod.forward))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_compiled_call"](*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or "_orig_mod" not in modules:
                raise
            return getattr(modules["_orig_mod"], name)


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend: str | Callable | None = "inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Compile a function or module (see the module docstring); with no ``model``, a decorator that does."""
    settings = _options(fullgraph, dynamic, backend, mode, options)
    if model is None:
        return functools.partial(_compile_with, settings=settings, disable=disable)
    return _compile_with(model, settings, disable)


def _compile_with(model: Callable, settings: Options, disable: bool) -> Any:
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, settings)
    if not callable(model):
        raise RuntimeError(f"ember.compile expected a callable or an nn.Module, got {type(model).__name__}")
    owner = getattr(model, "__self__", None)
    return CompiledFunction(model, settings, [owner] if isinstance(owner, Module) else [])


def compile_in_place(module: Module, *args: Any, **kwargs: Any) -> None:
    """``module.compile(...)``: its calls run its ``forward`` compiled from now on; nothing else changes
    (``state_dict`` keys included)."""
    compiled = compile(type(module).forward.__get__(module), *args, **kwargs)
    module.__dict__["forward"] = compiled


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Keep ``fn`` eager inside compiled code: a compiled function that calls it records the call as one op and
    calls ``fn`` itself on every replay (``recursive=False``: ``fn``'s own ops are captured as usual). Outside
    compiled code ``fn`` runs as it is."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not recursive:
        return fn

    @functools.wraps(fn)
    def eager(*args: Any, **kwargs: Any) -> Any:
        if _capture.is_capturing():
            return _capture.record_opaque(fn, args, kwargs)
        return fn(*args, **kwargs)

    return eager


def is_compiling() -> bool:
    """Whether ember is capturing a call for ``ember.compile`` now (code may branch on it, as on torch's)."""
    return _capture.is_capturing()


is_dynamo_compiling = is_compiling


def reset() -> None:
    """Forget every compiled graph and guard (the next call of a compiled function compiles again); kernels
    stay in the disk cache."""
    reset_all()
    kernel_cache.clear_loaded()


# ``Module.compile`` reaches the compiler through this slot (the compiler sits above nn).
_module_file.COMPILE_IN_PLACE.append(compile_in_place)
