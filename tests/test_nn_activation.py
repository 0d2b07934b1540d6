"""Activations and the softmax family of ember.nn: values and gradients against torch with first and second
derivatives (declared once for the op harness, so they run on every backend), in-place forms, modules and their
printed form."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn as nn
import ember.nn.functional as F
from op_harness import Case, Input, op_tests

# name -> the call on (nn.functional, x): the same call runs on ember and on torch
ACTIVATIONS = {
    "relu": lambda f, x: f.relu(x),
    "relu6": lambda f, x: f.relu6(x),
    "hardtanh": lambda f, x: f.hardtanh(x, -0.5, 2.0),
    "leaky_relu": lambda f, x: f.leaky_relu(x, 0.2),
    "elu": lambda f, x: f.elu(x, 1.5),
    "selu": lambda f, x: f.selu(x),
    "celu": lambda f, x: f.celu(x, 2.0),
    "gelu": lambda f, x: f.gelu(x),
    "gelu_tanh": lambda f, x: f.gelu(x, approximate="tanh"),
    "silu": lambda f, x: f.silu(x),
    "mish": lambda f, x: f.mish(x),
    "hardswish": lambda f, x: f.hardswish(x),
    "hardsigmoid": lambda f, x: f.hardsigmoid(x),
    "softplus": lambda f, x: f.softplus(x),
    "softplus_beta": lambda f, x: f.softplus(x, 2.0, 3.0),
    "softsign": lambda f, x: f.softsign(x),
    "softshrink": lambda f, x: f.softshrink(x, 0.5),
    "hardshrink": lambda f, x: f.hardshrink(x, 0.5),
    "tanhshrink": lambda f, x: f.tanhshrink(x),
    "threshold": lambda f, x: f.threshold(x, 0.5, -2.0),
    "logsigmoid": lambda f, x: f.logsigmoid(x),
    "sigmoid": lambda f, x: f.sigmoid(x),
    "tanh": lambda f, x: f.tanh(x),
    "rrelu_eval": lambda f, x: f.rrelu(x, 0.1, 0.3, training=False),
    "glu": lambda f, x: f.glu(x, 0),
}
# Points where the piecewise definitions switch (torch's tie rules are checked there), plus tails.
SPECIAL = [-3.0, 3.0, 0.0, -1.0, 1.0, 6.0, -0.5, 0.5, 2.0, -25.0, 25.0, 1e-20, -1e-20, 80.0, -80.0, -1000.0, -60.0,
           -30.0, -1e-3, 1e-3, 9.9, 10.1, 21.0, 30.0, 90.0, 1000.0]
VALUES = np.concatenate([np.random.default_rng(0).normal(0, 3, 64), SPECIAL, [0.25] * 2]).reshape(2, -1)
SMOOTH = np.array([[-2.7, -1.3, -0.4, 0.35], [0.9, 1.7, 2.6, -0.8]])  # away from the kinks: finite differences hold
TOL = {"hardsigmoid": {"float64": (1e-7, 1e-12)}}  # torch's double backward uses a float32 1/6
SOFTMAXES = ["softmax", "log_softmax", "softmin"]
SOFTMAX_SHAPES = {0: (((7,),), ((3, 5),), ((),)), 1: (((3, 5),), ((2, 3, 4),), ((4, 1),)),
                  -1: (((2, 3, 4),), ((2, 37),), ((6, 2),), ((1, 1),))}

ACTIVATION_CASES = [
    *(Case(name, lambda m, x, call=call: call(m.nn.functional, x), [Input(values=VALUES)], grad_inputs=[
        Input(values=SMOOTH)], tol=TOL.get(name, {})) for name, call in ACTIVATIONS.items()),
    *(Case(f"{name}-dim{dim}", lambda m, x, name=name, dim=dim: getattr(m.nn.functional, name)(x, dim),
           [Input((2, 3, 3), -6, 6)], shapes=shapes) for name in SOFTMAXES for dim, shapes in SOFTMAX_SHAPES.items()),
    Case("prelu", lambda m, x, w: m.nn.functional.prelu(x, w), [Input((2, 3, 4)), Input((3,), 0.1, 0.3)]),
]
test_forward, test_gradcheck, test_gradgradcheck = op_tests(ACTIVATION_CASES)


def test_float16_is_computed_in_float32(torch_ref):
    x = np.linspace(-4, 4, 33).astype(np.float16)
    for name in ("gelu", "silu", "elu"):
        out = ACTIVATIONS[name](F, ember.tensor(x))
        ref = ACTIVATIONS[name](torch_ref.nn.functional, torch_ref.tensor(x).float()).half()
        assert out.dtype == ember.float16
        np.testing.assert_allclose(out.numpy().astype(np.float32), ref.numpy().astype(np.float32), rtol=1e-3,
                                   atol=1e-3)


def test_large_input_runs_the_parallel_path_and_keeps_layout(torch_ref):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 8, 96, 96)).astype(np.float32)
    xt = ember.tensor(x).contiguous(memory_format=ember.channels_last) if hasattr(ember.Tensor, "contiguous") \
        else ember.tensor(x)
    out = F.gelu(xt, approximate="tanh")
    ref = torch_ref.nn.functional.gelu(torch_ref.tensor(x), approximate="tanh").numpy()
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-5, atol=2e-6)
    assert out.stride() == xt.stride()


def test_noncontiguous_input_and_gradient():
    x = ember.tensor(np.random.default_rng(4).normal(size=(5, 6)), requires_grad=True)
    y = F.silu(x.t())
    y.sum().backward()  # the incoming gradient is an expanded (stride 0) tensor
    s = 1 / (1 + np.exp(-x.detach().numpy()))
    np.testing.assert_allclose(y.detach().numpy(), (x.detach().numpy() * s).T, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), s * (1 + x.detach().numpy() * (1 - s)), rtol=1e-12)


def test_integer_inputs_are_rejected_like_torch():
    x = ember.tensor([1, 2, 3])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.gelu(x)
    with pytest.raises(NotImplementedError):
        F.silu(x)
    assert F.hardtanh(x, 0, 2).tolist() == [1, 2, 2]
    assert F.relu(ember.tensor([-1, 2])).tolist() == [0, 2]


def test_argument_errors(torch_ref):
    x = ember.ones(4)
    with pytest.raises(RuntimeError, match="approximate argument"):
        F.gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match="alpha cannot be 0"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(ember.ones(3))
    with pytest.raises(RuntimeError, match="Lower bound"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        F.prelu(ember.ones(2, 3), ember.ones(2))


@pytest.mark.parametrize("name,fn", [
    ("relu", lambda x: F.relu(x, inplace=True)), ("relu_", F.relu_),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1, inplace=True)), ("leaky_relu_", lambda x: F.leaky_relu_(x, 0.1)),
    ("elu_", F.elu_), ("selu_", F.selu_), ("celu_", F.celu_), ("hardtanh_", F.hardtanh_),
    ("relu6", lambda x: F.relu6(x, inplace=True)), ("silu", lambda x: F.silu(x, inplace=True)),
    ("mish", lambda x: F.mish(x, inplace=True)), ("hardswish", lambda x: F.hardswish(x, inplace=True)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x, inplace=True)), ("threshold_", lambda x: F.threshold_(x, 0.1, 9.0)),
])
def test_inplace_variants_write_into_input_and_backprop(name, fn, torch_ref):
    x0 = np.array([-2.0, -0.5, 0.0, 0.3, 1.5, 7.0])
    leaf = ember.tensor(x0, requires_grad=True)
    x = leaf * 1.0
    out = fn(x)
    assert out is x
    tname = name.rstrip("_")
    tfn = getattr(torch_ref.nn.functional, tname)
    tleaf = torch_ref.tensor(x0, requires_grad=True)
    kwargs = {"leaky_relu": (0.1,), "threshold": (0.1, 9.0)}.get(tname, ())
    ref = tfn(tleaf, *kwargs)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-7)  # torch's hardsigmoid: f32 1/6


def test_inplace_on_leaf_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.silu(ember.ones(3, requires_grad=True), inplace=True)


def test_rrelu_training_slopes_lie_in_range_and_are_seeded():
    x = -ember.ones(2000)
    ember.manual_seed(7)
    y1 = F.rrelu(x, 0.1, 0.3, training=True)
    ember.manual_seed(7)
    y2 = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y1.numpy()
    assert np.array_equal(y1.numpy(), y2.numpy())
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert F.rrelu(ember.ones(3), training=True).tolist() == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------------------------------ softmax family
def test_softmax_is_stable_for_huge_logits(torch_ref):
    x = np.array([[1e4, 1e4 - 1.0, -1e4, 0.0], [-1e4, -1e4 + 2.0, -1e4, -1e4]], dtype=np.float32)
    for name in ("softmax", "log_softmax"):
        out = getattr(F, name)(ember.tensor(x), 1).numpy()
        ref = getattr(torch_ref, name)(torch_ref.tensor(x), 1).numpy()
        assert np.all(np.isfinite(out))
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_softmax_nan_and_inf_rows_follow_torch(torch_ref):
    inf, nan = math.inf, math.nan
    x = np.array([[1.0, nan, 2.0], [-inf, -inf, -inf], [inf, 1.0, 0.0], [-inf, 0.0, 1.0]], dtype=np.float32)
    for name in ("softmax", "log_softmax"):
        out = getattr(F, name)(ember.tensor(x), 1).numpy()
        ref = getattr(torch_ref, name)(torch_ref.tensor(x), 1).numpy()
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_allclose(out[~np.isnan(out)], ref[~np.isnan(ref)], rtol=1e-6)


def test_softmax_large_rows_parallel_path(torch_ref):
    x = np.random.default_rng(9).normal(0, 5, size=(300, 257)).astype(np.float32)
    g = np.random.default_rng(10).normal(size=x.shape).astype(np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch_ref.tensor(x, requires_grad=True)
    F.log_softmax(ex, 1).backward(ember.tensor(g))
    torch_ref.log_softmax(tx, 1).backward(torch_ref.tensor(g))
    np.testing.assert_allclose(F.log_softmax(ex, 1).detach().numpy(), torch_ref.log_softmax(tx, 1).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_softmax_dtype_argument_and_float16(torch_ref):
    x = np.linspace(-3, 3, 12).reshape(3, 4).astype(np.float16)
    out = F.softmax(ember.tensor(x), 1, dtype=ember.float32)
    assert out.dtype == ember.float32
    half = F.log_softmax(ember.tensor(x), 1)
    assert half.dtype == ember.float16
    ref = torch_ref.log_softmax(torch_ref.tensor(x), 1).numpy()
    np.testing.assert_allclose(half.numpy().astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)
    ints = ember.tensor([[1, 2], [3, 5]])
    np.testing.assert_allclose(F.softmax(ints, 1, dtype=ember.float64).numpy(),
                               torch_ref.softmax(torch_ref.tensor([[1, 2], [3, 5]]), 1, dtype=torch_ref.float64))


def _outcome(call):
    """(result dtype name, shape) of a call, or (exception type, message): comparable across ember and torch."""
    try:
        out = call()
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return type(exc), str(exc)
    return str(out.dtype).split(".")[-1], tuple(out.shape)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dtype, dim", [((2, 3), "int64", 5), ((0, 3), "int64", 4), ((0, 3), "int64", 1),
                                               ((0,), "int32", 0), ((0,), "bool", -1), ((2,), "int64", 0)])
def test_softmax_checks_dim_before_dtype_and_passes_empty_through(torch_ref, name, shape, dtype, dim):
    """torch: a bad dim is an IndexError first; an empty tensor of any dtype comes back as a copy in its dtype."""
    ours = _outcome(lambda: getattr(ember, name)(ember.zeros(shape, dtype=getattr(ember, dtype)), dim))
    theirs = _outcome(lambda: getattr(torch_ref, name)(torch_ref.zeros(shape, dtype=getattr(torch_ref, dtype)), dim))
    assert ours == theirs


def test_softmax_errors_and_implicit_dim_warning():
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        F.softmax(ember.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(ember.ones(2), 2)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(ember.ones(2, 4))
    np.testing.assert_allclose(out.numpy(), np.full((2, 4), 0.25))  # dim 1 for 2-D inputs
    with pytest.warns(UserWarning, match="log_softmax"):
        assert F.log_softmax(ember.zeros(2, 3, 4)).shape == (2, 3, 4)
    with pytest.raises(TypeError):
        ember.softmax(ember.ones(2))  # torch.softmax needs dim


def test_softmax_tensor_method_and_torch_function():
    x = ember.tensor([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(x.softmax(1).numpy(), F.softmax(x, 1).numpy())
    assert F.softmax(x, 1).is_contiguous() and F.log_softmax(x, 0).is_contiguous()
    np.testing.assert_allclose(x.log_softmax(-1).numpy(), ember.log_softmax(x, -1).numpy())
    np.testing.assert_allclose(ember.softmax(x, 1, dtype=ember.float64).numpy(),
                               [np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum()])
    assert x.hardshrink(2.5).tolist() == [[0.0, 0.0, 3.0]]
    assert ember.selu is F.selu and ember.threshold is F.threshold


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple), data=st.data())
def test_softmax_hypothesis_against_numpy(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(data.draw(st.integers(0, 2 ** 31))).normal(0, 4, size=shape)
    out = F.log_softmax(ember.tensor(x), dim).numpy()
    m = x.max(axis=dim, keepdims=True) if x.size else x
    ref = x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) if x.size else x
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


def test_gumbel_softmax_soft_and_hard():
    ember.manual_seed(0)
    logits = ember.tensor([[0.0, 5.0, 0.0]] * 64, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(1).detach().numpy(), np.ones(64), rtol=1e-6)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.detach().numpy())) <= {0.0, 1.0}
    assert (hard.detach().numpy().argmax(1) == 1).mean() > 0.8
    hard.sum().backward()
    assert logits.grad is not None


# ------------------------------------------------------------------------------------------ modules
MODULES = [
    ("ReLU", (), {}), ("ReLU", (True,), {}), ("ReLU6", (), {}), ("Hardtanh", (-2.0, 3.0), {}),
    ("LeakyReLU", (0.2,), {}), ("LeakyReLU", (), {"inplace": True}), ("ELU", (), {}), ("ELU", (0.5, True), {}),
    ("SELU", (), {}), ("CELU", (1.5,), {}), ("GELU", (), {}), ("GELU", ("tanh",), {}), ("SiLU", (), {}),
    ("Mish", (), {}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}), ("Softplus", (2, 10), {}),
    ("Softshrink", (0.3,), {}), ("Hardshrink", (), {}), ("Tanhshrink", (), {}), ("Softsign", (), {}),
    ("Threshold", (0.1, 20), {}), ("LogSigmoid", (), {}), ("Sigmoid", (), {}), ("Tanh", (), {}),
    ("RReLU", (), {}), ("GLU", (), {}), ("Softmax", (1,), {}), ("LogSoftmax", (), {"dim": 1}),
    ("Softmin", (1,), {}), ("Softmax2d", (), {}), ("PReLU", (), {}), ("PReLU", (4, 0.1), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_modules_match_torch(name, args, kwargs, torch_ref):
    x = np.random.default_rng(11).normal(size=(2, 4, 3, 6))
    em = getattr(nn, name)(*args, **kwargs).eval()
    tm = getattr(torch_ref.nn, name)(*args, **kwargs).double().eval()
    assert repr(em) == repr(tm)
    out = em(ember.tensor(x.copy()))
    ref = tm(torch_ref.tensor(x.copy()))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_prelu_module_parameters_and_state_dict(torch_ref):
    m = nn.PReLU(3, init=0.1)
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert m.weight.tolist() == pytest.approx([0.1] * 3)
    t = torch_ref.nn.PReLU(3)
    m.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    assert m.weight.tolist() == pytest.approx([0.25] * 3)
    y = m(ember.tensor(-np.ones((2, 3, 4), np.float32)))
    y.sum().backward()
    assert m.weight.grad.tolist() == pytest.approx([-8.0] * 3)


def test_module_argument_errors():
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        nn.Softmax2d()(ember.ones(2, 3))
    with pytest.raises(AssertionError):
        nn.Hardtanh(1.0, -1.0)


def test_rrelu_module_uses_training_flag():
    m = nn.RReLU(0.1, 0.3)
    x = -ember.ones(500)
    assert np.unique(m(x).numpy()).size > 10
    m.eval()
    np.testing.assert_allclose(m(x).numpy(), -0.2 * np.ones(500), rtol=1e-6)


def test_softmax_module_implicit_dim_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.Softmax()(ember.ones(2, 3))
    assert any("Implicit dimension choice for softmax" in str(w.message) for w in caught)
