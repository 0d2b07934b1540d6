"""Write generated kernel modules to the kernel cache folder and import them.

Numba's disk cache only finds module-level functions defined in a real source
file; kernels built by a factory at run time are recompiled in every process.
So kernel instances that differ only in the scalar op they inline are written
out once as a module and imported from there.

Numba's cache checks only the generated file, not the loop skeletons and
scalar functions it inlines, so the module's name carries a hash of its text
*and* of every source file a generated module can reach (``GENERATED_DEPENDENCIES``):
editing or upgrading that code gives new module names and so fresh compilation,
never a stale kernel. Kernel files outside that list (nn, optimizer kernels) are
plain ``njit(cache=True)`` functions that Numba's own cache tracks per file, so
editing them does not recompile the generated families.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from types import ModuleType
from typing import Any, Callable

from ..._runtime import kernel_cache_dir

_MODULES: dict[str, ModuleType] = {}
_PACKAGE_DIGEST: list[str] = []


# Files whose code a generated module imports or inlines (directly or through these), relative to this folder: a
# new generated family that imports another file must add it here.
GENERATED_DEPENDENCIES = ("codegen.py", "elementwise.py", "loops.py", "reductions.py", "scans.py",
                          "../common/elementwise.py", "../common/layout.py", "../common/reductions.py",
                          "../common/scalar_ops.py", "../../opcodes.py")

# The decorators of generated loop modules that define their kernels in the module text (activations, softmax).
HEADER = """from numba import njit, prange
kernel = njit(cache=True, nogil=True, error_model="numpy")
parallel_kernel = njit(cache=True, nogil=True, error_model="numpy", parallel=True)
"""


def _folder_file(name: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)


def source_digest(*files: str) -> str:
    """Hash of kernel source files (relative to this folder): generated text that embeds it changes when they do,
    for the families outside ``GENERATED_DEPENDENCIES``."""
    h = hashlib.sha256()
    for name in files:
        with open(_folder_file(name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _package_digest() -> str:
    """Hash of the kernel sources generated modules depend on, read once per process."""
    if not _PACKAGE_DIGEST:
        h = hashlib.sha256()
        for name in GENERATED_DEPENDENCIES:
            with open(_folder_file(name), "rb") as f:
                h.update(name.encode() + f.read())
        _PACKAGE_DIGEST.append(h.hexdigest())
    return _PACKAGE_DIGEST[0]


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def generated_module(name: str, source: str) -> ModuleType:
    """Import ``source`` as a module stored in the cache folder, writing it on first use."""
    digest = hashlib.sha256((_package_digest() + source).encode()).hexdigest()[:16]
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


class KernelSet:
    """The kernels of one generated module: the source is built and imported on first use only."""

    def __init__(self, name: str, source: Callable[[], str]) -> None:
        self._name, self._source, self._found = name, source, {}

    def __getitem__(self, kernel: str) -> Any:
        found = self._found.get(kernel)
        if found is None:
            found = self._found[kernel] = getattr(generated_module(self._name, self._source()), kernel)
        return found
