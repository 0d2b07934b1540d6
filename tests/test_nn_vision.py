"""Padding, resampling, grid sampling and pixel rearrangement (ember.nn.functional.vision and its layers)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

from conftest import check_against_torch


def _f(name: str, *args, **kwargs):
    """``f(lib, method, *inputs)`` for check_against_torch: ``lib.nn.functional.<name>(*inputs, *args, **kwargs)``."""
    return lambda lib, method, *xs: getattr(lib.nn.functional, name)(*xs, *args, **kwargs)


def _t(shape, seed=0, grad=True):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=grad)


# ----------------------------------------------------------------------------- pad
PAD_CASES = [((2, 3, 5), (1, 2)), ((2, 3, 5), (-1, 2)), ((2, 3, 5), (2, -1)), ((3, 5), (1, 3)),
             ((2, 3, 4, 5), (2, 1, 0, 3)), ((2, 3, 4, 5), (1, -2, 2, 0)), ((1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 1))]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,amounts", PAD_CASES)
def test_pad_matches_torch(torch_ref, mode, shape, amounts):
    check_against_torch(torch_ref, _f("pad", amounts, mode=mode), [shape], rtol=1e-12)


def test_constant_pad_value_any_dims_and_crop(torch_ref):
    check_against_torch(torch_ref, _f("pad", (1, 1, -1, 2, 0, 1, 2, 0), value=2.5), [(2, 3, 4, 5)], rtol=1e-12)
    x = ember.arange(12).reshape(3, 4)
    out = F.pad(x, (1, -2), value=2.5)  # an integer tensor truncates the fill value, as torch does
    assert out.dtype == ember.int64
    assert out.tolist() == [[2, 0, 1], [2, 4, 5], [2, 8, 9]]
    assert ember.constant_pad_nd(x, (0, 0, 1, 0)).shape == (4, 4)


def test_pad_hand_reference():
    x = ember.arange(4.0).reshape(1, 1, 4)
    assert F.pad(x, (2, 1), mode="reflect").tolist() == [[[2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0]]]
    assert F.pad(x, (2, 1), mode="replicate").tolist() == [[[0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 3.0]]]
    assert F.pad(x, (2, 1), mode="circular").tolist() == [[[2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 0.0]]]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    x = _t((1, 2, 3, 4))
    assert gradcheck(lambda t: F.pad(t, (2, -1, 1, 2), mode=mode), (x,))
    assert gradgradcheck(lambda t: F.pad(t, (1, 2, 2, 0), mode=mode), (x,))


@pytest.mark.parametrize("args,kwargs,exc,match", [
    ((ember.zeros(1, 1, 4), (1,)), {}, RuntimeError, "divisible by 2"),
    ((ember.zeros(1, 1, 4), (1,) * 8), {}, RuntimeError, "less than or equal to two times"),
    ((ember.zeros(1, 1, 4), (1, 1)), {"mode": "foo"}, NotImplementedError, "Unrecognised padding mode foo"),
    ((ember.zeros(1, 1, 4), (4, 0)), {"mode": "reflect"}, RuntimeError, "Padding size should be less than"),
    ((ember.zeros(1, 1, 4), (5, 0)), {"mode": "circular"}, RuntimeError, "wrapping around more than once"),
    ((ember.zeros(1, 1, 4), (1, 1)), {"mode": "reflect", "value": 1.0}, RuntimeError, "doesn't take in value"),
    ((ember.zeros(2, 3, 4, 5), (1, 1)), {"mode": "reflect"}, NotImplementedError, "Padding size 2 is not supported"),
    ((ember.zeros(4), (1, 1)), {"mode": "replicate"}, NotImplementedError, "not supported for 1D input"),
    ((ember.zeros(1, 0, 4), (1, 1)), {"mode": "replicate"}, RuntimeError, "non-zero dimensions"),
    ((ember.zeros(1, 1, 4), (-3, -3)), {}, RuntimeError, "non-negative"),
    ((ember.zeros(1, 1, 4), ember.tensor([1, 1])), {}, TypeError, "must be tuple of ints"),
    ((ember.zeros(1, 1, 4), (1.0, 1)), {}, TypeError, "found element of type float"),
])
def test_pad_errors_match_torch(torch_ref, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        F.pad(*args, **kwargs)
    theirs = (torch_ref.tensor(args[0].numpy()),) + tuple(torch_ref.tensor(a.numpy()) if isinstance(a, ember.Tensor)
                                                          else a for a in args[1:])
    with pytest.raises(exc):
        torch_ref.nn.functional.pad(*theirs, **kwargs)


@settings(max_examples=20, deadline=None)
@given(mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]),
       w=st.integers(1, 6), left=st.integers(-2, 5), right=st.integers(-2, 5))
def test_pad_1d_property(mode, w, left, right):
    """Against an independent NumPy reference (np.pad after cropping), or torch's error when the pad is invalid."""
    torch = pytest.importorskip("torch")
    a = np.arange(2.0 * w).reshape(1, 2, w)
    kept = w - max(-left, 0) - max(-right, 0)
    if mode == "circular" and max(left, right) > kept:
        with pytest.raises(RuntimeError, match="wrapping around"):  # torch reads uninitialised memory here
            F.pad(ember.tensor(a), (left, right), mode=mode)
        return
    try:
        expected = torch.nn.functional.pad(torch.tensor(a), (left, right), mode=mode).numpy()
    except (RuntimeError, NotImplementedError) as err:
        with pytest.raises(type(err)):
            F.pad(ember.tensor(a), (left, right), mode=mode)
        return
    np.testing.assert_array_equal(F.pad(ember.tensor(a), (left, right), mode=mode).numpy(), expected)
    if mode != "constant" and min(left, right) >= 0:
        ref = np.pad(a, ((0, 0), (0, 0), (left, right)), mode={"reflect": "reflect", "replicate": "edge",
                                                                 "circular": "wrap"}[mode])
        np.testing.assert_array_equal(expected, ref)


