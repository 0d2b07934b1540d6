"""``rpc.functions``: decorators for functions run through RPC."""
from .api import async_execution

__all__ = ["async_execution"]
