"""Channel/space rearrangement layers: ``PixelShuffle``, ``PixelUnshuffle``, ``ChannelShuffle``."""
from __future__ import annotations

from .. import functional as F
from .activation import _OneOption

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(_OneOption):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r) (sub-pixel convolution's upsampling step)."""

    _fn, _option = staticmethod(F.pixel_shuffle), "upscale_factor"

    def __init__(self, upscale_factor: int) -> None:
        super().__init__(upscale_factor)


class PixelUnshuffle(_OneOption):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of ``PixelShuffle``."""

    _fn, _option = staticmethod(F.pixel_unshuffle), "downscale_factor"

    def __init__(self, downscale_factor: int) -> None:
        super().__init__(downscale_factor)


class ChannelShuffle(_OneOption):
    """Interleave the channels of ``groups`` groups (ShuffleNet)."""

    _fn, _option = staticmethod(F.channel_shuffle), "groups"

    def __init__(self, groups: int) -> None:
        super().__init__(groups)
