"""Activation layers: thin Modules over ``ember.nn.functional``, with torch's arguments and printed form."""
from __future__ import annotations

from typing import Any, Callable

from ...tensor.tensor import Tensor
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module
from ...tensor.creation import empty

__all__ = [
    "ReLU", "ReLU6", "Hardtanh", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Hardswish",
    "Hardsigmoid", "Softplus", "Softshrink", "Hardshrink", "Tanhshrink", "Softsign", "Threshold", "LogSigmoid",
    "Sigmoid", "Tanh", "PReLU", "RReLU", "GLU", "Softmax", "LogSoftmax", "Softmin", "Softmax2d",
]


class _Elementwise(Module):
    """An activation with no options: ``forward`` is the functional ``_fn``."""

    _fn: Callable[[Tensor], Tensor]

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class _Inplace(Module):
    """An activation whose one option is ``inplace``."""

    _fn: Callable[..., Tensor]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


def _inplace_suffix(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class ReLU(_Inplace):
    """max(x, 0)."""

    _fn = staticmethod(F.relu)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """x * sigmoid(x)."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    _fn = staticmethod(F.mish)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""

    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""

    _fn = staticmethod(F.hardsigmoid)


class Sigmoid(_Elementwise):
    """1 / (1 + exp(-x))."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Elementwise):
    """Hyperbolic tangent."""

    _fn = staticmethod(F.tanh)


class Softsign(_Elementwise):
    """x / (1 + |x|)."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Elementwise):
    """x - tanh(x)."""

    _fn = staticmethod(F.tanhshrink)


class LogSigmoid(_Elementwise):
    """log(sigmoid(x))."""

    _fn = staticmethod(F.logsigmoid)


class Hardtanh(Module):
    """Clamp to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if not self.max_val > self.min_val:
            raise AssertionError

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _OneOption(Module):
    """A layer with one option, stored under the name ``_option`` and passed to the functional ``_fn``."""

    _fn: Callable[..., Tensor]
    _option: str

    def __init__(self, value: Any) -> None:
        super().__init__()
        setattr(self, self._option, value)

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, getattr(self, self._option))

    def extra_repr(self) -> str:
        return f"{self._option}={getattr(self, self._option)}"


class _ScalarInplace(_OneOption):
    """An activation with one scalar option and ``inplace``."""

    def __init__(self, value: float, inplace: bool) -> None:
        super().__init__(value)
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, getattr(self, self._option), self.inplace)

    def extra_repr(self) -> str:
        return super().extra_repr() + _inplace_suffix(self.inplace)


class LeakyReLU(_ScalarInplace):
    """x for x > 0, else negative_slope * x."""

    _fn, _option = staticmethod(F.leaky_relu), "negative_slope"

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__(negative_slope, inplace)


class ELU(_ScalarInplace):
    """x for x > 0, else alpha * (exp(x) - 1)."""

    _fn, _option = staticmethod(F.elu), "alpha"

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(alpha, inplace)


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    _fn = staticmethod(F.celu)


class GELU(Module):
    """x * Phi(x), or its tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """Shrink towards 0 by ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """Zero inside [-lambd, lambd]."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class PReLU(Module):
    """Leaky ReLU with a learned slope: one shared or one per channel (dim 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky ReLU with a random slope in [lower, upper] while training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}"


class GLU(_OneOption):
    """a * sigmoid(b) of the two halves along ``dim``."""

    _fn, _option = staticmethod(F.glu), "dim"

    def __init__(self, dim: int = -1) -> None:
        super().__init__(dim)


class _SoftmaxLike(Module):
    """Softmax, LogSoftmax and Softmin: ``dim`` None means torch's deprecated implicit choice."""

    _fn: Callable[..., Tensor]

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxLike):
    """exp(x) / sum(exp(x)) along ``dim``."""

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxLike):
    """log(softmax(x)) along ``dim``."""

    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxLike):
    """softmax(-x) along ``dim``."""

    _fn = staticmethod(F.softmin)


class Softmax2d(Module):
    """Softmax over the channels at every spatial position of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
