"""LAPACK routines on batches of NumPy matrices (SciPy's wrappers, one call per matrix): no Tensors here.

Each returns LAPACK's outputs with the batch shape restored, and ``info`` per matrix where the routine reports one
(k > 0: the factorization met a zero / non-positive pivot at 1-based position k), without raising: the callers turn
``info`` into torch's errors or ``*_ex`` results.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np
import scipy.linalg


def _matrices(*arrays: np.ndarray) -> Iterator[tuple[int, tuple[np.ndarray, ...]]]:
    """Index and per-matrix views of arrays sharing one batch shape (the last ``ndim - batch`` dims are the core:
    two for matrices, one for pivot and tau vectors)."""
    batch = arrays[0].shape[:-2]
    flat = [a.reshape((-1,) + a.shape[len(batch):]) for a in arrays]
    return enumerate(zip(*flat))


def _routine(name: str, *arrays: np.ndarray) -> Callable:
    return scipy.linalg.get_lapack_funcs(name, arrays)


def getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LU with partial pivoting of each (m, n) matrix: packed LU, 1-based int32 pivots (*, min(m, n)), info (*,)."""
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    lu, pivots, info = a.copy(), np.zeros(batch + (min(m, n),), np.int32), np.zeros(batch, np.int32)
    if m and n:
        fn = _routine("getrf", a)
        flat_lu, flat_piv, flat_info = lu.reshape((-1, m, n)), pivots.reshape((-1, min(m, n))), info.reshape(-1)
        for i, (matrix,) in _matrices(a):
            flat_lu[i], piv, flat_info[i] = fn(matrix)
            flat_piv[i] = piv + 1
    return lu, pivots, info


def _solve_each(routine: str, factor: np.ndarray, pivots: np.ndarray, b: np.ndarray, **kwargs: Any) -> np.ndarray:
    """``A^-1 b`` matrix by matrix from a factorization (``pivots`` as the SciPy wrapper takes them; batch shapes
    equal). A zero pivot gives inf/nan (the solvers do not check), as torch's do."""
    out = np.zeros(b.shape, factor.dtype)
    if b.size:
        fn = _routine(routine, factor, b)
        flat_out = out.reshape((-1,) + b.shape[-2:])
        with np.errstate(all="ignore"):
            for i, (matrix, piv, rhs) in _matrices(factor, pivots[..., None], b):
                flat_out[i] = fn(matrix, piv[:, 0], rhs, **kwargs)[0]
    return out


def getrs(lu: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 b`` from getrf's output (1-based pivots)."""
    return _solve_each("getrs", lu, pivots - 1, b)


def permutation_matrix(pivots: np.ndarray, m: int, dt: Any) -> np.ndarray:
    """``P`` (*, m, m) with ``A = P L U`` for getrf's pivots: the row interchanges applied in turn to the rows of
    the identity (``perm[i]`` is the row of A that row i of ``P^T A`` is)."""
    perm = np.array(np.broadcast_to(np.arange(m), pivots.shape[:-1] + (m,)))
    for i in range(pivots.shape[-1]):
        j = pivots[..., i:i + 1].astype(np.int64) - 1
        swapped = np.take_along_axis(perm, j, -1)
        np.put_along_axis(perm, j, perm[..., i:i + 1].copy(), -1)
        perm[..., i:i + 1] = swapped
    return np.eye(m, dtype=dt)[perm].swapaxes(-1, -2)


def potrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower Cholesky factors and info; where a matrix is not positive-definite, potrf's partial factor (its lower
    triangle) as torch's cholesky_ex returns it."""
    try:
        return np.linalg.cholesky(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        pass
    L, info = np.zeros_like(a), np.zeros(a.shape[:-2], np.int32)
    fn = _routine("potrf", a)
    flat_L, flat_info = L.reshape((-1,) + a.shape[-2:]), info.reshape(-1)
    for i, (matrix,) in _matrices(a):
        factor, flat_info[i] = fn(matrix, lower=1, clean=1)
        flat_L[i] = np.tril(factor)
    return L, info


def inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverses and getrf's info; a singular matrix's inverse is what solving with its LU gives (inf/nan)."""
    try:
        return np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        lu, pivots, info = getrf(a)
        return getrs(lu, pivots, np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)), info


def solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a^-1 b`` (``b``'s batch shape the broadcast one) and getrf's info for ``a``'s own batch, as torch reports
    it; inf/nan for a singular ``a``."""
    batch = b.shape[:-2]
    try:
        return np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), b), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        lu, pivots, info = getrf(a)
        lu, pivots = np.broadcast_to(lu, batch + lu.shape[-2:]), np.broadcast_to(pivots, batch + pivots.shape[-1:])
        return getrs(lu, pivots, b), info


def sytrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bunch-Kaufman LDL^T of each symmetric matrix from its lower triangle: LD (lower; upper zeroed), LAPACK's
    1-based int32 pivots (negative for 2x2 blocks) and info (k > 0: ``D[k-1, k-1]`` is zero)."""
    n = a.shape[-1]
    LD, pivots, info = np.zeros_like(a), np.zeros(a.shape[:-1], np.int32), np.zeros(a.shape[:-2], np.int32)
    if n:
        fn = _routine("sytrf", a)
        flat_LD, flat_piv, flat_info = LD.reshape((-1, n, n)), pivots.reshape((-1, n)), info.reshape(-1)
        for i, (matrix,) in _matrices(a):
            factor, flat_piv[i], flat_info[i] = fn(matrix, lower=1)
            flat_LD[i] = np.tril(factor)
    return LD, pivots, info


def sytrs(LD: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 b`` from sytrf's output (LAPACK's pivots, lower triangle)."""
    return _solve_each("sytrs", LD, pivots, b, lower=1)


def geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Householder QR in LAPACK's compact form: R on and above the diagonal, the reflectors below, and tau."""
    m, n = a.shape[-2:]
    qr, tau = a.copy(), np.zeros(a.shape[:-2] + (min(m, n),), a.dtype)
    if m and n:
        fn = _routine("geqrf", a)
        flat_qr, flat_tau = qr.reshape((-1, m, n)), tau.reshape((-1, min(m, n)))
        for i, (matrix,) in _matrices(a):
            flat_qr[i], flat_tau[i] = fn(matrix)[:2]
    return qr, tau


def orgqr(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The first n columns of the product of the k reflectors stored in ``a`` (m, n), m >= n >= k."""
    m, n = a.shape[-2:]
    q = np.zeros_like(a)
    if m and n:
        fn = _routine("orgqr", a)
        flat_q = q.reshape((-1, m, n))
        for i, (matrix, t) in _matrices(a, tau[..., None]):
            flat_q[i] = fn(matrix, t[:, 0])[0] if t.size else np.eye(m, n, dtype=a.dtype)
    return q


def ormqr(a: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool, transpose: bool) -> np.ndarray:
    """``op(Q) c`` (``c op(Q)`` when not ``left``), Q the product of the reflectors in ``a``'s first k columns."""
    k = tau.shape[-1]
    out = c.copy()
    if c.size and k:
        fn = _routine("ormqr", a, c)
        flat_out = out.reshape((-1,) + c.shape[-2:])
        lwork = max(1, c.shape[-1] if left else c.shape[-2]) * 64
        side, trans = ("L" if left else "R"), ("T" if transpose else "N")
        for i, (matrix, t, other) in _matrices(a[..., :k], tau[..., None], c):
            flat_out[i] = fn(side, trans, matrix, t[:, 0], other, lwork)[0]
    return out
