"""Write generated kernel modules to the kernel cache folder and import them.

Numba's disk cache only finds module-level functions defined in a real source
file; kernels built by a factory at run time are recompiled in every process.
So kernel instances that differ only in the scalar op they inline are written
out once as a module (named by the hash of its text, so an upgrade never reads
a stale one) and imported from there.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from types import ModuleType

from .._runtime import kernel_cache_dir

_MODULES: dict[str, ModuleType] = {}


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def generated_module(name: str, source: str) -> ModuleType:
    """Import ``source`` as a module stored in the cache folder, writing it on first use."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    module_name = f"ember_generated_{name}_{digest}"
    module = _MODULES.get(module_name)
    if module is not None:
        return module
    path = os.path.join(os.environ.get("NUMBA_CACHE_DIR") or kernel_cache_dir(), "generated", module_name + ".py")
    try:
        with open(path) as f:
            current = f.read()
    except OSError:
        current = None
    if current != source:
        _write_atomically(path, source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    _MODULES[module_name] = module
    return module
