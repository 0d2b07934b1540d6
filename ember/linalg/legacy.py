"""torch's older top-level spellings (torch.det, torch.svd, torch.qr, ...) over the torch.linalg ops, with their
own argument conventions and return types."""
from __future__ import annotations

import warnings
from collections import namedtuple
import numpy as np

from ..tensor.tensor import Tensor
from .decompositions import cholesky as _cholesky, qr as _qr, svd as _svd, svdvals
from .determinants import slogdet as _slogdet
from .inverses import pinv
from .products import cross as _cross
from ..tensor.out_arg import with_out

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
qr_result = namedtuple("qr", ["Q", "R"])
svd_result = namedtuple("svd", ["U", "S", "V"])


def slogdet(input: Tensor) -> slogdet_result:
    """torch.slogdet: (sign, log|det|) as ``torch.return_types.slogdet``."""
    return slogdet_result(*_slogdet(input))


def logdet(input: Tensor) -> Tensor:
    """torch.logdet: log of the determinant: nan for a negative determinant, -inf for a singular matrix."""
    sign, logabsdet = _slogdet(input)
    return logabsdet + sign.log()


@with_out
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in torch for linalg.cholesky): the Cholesky factor."""
    return _cholesky(input, upper=upper)


@with_out
def qr(input: Tensor, some: bool = True) -> qr_result:
    """torch.qr: reduced (``some``) or complete QR, as ``torch.return_types.qr``."""
    return qr_result(*_qr(input, "reduced" if some else "complete"))


@with_out
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> svd_result:
    """torch.svd: ``input = U diag(S) V^T`` (V, not Vh); without ``compute_uv``, U and V are zero matrices."""
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = input.shape[:-2]
        dt = input._array.dtype
        return svd_result(Tensor._make(np.zeros(batch + (m, m), dt)), svdvals(input),
                          Tensor._make(np.zeros(batch + (n, n), dt)))
    U, S, Vh = _svd(input, full_matrices=not some)
    return svd_result(U, S, Vh.mT)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: pseudo-inverse with singular values below ``rcond * s_max`` dropped."""
    return pinv(input, rtol=rcond)


@with_out
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: cross product along ``dim``; without ``dim``, the first dim of size 3 (deprecated in torch)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, n in enumerate(input.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim=dim)
