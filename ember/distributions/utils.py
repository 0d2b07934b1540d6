"""torch.distributions.utils: parameter broadcasting, probs/logits conversions, lazily computed parameters, and the
packing of lower-triangular matrices into vectors that the distributions share."""
from __future__ import annotations

from functools import update_wrapper
from numbers import Number
from typing import Any, Callable

from ..autograd.grad_mode import enable_grad
from ..tensor import dtypes
from ..tensor.activation_ops import softmax
from ..tensor.creation import arange, as_tensor, zeros
from ..tensor.fused.activations import activation
from ..tensor.joins import broadcast_tensors
from ..tensor.random_ops import randn
from ..tensor.tensor import Size, Tensor
from ..tensor.type_info import finfo

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """The values as tensors of one broadcast shape; numbers take the dtype and device of the first tensor (the
    default dtype when there is none)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if all(isinstance(v, Tensor) for v in values):
        return broadcast_tensors(*values)
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None else dtypes.get_default_dtype()
    device = like.device if like is not None else None
    tensors = [v if isinstance(v, Tensor) else as_tensor(float(v), dtype=dtype, device=device) for v in values]
    return broadcast_tensors(*tensors)


def _shown(value: Any) -> Any:
    """How torch's messages print a value: a 0-dim tensor as its number (torch formats it so)."""
    return value.item() if isinstance(value, Tensor) and value.dim() == 0 else value


def _standard_normal(shape: tuple[int, ...], dtype: Any, device: Any) -> Tensor:
    """N(0, 1) draws of ``shape`` (the noise of every reparameterised Gaussian sample)."""
    return randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value: Any, dim: int) -> Any:
    """``value`` summed over its ``dim`` rightmost dimensions (``dim == 0``: itself)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def _softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)), with torch's threshold of 20 (softplus's kernel, as ``F.softplus`` computes it)."""
    return activation(x, "softplus_beta", (1.0, 20.0))


def _logsigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)), stable for large |x|."""
    return activation(x, "logsigmoid")


def _binary_cross_entropy_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """-[z log sigmoid(x) + (1 - z) log(1 - sigmoid(x))] elementwise, differentiable in both arguments (the
    Bernoulli entropies and log-densities need the target's gradient too)."""
    return (1 - target) * logits - _logsigmoid(logits)


def expand_probs_or_logits(old: Any, new: Any, shape: Any) -> None:
    """``expand`` of a distribution parametrised by ``probs`` or ``logits`` (each derived lazily from the other):
    expand into ``new`` whichever of them ``old`` holds, ``_param`` the last one, as the constructor sets it."""
    for name in ("probs", "logits"):
        if name in old.__dict__:
            setattr(new, name, getattr(old, name).expand(shape))
            new._param = getattr(new, name)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept ``eps`` away from 0 and 1, so their logs stay finite."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Sigmoid of the logits of one event (``is_binary``), else a softmax over the last dimension."""
    return logits.sigmoid() if is_binary else softmax(logits, -1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds of binary probabilities, else log-probabilities (of the clamped probabilities)."""
    clamped = clamp_probs(probs)
    return clamped.log() - (-clamped).log1p() if is_binary else clamped.log()


class lazy_property:  # noqa: N801 - torch's name
    """A parameter computed from another on first access and then kept on the instance (e.g. ``logits`` from
    ``probs``); computed with grad mode on, so it stays differentiable whatever the caller's mode."""

    def __init__(self, wrapped: Callable) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def _tril_mask(n: int, diag: int, device: Any) -> Tensor:
    """The n x n mask of the entries on and below diagonal ``diag``."""
    rows = arange(n, device=device)
    return rows.reshape(-1, 1) >= rows.reshape(1, -1) - diag


def _tril_count(n: int, diag: int) -> int:
    """How many entries of an n x n matrix lie on and below diagonal ``diag``."""
    return sum(max(0, min(n, i + diag + 1)) for i in range(n))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of ``mat``'s lower triangle (on and below diagonal ``diag``) as a vector, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of ``tril_matrix_to_vec``: an n x n matrix, zero above diagonal ``diag``."""
    length = vec.shape[-1]
    n = 1
    while _tril_count(n, diag) < length:
        n += 1
    if _tril_count(n, diag) != length:
        raise ValueError(f"The size of last dimension is {length} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    mat = zeros(Size(vec.shape[:-1]) + (n, n), dtype=vec.dtype, device=vec.device)
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
