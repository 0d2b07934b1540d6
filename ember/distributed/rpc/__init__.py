"""``ember.distributed.rpc``: torch's RPC framework on Ray (one named threaded actor per worker as its mailbox).

Ray loads on ``init_rpc``; see ``agent.py`` for how calls reach the callee's own process.
"""
from __future__ import annotations

from .agent import WorkerInfo
from .api import (DEFAULT_RPC_TIMEOUT_SEC, UNSET_RPC_TIMEOUT, BackendType, TensorPipeRpcBackendOptions,
                  async_execution, get_worker_info, init_rpc, remote, rpc_async, rpc_sync, shutdown)
from . import functions
from .rref import RRef


def is_available() -> bool:
    """Whether Ray, the RPC engine, is importable."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["BackendType", "DEFAULT_RPC_TIMEOUT_SEC", "RRef", "TensorPipeRpcBackendOptions", "UNSET_RPC_TIMEOUT",
           "WorkerInfo", "functions", "get_worker_info", "init_rpc", "is_available", "remote", "rpc_async",
           "rpc_sync", "shutdown"]
