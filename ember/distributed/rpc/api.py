"""torch.distributed.rpc's functions: init_rpc, shutdown, rpc_sync, rpc_async, remote, get_worker_info."""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ...futures import Future
from . import state
from .agent import Agent, WorkerInfo
from .rref import RRef, remote_rref

UNSET_RPC_TIMEOUT = -1.0
DEFAULT_RPC_TIMEOUT_SEC = 60.0


class BackendType(enum.Enum):
    """torch's RPC backends; ember serves ``TENSORPIPE`` (the default) on Ray."""
    TENSORPIPE = "TENSORPIPE"


@dataclass
class TensorPipeRpcBackendOptions:
    """torch's backend options. ``device_maps`` must be empty or map CPU-only: ember's RPC sends CPU tensors."""
    num_worker_threads: int = 16
    rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC
    init_method: str = "env://"
    device_maps: Optional[dict] = None
    devices: Optional[list] = None
    _transports: Optional[list] = None
    _channels: Optional[list] = None

    def set_device_map(self, to: str, device_map: dict) -> None:
        self.device_maps = dict(self.device_maps or {})
        self.device_maps.setdefault(to, {}).update(device_map)


def init_rpc(name: str, backend: Optional[BackendType] = None, rank: int = -1, world_size: Optional[int] = None,
             rpc_backend_options: Optional[TensorPipeRpcBackendOptions] = None) -> None:
    """Join the RPC group as ``name``; blocks until all ``world_size`` workers have joined."""
    if state.agent_or_none() is not None:
        raise RuntimeError("init_rpc: RPC is already initialized in this process")
    if backend not in (None, BackendType.TENSORPIPE):
        raise ValueError(f"init_rpc: unsupported backend {backend!r}")
    if world_size is None or rank < 0 or not 0 <= rank < world_size:
        raise ValueError(f"init_rpc: need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
    opts = rpc_backend_options or TensorPipeRpcBackendOptions()
    if any(str(dev) not in ("cpu", "-1") for mapping in (opts.device_maps or {}).values()
           for pair in mapping.items() for dev in pair):
        raise ValueError("init_rpc: device_maps to CUDA devices are not supported by ember's Ray RPC yet")
    state.set_agent(Agent(name, rank, world_size, opts.init_method, opts.rpc_timeout, opts.num_worker_threads))


def shutdown(graceful: bool = True, timeout: float = 0) -> None:
    """Leave the group; graceful waits for every worker so in-flight calls finish first."""
    agent = state.current_agent()
    try:
        agent.shutdown(graceful)
    finally:
        state.set_agent(None)


def get_worker_info(worker_name: Optional[str] = None) -> WorkerInfo:
    """This worker's WorkerInfo, or the named worker's."""
    agent = state.current_agent()
    return agent.info if worker_name is None else agent.worker_info(worker_name)


def rpc_async(to: Any, func: Callable, args: Optional[tuple] = None, kwargs: Optional[dict] = None,
              timeout: float = UNSET_RPC_TIMEOUT) -> Future:
    """Run ``func(*args, **kwargs)`` on ``to``; a Future of its result."""
    return state.current_agent().call_async(to, func, args or (), kwargs or {}, timeout)


def rpc_sync(to: Any, func: Callable, args: Optional[tuple] = None, kwargs: Optional[dict] = None,
             timeout: float = UNSET_RPC_TIMEOUT) -> Any:
    """Run ``func(*args, **kwargs)`` on ``to`` and return its result (re-raising the callee's exception)."""
    return rpc_async(to, func, args, kwargs, timeout).wait()


def remote(to: Any, func: Callable, args: Optional[tuple] = None, kwargs: Optional[dict] = None,
           timeout: float = UNSET_RPC_TIMEOUT) -> RRef:
    """Run ``func`` on ``to`` and keep the result there; an RRef to it."""
    return remote_rref(to, func, args or (), kwargs or {}, timeout)


def async_execution(fn: Callable) -> Callable:
    """Mark ``fn`` as returning a Future: the callee replies when that future completes, not when ``fn`` returns."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if not isinstance(result, Future):
            raise TypeError(f"@async_execution function {fn.__qualname__} must return a Future, "
                            f"got {type(result).__name__}")
        return result
    return wrapper
