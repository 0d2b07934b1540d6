"""``Sequential``'s fused Linear + activation: the same values and gradients as the layers run apart, against
NumPy in float64 and against torch; finite-difference gradients, second derivatives, and the cases that must
not fuse (hooks, subclasses, no bias, 1-D input)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
from ember.autograd import gradcheck
from ember.nn.functional.linear_activation import linear_activation

_erf = np.vectorize(math.erf)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


# id -> (layer factory, fused kernel name and parameters, NumPy float64 reference of the activation)
ACTS = {
    "relu": (nn.ReLU, ("relu", ()), lambda v: np.maximum(v, 0)),
    "gelu": (nn.GELU, ("gelu", ()), lambda v: 0.5 * v * (1 + _erf(v / math.sqrt(2)))),
    "gelu_tanh": (lambda: nn.GELU("tanh"), ("gelu_tanh", ()),
                  lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))),
    "tanh": (nn.Tanh, ("tanh", ()), np.tanh),
    "sigmoid": (nn.Sigmoid, ("logistic", ()), _sigmoid),
    "silu": (nn.SiLU, ("silu", ()), lambda v: v * _sigmoid(v)),
    "leaky_relu": (lambda: nn.LeakyReLU(0.2), ("leaky_relu", (0.2,)), lambda v: np.where(v > 0, v, 0.2 * v)),
    "mish": (nn.Mish, ("mish", ()), lambda v: v * np.tanh(np.log1p(np.exp(v)))),
    "hardswish": (nn.Hardswish, ("hardswish", ()), lambda v: v * np.clip(v + 3, 0, 6) / 6),
}
TOL = {ember.float32: dict(rtol=1e-5, atol=1e-5), ember.float64: dict(rtol=1e-12, atol=1e-13)}


def _pair(act: str, dtype, n_in: int = 6, n_out: int = 5, seed: int = 0):
    ember.manual_seed(seed)
    return nn.Linear(n_in, n_out, dtype=dtype), ACTS[act][0]()


def _input(shape, dtype, seed: int = 1) -> ember.Tensor:
    data = np.random.default_rng(seed).normal(0, 2, shape)
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def _run(modules, x: ember.Tensor, g: np.ndarray):
    """Output and (x, weight, bias) gradients of running ``modules`` on a fresh copy of ``x``."""
    linear = modules[0]
    for p in linear.parameters():
        p.grad = None
    x = x.detach().requires_grad_(True)
    out = modules(x) if isinstance(modules, nn.Sequential) else modules[1](linear(x))
    out.backward(ember.tensor(g, dtype=out.dtype))
    return out, [t.grad.numpy() for t in (x, linear.weight, linear.bias)]


def _fused_and_apart(act: str, dtype, shape):
    linear, layer = _pair(act, dtype, n_in=shape[-1])
    x = _input(shape, dtype)
    g = np.random.default_rng(2).normal(size=(*shape[:-1], linear.out_features))
    fused = _run(nn.Sequential(linear, layer), x, g)
    apart = _run((linear, layer), x, g)
    return fused, apart, (linear, x)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("act", sorted(ACTS))
def test_fused_matches_layers_apart(act, dtype):
    (out, grads), (want, want_grads), _ = _fused_and_apart(act, dtype, (7, 6))
    assert type(out.grad_fn)._forward_cls.__name__ == "_LinearActivation"
    assert out.dtype is dtype and out.shape == want.shape
    if act == "relu" and dtype is ember.float32:
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(grads[0], want_grads[0])
        np.testing.assert_array_equal(grads[1], want_grads[1])
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), **TOL[dtype])
    for got, expected in zip(grads, want_grads):
        np.testing.assert_allclose(got, expected, **TOL[dtype])


@pytest.mark.parametrize("act", sorted(ACTS))
def test_fused_matches_numpy_float64(act):
    linear, layer = _pair(act, ember.float64)
    x = _input((9, 6), ember.float64)
    out = nn.Sequential(linear, layer)(x)
    pre = x.detach().numpy() @ linear.weight.detach().numpy().T + linear.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), ACTS[act][2](pre), rtol=1e-12, atol=1e-13)


def _weights(seed: int = 5):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.normal(0, 1.5, s), dtype=ember.float64, requires_grad=True)
            for s in ((4, 3), (5, 3), (5,))]


@pytest.mark.parametrize("act", sorted(ACTS))
def test_gradcheck(act):
    name, params = ACTS[act][1]
    assert gradcheck(lambda x, w, b: linear_activation(x, w, b, name, params), tuple(_weights()))


@pytest.mark.parametrize("act", sorted(ACTS))
def test_second_derivative_by_finite_differences(act):
    """d/dW of the gradient penalty |d sum(f(xW'+b)) / dx|^2 against central differences in W."""
    name, params = ACTS[act][1]
    x, w, b = _weights()

    def penalty(w):
        (gx,) = ember.autograd.grad(linear_activation(x, w, b, name, params).sum(), x, create_graph=True)
        return (gx * gx).sum()

    (analytic,) = ember.autograd.grad(penalty(w), w)
    numeric = np.zeros(w.shape)
    eps = 1e-6
    for i in np.ndindex(*w.shape):
        for sign in (1, -1):
            moved = w.detach().numpy().copy()
            moved[i] += sign * eps
            numeric[i] += sign * penalty(ember.tensor(moved, requires_grad=True)).item() / (2 * eps)
    np.testing.assert_allclose(analytic.numpy(), numeric, rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(lead=st.lists(st.integers(0, 4), min_size=1, max_size=3), n_in=st.integers(1, 5),
       act=st.sampled_from(sorted(ACTS)))
def test_any_batch_shape_matches_layers_apart(lead, n_in, act):
    (out, grads), (want, want_grads), _ = _fused_and_apart(act, ember.float64, (*lead, n_in))
    assert out.shape == want.shape
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), **TOL[ember.float64])
    for got, expected in zip(grads, want_grads):
        np.testing.assert_allclose(got, expected, **TOL[ember.float64])


def test_empty_batch_gives_zero_bias_grad():
    (out, grads), _, _ = _fused_and_apart("gelu", ember.float32, (0, 6))
    assert out.shape == (0, 5)
    np.testing.assert_array_equal(grads[2], np.zeros(5, np.float32))


def test_frozen_layer_and_non_contiguous_input():
    linear, layer = _pair("gelu", ember.float64)
    linear.requires_grad_(False)
    x = _input((6, 2, 3), ember.float64).transpose(0, 2)  # (3, 2, 6), not contiguous
    g = np.random.default_rng(3).normal(size=(3, 2, 5))
    grads = []
    for run in (nn.Sequential(linear, layer), lambda t: layer(linear(t))):
        leaf = x.detach().requires_grad_(True)
        out = run(leaf.transpose(0, 2).transpose(0, 2))
        out.backward(ember.tensor(g))
        grads.append((out.detach().numpy(), leaf.grad.numpy()))
    assert linear.weight.grad is None and linear.bias.grad is None
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, **TOL[ember.float64])


