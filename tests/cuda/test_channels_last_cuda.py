"""Channels-last convolution on the device: the NDHWC im2col/col2im against the CPU kernels, and conv2d on
channels_last device tensors against the CPU result (values and strides). Tiny shapes: runs under
NUMBA_ENABLE_CUDASIM=1."""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import ember  # noqa: E402
from ember.kernels.common.conv import geometry_array  # noqa: E402
from ember.kernels.cpu import conv as cpu  # noqa: E402
from ember.kernels.cuda import conv as dev  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

# (image D, H, W), kernel, stride, padding, dilation
CASES = {
    "2d_padded": ((1, 4, 5), (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1)),
    "2d_strided_dilated": ((1, 6, 5), (1, 2, 3), (1, 2, 1), (0, 1, 2), (1, 2, 1)),
    "3d": ((3, 3, 4), (2, 2, 2), (1, 1, 2), (1, 0, 1), (1, 1, 1)),
}


def _geometry(size, kernel, stride, padding, dilation):
    out = tuple((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(size, kernel, stride, padding,
                                                                               dilation))
    return geometry_array(kernel, stride, padding, dilation, out), out


@pytest.mark.parametrize("case", list(CASES))
def test_channels_last_im2col_and_col2im_match_cpu(case):
    size, kernel, stride, padding, dilation = CASES[case]
    geom, out = _geometry(size, kernel, stride, padding, dilation)
    n, c = 2, 3
    total = n * math.prod(out) * math.prod(kernel) * c
    rng = np.random.default_rng(len(case))
    image = rng.standard_normal((n,) + size + (c,))

    want = np.full(total, np.nan)
    cpu.im2col_channels_last(image, want, geom)
    col = DeviceStorage.from_numpy(np.full(total, np.nan))
    dev.im2col_channels_last(DeviceStorage.from_numpy(image), col, geom)
    np.testing.assert_array_equal(col.to_numpy(), want)  # pure data movement: exact

    cols = rng.standard_normal(total)
    want_image = np.full(image.shape, np.nan)
    cpu.col2im_channels_last(cols, want_image, geom)
    got = DeviceStorage.from_numpy(np.full(image.shape, np.nan))
    dev.col2im_channels_last(DeviceStorage.from_numpy(cols), got, geom)
    np.testing.assert_allclose(got.to_numpy(), want_image, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_on_channels_last_device_tensors(groups):
    rng = np.random.default_rng(5)
    x_np, w_np = rng.standard_normal((2, 4, 4, 5)), rng.standard_normal((4, 4 // groups, 3, 3))
    results = []
    for device in ("cpu", "cuda"):
        x = ember.tensor(x_np, device=device).contiguous(memory_format=ember.channels_last).requires_grad_()
        w = ember.tensor(w_np, device=device).contiguous(memory_format=ember.channels_last).requires_grad_()
        y = ember.nn.functional.conv2d(x, w, padding=1, groups=groups)
        gx, gw = ember.autograd.grad(y, (x, w), ember.ones_like(y))
        results.append([(t.detach().cpu().numpy(), t.stride()) for t in (y, gx, gw)])
    for (want, want_strides), (got, got_strides) in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        assert got_strides == want_strides


LAYERS = {
    "max_pool2d": lambda x: ember.nn.functional.max_pool2d(x, 2, 1, 1),
    "avg_pool2d": lambda x: ember.nn.functional.avg_pool2d(x, 2),
    "adaptive_avg_pool2d": lambda x: ember.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
    "batch_norm": lambda x: ember.nn.functional.batch_norm(x, None, None, training=True),
}


@pytest.mark.parametrize("layer", list(LAYERS))
def test_layer_on_channels_last_device_tensors(layer):
    """Pooling and batch norm run on the device's channels-last memory: values and strides as on the CPU."""
    x_np = np.random.default_rng(6).standard_normal((2, 3, 4, 5))
    results = []
    for device in ("cpu", "cuda"):
        x = ember.tensor(x_np, device=device).contiguous(memory_format=ember.channels_last).requires_grad_()
        y = LAYERS[layer](x)
        seed = ember.tensor(np.random.default_rng(7).standard_normal(tuple(y.shape)), device=device)
        (gx,) = ember.autograd.grad(y, x, seed)
        results.append([(t.detach().cpu().numpy(), t.stride()) for t in (y, gx)])
    for (want, want_strides), (got, got_strides) in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        assert got_strides == want_strides
