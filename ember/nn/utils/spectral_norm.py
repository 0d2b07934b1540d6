"""Spectral normalisation, W / sigma(W): the power-iteration math and torch's legacy hook form.

sigma(W) is estimated by power iteration on W seen as a matrix (dim ``dim`` first,
the rest flattened), with the singular-vector estimates ``u`` and ``v`` kept in
buffers and refined by a few steps at each training forward. The iteration runs
without autograd; the gradient flows through sigma = u . (W v) only, as in torch.
The legacy form keeps ``weight_orig``, ``weight_u`` and ``weight_v`` and recomputes
``weight`` in a forward pre-hook; new code should use
``ember.nn.utils.parametrizations.spectral_norm``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...autograd import no_grad
from ...tensor.matmul import dot, mv
from ...tensor.tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter
from .weight_norm import _refuse_second_hook, _refuse_uninitialized, _remove_legacy_hook
from ..modules import conv


def reshape_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix whose rows run along ``dim``."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.dim()) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def normalized(x: np.ndarray, eps: float) -> np.ndarray:
    """``x / max(||x||, eps)``: F.normalize of a vector."""
    return x / max(float(np.sqrt(np.sum(x * x))), eps)


def random_unit(n: int, like: Tensor, eps: float) -> Tensor:
    """A normalised N(0, 1) vector of ``like``'s dtype, drawn from ember's default generator."""
    with no_grad():
        u = like.new_empty((n,)).normal_(0, 1)
    return Tensor._make(normalized(u._array, eps))


def power_iteration(weight_mat: Tensor, u: Tensor, v: Tensor, steps: int, eps: float, u_first: bool) -> None:
    """Refine the singular-vector estimates in place (``u_first``: update u then v, the parametrization's order)."""
    w = weight_mat.detach()._array
    uu, vv = u._array, v._array
    for _ in range(steps):
        if u_first:
            uu = normalized(w @ vv, eps)
            vv = normalized(w.T @ uu, eps)
        else:
            vv = normalized(w.T @ uu, eps)
            uu = normalized(w @ vv, eps)
    with no_grad():
        u.copy_(Tensor._make(uu.astype(u._array.dtype)))
        v.copy_(Tensor._make(vv.astype(v._array.dtype)))


def sigma(weight_mat: Tensor, u: Tensor, v: Tensor) -> Tensor:
    """The spectral-norm estimate u . (W v), differentiable in W."""
    return dot(u.clone(), mv(weight_mat, v.clone()))


class SpectralNorm:
    """The forward pre-hook of the legacy ``spectral_norm``."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = reshape_to_matrix(weight, self.dim)
        if do_power_iteration:
            power_iteration(weight_mat, u, v, self.n_power_iterations, self.eps, u_first=False)
        return weight / sigma(weight_mat, u, v)

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        _refuse_second_hook(module, SpectralNorm, name, "spectral")
        weight = module._parameters[name]
        _refuse_uninitialized(weight, SpectralNorm, "spectral")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        h, w = reshape_to_matrix(weight, dim).shape
        u, v = random_unit(h, weight, eps), random_unit(w, weight, eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.data)
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def _default_dim(module: Module) -> int:
    transposed = tuple(getattr(conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
                       if hasattr(conv, n))
    return 1 if transposed and isinstance(module, transposed) else 0


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Legacy spectral normalisation through a forward pre-hook (``weight_orig``, ``weight_u``, ``weight_v``)."""
    SpectralNorm.apply(module, name, n_power_iterations, _default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo the legacy ``spectral_norm``: ``weight`` becomes a plain Parameter again."""
    return _remove_legacy_hook(module, SpectralNorm, name, "spectral")


__all__ = ["spectral_norm", "remove_spectral_norm"]
