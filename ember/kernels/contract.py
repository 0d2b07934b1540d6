"""The backend contract: what every kernel backend (``ember.kernels.cpu``, ``ember.kernels.cuda``) provides.

Three parts, each written once here:

- the core functions (``Backend``, named in ``CONTRACT``): elementwise ops, reductions, scans, products,
  scatter and sorting;
- the kernel families of the nn layers and the optimizers (``KERNEL_FAMILIES``);
- the array surface (``ARRAY_FUNCTIONS``, ``ARRAY_UFUNCS``, ``ARRAY_METHODS``): the part of NumPy the layers
  above may use on a backend's arrays (a tensor's ``_array``).

Kernels take arrays and plain numbers and write into ``out``; they know
nothing of Tensor or autograd. Callers have already checked shapes, dtypes and
indices, so a backend never sees input it could index out of bounds with.
``tests/test_backend_contract.py`` checks every backend in the process against
all three parts (``tests/cuda/test_device_contract.py`` runs the same checks on
the CUDA backend).
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .. import opcodes as op

Array = Any  # a backend's array: numpy.ndarray on the CPU, DeviceStorage on CUDA; it serves the array surface


@runtime_checkable
class Backend(Protocol):
    """The names and signatures each backend module exports."""

    def unary(self, code: int, x: Array, out: Array) -> None:
        """``out = f(x)`` elementwise for an ``ember.opcodes`` unary code."""

    def binary(self, code: int, a: Array, b: Array, out: Array) -> None:
        """``out = f(a, b)`` with ``a`` and ``b`` broadcast to ``out.shape``."""

    def ternary(self, code: int, a: Array, b: Array, c: Array, out: Array) -> None:
        """``out = f(a, b, c)`` with broadcasting (where, clamp, lerp)."""

    def reduce(self, code: int, x: Array, dims: tuple[int, ...], out: Array) -> None:
        """Reduce ``x`` over ``dims`` into ``out`` of keepdim shape."""

    def arg_reduce(self, code: int, x: Array, dim: int, values: Array, indices: Array) -> None:
        """Extreme values and their first indices along ``dim`` (keepdim shapes)."""

    def scan(self, code: int, x: Array, dim: int, out: Array) -> None:
        """Cumulative op of ``x`` along ``dim``."""

    def scan_indices(self, code: int, x: Array, dim: int, values: Array, indices: Array) -> None:
        """cummax/cummin values and the index of each running extreme along ``dim``."""

    def matmul(self, a: Array, b: Array, out: Array) -> None:
        """Batched product (B, M, K) @ (B, K, N) into (B, M, N)."""

    def scatter(self, reduce: str, out: Array, index: Array, src: Array) -> None:
        """``out[index[i]] (reduce)= src[i]`` in index order; reduce is assign, sum, prod, amax or amin."""

    def sort(self, x: Array, dim: int, descending: bool, values: Array, indices: Array) -> None:
        """Stable sort along ``dim`` (NaN largest), with the source index of every value."""

    def topk(self, x: Array, k: int, dim: int, largest: bool, values: Array, indices: Array) -> None:
        """The ``k`` largest (or smallest) values along ``dim`` and their indices."""

    def kthvalue(self, x: Array, k: int, dim: int, values: Array, indices: Array) -> None:
        """The k-th smallest value along ``dim`` and its index (keepdim shapes)."""

    def mode(self, x: Array, dim: int, values: Array, indices: Array) -> None:
        """The most frequent value along ``dim`` and an index of it (keepdim shapes)."""

    def searchsorted(self, boundaries: Array, values: Array, right: bool, sorter: Array | None, out: Array) -> None:
        """Insertion points of each row of ``values`` in the matching sorted row of ``boundaries``."""

    def bincount(self, x: Array, weights: Array | None, out: Array) -> None:
        """Add one (or the weight) to ``out[x[i]]`` for every i."""

    def histc(self, x: Array, lo: float, hi: float, out: Array) -> None:
        """Counts of ``x`` in ``out.size`` equal bins over [lo, hi]."""


CONTRACT = tuple(name for name in Backend.__dict__ if not name.startswith("_"))

# The kernel families of the nn layers and the optimizers. A backend provides each as a submodule of that name
# holding these functions (array arguments filled in place, like the core contract above); the CPU backend's
# signatures are the reference a second backend must match. Inputs are contiguous float32/float64 arrays and
# already validated: the layer code above checks shapes, dtypes and indices first.
KERNEL_FAMILIES: dict[str, tuple[str, ...]] = {
    "conv": ("im2col", "col2im"),
    "pooling": ("max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward"),
    "softmax": ("softmax_forward", "softmax_backward"),
    "activations": ("activation_forward", "activation_backward"),
    "bias_activation": ("bias_activation_forward", "bias_activation_backward"),
    "dropout": ("dropout_forward", "masked_scale"),
    "losses": ("class_nll_forward", "class_nll_backward", "ctc_forward", "ctc_backward"),
    "normalization": ("rows_norm_forward", "rows_norm_backward", "rows_norm_affine_grads", "channel_moments",
                      "channel_fma", "channel_grad_sums"),
    "embedding": ("bag_argmax",),
    "recurrent": ("lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"),
    "optim_updates": ("sgd_update", "adam_update", "adamax_update", "nadam_update", "radam_update",
                      "rmsprop_update", "adagrad_update", "adadelta_update"),
}


# The array surface. The tensor, nn and linalg layers are written against NumPy: besides the kernels above they
# call NumPy functions, ufuncs and ndarray methods on a tensor's array. These are the ones they may call. A NumPy
# array serves them all; another backend's array takes part in NumPy's dispatch (``__array_function__``,
# ``__array_ufunc__``) and serves exactly these (the CUDA backend: ``ember.kernels.cuda.ndarray``), refusing any
# other NumPy call by name rather than copying to the host. Named after NumPy, which is what the code calls (the
# Python array API standard names a similar subset). Python's operators on arrays are the ufuncs (``a + b`` is
# ``numpy.add``). ``strides`` is not part of it: NumPy's are in bytes, device storage's in elements, so strided-view
# code asks the array's own type.
ARRAY_FUNCTIONS: tuple[str, ...] = (
    # creation (the first five with ``like=`` an array of the backend: NumPy dispatches them on that argument)
    "empty", "zeros", "ones", "full", "ascontiguousarray", "empty_like", "zeros_like", "ones_like", "full_like",
    # copying and joining
    "copyto", "concatenate", "stack", "tile", "repeat", "roll",
    # shape and views
    "shape", "ndim", "size", "reshape", "ravel", "transpose", "moveaxis", "swapaxes", "squeeze", "expand_dims",
    "broadcast_to", "flip", "diagonal",
    # selection
    "where", "take_along_axis", "put_along_axis", "tril", "triu", "nonzero", "flatnonzero", "argwhere",
    # reductions and scans
    "all", "any", "max", "min", "amax", "amin", "cumsum", "cumprod",
    # tests and dtypes
    "isposinf", "isneginf", "array_equal", "array_equiv", "shares_memory", "may_share_memory", "result_type",
)
# Called as functions, with ``out=`` or through Python's operators; one or two operands, arrays or numbers: the
# NumPy names of the elementwise ops (each op's declaration in ``ember.opcodes`` names the ufuncs it serves), and
# ``matmul``.
ARRAY_UFUNCS: tuple[str, ...] = (*(name for d in (*op.UNARY, *op.BINARY) for name in d.numpy), "matmul")
# ndarray attributes and methods (of ``flags``: ``c_contiguous`` and ``writeable``).
ARRAY_METHODS: tuple[str, ...] = (
    # attributes
    "shape", "dtype", "ndim", "size", "itemsize", "nbytes", "flags", "T",
    # views and indexing
    "reshape", "transpose", "squeeze", "view", "__getitem__",
    # copies and writes
    "astype", "copy", "fill", "__setitem__",
    # to Python
    "item", "tolist", "__len__", "__bool__",
    # reductions
    "sum", "any", "all", "min", "max",
)
