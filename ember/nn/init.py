"""``torch.nn.init``: fill a parameter in place with a chosen initial distribution.

Every function works under ``no_grad`` on the tensor's own storage (so a
Parameter keeps its identity and every view of it sees the values) and draws
from ember's generators: ``ember.manual_seed`` or ``generator=`` makes an
initialisation reproducible. The scaling rules (fans, gains) follow torch's, so
layers initialised here have torch's default distributions.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..autograd import no_grad
from ..tensor.random_ops import _np_generator
from ..tensor.tensor import Tensor

_LINEAR_GAIN = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """The gain that keeps activations' variance steady through ``nonlinearity`` (torch's table)."""
    if nonlinearity in _LINEAR_GAIN:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """Inputs and outputs each unit sees: dim 1 and dim 0 times the receptive field (dims 2..)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Any = None) -> Tensor:
    """Fill with N(mean, std**2) restricted to [a, b], by inverting the normal CDF on a uniform draw."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    with no_grad():
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    with no_grad():
        return tensor.zero_()


def _write(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Copy ``values`` into the tensor's storage as an in-place op (version bump, no graph)."""
    with no_grad():
        return tensor.copy_(Tensor._make(values))


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal), keeping the identity of the input."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape, dtype=tensor._array.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D conv weight with the Dirac delta: each group's output channel i passes input channel i."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes, dtype=tensor._array.dtype)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, values)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """He's std, or None for a zero-element tensor (torch warns and leaves it alone)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Any = None) -> Tensor:
    """He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Any = None) -> Tensor:
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix over dim 0 vs the rest, from the QR of a Gaussian draw, times ``gain``."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    work = tensor.dtype.compute.np
    flat = _np_generator("orthogonal_", generator).standard_normal((rows, cols)).astype(work)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    # Signs of R's diagonal make the factorisation unique, so Q is Haar-distributed.
    q = q * np.sign(np.diagonal(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tensor.shape))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """N(0, std**2) with a fraction ``sparsity`` of each column's entries set to zero."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    normal_(tensor, 0, std, generator)
    gen = _np_generator("sparse_", generator)
    mask = np.ones((rows, cols), dtype=bool)
    for col in range(cols):
        mask[gen.permutation(rows)[:num_zeros], col] = False
    return _write(tensor, np.where(mask, tensor._array, 0).astype(tensor._array.dtype))


def _deprecated(new):
    """torch's old un-suffixed names: warn and forward to the in-place function."""
    old_name = new.__name__[:-1]

    def old(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    old.__name__ = old_name
    old.__doc__ = f"Deprecated alias of ``{new.__name__}``."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "sparse",
]
