"""torch's process-wide switches: the default device, float32 matrix-product precision, thread counts, and the
``typename`` / ``is_storage`` helpers.

Threads. ember's CPU work runs on two pools that know nothing of each other: Numba's (elementwise ops,
reductions, the convolutions' column kernels; TBB when it loads) and the BLAS's (matrix products, through
NumPy and SciPy). Numba's pool runs one thread per available core (``NUMBA_NUM_THREADS`` changes that, before the
first parallel kernel). The BLAS is capped at one thread at import unless the user chose a count through
``OPENBLAS_NUM_THREADS`` or a sibling variable: the pools take turns within a training step, but OpenBLAS's
threads keep spinning for a while after each product and take the cores Numba's threads and the Python thread
need next (on a busy 2-core machine the digits job ran 85 s with both pools at 2 threads, 7 s with one BLAS
thread), while the products of a training step are mostly small. ``set_num_threads(n)`` sets both pools to
``n``, as torch's does, so a program that multiplies large matrices asks for more.
"""
from __future__ import annotations

import operator
import os
from typing import Any

import numba

from . import _matmul_precision
from .tensor.device import default_device, device, set_default
from .tensor.tensor import Tensor

_intra_op_threads: int | None = None  # set_num_threads' value (None: not called yet)
_interop_threads: int | None = None  # set_num_interop_threads' value (None: not called yet)
# The variables through which a user picks the BLAS's thread count (OpenBLAS reads the first three, in order).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS")


def set_default_device(device: Any) -> None:
    """Make creation functions called without ``device=`` (zeros, ones, empty, full, rand, randn, randint,
    randperm, arange, linspace, logspace, eye, tensor, as_tensor) and so nn modules' parameters put their
    tensors on ``device``; None goes back to the CPU.

    As in torch it holds for the calling thread, ``*_like`` functions keep their input's device, a CUDA device
    without an index means the current CUDA device at each call, and an unusable device raises only when a tensor
    is made there.
    """
    set_default(device)


def get_default_device() -> device:
    """The device creation functions use when given none (with the current index for a plain "cuda")."""
    return default_device()


def set_float32_matmul_precision(precision: str) -> None:
    """How float32 matrix products may trade precision for speed: "highest" (the default: full float32),
    "high" or "medium" (TF32 allowed). Another string warns and changes nothing, as in torch.

    Honoured by cuBLAS products on a GPU (through CuPy, when installed); ember's Numba CUDA kernel and the CPU's
    BLAS always compute in full float32, whatever the setting. Sets ``backends.cuda.matmul.allow_tf32`` too.
    """
    _matmul_precision.set(precision)


def get_float32_matmul_precision() -> str:
    """The current float32 matrix-product precision ("highest", "high" or "medium")."""
    return _matmul_precision.get()


def typename(obj: Any, /) -> str:
    """A qualified name of ``obj``'s type: the legacy type name for a tensor (``torch.FloatTensor``), else the
    module and qualified name of ``obj`` (a class or function) or of its class."""
    if isinstance(obj, Tensor):
        return obj.type()
    if hasattr(obj, "__qualname__") or hasattr(obj, "__name__"):  # a class, function or module
        module = getattr(obj, "__module__", "")
        qualname = getattr(obj, "__qualname__", None) or obj.__name__
    else:
        module, qualname = type(obj).__module__, type(obj).__qualname__
    return qualname if module in (None, "", "builtins") else f"{module}.{qualname}"


def is_storage(obj: Any, /) -> bool:
    """Whether ``obj`` is a storage object. ember has none (no ``UntypedStorage``/``TypedStorage``: a tensor's
    memory is its array), so this is False for every object, tensors included, as torch answers for non-storages."""
    return False


def _thread_count(n: Any, op: str) -> int:
    """``n`` as a positive int, with torch's errors for other values."""
    if isinstance(n, bool) or not hasattr(type(n), "__index__"):
        raise RuntimeError(f"{op} expects an int, but got {type(n).__name__}")
    n = operator.index(n)
    if n <= 0:
        raise RuntimeError(f"{op} expects a positive integer")
    return n


def _limit_blas(n: int) -> None:
    """Run every loaded BLAS library with ``n`` threads, at most one per available core (OpenBLAS would start
    more threads than cores if asked)."""
    from threadpoolctl import ThreadpoolController

    ThreadpoolController().select(user_api="blas").limit(limits=min(n, numba.config.NUMBA_DEFAULT_NUM_THREADS))


def set_num_threads(n: int) -> None:
    """Use at most ``n`` threads for work inside an op: Numba's pool runs ``n`` threads (at most the size it was
    launched with, ``NUMBA_NUM_THREADS``: one per available core by default), and so does the BLAS (at most one
    per available core; see this module's docstring for why it starts at one).

    Numba keeps its thread count per Python thread: the call sets it for the calling thread (where ember's
    training loops run); other Python threads keep Numba's default. ``get_num_threads`` reports ``n``.
    """
    global _intra_op_threads
    n = _thread_count(n, "set_num_threads")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    _limit_blas(n)
    _intra_op_threads = n


def get_num_threads() -> int:
    """The intra-op thread count: what ``set_num_threads`` set, else the size of Numba's pool."""
    return numba.config.NUMBA_NUM_THREADS if _intra_op_threads is None else _intra_op_threads


def set_num_interop_threads(n: int) -> None:
    """Record the inter-op thread count; torch's rule holds: it can be set once, and a second call raises.

    ember has no inter-op pool (ops run one after another on the calling thread), so no parallel work ever
    starts that would forbid the first call, and the value changes nothing but what ``get_num_interop_threads``
    reports.
    """
    global _interop_threads
    n = _thread_count(n, "set_num_interop_threads")
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop_threads = n


def get_num_interop_threads() -> int:
    """The inter-op thread count: what ``set_num_interop_threads`` set, else the available cores (torch's
    default)."""
    return numba.config.NUMBA_DEFAULT_NUM_THREADS if _interop_threads is None else _interop_threads


def apply_blas_default() -> None:
    """One BLAS thread, unless the user chose a count through the environment. ``import ember`` calls it last,
    once every BLAS its imports load (NumPy's, SciPy's) is there to be capped."""
    if not any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        _limit_blas(1)

__all__ = ["set_default_device", "get_default_device", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "typename", "is_storage", "set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads"]
