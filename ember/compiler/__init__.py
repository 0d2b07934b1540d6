"""``ember.compiler`` (torch.compiler): ``compile``, ``disable``, ``is_compiling``, ``reset``, ``list_backends``.

The pipeline, one module each: ``capture`` (run a call once while a recorder watches its ops), ``graph`` (the
recorded ops as data, and their replay), ``fusion`` and ``symbolic`` (chains of elementwise ops and their fused
bodies, forward and backward, from the op declarations), ``codegen`` and ``kernel_cache`` (the chains' Numba
kernels, as files in the kernel cache), ``fused_op`` (a chain as one differentiable op), ``guards`` (what a
graph assumes of a call), ``frame`` (a compiled function's cache of graphs), ``api`` (the public functions) and
``explain`` (the report).
"""
from .api import InvalidBackend, OptimizedModule, compile, disable, is_compiling, is_dynamo_compiling, \
    list_backends, reset  # noqa: A004 - torch's names
from .config import config
from .explain import ExplainOutput, explain
from .frame import Unsupported

__all__ = ["ExplainOutput", "InvalidBackend", "OptimizedModule", "Unsupported", "compile", "config", "disable",
           "explain", "is_compiling", "is_dynamo_compiling", "list_backends", "reset"]
