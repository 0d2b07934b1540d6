"""Process-wide Numba set-up that must happen before Numba is first imported.

Three things are decided here, once:
- where compiled kernels are cached on disk (``NUMBA_CACHE_DIR``), so that the
  second run of a program loads kernels in milliseconds instead of compiling;
- which threading layer parallel kernels use. TBB is preferred: the OpenMP
  layer is slow for small parallel calls and breaks forked DataLoader workers,
  and ``workqueue`` aborts when two Python threads run kernels at once;
- how the cyclic garbage collector treats what importing ember created (``freeze_imported_objects``).
"""
from __future__ import annotations

import ctypes
import gc
import glob
import hashlib
import os
import sys


def kernel_cache_dir() -> str:
    """The folder compiled kernels are cached in (``$EMBER_CACHE_DIR`` or a per-user one).

    The per-user folder is named by a digest of the shared kernel definitions (``ember/kernels/common``): Numba
    stamps a cached kernel by its own file only, so a CPU kernel that inlines a shared helper would otherwise
    outlive a change to that helper (an upgrade of ember, or an edit)."""
    explicit = os.environ.get("EMBER_CACHE_DIR") or os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ember", "kernels", _shared_definitions_digest())


def _shared_definitions_digest() -> str:
    h = hashlib.sha256()
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "common")
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".py")):
        with open(os.path.join(folder, name), "rb") as f:
            h.update(name.encode() + f.read())
    return h.hexdigest()[:16]


def _usable_dir(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK)


def _choose_cache_dir() -> None:
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    path = kernel_cache_dir()
    if not _usable_dir(path):
        import tempfile

        path = os.path.join(tempfile.gettempdir(), f"ember-kernels-{os.getuid() if hasattr(os, 'getuid') else 'user'}")
        os.makedirs(path, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = path


def _load_tbb() -> bool:
    """Load the pip ``tbb`` runtime globally so Numba's TBB pool can link against it."""
    prefixes = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(sys.executable))}
    for prefix in prefixes:
        for lib in sorted(glob.glob(os.path.join(prefix, "lib", "libtbb.so.12*"))):
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                continue
    return False


def _choose_threading_layer() -> None:
    """TBB when it loads, unless the user chose a layer; a "tbb" inherited from a parent process (which set it
    here) still needs the library loaded in this one."""
    chosen = os.environ.get("NUMBA_THREADING_LAYER")
    if chosen == "tbb":
        _load_tbb()
    elif chosen is None and _load_tbb():
        os.environ["NUMBA_THREADING_LAYER"] = "tbb"


def configure() -> None:
    """Apply the cache folder and threading layer (also when Numba was imported first)."""
    _choose_cache_dir()
    _choose_threading_layer()
    if "numba" in sys.modules:
        sys.modules["numba"].config.reload_config()


configure()


class _CompileWatch:
    """Numba's "numba:compile" events (fired only when a kernel is really compiled, not loaded from the disk
    cache), passed on to the callbacks of ``watch_compiles`` as True at the first start and False at the end."""

    def __init__(self) -> None:
        self.depth = 0
        self.callbacks: list = []
        self.listening = False

    def on_start(self, event: object) -> None:
        self.depth += 1
        if self.depth == 1:
            for callback in list(self.callbacks):
                callback(True)

    def on_end(self, event: object) -> None:
        self.depth -= 1
        if self.depth == 0:
            for callback in list(self.callbacks):
                callback(False)


_COMPILE_WATCH = _CompileWatch()


def watch_compiles(callback) -> None:
    """Call ``callback(True)`` when Numba starts compiling a kernel (nested compiles count once) and
    ``callback(False)`` when it is done: a progress display says "compiling kernels" while a cold cache fills."""
    if not _COMPILE_WATCH.listening:
        from numba.core import event

        class _Listener(event.Listener):
            def on_start(self, ev: object) -> None:
                _COMPILE_WATCH.on_start(ev)

            def on_end(self, ev: object) -> None:
                _COMPILE_WATCH.on_end(ev)

        event.register("numba:compile", _Listener())
        _COMPILE_WATCH.listening = True
    _COMPILE_WATCH.callbacks.append(callback)


def unwatch_compiles(callback) -> None:
    """Stop calling ``callback`` (the Numba listener stays, idle)."""
    if callback in _COMPILE_WATCH.callbacks:
        _COMPILE_WATCH.callbacks.remove(callback)


def freeze_imported_objects() -> None:
    """Move every object alive now (the imported modules: NumPy, Numba, SciPy, ember) out of the collector's reach.

    ember's autograd graph is made of Python objects, so a training loop allocates and frees many of them; each
    full collection would otherwise walk the ~10^5 objects the imports left behind, which cost about half of a
    small op's time with autograd (measured on the 1000-add chain). Objects are still freed by reference counting;
    only cycles among objects created before this call are never reclaimed. ``EMBER_GC_FREEZE=0`` opts out.
    """
    if os.environ.get("EMBER_GC_FREEZE", "1") != "0":
        gc.freeze()
