"""``ember._dynamo`` (torch._dynamo's everyday names): ``reset``, ``explain``, ``config``, ``disable``,
``OptimizedModule``, ``list_backends``, ``is_compiling``; defined in ``ember.compiler``."""
from .compiler import ExplainOutput, InvalidBackend, OptimizedModule, Unsupported, config, disable, explain, \
    is_compiling, list_backends, reset

__all__ = ["ExplainOutput", "InvalidBackend", "OptimizedModule", "Unsupported", "config", "disable", "explain",
           "is_compiling", "list_backends", "reset"]
