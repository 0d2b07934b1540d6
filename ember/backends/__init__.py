"""``ember.backends``: torch.backends' switches and questions, answered for ember's backends.

Each submodule keeps torch's names, defaults and type checks. Where ember has the behaviour a switch controls,
it is honoured (``cuda.matmul.allow_tf32`` for cuBLAS products); where ember has no such library (cuDNN,
oneDNN, opt_einsum, MPS), ``is_available()`` says so and the module's docstring says what its switches do.
"""
from __future__ import annotations

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
