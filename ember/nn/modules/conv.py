"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with torch's arguments, parameters and init."""
from __future__ import annotations

import collections.abc
import math
from typing import Any, Callable

from ...tensor.creation import empty
from ...tensor.tensor import Tensor
from .. import init
from ..functional.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from ..functional.vision import pad
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def ntuple(value: Any, n: int) -> tuple:
    """torch.nn.modules.utils' ``_ntuple``: an iterable as a tuple, anything else repeated ``n`` times."""
    if isinstance(value, collections.abc.Iterable) and not isinstance(value, str):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    """What every convolution layer shares: argument checks, parameters, init and repr."""

    _dims = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int, bias: bool, padding_mode: str,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n = self._dims
        kernel_size, stride, dilation = ntuple(kernel_size, n), ntuple(stride, n), ntuple(dilation, n)
        padding = padding if isinstance(padding, str) else ntuple(padding, n)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'same', 'valid'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = transposed, ntuple(output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        self._reversed_padding_repeated_twice = self._pad_amounts()
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(shape + tuple(kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _pad_amounts(self) -> list[int]:
        """Padding in F.pad's order (last dim first, before/after), for the non-zero padding modes."""
        if not isinstance(self.padding, str):
            return [p for p in reversed(self.padding) for _ in range(2)]
        amounts = [0, 0] * len(self.kernel_size)
        if self.padding == "same":
            for i, (d, k) in enumerate(zip(reversed(self.dilation), reversed(self.kernel_size))):
                total = d * (k - 1)
                amounts[2 * i], amounts[2 * i + 1] = total // 2, total - total // 2
        return amounts

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)) weight and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias, as torch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    @property
    def _functional(self) -> Callable[..., Tensor]:
        return (conv1d, conv2d, conv3d)[self._dims - 1]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            padded = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._functional(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._functional(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) input: weight (C_out, C_in/groups, k)."""

    _dims = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) input: weight (C_out, C_in/groups, kH, kW)."""

    _dims = 2


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) input: weight (C_out, C_in/groups, kD, kH, kW)."""

    _dims = 3


class _ConvTransposeNd(_ConvNd):
    @property
    def _functional(self) -> Callable[..., Tensor]:
        return (conv_transpose1d, conv_transpose2d, conv_transpose3d)[self._dims - 1]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, ntuple(padding, self._dims), dilation, True,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives ``output_size`` (torch's rule), or the layer's own."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        batched = input.dim() == n + 2
        lead = 2 if batched else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or {lead + n} "
                             f"elements (got {len(output_size)})")
        smallest = [(input.shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        largest = [s + self.stride[d] - 1 for d, s in enumerate(smallest)]
        for size, lo, hi in zip(output_size, smallest, largest):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} "
                                 f"to {largest} (for an input of {input.shape[lead:]})")
        return tuple(size - lo for size, lo in zip(output_size, smallest))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return self._functional(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                                self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution: weight (C_in, C_out/groups, k); ``forward(x, output_size)`` picks the padding."""

    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution: weight (C_in, C_out/groups, kH, kW)."""

    _dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution: weight (C_in, C_out/groups, kD, kH, kW)."""

    _dims = 3
