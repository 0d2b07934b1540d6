"""im2col / col2im on the device: the data movement of convolution, for 3 spatial dims.

Same contract as ``ember.kernels.cpu.conv``: ``image`` is a C-contiguous
(N, C, D, H, W) DeviceStorage ((N, D, H, W, C) for the ``*_channels_last``
pair), ``col`` a DeviceStorage whose buffer holds the columns (tap ``k`` of
channel ``c`` at output position ``l`` of sample ``n`` at
``(c * taps + k) * row_stride + n * batch_stride + l`` past its offset, or at
``(n * positions + l) * taps * C + k * C + c`` for channels-last), and
``geom`` the host int64 array of 15 numbers ``ember.kernels.common.conv.geometry_array`` builds (any
sequence of 15 ints works); it is uploaded once per distinct geometry through
``launch.device_meta``.

Both layouts run the same two kernels, which take the element strides of the image and of the columns'
(channel, tap, sample, position) dims. Both directions are one thread per *written* element, so neither needs
atomics:

* ``im2col``: each column element reads its one image element (or writes 0 for padding);
* ``col2im`` is a gather: each image element sums, in tap order, the column
  values of every (tap, position) that read it. That is the order the CPU
  kernel adds them in, so the result is deterministic and equals the CPU's
  (the CPU's channels-last col2im adds in position order: equal up to rounding).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import cuda

from .launch import device_meta, grid
from .storage import DeviceStorage

__all__ = ["im2col", "col2im", "im2col_channels_last", "col2im_channels_last"]


@cuda.jit
def _im2col(n_items, channels, batch, image, i_off, depth, height, width, col, c_off, geom, im_strides,
            col_strides):
    kd, kh, kw = geom[0], geom[1], geom[2]
    od, oh, ow = geom[12], geom[13], geom[14]
    taps = kd * kh * kw
    length = od * oh * ow
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        # i runs over (channel, tap, sample, position) with the position fastest: for channels-first columns
        # the writes are coalesced.
        l = i % length
        rest = i // length
        n = rest % batch
        row = rest // batch  # c * taps + k
        c = row // taps
        k = row - c * taps
        x = l % ow
        y = (l // ow) % oh
        z = l // (ow * oh)
        e = k % kw
        b = (k // kw) % kh
        a = k // (kw * kh)
        zi = z * geom[3] - geom[6] + a * geom[9]
        yi = y * geom[4] - geom[7] + b * geom[10]
        xi = x * geom[5] - geom[8] + e * geom[11]
        at = c_off + c * col_strides[0] + k * col_strides[1] + n * col_strides[2] + l * col_strides[3]
        if 0 <= zi < depth and 0 <= yi < height and 0 <= xi < width:
            col[at] = image[i_off + n * im_strides[0] + c * im_strides[1] + zi * im_strides[2] + yi * im_strides[3]
                            + xi * im_strides[4]]
        else:
            col[at] = 0


@cuda.jit(device=True, inline=True)
def _tap_position(index, tap, pad, stride, dilation, size_out):
    """The output position whose tap ``tap`` reads input ``index`` along one dim, or -1 when none does."""
    t = index + pad - tap * dilation
    if t < 0 or t % stride != 0:
        return -1
    t //= stride
    return t if t < size_out else -1


@cuda.jit
def _col2im(n_items, channels, batch, image, i_off, depth, height, width, col, c_off, geom, im_strides,
            col_strides, zero):
    kd, kh, kw = geom[0], geom[1], geom[2]
    oh, ow = geom[13], geom[14]
    taps = kd * kh * kw
    for i in range(cuda.grid(1), n_items, cuda.gridsize(1)):
        xi = i % width
        yi = (i // width) % height
        zi = (i // (width * height)) % depth
        plane = i // (width * height * depth)  # n * channels + c
        c = plane % channels
        n = plane // channels
        total = zero  # the image dtype: the CPU kernel adds in it too
        for a in range(kd):
            z = _tap_position(zi, a, geom[6], geom[3], geom[9], geom[12])
            if z < 0:
                continue
            for b in range(kh):
                y = _tap_position(yi, b, geom[7], geom[4], geom[10], oh)
                if y < 0:
                    continue
                for e in range(kw):
                    x = _tap_position(xi, e, geom[8], geom[5], geom[11], ow)
                    if x < 0:
                        continue
                    k = (a * kh + b) * kw + e
                    total += col[c_off + c * col_strides[0] + k * col_strides[1] + n * col_strides[2]
                                 + ((z * oh + y) * ow + x) * col_strides[3]]
        image[i_off + n * im_strides[0] + c * im_strides[1] + zi * im_strides[2] + yi * im_strides[3]
              + xi * im_strides[4]] = total


def _prepare(image: DeviceStorage, col: DeviceStorage, geom: Sequence[int], channels_last: bool,
             batch_stride: int = 0, row_stride: int = 0) -> tuple[int, tuple]:
    """Checks shapes and bounds, uploads ``geom`` and the strides of both sides; returns the number of column
    elements and the kernel's arguments after the item count.

    ``image`` is (N, C, D, H, W), or (N, D, H, W, C) when ``channels_last`` (the columns then are
    (N * positions, taps * C) rows; otherwise ``batch_stride`` and ``row_stride`` place them).
    """
    if image.ndim != 5:
        raise ValueError(f"conv kernels take a 5-d image, got shape {image.shape}")
    if image.dtype != col.dtype:
        raise TypeError(f"image ({image.dtype}) and columns ({col.dtype}) differ in dtype")
    if not image.is_contiguous or not col.is_contiguous:
        raise ValueError("conv kernels need C-contiguous image and column storages")
    values = tuple(int(v) for v in np.asarray(geom).reshape(-1))
    if len(values) != 15:
        raise ValueError(f"geom must hold 15 numbers, got {len(values)}")
    if channels_last:
        batch, depth, height, width, channels = image.shape
    else:
        batch, channels, depth, height, width = image.shape
    taps, length = values[0] * values[1] * values[2], values[12] * values[13] * values[14]
    plane = depth * height * width
    if channels_last:
        im_strides = (plane * channels, 1, height * width * channels, width * channels, channels)
        col_strides = (1, channels, length * taps * channels, taps * channels)
    else:
        im_strides = (channels * plane, plane, height * width, width, 1)
        col_strides = (taps * row_stride, row_stride, batch_stride, 1)
    if batch and channels and taps and length:
        last = ((channels - 1) * col_strides[0] + (taps - 1) * col_strides[1] + (batch - 1) * col_strides[2]
                + (length - 1) * col_strides[3])
        if last >= col.numel or col.offset + last >= col.buffer.size:
            raise ValueError(f"columns of {col.numel} elements are too small for this geometry "
                             f"(last index {last})")
    args = (channels, batch, image.buffer, image.offset, depth, height, width, col.buffer, col.offset,
            device_meta(values), device_meta(im_strides), device_meta(col_strides))
    return batch * channels * taps * length, args


def im2col(image: DeviceStorage, col: DeviceStorage, geom: np.ndarray, batch_stride: int, row_stride: int
           ) -> None:
    """Fill ``col`` with the receptive fields of the (N, C, D, H, W) ``image`` (zeros for padding)."""
    _run_im2col(image, col, geom, False, batch_stride, row_stride)


def col2im(col: DeviceStorage, image: DeviceStorage, geom: np.ndarray, batch_stride: int, row_stride: int
           ) -> None:
    """Overwrite ``image`` with the sum of the columns' values at the places ``im2col`` took them from.

    A gather (one thread per image element, taps summed in order): deterministic, no atomics.
    """
    _run_col2im(col, image, geom, False, batch_stride, row_stride)


def im2col_channels_last(image: DeviceStorage, col: DeviceStorage, geom: np.ndarray) -> None:
    """Fill ``col`` with the (N * positions, taps * C) receptive fields of the (N, D, H, W, C) ``image``."""
    _run_im2col(image, col, geom, True)


def col2im_channels_last(col: DeviceStorage, image: DeviceStorage, geom: np.ndarray) -> None:
    """Overwrite the (N, D, H, W, C) ``image`` with the sum of ``im2col_channels_last``'s columns."""
    _run_col2im(col, image, geom, True)


def _run_im2col(image: DeviceStorage, col: DeviceStorage, geom: np.ndarray, channels_last: bool,
                batch_stride: int = 0, row_stride: int = 0) -> None:
    if col.numel == 0:
        return
    n_items, args = _prepare(image, col, geom, channels_last, batch_stride, row_stride)
    if n_items == 0:
        return
    _im2col[grid(n_items)](n_items, *args)


def _run_col2im(col: DeviceStorage, image: DeviceStorage, geom: np.ndarray, channels_last: bool,
                batch_stride: int = 0, row_stride: int = 0) -> None:
    n_items = image.numel
    if n_items == 0:
        return
    _, args = _prepare(image, col, geom, channels_last, batch_stride, row_stride)
    _col2im[grid(n_items)](n_items, *args, image.dtype.type(0))
