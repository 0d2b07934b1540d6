"""What every linalg op shares: torch's error type and checks, LAPACK error location, and tensor helpers
that backward formulas use (masks and identities as constants, so they stay differentiable)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..return_types import return_type
from ..tensor import dtypes
from ..tensor.tensor import Tensor


class LinAlgError(RuntimeError):
    """A LAPACK routine failed on its input (singular or not positive-definite): torch's ``_LinAlgError``."""


# torch.return_types, by torch's names and fields
linalg_slogdet = return_type("linalg_slogdet", ["sign", "logabsdet"])
linalg_qr = return_type("linalg_qr", ["Q", "R"])
linalg_svd = return_type("linalg_svd", ["U", "S", "Vh"])
linalg_eigh = return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_lstsq = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_inv_ex = return_type("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = return_type("linalg_solve_ex", ["result", "info"])
linalg_cholesky_ex = return_type("linalg_cholesky_ex", ["L", "info"])


def check_tensor(x: Any, op: str, label: str = "A") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{label}' must be Tensor, not {type(x).__name__}")


def check_matrix(A: Any, op: str, *, square: bool = False, half_kernel: str | None = None,
                 kernel_checks_dtype: bool = False) -> None:
    """torch's checks of a LAPACK input: a Tensor of >= 2 dims, float32/float64, square if asked. Where torch
    lets the kernel reject a dtype (``kernel_checks_dtype``), the error is its NotImplementedError."""
    check_tensor(A, op)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if kernel_checks_dtype and A.dtype not in (dtypes.float32, dtypes.float64):
        raise NotImplementedError(f'"{half_kernel}" not implemented for \'{A.dtype.scalar_type_name}\'')
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.scalar_type_name}")
    if A.dtype.compute is not A.dtype:  # float16 and bfloat16
        if half_kernel is not None:
            raise NotImplementedError(f'"{half_kernel}" not implemented for \'{A.dtype.scalar_type_name}\'')
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {A.dtype.scalar_type_name}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )


def check_rhs(op: str, B: Any, error: type[Exception] = RuntimeError) -> None:
    """``B`` is a tensor of at least 2 dims (a batch of right-hand-side matrices); torch's ``error`` otherwise."""
    check_tensor(B, op, "B")
    if B.ndim < 2:
        raise error(f"{op}: The input tensor B must have at least 2 dimensions.")


def check_same_dtype(op: str, A: Tensor, B: Tensor) -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.scalar_type_name} and B of type {B.dtype.scalar_type_name} instead")


def check_b_and_A(op: str, b: Tensor, A: Tensor) -> None:
    """The legacy solvers' checks (cholesky_solve, triangular_solve, ldl_solve): ``b`` has A's dtype and as many
    rows as A has columns."""
    if b.dtype is not A.dtype:
        raise RuntimeError(f"{op}: Expected b and A to have the same dtype, but found b of type "
                           f"{b.dtype.scalar_type_name} and A of type {A.dtype.scalar_type_name} instead.")
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {A.shape[-2]} by {A.shape[-1]} "
                           f"but each b matrix is {b.shape[-2]} by {b.shape[-1]}")


def check_pivots_shape(op: str, factor: Tensor, pivots: Any) -> None:
    """``pivots`` is a tensor of shape ``factor.shape[:-2] + (min(m, n),)``, as a factorization returns them."""
    check_tensor(pivots, op, "pivots")
    k = min(factor.shape[-2:])
    if tuple(pivots.shape) != tuple(factor.shape[:-2]) + (k,):
        raise RuntimeError(f"{op}: Expected pivots of shape {list(factor.shape[:-2]) + [k]} for a factorization of "
                           f"shape {list(factor.shape)}, but got pivots with shape {list(pivots.shape)}")


def raise_first_failure(op: str, info: np.ndarray, batched: bool, describe: Callable[[int], str],
                        error: type[Exception] = LinAlgError) -> None:
    """Raise torch's LinAlgError (or ``error``) for the first matrix whose LAPACK ``info`` (flat) is positive."""
    bad = np.flatnonzero(info > 0)
    if bad.size:
        where = f"(Batch element {bad[0]}): " if batched else ""
        raise error(f"{op}: {where}{describe(int(info[bad[0]]))}")


def singular_message(k: int) -> str:
    return (f"The diagonal element {k} is zero, the inversion could not be completed because the input matrix "
            "is singular.")


def constant(array: np.ndarray, like: Tensor) -> Tensor:
    """A constant tensor in ``like``'s dtype (masks, identities): it takes part in products, not in the graph."""
    return Tensor._make(np.asarray(array, dtype=like._array.dtype))


def eye(n: int, like: Tensor) -> Tensor:
    return constant(np.eye(n), like)


def off_diagonal_reciprocal(diff: Tensor) -> Tensor:
    """``1 / diff`` off the diagonal and 0 on it (the F matrix of eigen/singular vector derivatives)."""
    n = diff.shape[-1]
    identity = eye(n, diff)
    return (1 - identity) / (diff + identity)


def scalar_or_array(value: Any, dt: np.dtype) -> np.ndarray:
    """A tolerance (number or Tensor) as an array, for broadcasting against a batch."""
    return np.asarray(value._array if isinstance(value, Tensor) else value, dtype=dt)
