"""Dropout in all of torch's forms: elementwise, channel-wise (1d/2d/3d) and alpha dropout.

Elementwise dropout is one fused op (draw, compare, scale:
``ember.tensor.fused.dropout``, masks drawn on the input's device, replayed by
``ember.manual_seed``); channel-wise dropout multiplies by a small (N, C, 1, ...)
noise tensor with tensor ops, as torch does.
"""
from __future__ import annotations

import math
import warnings

from ...tensor import elementwise as ew
from ...tensor.fused import dropout as fused
from ...tensor.tensor import Tensor

# SELU's negative saturation value, -scale * alpha: where alpha dropout sends dropped units.
_ALPHA = 1.7580993408473766


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _alpha_constants(p: float) -> tuple[float, float, float]:
    """(scale, add for kept, value for dropped) keeping zero mean and unit variance for SELU inputs."""
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    return a, _ALPHA * a * p, _ALPHA * a * (p - 1)


def _constants(p: float, alpha: bool) -> tuple[float, float, float]:
    """(scale, add for kept, value for dropped) of dropout with probability ``p``, alpha dropout's if ``alpha``."""
    if alpha:
        return _alpha_constants(p) if p < 1 else (0.0, 0.0, 0.0)
    return (1.0 / (1.0 - p) if p < 1 else 0.0), 0.0, 0.0


def _elementwise(input: Tensor, p: float, training: bool, inplace: bool, alpha: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype.scalar_type_name}")
    constants = _constants(p, alpha)
    if inplace:
        return ew.inplace(input, "dropout", lambda x: fused.dropout(x, p, *constants))
    return fused.dropout(input, p, *constants)


def _feature(input: Tensor, p: float, training: bool, inplace: bool, alpha: bool, batched: bool = True) -> Tensor:
    """Drop whole channels: one draw per (sample, channel) (per channel, dim 0, when not ``batched``),
    broadcast over the remaining dims."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if batched and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype.scalar_type_name}")
    lead = 2 if batched else 1
    noise_shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    mult, add = fused.channel_noise(noise_shape, p, *_constants(p, alpha), input.dtype, input.device, alpha)

    def compute(x: Tensor) -> Tensor:
        return x * mult + add if alpha else x * mult

    return ew.inplace(input, "dropout", compute) if inplace else compute(input)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (training only)."""
    return _elementwise(input, p, training, inplace, alpha=False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped units go to SELU's saturation value, then an affine map restores the
    mean and variance."""
    return _elementwise(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels."""
    _check_p(p)
    return _feature(input, p, training, inplace, alpha=True)


def _channel_dropout(name: str, input: Tensor, p: float, training: bool, inplace: bool, spatial: int) -> Tensor:
    """dropout1d/2d/3d: channel dropout of (N, C, *spatial) or unbatched (C, *spatial) inputs, with torch's
    errors and deprecation warnings for other ranks."""
    _check_p(p)
    dim = input.dim()
    unbatched, batched = spatial + 1, spatial + 2
    if spatial == 1 and dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {dim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an "
            "optional batch dimension (i.e. 2D or 3D inputs).")
    if dim not in (unbatched, batched):
        warnings.warn(
            f"{name}: Received a {dim}-D input to {name}, which is deprecated and will result in an error in a "
            "future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            f"that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a "
            f"channel dimension, and an optional batch dimension (i.e. {unbatched}D or {batched}D inputs).",
            stacklevel=3)
    if spatial == 2:
        if dim == 3:
            warnings.warn(
                "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                "dropout1d instead.", stacklevel=3)
        return _feature(input, p, training, inplace, alpha=False)
    return _feature(input, p, training, inplace, alpha=False, batched=dim == batched)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) inputs."""
    return _channel_dropout("dropout1d", input, p, training, inplace, 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) inputs (3-D inputs are taken as (N, C, L), as torch does)."""
    return _channel_dropout("dropout2d", input, p, training, inplace, 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _channel_dropout("dropout3d", input, p, training, inplace, 3)


def _dropout_(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    return dropout(input, p, train, inplace=True)


def _alpha_dropout_(input: Tensor, p: float = 0.5, train: bool = False) -> Tensor:
    return alpha_dropout(input, p, train, inplace=True)


def _feature_alpha_dropout_(input: Tensor, p: float = 0.5, train: bool = False) -> Tensor:
    return feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_dropout``: channel dropout of any input with at least 2 dims."""
    _check_p(p)
    return _feature(input, p, train, False, alpha=False)


def _feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    _check_p(p)
    return _feature(input, p, train, True, alpha=False)


__all__ = ["dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"]

TORCH_FUNCTIONS = {
    "dropout": dropout, "dropout_": _dropout_, "alpha_dropout": alpha_dropout, "alpha_dropout_": _alpha_dropout_,
    "feature_alpha_dropout": feature_alpha_dropout, "feature_alpha_dropout_": _feature_alpha_dropout_,
    "feature_dropout": _feature_dropout, "feature_dropout_": _feature_dropout_,
}