# ----------------------------------------------------------------------------- interpolate
INTERP = [("nearest", (2, 3, 5, 6)), ("nearest-exact", (2, 3, 5, 6)), ("nearest", (1, 2, 4)),
          ("linear", (2, 3, 5)), ("bilinear", (2, 3, 5, 6)), ("bicubic", (1, 2, 5, 6)),
          ("trilinear", (1, 2, 3, 4, 5)), ("area", (2, 3, 5, 6)), ("area", (1, 2, 3, 4, 5))]
SIZES = [dict(scale_factor=2), dict(size=3), dict(scale_factor=1.7), dict(scale_factor=0.6),
         dict(scale_factor=1.7, recompute_scale_factor=True)]


@pytest.mark.parametrize("mode,shape", INTERP)
@pytest.mark.parametrize("kw", SIZES, ids=str)
def test_interpolate_matches_torch(torch_ref, mode, shape, kw):
    corners = [None] if mode.startswith("nearest") or mode == "area" else [False, True]
    for align in corners:
        extra = {} if align is None else {"align_corners": align}
        check_against_torch(torch_ref, _f("interpolate", mode=mode, **kw, **extra), [shape], rtol=1e-10, atol=1e-12)


def test_interpolate_float32_and_hand_reference():
    x = ember.tensor([[[0.0, 1.0, 2.0]]])
    assert F.interpolate(x, scale_factor=2).tolist() == [[[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]]]
    np.testing.assert_allclose(F.interpolate(x, size=5, mode="linear", align_corners=True).numpy(),
                               [[[0.0, 0.5, 1.0, 1.5, 2.0]]])
    np.testing.assert_allclose(F.interpolate(x, size=1, mode="area").numpy(), [[[1.0]]])
    assert F.interpolate(x, scale_factor=2, mode="linear").dtype == ember.float32


@pytest.mark.parametrize("mode,shape", [("linear", (1, 2, 4)), ("bilinear", (1, 1, 3, 4)), ("bicubic", (1, 1, 3, 3)),
                                        ("trilinear", (1, 1, 2, 2, 3)), ("area", (1, 1, 5, 4)),
                                        ("nearest", (1, 1, 3, 4))])
def test_interpolate_gradcheck(mode, shape):
    x = _t(shape)
    kw = dict(size=tuple(n + 2 for n in shape[2:])) if mode != "area" else dict(size=(3, 3))
    assert gradcheck(lambda t: F.interpolate(t, mode=mode, **kw), (x,))
    assert gradgradcheck(lambda t: F.interpolate(t, mode=mode, **kw), (x,))


