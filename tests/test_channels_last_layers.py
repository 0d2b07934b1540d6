"""Layers on channels_last tensors: values, result strides and gradient strides against torch, and gradchecks.

Every case runs in both formats; a channels_last operand must come back channels_last wherever torch's does.
Gradients are taken with ``autograd.grad``, which returns the layer's own gradients: ``.grad`` of a leaf in torch
is further restrided to the leaf's layout by AccumulateGrad, the autograd engine's rule rather than the layer's.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

FORMATS = ("contiguous", "channels_last")


def _make(lib, array: np.ndarray, fmt: str, grad: bool = True):
    t = lib.tensor(array)
    if fmt == "channels_last":
        t = t.contiguous(memory_format=lib.channels_last_3d if array.ndim == 5 else lib.channels_last)
    return t.requires_grad_(grad)


def _assert_same(ours, theirs, what: str) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-10,
                               err_msg=what)
    # The stride of a size-1 dim never addresses memory (torch's contiguity checks skip it too).
    mine = [s for s, n in zip(ours.stride(), ours.shape) if n > 1]
    reference = [s for s, n in zip(theirs.stride(), theirs.shape) if n > 1]
    assert mine == reference, f"{what}: strides {ours.stride()} vs torch {theirs.stride()}"


def _in_format(fn, formats: list[str]):
    """``fn`` on contiguous leaves, handed each one in its format, its result made contiguous: gradcheck perturbs
    leaves and seeds outputs through their flat memory, so it is given plain layouts at both ends, while the layer
    in between still runs (and differentiates) on channels_last operands."""
    def run(*tensors):
        return fn(*[t.contiguous(memory_format=ember.channels_last) if f == "channels_last" else t
                    for t, f in zip(tensors, formats)]).contiguous()
    return run


def _run_both(fn, arrays: list[np.ndarray], formats: list[str], upstream_seed: int = 1):
    """``fn(lib, *tensors)`` in ember and torch, with a random upstream gradient; (output, grads) per library."""
    results = []
    for lib in (ember, torch):
        inputs = [_make(lib, a, f) for a, f in zip(arrays, formats)]
        out = fn(lib, *inputs)
        upstream = lib.tensor(np.random.RandomState(upstream_seed).randn(*out.shape))
        results.append((out, list(lib.autograd.grad(out, inputs, upstream))))
    return results


# ------------------------------------------------------------------------------------------------------ conv2d
CONV2D = {  # input shape, weight shape, stride, padding, dilation, groups
    "3x3_pad": ((2, 4, 6, 7), (5, 4, 3, 3), 1, 1, 1, 1),
    "strided_dilated": ((2, 3, 9, 8), (4, 3, 3, 2), 2, (2, 1), 2, 1),
    "grouped": ((2, 6, 5, 5), (4, 3, 3, 3), 1, 0, 1, 2),
    "depthwise": ((1, 4, 5, 6), (4, 1, 3, 3), 1, 1, 1, 4),
    "1x1": ((3, 5, 4, 4), (2, 5, 1, 1), 1, 0, 1, 1),
}


@pytest.mark.parametrize("case", CONV2D)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "transposed"])
def test_conv2d_matches_torch(case, fmt, transposed):
    xs, ws, stride, padding, dilation, groups = CONV2D[case]
    rs = np.random.RandomState(0)
    if transposed:  # weight (in channels, out channels / groups, kh, kw): the input has weight.shape[0] channels
        ws = (xs[1], ws[0] // groups) + ws[2:]
        fn = lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(  # noqa: E731
            x, w, b, stride=stride, padding=padding, groups=groups, dilation=dilation)
        out_channels = ws[1] * groups
    else:
        fn = lambda lib, x, w, b: lib.nn.functional.conv2d(  # noqa: E731
            x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        out_channels = ws[0]
    arrays = [rs.randn(*xs), rs.randn(*ws), rs.randn(out_channels)]
    (ours, our_grads), (theirs, their_grads) = _run_both(fn, arrays, [fmt, fmt, "contiguous"])
    _assert_same(ours, theirs, "output")
    for name, a, b in zip(("input", "weight", "bias"), our_grads, their_grads):
        _assert_same(a, b, f"{name} grad")


@pytest.mark.parametrize("formats", [("channels_last", "contiguous"), ("contiguous", "channels_last")],
                         ids=["input_cl", "weight_cl"])
def test_conv2d_mixed_formats_follow_torch(formats):
    """Either operand channels_last makes the output (and the upstream-facing gradients) channels_last."""
    rs = np.random.RandomState(2)
    arrays = [rs.randn(2, 3, 6, 6), rs.randn(4, 3, 3, 3)]
    fn = lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1)  # noqa: E731
    (ours, our_grads), (theirs, their_grads) = _run_both(fn, arrays, list(formats))
    _assert_same(ours, theirs, "output")
    for name, a, b in zip(("input", "weight"), our_grads, their_grads):
        _assert_same(a, b, f"{name} grad")


def test_conv2d_channels_last_gradients_are_channels_last():
    """The layer's own input gradient (before any accumulation) is channels_last, as torch's is."""
    rs = np.random.RandomState(3)
    grads = []
    for lib in (ember, torch):
        x = _make(lib, rs.randn(2, 3, 5, 5), "channels_last")
        w = lib.tensor(np.random.RandomState(4).randn(4, 3, 3, 3), requires_grad=True)
        y = lib.nn.functional.conv2d(x, w, padding=1)
        (gx,) = lib.autograd.grad(y, x, lib.ones_like(y).contiguous())
        grads.append(gx)
    _assert_same(*grads, "input grad")


@pytest.mark.parametrize("fmt", FORMATS)
def test_conv2d_gradcheck(fmt):
    rs = np.random.RandomState(5)
    x = _make(ember, rs.randn(2, 4, 5, 5), "contiguous")
    w = _make(ember, rs.randn(4, 2, 3, 3), "contiguous")
    b = ember.tensor(rs.randn(4), requires_grad=True)
    fn = _in_format(lambda x, w, b: ember.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=1, groups=2),
                    [fmt, fmt, "contiguous"])
    assert gradcheck(fn, (x, w, b))
    if fmt == "contiguous":  # gradgradcheck seeds the channels_last first gradients through flat memory
        assert gradgradcheck(fn, (x, w, b))


@pytest.mark.parametrize("fmt", FORMATS)
def test_conv_transpose2d_gradcheck(fmt):
    rs = np.random.RandomState(6)
    x = _make(ember, rs.randn(1, 4, 3, 4), "contiguous")
    w = _make(ember, rs.randn(4, 3, 3, 2), "contiguous")
    fn = _in_format(lambda x, w: ember.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=1), [fmt, fmt])
    assert gradcheck(fn, (x, w))


# ------------------------------------------------------------------------------------------ conv1d and conv3d
@pytest.mark.parametrize("fmt", FORMATS)
def test_conv3d_matches_torch(fmt):
    """torch's CPU conv3d returns a contiguous result for channels_last_3d operands; so does ember's."""
    rs = np.random.RandomState(7)
    arrays = [rs.randn(2, 3, 4, 5, 4), rs.randn(4, 3, 2, 3, 2)]
    fn = lambda lib, x, w: lib.nn.functional.conv3d(x, w, padding=1)  # noqa: E731
    (ours, our_grads), (theirs, their_grads) = _run_both(fn, arrays, [fmt, fmt])
    _assert_same(ours, theirs, "output")
    for name, a, b in zip(("input", "weight"), our_grads, their_grads):
        _assert_same(a, b, f"{name} grad")


def test_conv1d_on_transposed_input_matches_torch():
    """3-d tensors have no channels_last format: a (N, L, C)-strided input convolves to a contiguous result."""
    rs = np.random.RandomState(8)
    outs = []
    for lib in (ember, torch):
        x = lib.tensor(rs.randn(2, 7, 3) if lib is ember else outs[0][1]).transpose(1, 2)
        w = lib.tensor(np.random.RandomState(9).randn(4, 3, 3))
        outs.append((lib.nn.functional.conv1d(x, w, padding=1), x.detach().transpose(1, 2).numpy()))
    _assert_same(outs[0][0], outs[1][0], "conv1d output")


# ----------------------------------------------------------------------------------------- pooling, batch norm
F_E, F_T = ember.nn.functional, torch.nn.functional
LAYERS = {
    "max_pool2d": lambda lib, x: lib.nn.functional.max_pool2d(x, 2),
    "max_pool2d_padded_ceil": lambda lib, x: lib.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    "avg_pool2d": lambda lib, x: lib.nn.functional.avg_pool2d(x, (2, 3), 1, (1, 0), count_include_pad=False),
    "adaptive_avg_pool2d": lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
    "adaptive_max_pool2d": lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (4, 3)),
    "batch_norm": lambda lib, x: lib.nn.functional.batch_norm(
        x, None, None, lib.arange(1.0, 5.0, dtype=lib.float64), lib.full((4,), 0.5, dtype=lib.float64),
        training=True),
}


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_layer_matches_torch(layer, fmt):
    x = np.random.RandomState(10).randn(2, 4, 6, 7)
    (ours, (our_grad,)), (theirs, (their_grad,)) = _run_both(LAYERS[layer], [x], [fmt])
    _assert_same(ours, theirs, "output")
    _assert_same(our_grad, their_grad, "input grad")


def test_max_pool2d_indices_match_torch():
    x = np.random.RandomState(11).randn(2, 3, 5, 6)
    got = F_E.max_pool2d(_make(ember, x, "channels_last"), 2, return_indices=True)[1]
    want = F_T.max_pool2d(_make(torch, x, "channels_last"), 2, return_indices=True)[1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.stride() == want.stride()


def test_batch_norm_running_stats_on_channels_last():
    x = np.random.RandomState(12).randn(3, 4, 3, 5)
    stats = []
    for lib in (ember, torch):
        mean, var = lib.zeros(4, dtype=lib.float64), lib.ones(4, dtype=lib.float64)
        lib.nn.functional.batch_norm(_make(lib, x, "channels_last", grad=False), mean, var, training=True)
        stats.append((mean.numpy(), var.numpy()))
    for a, b in zip(*stats):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("layer", ["max_pool2d_padded_ceil", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm"])
def test_layer_gradcheck_channels_last(layer):
    x = _make(ember, np.random.RandomState(13).randn(2, 4, 5, 6), "contiguous")
    fn = _in_format(lambda x: LAYERS[layer](ember, x), ["channels_last"])
    assert gradcheck(fn, (x,))


def _double_backward(lib, fn, arrays, formats):
    """Second derivatives through ``fn``: of <d fn/d inputs . v> with respect to the inputs and the seed."""
    inputs = [_make(lib, a, f) for a, f in zip(arrays, formats)]
    out = fn(lib, *inputs)
    seed = lib.tensor(np.random.RandomState(20).randn(*out.shape), requires_grad=True)
    firsts = lib.autograd.grad(out, inputs, seed, create_graph=True)
    total = sum((g * lib.tensor(np.random.RandomState(21 + i).randn(*g.shape))).sum() for i, g in enumerate(firsts))
    return lib.autograd.grad(total, inputs + [seed], allow_unused=True)


DOUBLE = {
    "conv2d": (lambda lib, x, w: lib.nn.functional.conv2d(x, w, stride=(1, 2), padding=1, groups=2),
               [(2, 4, 5, 5), (4, 2, 3, 3)]),
    "conv_transpose2d": (lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=1),
                         [(1, 4, 3, 4), (4, 3, 3, 2)]),
    **{name: (fn, [(2, 4, 5, 6)]) for name, fn in LAYERS.items()},
}


@pytest.mark.parametrize("case", DOUBLE)
def test_double_backward_on_channels_last_matches_torch(case):
    fn, shapes = DOUBLE[case]
    rs = np.random.RandomState(22)
    arrays = [rs.randn(*shape) for shape in shapes]
    formats = ["channels_last"] * len(arrays)
    for ours, theirs in zip(_double_backward(ember, fn, arrays, formats), _double_backward(torch, fn, arrays,
                                                                                           formats)):
        if ours is None or theirs is None:  # unused (a linear layer's input): zero on the other side if any
            other = theirs if ours is None else ours
            assert other is None or not other.numpy().any()
        else:
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, atol=1e-9)


LAYERS_3D = {  # torch's CPU kernels: the sliding max pool and batch norm keep channels_last_3d, the others don't
    "max_pool3d": lambda lib, x: lib.nn.functional.max_pool3d(x, 2),
    "adaptive_max_pool3d": lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2),
    "avg_pool3d": lambda lib, x: lib.nn.functional.avg_pool3d(x, 2),
    "adaptive_avg_pool3d": lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, (1, 2, 3)),
    "batch_norm_3d": lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True),
}


@pytest.mark.parametrize("layer", LAYERS_3D)
def test_3d_layer_matches_torch_on_channels_last_3d(layer):
    x = np.random.RandomState(14).randn(2, 3, 4, 5, 4)
    (ours, (our_grad,)), (theirs, (their_grad,)) = _run_both(LAYERS_3D[layer], [x], ["channels_last"])
    _assert_same(ours, theirs, "output")
    _assert_same(our_grad, their_grad, "input grad")