def test_float16_computes_like_layers_apart():
    (out, grads), (want, want_grads), _ = _fused_and_apart("silu", ember.float16, (8, 6))
    assert out.dtype is ember.float16
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=2e-3, atol=2e-3)
    for got, expected in zip(grads, want_grads):
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("act", ["relu", "gelu", "sigmoid"])
def test_no_grad_forward_matches(act):
    linear, layer = _pair(act, ember.float32)
    x = _input((3, 6), ember.float32)
    with ember.no_grad():
        out = nn.Sequential(linear, layer)(x)
        want = layer(linear(x))
    assert out.grad_fn is None
    np.testing.assert_allclose(out.numpy(), want.numpy(), **TOL[ember.float32])


@pytest.mark.parametrize("act", sorted(ACTS))
def test_double_backward_through_sequential(act):
    """A gradient penalty: d/dW of |d out / dx|^2, fused against apart."""
    linear, layer = _pair(act, ember.float64)
    x = _input((4, 6), ember.float64)
    results = []
    for run in (nn.Sequential(linear, layer), lambda t: layer(linear(t))):
        linear.weight.grad = None
        (gx,) = ember.autograd.grad(run(x).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        results.append((gx.detach().numpy(), linear.weight.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def _made_by(model, x) -> str:
    return type(model(x).grad_fn)._forward_cls.__name__


def test_hooks_disable_fusion_and_still_run():
    linear, layer = _pair("relu", ember.float32)
    model = nn.Sequential(linear, layer)
    x = _input((3, 6), ember.float32)
    assert _made_by(model, x) == "_LinearActivation"
    seen = []
    handle = linear.register_forward_hook(lambda m, args, out: seen.append(out.detach().numpy().copy()))
    out = model(x)
    assert type(out.grad_fn)._forward_cls.__name__ != "_LinearActivation"
    np.testing.assert_allclose(seen[0], (linear(x) + 0).detach().numpy())
    handle.remove()
    assert _made_by(model, x) == "_LinearActivation"
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    np.testing.assert_array_equal(model(x).detach().numpy(), np.zeros((3, 5), np.float32))
    pre.remove()
    back = layer.register_full_backward_hook(lambda m, gi, go: seen.append("backward"))
    model(x).sum().backward()
    assert seen[-1] == "backward"
    back.remove()


def test_what_does_not_fuse():
    class MyReLU(nn.ReLU):
        def forward(self, input):
            return input * 2

    x = _input((3, 6), ember.float32)
    ember.manual_seed(0)
    subclassed = nn.Sequential(nn.Linear(6, 5), MyReLU())
    np.testing.assert_allclose(subclassed(x).detach().numpy(), (subclassed[0](x) * 2).detach().numpy())
    assert _made_by(nn.Sequential(nn.Linear(6, 5, bias=False), nn.ReLU()), x) != "_LinearActivation"
    assert _made_by(nn.Sequential(nn.Linear(6, 5), nn.Dropout(0.0), nn.ReLU()), x) != \
        "_LinearActivation"
    one_d = nn.Sequential(nn.Linear(6, 5), nn.ReLU())(x[0])
    assert one_d.shape == (5,) and type(one_d.grad_fn)._forward_cls.__name__ != "_LinearActivation"


def test_shape_errors_match_linear():
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU())
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        model(_input((3, 4), ember.float32))
    with pytest.raises(RuntimeError, match="same dtype"):
        model(_input((3, 6), ember.float64))


def test_linear_activation_rejects_what_it_cannot_run():
    x, w, b = _weights()
    with pytest.raises(ValueError, match="unknown activation"):
        linear_activation(x, w, b, "softmax")
    with pytest.raises(ValueError, match="2 or more dimensions"):
        linear_activation(x[0], w, b, "relu")


def test_modifying_saved_output_in_place_is_caught():
    out = nn.Sequential(nn.Linear(6, 5), nn.Tanh())(_input((3, 6), ember.float32))
    out.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "tanh", "sigmoid", "silu", "leaky_relu"])