@pytest.mark.parametrize("args,kwargs,exc,match", [
    ((ember.zeros(1, 1, 4, 4),), {}, ValueError, "either size or scale_factor"),
    ((ember.zeros(1, 1, 4, 4), 3, 2), {}, ValueError, "only one of size or scale_factor"),
    ((ember.zeros(1, 1, 4, 4), (3, 3, 3)), {}, ValueError, "same number of spatial dimensions"),
    ((ember.zeros(1, 1, 4, 4),), {"scale_factor": (2, 2, 2)}, ValueError, "same number of spatial dimensions"),
    ((ember.zeros(1, 1, 4, 4), 3), {"align_corners": True}, ValueError, "align_corners option"),
    ((ember.zeros(1, 1, 4, 4), 3), {"mode": "linear"}, NotImplementedError, "linear mode needs 3D input"),
    ((ember.zeros(1, 1, 4, 4), 3), {"mode": "fooo"}, NotImplementedError, "Only 3D, 4D and 5D"),
    ((ember.zeros(4, 4), 3), {}, NotImplementedError, "Only 3D, 4D and 5D"),
    ((ember.zeros(1, 1, 4, 4), 3), {"recompute_scale_factor": True}, ValueError, "not meaningful"),
])
def test_interpolate_errors(torch_ref, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        F.interpolate(*args, **kwargs)
    with pytest.raises(exc):
        torch_ref.nn.functional.interpolate(torch_ref.tensor(args[0].numpy()), *args[1:], **kwargs)


def test_upsample_aliases_warn_and_agree():
    x = _t((1, 2, 3, 3), grad=False)
    with pytest.warns(UserWarning, match="deprecated"):
        a = F.upsample(x, scale_factor=2, mode="bilinear", align_corners=False)
    np.testing.assert_array_equal(a.numpy(), F.interpolate(x, scale_factor=2, mode="bilinear").numpy())
    with pytest.warns(UserWarning):
        b = F.upsample_bilinear(x, size=5)
    np.testing.assert_array_equal(b.numpy(), F.interpolate(x, size=5, mode="bilinear", align_corners=True).numpy())
    with pytest.warns(UserWarning):
        c = F.upsample_nearest(x, scale_factor=2)
    np.testing.assert_array_equal(c.numpy(), F.interpolate(x, scale_factor=2).numpy())


# ----------------------------------------------------------------------------- grid_sample / affine_grid
def _grid_inputs(shape, grid_shape, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.uniform(-1.3, 1.3, grid_shape)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(torch_ref, mode, padding_mode, align_corners):
    x, g = _grid_inputs((2, 3, 4, 5), (2, 4, 3, 2))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    ours_x, ours_g = ember.tensor(x, requires_grad=True), ember.tensor(g, requires_grad=True)
    th_x, th_g = torch_ref.tensor(x, requires_grad=True), torch_ref.tensor(g, requires_grad=True)
    out, ref = F.grid_sample(ours_x, ours_g, **kw), torch_ref.nn.functional.grid_sample(th_x, th_g, **kw)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(ref.shape))
    (out * ember.tensor(w)).sum().backward()
    (ref * torch_ref.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), th_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    if mode == "bilinear":
        np.testing.assert_allclose(ours_g.grad.numpy(), th_g.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_grid_sample_5d_matches_torch(torch_ref):
    x, g = _grid_inputs((1, 2, 3, 4, 5), (1, 2, 3, 2, 3))
    for pm in ("zeros", "reflection"):
        check_against_torch(torch_ref, lambda lib, m, a, b: lib.nn.functional.grid_sample(
            a, b, padding_mode=pm, align_corners=False), [x.shape, g.shape], rtol=1e-9, atol=1e-12)


def test_grid_sample_gradcheck_input_and_grid():
    x, g = _grid_inputs((1, 2, 3, 4), (1, 2, 3, 2))
    xs, gs = ember.tensor(x, requires_grad=True), ember.tensor(g * 0.9, requires_grad=True)
    for pm in ("zeros", "border", "reflection"):
        assert gradcheck(lambda a, b: F.grid_sample(a, b, padding_mode=pm, align_corners=False), (xs, gs))


def test_grid_sample_identity_affine_grid_reproduces_input():
    x = _t((2, 3, 4, 5), grad=False)
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2, dtype=ember.float64)
    for align in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=align)
        out = F.grid_sample(x, grid, align_corners=align)
        np.testing.assert_allclose(out.numpy(), x.numpy(), atol=1e-12)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 2, 3, 4)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(torch_ref, size, align_corners):
    k = len(size) - 2
    check_against_torch(torch_ref, _f("affine_grid", size, align_corners=align_corners), [(2, k, k + 1)],
                        rtol=1e-12, atol=1e-14)


def test_grid_sample_and_affine_grid_errors():
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 2, 2, 2), padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="size 2 in last dimension"):
        F.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 2, 2, 2, dtype=ember.float64), align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(ember.zeros(2, 1, 2, 2), ember.zeros(1, 2, 2, 2), align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 2, 2, 2))
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(ember.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False)


# ----------------------------------------------------------------------------- pixel/channel shuffles
@pytest.mark.parametrize("name,arg,shape", [
    ("pixel_shuffle", 2, (2, 8, 3, 4)), ("pixel_shuffle", 3, (9, 2, 2)), ("pixel_unshuffle", 2, (3, 2, 4, 6)),
    ("pixel_unshuffle", 2, (2, 1, 2, 2, 4)), ("channel_shuffle", 4, (2, 8, 3, 4)), ("channel_shuffle", 2, (1, 6, 5))])
