"""im2col / col2im: the data movement of convolution, written once for 3 spatial dims.

Convolution is a matrix product once every receptive field is laid out as a
column (``im2col``); its adjoint (``col2im``) adds the columns back into the
image and gives the input gradient and the transposed convolution. 1-d and
2-d convolutions call the same kernel with unit leading spatial dims, and
both directions share one walk over the taps, so there is one kernel (per
dtype: float32, float64).

The image is a C-contiguous (N, C, D, H, W) array (the ``*_channels_last`` pair
below takes (N, D, H, W, C) and its own column layout). The columns live in a flat
buffer: the value of tap ``k`` of channel ``c`` at output position ``l`` of
sample ``n`` sits at ``(c * taps + k) * row_stride + n * batch_stride + l``, so
the same kernels fill F.unfold's (N, C*taps, L) layout and the (C*taps, N*L)
layout that turns a whole batch into one matrix product.

``geom`` is the int64 array of 15 numbers ``ember.kernels.common.conv.geometry_array``
builds (kernel size, stride, padding, dilation, output positions; 3 each).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .parallelism import parallel_pays
from .jit import serial_and_parallel

__all__ = ["im2col", "col2im", "im2col_channels_last", "col2im_channels_last"]


@numba.njit(inline="always")
def _unpack(geom):
    """The 15 numbers of ``geom`` as a tuple."""
    return (geom[0], geom[1], geom[2], geom[3], geom[4], geom[5], geom[6], geom[7], geom[8], geom[9], geom[10],
            geom[11], geom[12], geom[13], geom[14])


@numba.njit(inline="always")
def _valid_range(size_out, start, stride, extent):
    """The outputs ``x`` in [0, size_out) whose input ``x * stride + start`` lies in [0, extent)."""
    lo = -(start // stride) if start < 0 else 0  # ceil(-start / stride)
    hi = (extent - start + stride - 1) // stride
    if hi > size_out:
        hi = size_out
    if hi < 0:
        hi = 0
    if lo > hi:
        lo = hi
    return lo, hi


# Row helpers index with unsigned offsets: signed indices make Numba check for negative (wrap-around)
# indices on every access, which stops vectorisation and made the loops ~4x slower.
@numba.njit(inline="always")
def _zero_row(buf, start, count):
    s = np.uint64(start)
    for i in range(np.uint64(count)):
        buf[s + i] = 0


@numba.njit(inline="always")
def _gather_row(dst, d, src, s, count, step):
    """dst[d + i] = src[s + i * step] for i < count."""
    d, s, step = np.uint64(d), np.uint64(s), np.uint64(step)
    if step == 1:
        for i in range(np.uint64(count)):
            dst[d + i] = src[s + i]
    else:
        for i in range(np.uint64(count)):
            dst[d + i] = src[s + i * step]


@numba.njit(inline="always")
def _scatter_add_row(dst, d, step, src, s, count):
    """dst[d + i * step] += src[s + i] for i < count."""
    d, s, step = np.uint64(d), np.uint64(s), np.uint64(step)
    if step == 1:
        for i in range(np.uint64(count)):
            dst[d + i] += src[s + i]
    else:
        for i in range(np.uint64(count)):
            dst[d + i * step] += src[s + i]


def _transfer(image, col, geom, batch_stride, row_stride, to_col):
    """One walk over every tap's rows of columns: im2col when ``to_col``, else its adjoint col2im."""
    batch, channels, depth, height, width = image.shape
    flat = image.reshape(-1)
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow = _unpack(geom)
    for job in prange(batch * channels):
        n = job // channels
        c = job - n * channels
        plane = job * depth * height * width
        if not to_col:
            _zero_row(flat, plane, depth * height * width)
        for a in range(kd):
            for b in range(kh):
                for e in range(kw):
                    base = (c * kd * kh * kw + (a * kh + b) * kw + e) * row_stride + n * batch_stride
                    shift = e * dw - pw
                    x0, x1 = _valid_range(ow, shift, sw, width)
                    for z in range(od):
                        zi = z * sd - pd + a * dd
                        for y in range(oh):
                            yi = y * sh - ph + b * dh
                            pos = base + (z * oh + y) * ow
                            at = plane + (zi * height + yi) * width + shift + x0 * sw
                            if zi < 0 or zi >= depth or yi < 0 or yi >= height:
                                if to_col:
                                    _zero_row(col, pos, ow)
                            elif to_col:
                                _zero_row(col, pos, x0)
                                _gather_row(col, pos + x0, flat, at, x1 - x0, sw)
                                _zero_row(col, pos + x1, ow - x1)
                            else:
                                _scatter_add_row(flat, at, sw, col, pos + x0, x1 - x0)


