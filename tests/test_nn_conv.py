"""Convolution, transposed convolution and fold/unfold: values and gradients against torch, gradcheck, errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same.:UserWarning")

RNG = np.random.default_rng(7)


def _randn(*shape):
    return RNG.standard_normal(shape)


def _both(torch, name, arrays, *args, **kwargs):
    """Run F.<name> in ember and torch on the same float64 arrays; return outputs and input grads of both."""
    ours = [ember.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    out_e = getattr(F, name)(*ours, *args, **kwargs)
    out_t = getattr(torch.nn.functional, name)(*theirs, *args, **kwargs)
    g = RNG.standard_normal(tuple(out_t.shape))
    out_e.backward(ember.tensor(g))
    out_t.backward(torch.tensor(g))
    grads = [(a.grad.numpy(), b.grad.numpy()) for a, b in zip(ours, theirs) if a is not None]
    return out_e.detach().numpy(), out_t.detach().numpy(), grads


def _assert_matches(torch, name, arrays, *args, **kwargs):
    ours, theirs, grads = _both(torch, name, arrays, *args, **kwargs)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    for mine, ref in grads:
        np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-10)


CONV_CASES = [
    # name, input shape, weight shape, kwargs
    ("conv1d", (2, 4, 9), (6, 4, 3), dict(stride=2, padding=1)),
    ("conv1d", (2, 4, 9), (6, 2, 2), dict(padding="same", dilation=3, groups=2)),
    ("conv1d", (3, 7), (2, 3, 3), dict(padding="valid")),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    ("conv2d", (2, 3, 6, 6), (4, 3, 2, 2), dict(padding="same")),
    ("conv2d", (2, 4, 5, 5), (4, 1, 3, 3), dict(padding=1, groups=4)),
    ("conv2d", (4, 5, 6), (3, 4, 3, 3), dict(stride=2)),
    ("conv3d", (1, 2, 4, 5, 3), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1))),
    ("conv3d", (2, 4, 3, 4, 4), (2, 2, 1, 2, 3), dict(dilation=(1, 2, 1), groups=2, padding="same")),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("name,xshape,wshape,kwargs", CONV_CASES)
def test_conv_matches_torch(torch_ref, name, xshape, wshape, kwargs, bias):
    arrays = [_randn(*xshape), _randn(*wshape), _randn(wshape[0]) if bias else None]
    _assert_matches(torch_ref, name, arrays, **kwargs)


TRANSPOSE_CASES = [
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2)),
    ("conv_transpose1d", (4, 5), (4, 2, 2), dict(groups=2, dilation=2)),
    ("conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 2),
     dict(stride=2, padding=1, output_padding=(1, 0), groups=2, dilation=(1, 2))),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 2, 3, 3), dict(stride=2, dilation=3, output_padding=2)),
    ("conv_transpose3d", (1, 2, 3, 4, 2), (2, 2, 2, 2, 3), dict(stride=2, dilation=(1, 2, 1), padding=(0, 1, 0))),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("name,xshape,wshape,kwargs", TRANSPOSE_CASES)
def test_conv_transpose_matches_torch(torch_ref, name, xshape, wshape, kwargs, bias):
    groups = kwargs.get("groups", 1)
    arrays = [_randn(*xshape), _randn(*wshape), _randn(wshape[1] * groups) if bias else None]
    _assert_matches(torch_ref, name, arrays, **kwargs)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 2), groups=st.sampled_from([1, 2]), cin_g=st.integers(1, 2), cout_g=st.integers(1, 2),
       h=st.integers(3, 7), w=st.integers(3, 7), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)))
def test_conv2d_random_configs_match_torch(n, groups, cin_g, cout_g, h, w, kh, kw, stride, dilation, padding):
    torch = pytest.importorskip("torch")
    if any(size + 2 * p < d * (k - 1) + 1 for size, p, d, k in zip((h, w), padding, dilation, (kh, kw))):
        return
    x = _randn(n, cin_g * groups, h, w)
    weight = _randn(cout_g * groups, cin_g, kh, kw)
    kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(weight), **kwargs).numpy()
    got = F.conv2d(ember.tensor(x), ember.tensor(weight), **kwargs).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_conv2d_float32_and_float16(torch_ref):
    x, w, b = _randn(2, 3, 8, 8), _randn(5, 3, 3, 3), _randn(5)
    for ours, theirs, tol in ((ember.float32, torch_ref.float32, 1e-5), (ember.float16, torch_ref.float16, 2e-2)):
        got = F.conv2d(*(ember.tensor(a, dtype=ours) for a in (x, w, b)), padding=1)
        expected = torch_ref.nn.functional.conv2d(*(torch_ref.tensor(a, dtype=theirs) for a in (x, w, b)), padding=1)
        assert got.dtype is ours
        np.testing.assert_allclose(got.numpy().astype(np.float64), expected.numpy().astype(np.float64),
                                   rtol=tol, atol=tol * 10)


def test_conv2d_integer_input_matches_torch(torch_ref):
    x = RNG.integers(-5, 5, (2, 3, 5, 5))
    w = RNG.integers(-3, 3, (4, 3, 2, 2))
    got = F.conv2d(ember.tensor(x), ember.tensor(w), stride=2)
    expected = torch_ref.nn.functional.conv2d(torch_ref.tensor(x), torch_ref.tensor(w), stride=2)
    assert got.dtype is ember.int64
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_conv1d_matches_numpy_reference():
    """A direct sum over taps, independent of torch."""
    x, w, b = _randn(2, 3, 10), _randn(4, 3, 3), _randn(4)
    out = F.conv1d(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride=2, dilation=2).numpy()
    length = (10 - 2 * 2 - 1) // 2 + 1
    expected = np.empty((2, 4, length))
    for i in range(length):
        window = x[:, :, i * 2:i * 2 + 5:2]  # (N, C, taps)
        expected[:, :, i] = np.einsum("nck,ock->no", window, w) + b
    np.testing.assert_allclose(out, expected, rtol=1e-12)


GRAD_CASES = [
    (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2), (2, 4, 5, 5), (4, 2, 2, 2),
     4),
    (lambda x, w, b: F.conv1d(x, w, b, padding="same", dilation=2), (2, 2, 6), (3, 2, 2), 3),
    (lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=(1, 0, 1)), (1, 2, 3, 3, 2), (2, 2, 2, 2, 2), 2),
    (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 3),
     (4, 3, 3, 2), 6),
    (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, dilation=2, output_padding=1), (1, 2, 4), (2, 3, 2), 3),
]


@pytest.mark.parametrize("fn,xshape,wshape,nbias", GRAD_CASES)
def test_conv_gradcheck_and_gradgradcheck(fn, xshape, wshape, nbias):
    inputs = [ember.tensor(_randn(*s), requires_grad=True) for s in (xshape, wshape, (nbias,))]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_conv_double_backward_matches_torch(torch_ref):
    """A gradient penalty: d/dw of |d(conv(x, w))/dx|^2, as in WGAN-GP."""
    x, w = _randn(2, 3, 6, 6), _randn(4, 3, 3, 3)

    def penalty(lib, fn):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = fn.conv2d(xt, wt, stride=2, padding=1)
        (gx,) = lib.autograd.grad((out * out).sum(), xt, create_graph=True)
        (gw,) = lib.autograd.grad((gx * gx).sum(), wt)
        return gw.numpy()

    np.testing.assert_allclose(penalty(ember, F), penalty(torch_ref, torch_ref.nn.functional), rtol=1e-9, atol=1e-9)


def test_conv_only_weight_requires_grad():
    x = ember.tensor(_randn(2, 3, 5, 5))
    w = ember.tensor(_randn(4, 3, 3, 3), requires_grad=True)
    F.conv2d(x, w).sum().backward()
    # d(sum)/dw[o, c, i, j] is the sum of the input values that tap (i, j) sees.
    expected = np.stack([x.numpy()[:, :, i:i + 3, j:j + 3].sum(axis=(0, 2, 3))
                         for i in range(3) for j in range(3)], -1).reshape(3, 3, 3)
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(expected, (4, 3, 3, 3)), rtol=1e-12)
    assert x.grad is None


def test_conv_saved_input_modified_in_place_raises():
    x = ember.tensor(_randn(1, 1, 4, 4), requires_grad=True)
    y = x * 1
    out = F.conv2d(y, ember.tensor(_randn(1, 1, 2, 2), requires_grad=True))
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_torch_namespace_exports():
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d"):
        assert getattr(ember, name) is getattr(F, name)


# ---------------------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call,match", [
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 3, 3, 3)), "to have 3 channels, but got 4"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(5, 2, 3, 3), groups=2), "divisible by 2"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 7, 7)), "Kernel size can't be greater"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), stride=0), "non-positive stride"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), padding=-1), "negative padding"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), dilation=0), "non-positive dilation"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), groups=0), "non-positive groups"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), padding="same", stride=2),
     "not supported for strided"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), padding="foo"), "Invalid padding string"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), ember.randn(5)), "expected bias"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3, dtype=ember.float64)), "should be the same"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5), ember.randn(6, 4, 3, 3), stride=(1, 1, 1)), "list of 2 values"),
    (lambda: F.conv2d(ember.randn(2, 4, 5, 5, 5), ember.randn(6, 4, 3, 3)), "Expected 3D \\(unbatched\\) or 4D"),
    (lambda: F.conv_transpose2d(ember.randn(2, 4, 5, 5), ember.randn(4, 3, 3, 3), output_padding=1),
     "output padding must be smaller"),
    (lambda: F.conv_transpose2d(ember.randn(2, 4, 5, 5), ember.randn(5, 3, 3, 3)), "to have 5 channels"),
    (lambda: F.conv_transpose2d(ember.randn(2, 4, 1, 1), ember.randn(4, 3, 1, 1), padding=1), "too small"),
])
def test_conv_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_conv_type_errors():
    with pytest.raises(TypeError):
        F.conv2d(ember.randn(2, 4, 5, 5), 3)
    with pytest.raises(TypeError):
        F.conv_transpose2d(ember.randn(2, 4, 5, 5), ember.randn(4, 3, 3, 3), padding="same")
    with pytest.raises(NotImplementedError):
        F.conv2d(ember.ones(1, 1, 3, 3, dtype=ember.bool), ember.ones(1, 1, 2, 2, dtype=ember.bool))


# ---------------------------------------------------------------------------------------------------------- modules
MODULE_CASES = [
    ("Conv1d", (2, 4, 3), dict(padding_mode="circular", bias=False, groups=2, dilation=2)),
    ("Conv2d", (3, 4, 3), dict(padding="same")),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=2, padding=(1, 0), groups=2)),
    ("Conv2d", (3, 2, 3), dict(padding=1, padding_mode="reflect")),
    ("Conv2d", (3, 2, 3), dict(padding=(2, 1), padding_mode="replicate", dilation=2)),
    ("Conv3d", (2, 2, 2), dict(padding="valid", bias=False)),
    ("ConvTranspose1d", (2, 3, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose2d", (4, 2, 3), dict(stride=2, padding=1, groups=2, dilation=2, bias=False)),
    ("ConvTranspose3d", (2, 2, 2), dict(stride=(1, 2, 1))),
]


def _input_for(name, channels):
    dims = 3 if name.endswith("3d") else 2 if name.endswith("2d") else 1
    return _randn(2, channels, *([5] * dims))


@pytest.mark.parametrize("name,args,kwargs", MODULE_CASES)
def test_conv_module_matches_torch(torch_ref, name, args, kwargs):
    ours = getattr(nn, name)(*args, **kwargs).double()
    theirs = getattr(torch_ref.nn, name)(*args, **kwargs).double()
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.named_parameters()} == \
        {k: tuple(v.shape) for k, v in theirs.named_parameters()}
    with torch_ref.no_grad():
        for k, v in ours.named_parameters():
            dict(theirs.named_parameters())[k].copy_(torch_ref.tensor(v.detach().numpy()))
    x = _input_for(name, args[0])
    np.testing.assert_allclose(ours(ember.tensor(x)).detach().numpy(),
                               theirs(torch_ref.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-10)


def test_conv_module_default_init_bounds():
    ember.manual_seed(0)
    layer = nn.Conv2d(16, 32, 3)
    fan_in = 16 * 9
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) gives sqrt(6 / ((1 + 5) * fan_in))
    w = layer.weight.detach().numpy()
    assert np.abs(w).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    b = layer.bias.detach().numpy()
    assert np.abs(b).max() <= bound and b.std() > 0.3 * bound
    transposed = nn.ConvTranspose2d(8, 4, 2, groups=2)
    assert tuple(transposed.weight.shape) == (8, 2, 2, 2)
    assert np.abs(transposed.weight.detach().numpy()).max() <= 1 / math.sqrt(2 * 4)


def test_conv_transpose_module_output_size(torch_ref):
    ours = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    theirs = torch_ref.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = _randn(1, 2, 4, 4)
    for size in ((8, 8), (7, 8), [1, 3, 8, 7]):
        assert tuple(ours(ember.tensor(x, dtype=ember.float32), output_size=size).shape) == \
            tuple(theirs(torch_ref.tensor(x, dtype=torch_ref.float32), output_size=size).shape)
    with pytest.raises(ValueError, match="requested an output size"):
        ours(ember.tensor(x, dtype=ember.float32), output_size=(9, 9))


def test_conv_module_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="Invalid padding string"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(4, 4, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")


def test_conv_module_trains_weights():
    ember.manual_seed(0)
    layer = nn.Conv2d(1, 2, 3, padding=1)
    out = layer(ember.randn(4, 1, 6, 6))
    out.pow(2).mean().backward()
    assert layer.weight.grad.shape == layer.weight.shape and layer.bias.grad.shape == (2,)
    assert float(layer.weight.grad.abs().sum()) > 0


# ---------------------------------------------------------------------------------------------------- unfold / fold
def test_unfold_fold_match_torch(torch_ref):
    kwargs = dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2))
    x = _randn(2, 3, 6, 7)
    _assert_matches(torch_ref, "unfold", [x], **kwargs)
    blocks = torch_ref.nn.functional.unfold(torch_ref.tensor(x), **kwargs).shape
    _assert_matches(torch_ref, "fold", [_randn(*blocks)], (6, 7), **kwargs)
    _assert_matches(torch_ref, "unfold", [_randn(3, 4, 4)], 2)
    _assert_matches(torch_ref, "fold", [_randn(8, 9)], (4, 4), 2)


def test_unfold_matches_conv():
    """conv2d == weight matrix @ unfold(input): the identity im2col convolution rests on."""
    x, w = _randn(2, 3, 6, 5), _randn(4, 3, 2, 3)
    cols = F.unfold(ember.tensor(x), (2, 3), padding=1, stride=2)
    via_unfold = (ember.tensor(w.reshape(4, -1)) @ cols).numpy()
    direct = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1, stride=2).numpy().reshape(2, 4, -1)
    np.testing.assert_allclose(via_unfold, direct, rtol=1e-12)


def test_fold_unfold_gradgradcheck():
    x = ember.tensor(_randn(1, 2, 4, 5), requires_grad=True)
    assert gradgradcheck(lambda t: F.unfold(t, 2, padding=1, stride=2), [x])
    cols = ember.tensor(_randn(1, 8, 6), requires_grad=True)
    assert gradgradcheck(lambda t: F.fold(t, (3, 4), 2), [cols])


def test_fold_unfold_errors_and_modules(torch_ref):
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.unfold(ember.randn(2, 3, 4, 5, 6), 2)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.unfold(ember.randn(2, 3, 6, 7), 8)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        F.unfold(ember.randn(2, 3, 6, 7), 0)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(ember.randn(2, 13, 30), (6, 7), 2)
    with pytest.raises(RuntimeError, match="match the calculated number of sliding blocks"):
        F.fold(ember.randn(2, 12, 30), (6, 8), 2)
    with pytest.raises(NotImplementedError):
        F.unfold(ember.ones(1, 1, 3, 3, dtype=ember.int64), 2)
    assert repr(nn.Fold((4, 5), 2)) == repr(torch_ref.nn.Fold((4, 5), 2))
    assert repr(nn.Unfold(2, padding=1)) == repr(torch_ref.nn.Unfold(2, padding=1))
    x = _randn(1, 2, 4, 4)
    np.testing.assert_allclose(nn.Fold((4, 4), 2, stride=2)(nn.Unfold(2, stride=2)(ember.tensor(x))).numpy(), x)


def test_small_cnn_gradients_match_torch(torch_ref):
    """Conv -> ReLU -> MaxPool -> Conv -> AdaptiveAvgPool -> Linear: loss and every parameter gradient."""

    def build(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
                                 lib.nn.Conv2d(4, 6, 3, groups=2), lib.nn.AdaptiveAvgPool2d(2), lib.nn.Flatten(),
                                 lib.nn.Linear(24, 3)).double()

    ours, theirs = build(ember), build(torch_ref)
    with torch_ref.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch_ref.tensor(p.detach().numpy()))
    x = _randn(5, 1, 10, 10)
    loss_e = ours(ember.tensor(x)).pow(2).mean()
    loss_t = theirs(torch_ref.tensor(x)).pow(2).mean()
    loss_e.backward()
    loss_t.backward()
    np.testing.assert_allclose(loss_e.item(), loss_t.item(), rtol=1e-10)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---- argument checks agreeing with torch (issue 8) -------------------------------------------------------------------
def test_empty_batch_convolves_a_weight_of_another_dtype():
    out = F.conv2d(ember.ones(0, 2, 6, 2), ember.ones(2, 2, 3, 1, dtype=ember.float64), stride=2, padding=1)
    assert out.shape == (0, 2, 3, 2) and out.dtype is ember.float32
    out = F.conv_transpose1d(ember.ones(0, 2, 3), ember.ones(2, 3, 2, dtype=ember.float64))
    assert out.shape == (0, 3, 4) and out.dtype is ember.float32
    with pytest.raises(RuntimeError, match="Input type \\(float\\) and bias type \\(double\\) should be the same"):
        F.conv1d(ember.ones(0, 2, 6), ember.ones(2, 2, 3), ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv1d(ember.ones(1, 2, 6), ember.ones(2, 2, 3, dtype=ember.float64))


def test_empty_input_needs_an_empty_batch_or_channels():
    with pytest.raises(RuntimeError, match=r"conv1d: Only zero batch or zero channel inputs are supported, but got "
                                           r"input shape: \[1, 4, 1, 0\]"):
        F.conv1d(ember.ones(1, 4, 0), ember.ones(3, 4, 1), padding=1)
    with pytest.raises(RuntimeError, match=r"conv2d: Only zero batch .* \[1, 4, 0, 3\]"):
        F.conv2d(ember.ones(1, 4, 0, 3), ember.ones(3, 4, 1, 1), padding=1)
