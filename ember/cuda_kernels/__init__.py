"""The CUDA backend: ``numba.cuda`` kernels over ember's own strided device storage.

Imported only when CUDA is used (``import ember`` never needs numba-cuda). Each
submodule has one job: ``storage`` (DeviceStorage, a CUDA tensor's array),
``ndarray`` (NumPy's array protocols for it, so the tensor layer's array code
runs on the device), ``launch`` (grid sizes and cached layout metadata),
``scalar_ops`` (device versions of the scalar ops), ``elementwise``,
``reductions``, ``scans``, ``products``, ``indexing`` and ``sorting`` (the core contract),
``allocator`` (the caching allocator), ``random`` (the counter-based generator)
and one module per nn kernel family of ``ember.backend.KERNEL_FAMILIES``
(``conv``, ``pooling``, ``softmax``, ``activations``, ``bias_activation``, ``dropout``, ``losses``,
``normalization``, ``embedding``, ``recurrent``, ``optim_updates``), imported
on first use by ``ember.tensor._dispatch.family``.

``IMPLEMENTED`` lists the entries of ``ember.backend.CONTRACT`` this backend has
(``tests/cuda/test_device_contract.py`` checks their signatures and that none is
missing).
"""
from .elementwise import binary, ternary, unary
from .indexing import scatter, take
from .products import matmul
from .reductions import arg_reduce, reduce
from .scans import scan, scan_indices
from .sorting import bincount, histc, kthvalue, mode, searchsorted, sort, topk
from .storage import DeviceStorage

IMPLEMENTED = ("unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices", "matmul", "scatter",
               "sort", "topk", "kthvalue", "mode", "searchsorted", "bincount", "histc")
__all__ = ["DeviceStorage", "IMPLEMENTED", "unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices",
           "matmul", "scatter", "take", "sort", "topk", "kthvalue", "mode", "searchsorted", "bincount", "histc"]

