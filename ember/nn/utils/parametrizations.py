"""``torch.nn.utils.parametrizations``: weight_norm and spectral_norm as parametrizations.

Each wraps a small Module registered with ``parametrize.register_parametrization``,
so the state-dict keys are torch's (``parametrizations.weight.original0`` / ``original1``
for weight norm; ``parametrizations.weight.original`` and ``parametrizations.weight.0._u``
/ ``_v`` for spectral norm) and a torch checkpoint loads into the ember module.
"""
from __future__ import annotations

from ...tensor.tensor import Tensor
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _default_dim, power_iteration, random_unit, reshape_to_matrix, sigma
from .weight_norm import _weight_norm, norm_except_dim


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Store ``module.<name>`` as a magnitude ``original0`` (g) and a direction ``original1`` (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = reshape_to_matrix(weight, self.dim)
            h, w = weight_mat.shape
            self.register_buffer("_u", random_unit(h, weight, eps))
            self.register_buffer("_v", random_unit(w, weight, eps))
            power_iteration(weight_mat, self._u, self._v, 15, eps, u_first=True)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return weight / weight.norm().clamp(min=self.eps)  # F.normalize(weight, dim=0)
        weight_mat = reshape_to_matrix(weight, self.dim)
        if self.training:
            power_iteration(weight_mat, self._u, self._v, self.n_power_iterations, self.eps, u_first=True)
        return weight / sigma(weight_mat, self._u, self._v)

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration at each training forward."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = _default_dim(module) if dim is None else dim
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


__all__ = ["weight_norm", "spectral_norm"]
