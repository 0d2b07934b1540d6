"""``torch.multiprocessing``: the standard library's ``multiprocessing``, with tensors shared between processes.

Everything of ``multiprocessing`` is here under its own name (``Process``, ``Queue``, ``Pipe``, ``Pool``,
``get_context``, ...), plus torch's ``spawn``/``start_processes`` and the sharing strategies. Importing ember
registers the tensor reducers (``reductions``), so a tensor sent through any of them arrives as a view of the
same shared memory, not as a copy: a write on either side is seen on the other (hogwild training, DataLoader
workers). Numba's threading layer in the children: the TBB layer ember picks (and ``workqueue``) run parallel
kernels in forked children; GNU OpenMP (``NUMBA_THREADING_LAYER=omp``) is not fork-safe, use ``spawn`` or
``forkserver`` with it.
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403 - the standard library's API, as torch.multiprocessing re-exports it

from ..tensor.shared_memory import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .reductions import init_reductions
from .spawn import ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException, spawn, \
    start_processes

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", *multiprocessing.__all__]

init_reductions()
