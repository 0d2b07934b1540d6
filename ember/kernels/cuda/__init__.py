"""The CUDA backend: ``numba.cuda`` kernels over ember's own strided device storage.

Imported only when CUDA is used (``import ember`` never needs numba-cuda). Each
submodule has one job: ``storage`` (DeviceStorage, a CUDA tensor's array),
``ndarray`` (NumPy's array protocols for it, so the tensor layer's array code
runs on the device: ``ember.kernels.contract``'s array surface), ``launch``
(grid sizes and cached layout metadata), ``device_functions`` (device builds
of the shared definitions of ``ember.kernels.common``), ``elementwise``,
``reductions``, ``scans``, ``products``, ``indexing`` and ``sorting`` (the core contract),
``allocator`` (the caching allocator), ``random`` (the counter-based generator)
and one module per nn kernel family of ``ember.kernels.contract.KERNEL_FAMILIES``
(``conv``, ``pooling``, ``softmax``, ``activations``, ``bias_activation``, ``dropout``, ``losses``,
``normalization``, ``embedding``, ``recurrent``, ``optim_updates``), each imported
on first access as an attribute (``ember.tensor._dispatch.backend(x).pooling``). ``tests/cuda/test_device_contract.py``
checks it against the whole of ``ember.kernels.contract``.
"""
import importlib

from ..cache_locator import register_cuda as _register_cache_locator

_register_cache_locator()  # before any kernel below is defined

from ..contract import KERNEL_FAMILIES  # noqa: E402
from .elementwise import binary, ternary, unary
from .indexing import scatter, take
from .products import matmul
from .reductions import arg_reduce, reduce
from .scans import scan, scan_indices
from .sorting import bincount, histc, kthvalue, mode, searchsorted, sort, topk
from .storage import DeviceStorage

__all__ = ["DeviceStorage", "unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices",
           "matmul", "scatter", "take", "sort", "topk", "kthvalue", "mode", "searchsorted", "bincount", "histc"]


def __getattr__(name: str):
    """A kernel family, imported on its first access (then it is this package's attribute, found directly)."""
    if name in KERNEL_FAMILIES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