def test_shuffles_match_torch(torch_ref, name, arg, shape):
    check_against_torch(torch_ref, _f(name, arg), [shape], rtol=0)
    check_against_torch(torch_ref, lambda lib, m, x: getattr(lib, name)(x, arg), [shape], rtol=0)


def test_pixel_shuffle_roundtrip_and_errors():
    x = _t((2, 12, 3, 5), grad=False)
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="divisible by the square"):
        F.pixel_shuffle(ember.zeros(1, 5, 2, 2), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.pixel_shuffle(ember.zeros(4, 2), 2)
    with pytest.raises(RuntimeError, match="width to be divisible"):
        F.pixel_unshuffle(ember.zeros(1, 1, 4, 3), 2)
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(ember.zeros(1, 5, 2), 2)


# ----------------------------------------------------------------------------- modules
LAYERS = [("ZeroPad1d", (2,), (2, 3, 4)), ("ZeroPad2d", ((1, 0, 2, 1),), (2, 3, 4, 4)),
          ("ZeroPad3d", (1,), (1, 2, 2, 3, 3)),
          ("ConstantPad1d", ((1, 2), 3.5), (2, 3, 4)), ("ConstantPad2d", (1, -1.0), (3, 4, 4)),
          ("ConstantPad3d", ((1, 0, 0, 1, 1, 1), 2.0), (2, 2, 2, 3)),
          ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 2, 0, 1),), (2, 3, 4, 4)),
          ("ReflectionPad3d", (1,), (1, 2, 2, 3, 3)), ("ReplicationPad1d", (3,), (3, 4)),
          ("ReplicationPad2d", (2,), (2, 3, 4, 4)), ("ReplicationPad3d", ((1, 0, 2, 0, 0, 1),), (2, 2, 2, 3, 3)),
          ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad2d", ((1, 2, 0, 1),), (3, 4, 4)),
          ("CircularPad3d", (1,), (1, 2, 2, 3, 3)),
          ("Upsample", (None, 2.0, "bilinear"), (1, 2, 3, 3)),
          ("Upsample", ((4, 5), None, "bicubic", True), (1, 2, 3, 3)),
          ("Upsample", (None, (1.5, 2.0, 2.0), "trilinear"), (1, 1, 2, 2, 3)),
          ("UpsamplingNearest2d", (None, 3), (1, 2, 3, 3)), ("UpsamplingBilinear2d", ((5, 4),), (1, 2, 3, 3)),
          ("PixelShuffle", (2,), (1, 8, 2, 3)), ("PixelUnshuffle", (2,), (1, 2, 4, 6)),
          ("ChannelShuffle", (3,), (2, 6, 2))]


@pytest.mark.parametrize("name,args,shape", LAYERS, ids=[case[0] for case in LAYERS])
def test_layers_match_torch(torch_ref, name, args, shape):
    ours, theirs = getattr(nn, name)(*args), getattr(torch_ref.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    check_against_torch(torch_ref, lambda lib, m, x: (ours if lib is ember else theirs)(x), [shape], rtol=1e-10,
                        atol=1e-12)


def test_circular_pad_layer_checks_dims():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(ember.zeros(2, 3))


# ---- NaN/inf in linear interpolation (issue 8) ----------------------------------------------------------------------
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(1, 5), (1, 3), (2, 3), (5, 2)])
def test_linear_interpolation_reads_only_the_two_neighbours(align_corners, size):
    """A NaN/inf elsewhere in the row does not reach an output (torch's values, written out)."""
    nan, inf = float("nan"), float("inf")
    x = ember.tensor([[[[1.0, nan, 3.0]], [[0.5, inf, -1.0]]]])
    out = F.interpolate(x, size=size, mode="bilinear", align_corners=align_corners)
    expected = {(1, 5): [[nan, nan, nan, nan, 3.0], [nan, nan, nan, nan, -1.0]],
                (1, 3): [[1.0, nan, 3.0], [0.5, nan, -1.0]],
                (2, 3): [[1.0, nan, 3.0] * 2, [0.5, nan, -1.0] * 2]}
    if size in expected:
        np.testing.assert_allclose(out.numpy().reshape(2, -1), np.array(expected[size]), equal_nan=True)
    torch = pytest.importorskip("torch")
    theirs = torch.nn.functional.interpolate(torch.tensor(x.numpy()), size=size, mode="bilinear",
                                             align_corners=align_corners)
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)


def test_interpolate_refuses_an_empty_input():
    with pytest.raises(RuntimeError, match="interpolate: Input and output sizes should be greater than 0"):
        F.interpolate(ember.ones(1, 3, 0, 1), size=(2, 3))