def test_matches_torch_sequential(act, torch_ref):
    torch = torch_ref
    linear, layer = _pair(act, ember.float64)
    torch_layer = {"relu": torch.nn.ReLU(), "gelu": torch.nn.GELU(), "gelu_tanh": torch.nn.GELU("tanh"),
                   "tanh": torch.nn.Tanh(), "sigmoid": torch.nn.Sigmoid(), "silu": torch.nn.SiLU(),
                   "leaky_relu": torch.nn.LeakyReLU(0.2)}[act]
    torch_linear = torch.nn.Linear(6, 5, dtype=torch.float64)
    with torch.no_grad():
        torch_linear.weight.copy_(torch.from_numpy(linear.weight.detach().numpy()))
        torch_linear.bias.copy_(torch.from_numpy(linear.bias.detach().numpy()))
    x = np.random.default_rng(7).normal(0, 2, (2, 3, 6))
    g = np.random.default_rng(8).normal(size=(2, 3, 5))
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eout, tout = nn.Sequential(linear, layer)(ex), torch.nn.Sequential(torch_linear, torch_layer)(tx)
    eout.backward(ember.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(eout.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-13)
    for e, t in ((ex, tx), (linear.weight, torch_linear.weight), (linear.bias, torch_linear.bias)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-11, atol=1e-12)
