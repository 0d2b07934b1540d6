"""The backend contract: what every kernel backend (``cpu_kernels``, later ``cuda_kernels``) provides.

Kernels take arrays and plain numbers and write into ``out``; they know
nothing of Tensor or autograd. Callers have already checked shapes, dtypes and
indices, so a backend never sees input it could index out of bounds with.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

Array = Any  # a NumPy array on the CPU backend


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
