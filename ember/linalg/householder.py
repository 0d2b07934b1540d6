"""Householder QR in LAPACK's compact form: torch.geqrf (the reflectors and tau), torch.linalg.householder_product
(torch.orgqr: the reflectors multiplied out) and torch.ormqr (their product applied to another matrix).

Without a gradient to track the products run in LAPACK (orgqr, ormqr). When an input requires grad they are built
reflector by reflector, ``H_i = I - tau_i v_i v_i^T``, in tensor ops, so they differentiate (again) in the input,
tau and ``other``. geqrf has no gradient, as in torch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..return_types import return_type
from ..tensor.joins import tril
from ..tensor.out_arg import with_out
from ..tensor.tensor import Tensor
from . import _lapack
from ._common import check_matrix, check_tensor, constant
from ._host import through_host
from ..tensor.arguments import tensor_args

geqrf_result = return_type("geqrf", ["a", "tau"])


@tensor_args
@with_out
@through_host
def geqrf(input: Tensor) -> geqrf_result:
    """torch.geqrf: LAPACK's QR, R on and above the diagonal of ``a`` and the Householder vectors below it, with
    their scalars ``tau``. Not differentiable (torch has no derivative for it either)."""
    check_tensor(input, "geqrf", "input")
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_matrix(input, "torch.geqrf", half_kernel="geqrf_cpu", kernel_checks_dtype=True)
    return geqrf_result(*(Tensor._make(v) for v in _lapack.geqrf(input._array)))


def _check_reflectors(op: str, kernel: str, input: Any, tau: Any) -> None:
    """torch's checks of ``input`` (reflectors in its columns) and ``tau`` (one fewer dim, same batch)."""
    check_tensor(input, op, "input")
    check_tensor(tau, op, "tau")
    if input.ndim < 2:
        raise RuntimeError(f"torch.{op}: input must have at least 2 dimensions.")
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"torch.{op}: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.ndim} and input.ndim is equal to {input.ndim}")
    if tau.shape[:-1] != input.shape[:-2]:
        raise RuntimeError(f"torch.{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype is not input.dtype:
        raise RuntimeError(f"torch.{op}: tau dtype {tau.dtype} does not match input dtype {input.dtype}")
    check_matrix(input, f"torch.{op}", half_kernel=kernel, kernel_checks_dtype=True)


def _tracked(*tensors: Tensor) -> bool:
    return is_grad_enabled() and any(t.requires_grad for t in tensors)


def _apply_reflectors(input: Tensor, tau: Tensor, other: Tensor, left: bool, transpose: bool) -> Tensor:
    """``op(Q) other`` (``other op(Q)`` when not ``left``) with ``Q = H_0 ... H_{k-1}``, in tensor ops."""
    m, k = input.shape[-2], tau.shape[-1]
    if k == 0:
        return other.clone()
    V = tril(input, -1)[..., :, :k] + constant(np.eye(m, k), input)
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v, t = V[..., :, i:i + 1], tau[..., i:i + 1].unsqueeze(-1)
        other = other - (t * v) @ (v.mT @ other) if left else other - ((other @ v) * t) @ v.mT
    return other


@tensor_args
@with_out
@through_host
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product (torch.orgqr): the first n columns of ``H_0 ... H_{k-1}`` for the
    reflectors in the columns of ``A`` (m, n), m >= n >= k (as geqrf leaves them)."""
    op = "linalg.householder_product"
    _check_reflectors(op, "orgqr_cpu", A, tau)
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"torch.{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"torch.{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if _tracked(A, tau):
        identity = constant(np.broadcast_to(np.eye(m, n), A.shape), A)
        return _apply_reflectors(A, tau, identity, left=True, transpose=False)
    return Tensor._make(_lapack.orgqr(A._array, tau._array))


@tensor_args
@with_out
@through_host
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """torch.ormqr: ``Q other`` (``Q^T other`` with ``transpose``; ``other Q`` when not ``left``) for the full
    square Q of the reflectors that geqrf left in ``input`` and ``tau``, without forming Q."""
    op = "ormqr"
    _check_reflectors(op, "ormqr_cpu", input, tau)
    check_tensor(other, op, "other")
    if other.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    if other.ndim != input.ndim:
        raise RuntimeError("torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}")
    if other.shape[:-2] != input.shape[:-2]:
        raise RuntimeError("torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but "
                           f"got {list(other.shape[:-2])}")
    if other.dtype is not input.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and other to have the same dtype, but input has dtype "
                           f"{input.dtype} and other has dtype {other.dtype}")
    side = -2 if left else -1
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           f"input.shape[-1])")
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if _tracked(input, tau, other):
        return _apply_reflectors(input, tau, other, left, transpose)
    return Tensor._make(_lapack.ormqr(input._array, tau._array, other._array, left, transpose))
