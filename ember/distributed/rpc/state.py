"""The process's single RPC agent, set by ``init_rpc`` and cleared by ``shutdown``."""
from __future__ import annotations

from typing import Any, Optional

_agent: Optional[Any] = None


def set_agent(agent: Optional[Any]) -> None:
    global _agent
    _agent = agent


def agent_or_none() -> Optional[Any]:
    return _agent


def current_agent() -> Any:
    if _agent is None:
        raise RuntimeError("RPC has not been initialized. Call ember.distributed.rpc.init_rpc first.")
    return _agent