_transfer_serial, _transfer_parallel = serial_and_parallel(_transfer)


def _run(image: np.ndarray, col: np.ndarray, geom: np.ndarray, batch_stride: int, row_stride: int,
         to_col: bool) -> None:
    parallel = image.shape[0] * image.shape[1] > 1 and parallel_pays(col.size)
    (_transfer_parallel if parallel else _transfer_serial)(image, col, geom, batch_stride, row_stride, to_col)


def im2col(image: np.ndarray, col: np.ndarray, geom: np.ndarray, batch_stride: int, row_stride: int) -> None:
    """Fill the flat ``col`` buffer with the receptive fields of the (N, C, D, H, W) ``image`` (zeros for padding)."""
    if col.size == 0:
        return
    _run(image, col, geom, batch_stride, row_stride, True)


def col2im(col: np.ndarray, image: np.ndarray, geom: np.ndarray, batch_stride: int, row_stride: int) -> None:
    """Overwrite ``image`` with the sum of the columns' values at the places ``im2col`` took them from."""
    if image.size == 0:
        return
    if col.size == 0:
        image[...] = 0
        return
    _run(image, col, geom, batch_stride, row_stride, False)


# ------------------------------------------------------------------------------------------- channels last
def _transfer_channels_last(image, col, geom, to_col):
    """im2col (``to_col``) or col2im over an (N, D, H, W, C) image and (N * positions, taps * C) columns.

    Channels are innermost on both sides, so every tap of every output position moves one contiguous run of
    C values. col2im adds overlapping windows into one sample, so samples are the parallel jobs.
    """
    batch, depth, height, width, channels = image.shape
    flat = image.reshape(-1)
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow = _unpack(geom)
    taps = kd * kh * kw
    for n in prange(batch):
        if not to_col:
            _zero_row(flat, n * depth * height * width * channels, depth * height * width * channels)
        for z in range(od):
            for y in range(oh):
                for x in range(ow):
                    row = (((n * od + z) * oh + y) * ow + x) * taps * channels
                    for a in range(kd):
                        zi = z * sd - pd + a * dd
                        for b in range(kh):
                            yi = y * sh - ph + b * dh
                            for e in range(kw):
                                xi = x * sw - pw + e * dw
                                pos = row + ((a * kh + b) * kw + e) * channels
                                inside = 0 <= zi < depth and 0 <= yi < height and 0 <= xi < width
                                at = (((n * depth + zi) * height + yi) * width + xi) * channels
                                if not inside:
                                    if to_col:
                                        _zero_row(col, pos, channels)
                                elif to_col:
                                    _gather_row(col, pos, flat, at, channels, 1)
                                else:
                                    _scatter_add_row(flat, at, 1, col, pos, channels)


_transfer_cl_serial, _transfer_cl_parallel = serial_and_parallel(_transfer_channels_last)


def _run_channels_last(image: np.ndarray, col: np.ndarray, geom: np.ndarray, to_col: bool) -> None:
    parallel = image.shape[0] > 1 and parallel_pays(col.size)
    (_transfer_cl_parallel if parallel else _transfer_cl_serial)(image, col, geom, to_col)


def im2col_channels_last(image: np.ndarray, col: np.ndarray, geom: np.ndarray) -> None:
    """Fill the flat ``col`` with the (N * positions, taps * C) receptive fields of the (N, D, H, W, C) ``image``:
    tap ``k`` of channel ``c`` at position ``l`` of sample ``n`` at ``(n * positions + l) * taps * C + k * C + c``."""
    if col.size == 0:
        return
    _run_channels_last(image, col, geom, True)


def col2im_channels_last(col: np.ndarray, image: np.ndarray, geom: np.ndarray) -> None:
    """Overwrite the (N, D, H, W, C) ``image`` with the sum of ``im2col_channels_last``'s columns."""
    if image.size == 0:
        return
    if col.size == 0:
        image[...] = 0
        return
    _run_channels_last(image, col, geom, False)
