"""Unpickling a checkpoint's object: restricted for ``weights_only=True`` (the default), trusting for ``False``.

The weights-only unpickler runs no code a file chooses. It derives from the standard library's Python unpickler
and replaces the opcodes that reach code: a global resolves only to torch's allowlist (as ember's objects) or the
user's safe globals; REDUCE and NEWOBJ call only the functions and containers of that list; BUILD sets state only
on OrderedDicts and the user's safe types; the opcodes of protocols 0 and 1 that instantiate classes, the
extension registry and out-of-band buffers are refused. A refusal is torch's ``UnpicklingError``, naming the
global and how to allow it.
"""
from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import pickle
import struct
from typing import Any, Callable, Iterable, Iterator

from . import rebuild
from . import torch_globals as names

_safe: dict[str, Any] = {}  # "module.qualname" -> the object, registered by add_safe_globals


def python2_names(module: str, name: str, protocol: int) -> tuple[str, str]:
    """Python 3's names for what protocols 0-2 name as Python 2 did (``__builtin__.set``), as pickle maps them."""
    if protocol < 3:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            return _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return module, name


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _entries(safe_globals: Iterable[Any]) -> dict[str, Any]:
    found = {}
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise TypeError("safe globals are objects or (object, 'module.name') pairs, got {entry!r}")
            found[entry[1]] = entry[0]
        else:
            found[_qualified(entry)] = entry
    return found


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Let ``weights_only`` loads resolve these globals (classes, functions, or ``(object, "module.name")`` pairs
    for objects saved under another name), as ``torch.serialization.add_safe_globals``."""
    _safe.update(_entries(safe_globals))


def get_safe_globals() -> list[Any]:
    """The globals ``add_safe_globals`` registered."""
    return [obj if name == _qualified(obj) else (obj, name) for name, obj in _safe.items()]


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` registered."""
    _safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """``add_safe_globals`` for the ``with`` block only."""
    before = dict(_safe)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _safe.clear()
        _safe.update(before)


_ADVICE = ("Weights only load failed. This file can still be loaded, to do so you have two options, do those steps "
           "only if you trust the source of the checkpoint. \n\t(1) Re-running `ember.load` with `weights_only` set "
           "to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got "
           "the file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check the "
           "recommended steps in the following error message.\n\tWeightsUnpickler error: ")


def refusal(message: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(_ADVICE + message)


def _refuse_opcode(name: str) -> Callable[[Any], None]:
    def refuse(self: Any) -> None:
        raise refusal(f"Unsupported operand {name} (a weights-only load takes the opcodes torch.save writes)")
    return refuse


class WeightsOnlyUnpickler(pickle._Unpickler):
    """The restricted unpickler of ``weights_only=True`` loads (see the module docstring)."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file: Any, persistent_load: Callable[[Any], Any], encoding: str = "ASCII",
                 errors: str = "strict") -> None:
        super().__init__(file, encoding=encoding, errors=errors)
        self._persistent = persistent_load
        self._user = dict(_safe)
        self._user_ids = {id(v) for v in self._user.values()}

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent(pid)

    def find_class(self, module: str, name: str) -> Any:
        module, name = python2_names(module, name, self.proto)
        full = f"{module}.{name}"
        found = names.weights_only_globals().get(full)
        if found is None:
            found = self._user.get(full)
        if found is None:
            raise refusal(f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
                          f"`ember.serialization.add_safe_globals([{full}])` or the "
                          f"`ember.serialization.safe_globals([{full}])` context manager to allowlist this global "
                          "if you trust this class/function.")
        return found

    def _may_call(self, func: Any) -> bool:
        return id(func) in names.CALLABLE or id(func) in self._user_ids

    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if not self._may_call(func) or not isinstance(args, tuple):
            raise refusal(f"Trying to call reduce for unrecognized function {func!r}")
        self.stack[-1] = func(*args)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if not self._may_call(cls) or not isinstance(cls, type) or not isinstance(args, tuple):
            raise refusal(f"Trying to instantiate unsupported class {cls!r}")
        self.append(cls.__new__(cls, *args))

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        if (not self._may_call(cls) or not isinstance(cls, type) or not isinstance(args, tuple)
                or not isinstance(kwargs, dict)):
            raise refusal(f"Trying to instantiate unsupported class {cls!r}")
        self.append(cls.__new__(cls, *args, **kwargs))

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is collections.OrderedDict:
            rebuild.ordered_dict_state(inst, state)
        elif id(type(inst)) in self._user_ids:
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                rebuild.set_state(inst, state, private=True)
        else:
            raise refusal(f"Can only build OrderedDict or types allowlisted via `add_safe_globals`, but got "
                          f"{type(inst)}")

    def load_bytearray8(self) -> None:
        """As pickle's, without allocating the length the file claims before reading it."""
        (n,) = struct.unpack("<Q", self.read(8))
        data = self.read(n)
        if len(data) != n:
            raise pickle.UnpicklingError("pickle data was truncated")
        self.append(bytearray(data))

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.BUILD[0]] = load_build
    for _code, _name in ((pickle.INST, "INST"), (pickle.OBJ, "OBJ"), (pickle.EXT1, "EXT1"), (pickle.EXT2, "EXT2"),
                         (pickle.EXT4, "EXT4"), (pickle.PERSID, "PERSID"), (pickle.NEXT_BUFFER, "NEXT_BUFFER"),
                         (pickle.READONLY_BUFFER, "READONLY_BUFFER")):
        dispatch[_code[0]] = _refuse_opcode(_name)
    del _code, _name


def trusting_unpickler(pickle_module: Any) -> type:
    """The unpickler class of ``weights_only=False`` loads, over ``pickle_module.Unpickler``: torch's names resolve
    to ember's objects (``torch_globals.resolve_trusted``), every other global as pickle finds it."""
    base = pickle_module.Unpickler

    class TrustingUnpickler(base):  # type: ignore[misc, valid-type]
        def __init__(self, file: Any, persistent_load: Callable[[Any], Any], **kwargs: Any) -> None:
            super().__init__(file, **kwargs)
            self._persistent = persistent_load

        def persistent_load(self, pid: Any) -> Any:
            return self._persistent(pid)

        def find_class(self, module: str, name: str) -> Any:
            found = names.resolve_trusted(module, name)
            return super().find_class(module, name) if found is None else found

    return TrustingUnpickler
