"""The CUDA backend: ``numba.cuda`` kernels over ember's own strided device storage.

Imported only when CUDA is used (``import ember`` never needs numba-cuda). Each
submodule has one job: ``storage`` (DeviceStorage, a CUDA tensor's array),
``ndarray`` (NumPy's array protocols for it, so the tensor layer's array code
runs on the device), ``launch`` (grid sizes and cached layout metadata),
``scalar_ops`` (device versions of the scalar ops), ``elementwise``,
``reductions``, ``scans``, ``products`` and ``indexing`` (the core contract),
``allocator`` (the caching allocator), ``random`` (the counter-based generator)
and one module per nn kernel family of ``ember.backend.KERNEL_FAMILIES``
(``conv``, ``pooling``, ``softmax``, ``activations``, ``dropout``, ``losses``,
``normalization``, ``embedding``, ``recurrent``, ``optim_updates``), imported
on first use by ``ember.tensor._dispatch.family``.

``IMPLEMENTED`` lists the entries of ``ember.backend.CONTRACT`` this backend has
(``tests/cuda/test_device_contract.py`` checks their signatures); the sorting
family (sort, topk, kthvalue, mode, searchsorted, bincount, histc) is still to come.
"""
from .elementwise import binary, ternary, unary
from .indexing import scatter, take
from .products import matmul
from .reductions import arg_reduce, reduce
from .scans import scan, scan_indices
from .storage import DeviceStorage

IMPLEMENTED = ("unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices", "matmul", "scatter")
__all__ = ["DeviceStorage", "IMPLEMENTED", "unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices",
           "matmul", "scatter", "take"]


def __getattr__(name: str):
    """A contract entry this backend lacks is a clear error at the op that asked for it, not an AttributeError."""
    from ..backend import CONTRACT

    if name in CONTRACT:
        raise NotImplementedError(f"Could not run '{name}' on the CUDA backend: ember has no CUDA kernel for it yet; "
                                  "move the tensor to the CPU with .cpu() for this op")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
