"""``Identity``, ``Linear``, ``Bilinear`` and ``LazyLinear``."""
from __future__ import annotations

import math
from typing import Any

from ...autograd.grad_mode import no_grad
from ...tensor.creation import empty
from ...tensor.tensor import Tensor
from .. import init
from ..functional.linear import bilinear, linear
from ..parameter import Parameter, UninitializedParameter, is_lazy
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


class Identity(Module):
    """Returns its input; takes and ignores any constructor arguments (a placeholder layer)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


def _register_weight_and_bias(module: Module, weight_shape: tuple[int, ...], bias: bool, device: Any,
                              dtype: Any) -> None:
    """Uninitialised ``weight`` and (or a ``None``) ``bias`` of ``weight_shape[0]`` entries; reset_parameters fills
    them."""
    module.weight = Parameter(empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(empty(weight_shape[0], device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def _uniform_bias_(bias: Tensor, fan_in: int) -> None:
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
    init.uniform_(bias, -bound, bound)


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out_features, in_features), torch's default initialisation."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        _register_weight_and_bias(self, (out_features, in_features), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)) weights and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias, as torch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            _uniform_bias_(self.bias, init._calculate_fan_in_and_fan_out(self.weight)[0])

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1 @ weight @ x2 + bias`` with weight (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        _register_weight_and_bias(self, (out_features, in1_features, in2_features), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in1_features), 1/sqrt(in1_features)) for weight and bias, as torch."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Linear):
    """A ``Linear`` whose ``in_features`` is read from the first input; it then becomes a plain ``Linear``."""

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        Module.__init__(self)
        self.in_features, self.out_features = 0, out_features
        self.weight = UninitializedParameter(empty(0, dtype=dtype))
        if bias:
            self.bias = UninitializedParameter(empty(0, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if not is_lazy(self.weight):
            super().reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        if is_lazy(self.weight):
            self.in_features = input.shape[-1]
            with no_grad():
                self.weight.materialize((self.out_features, self.in_features), dtype=self.weight.dtype)
                if self.bias is not None:
                    self.bias.materialize((self.out_features,), dtype=self.bias.dtype)
            self.reset_parameters()
        elif self.in_features == 0:
            self.in_features = self.weight.shape[1]
        self.__class__ = Linear
        return linear(input, self.weight, self.bias)
