"""Where generated chain kernels live: real source files in the kernel cache folder, so Numba's disk cache serves
them to the next process (Numba caches only functions defined in a file it can stamp).

A module's name is a digest of its text and of the shared scalar definitions it inlines
(``kernels/common/scalar_ops.py``, ``kernels/common/activations.py``): the text names the chain (its ops, dtypes,
literals and operand layouts), so equal chains share one file and one compiled kernel, in this process and the
next, and an edit of the definitions gives new names, never a stale kernel. The folder is ember's
(``_runtime.kernel_cache_dir``), under ``compiled/``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from types import ModuleType

from .._runtime import kernel_cache_dir
from ..kernels.common import activations

__all__ = ["clear_loaded", "load", "loaded_count"]

_LOADED: dict[str, ModuleType] = {}
_LOCK = threading.Lock()
_DEFINITIONS: list[str] = []


def _definitions_digest() -> str:
    """Digest of the scalar definitions generated kernels inline (read once per process)."""
    if not _DEFINITIONS:
        h = hashlib.sha256()
        folder = os.path.dirname(activations.__file__)  # kernels/common (scalar_ops loads with the first kernel)
        for name in ("scalar_ops.py", "activations.py"):
            with open(os.path.join(folder, name), "rb") as f:
                h.update(f.read())
        _DEFINITIONS.append(h.hexdigest())
    return _DEFINITIONS[0]


def _folder() -> str:
    return os.path.join(os.environ.get("NUMBA_CACHE_DIR") or kernel_cache_dir(), "compiled")


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def load(source: str) -> ModuleType:
    """The module of generated ``source``, written to the cache folder on first use and imported once."""
    digest = hashlib.sha256((_definitions_digest() + source).encode()).hexdigest()[:20]
    name = f"ember_chain_{digest}"
    with _LOCK:
        module = _LOADED.get(name)
        if module is not None:
            return module
        path = os.path.join(_folder(), name + ".py")
        try:
            with open(path) as f:
                current = f.read()
        except OSError:
            current = None
        if current != source:  # written only when missing, so Numba's stamp of the file stays valid
            _write_atomically(path, source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _LOADED[name] = module
        return module


def loaded_count() -> int:
    """How many chain kernel modules this process has loaded."""
    return len(_LOADED)


def clear_loaded() -> None:
    """Forget the loaded modules (``ember.compiler.reset``): the next use imports them again, from the disk
    cache."""
    with _LOCK:
        for name in _LOADED:
            sys.modules.pop(name, None)
        _LOADED.clear()
