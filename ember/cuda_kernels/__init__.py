"""The CUDA backend: ``numba.cuda`` kernels over ember's own strided device storage.

Imported only when CUDA is used (``import ember`` never needs numba-cuda). Each
submodule has one job: ``storage`` (DeviceStorage), ``launch`` (grid sizes and
cached layout metadata), ``scalar_ops`` (device versions of the scalar ops),
``elementwise``, ``reductions``, ``scans``, ``products`` and ``indexing``
(contract entries), ``allocator`` (the caching allocator) and ``random``
(the counter-based generator).

So far this backend implements these entries of ``ember.backend.CONTRACT``:
``IMPLEMENTED`` (``tests/cuda/test_device_contract.py`` checks their signatures against
the contract); the sorting family and the nn kernel families are still to come,
as is wiring ``Tensor`` to device storage.
"""
from .elementwise import binary, ternary, unary
from .indexing import scatter
from .products import matmul
from .reductions import arg_reduce, reduce
from .scans import scan, scan_indices
from .storage import DeviceStorage

IMPLEMENTED = ("unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices", "matmul", "scatter")
__all__ = ["DeviceStorage", "IMPLEMENTED", "unary", "binary", "ternary", "reduce", "arg_reduce", "scan", "scan_indices",
           "matmul", "scatter"]
