"""Which device's Numba context is current on this thread, so kernels launch and allocate where their data is.

Numba allocates and launches in whatever CUDA context is current. torch wraps each op in a device guard; ember
switches instead where an op picks its backend (``ember.tensor._dispatch``) and where device storage allocates
or launches on its own (``ember.kernels.cuda.ndarray``), and leaves the context there: the next op on the same
device pays one integer compare. This is not the *current device* of ``ember.cuda.set_device`` (what "cuda"
without an index means), which ``ember._cuda_runtime.gpus`` keeps. A leaf apart from ``ember._cuda_runtime``,
so that the kernels import it too.

Nothing here imports numba-cuda at module import.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator


class _Active(threading.local):
    """Per thread: the device whose context is current (Numba makes device 0 current on first use)."""

    index = 0


active = _Active()


def activate(index: int) -> None:
    """Make device ``index``'s context current on this thread (nothing to do when it already is)."""
    if index != active.index:
        _switch(index)


@contextlib.contextmanager
def using(index: int) -> Iterator[None]:
    """Device ``index``'s context current inside the block, the previous one restored after."""
    previous = active.index
    activate(index)
    try:
        yield
    finally:
        activate(previous)


def _switch(index: int) -> None:
    from numba import cuda
    from numba.cuda.core import config

    if config.ENABLE_CUDASIM:
        cuda.select_device(index)  # the simulator keeps no context stack: this only checks the index
    else:
        from numba.cuda.cudadrv.driver import driver

        context = cuda.gpus[index].get_primary_context()
        driver.cuCtxSetCurrent(context.handle)  # replaces the top of the stack: switching never grows it
        context.prepare_for_use()
    active.index = index


__all__ = ["active", "activate", "using"]
