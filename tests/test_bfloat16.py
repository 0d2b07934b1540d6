"""bfloat16: the dtype, its rounding (round to nearest even from the float32 computation), promotion, creation,
printing, elementwise ops, reductions, products, nn layers, autograd and checkpoints, against torch.

Ops that torch computes in float and rounds once are compared bit for bit; the composite layers (norms,
losses, attention), whose torch kernels round their intermediates differently, within torch's own bfloat16
tolerance (``torch.testing.assert_close``: rtol 1.6e-2)."""
from __future__ import annotations

import io
import math
import pickle

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn.functional as F
from ember import opcodes as op

torch = pytest.importorskip("torch")
TF = torch.nn.functional

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def pair(values, grad: bool = False):
    """The same bfloat16 values as an ember and a torch tensor (from float32)."""
    a = np.asarray(values, np.float32)
    return (ember.tensor(a).bfloat16().requires_grad_(grad), torch.tensor(a).bfloat16().requires_grad_(grad))


def values_of(t) -> np.ndarray:
    """A tensor's values widened to float64 (bool and integers as they are)."""
    t = t.detach()
    return (t.double() if t.dtype.is_floating_point else t).numpy()


def assert_same(e, t) -> None:
    """Same dtype, shape and bits (NaNs equal)."""
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(values_of(e), values_of(t))


def assert_near(e, t, rtol: float = 1.6e-2, atol: float = 1e-2) -> None:
    """Same dtype and shape, values within torch's bfloat16 tolerance, ``atol`` relative to the largest value
    (composites rounded in other steps differ most where values cancel)."""
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    want = values_of(t)
    np.testing.assert_allclose(values_of(e), want, rtol=rtol, atol=atol * max(float(np.abs(want[np.isfinite(want)]).max(initial=0)), 1e-3))


# ------------------------------------------------------------------------------------------------ the dtype
def test_the_dtype_as_torch_describes_it():
    dt = ember.bfloat16
    assert repr(dt) == "ember.bfloat16" and dt.is_floating_point and dt.is_signed and dt.itemsize == 2
    assert ember.tensor([1.0]).bfloat16().element_size() == 2
    assert dt.compute is ember.float32 and dt.np == BF16
    assert pickle.loads(pickle.dumps(dt)) is dt
    assert ember.tensor([1.0]).bfloat16().type() == "torch.BFloat16Tensor"


def test_finfo_is_torchs():
    mine, theirs = ember.finfo(ember.bfloat16), torch.finfo(torch.bfloat16)
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(mine, field) == getattr(theirs, field), field
    assert repr(mine) == repr(theirs)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promotion_table_is_torchs(a, b):
    assert ember.promote_types(getattr(ember, a), getattr(ember, b)).name == \
        str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]


@pytest.mark.parametrize("other", [1, 2.5, True, "int64", "float16", "float32", "bool", "0d-float32", "0d-int64"])
def test_result_type_with_numbers_and_zero_dim_tensors(other):
    def operand(lib):
        if isinstance(other, str) and other.startswith("0d-"):
            return lib.tensor(1, dtype=getattr(lib, other[3:]))
        if isinstance(other, str):
            return lib.ones(3, dtype=getattr(lib, other))
        return other
    e = ember.result_type(ember.ones(3, dtype=ember.bfloat16), operand(ember))
    t = torch.result_type(torch.ones(3, dtype=torch.bfloat16), operand(torch))
    assert e.name == str(t).split(".")[-1]


# ------------------------------------------------------------------------------------------------ rounding
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_every_bfloat16_widens_exactly_and_narrows_back():
    bits = np.arange(1 << 16, dtype=np.uint16)
    floats = bits.view(BF16).astype(np.float32)
    e = ember.tensor(floats).bfloat16()
    t = torch.tensor(floats).bfloat16()
    finite = ~np.isnan(floats)
    np.testing.assert_array_equal(e.numpy().view(np.uint16)[finite], t.view(torch.int16).numpy().view(np.uint16)[finite])
    np.testing.assert_array_equal(e.float().numpy()[finite], floats[finite])
    assert np.isnan(e.float().numpy()[~finite]).all()


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # as NumPy's float16 casts
@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1))
def test_narrowing_rounds_to_nearest_even_as_torch(seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2**32, 512, dtype=np.uint64).astype(np.uint32)
    ties = (raw & np.uint32(0xFFFF0000)) | np.uint32(0x8000)  # exactly half way between two bfloat16
    x = np.concatenate([raw, ties]).view(np.float32)
    x = x[~np.isnan(x)]
    e = ember.tensor(x).to(ember.bfloat16)
    t = torch.tensor(x).to(torch.bfloat16)
    np.testing.assert_array_equal(e.numpy().view(np.uint16), t.view(torch.int16).numpy().view(np.uint16))
    wide = x.astype(np.float64) * 3.0  # from float64 too
    np.testing.assert_array_equal(ember.tensor(wide).bfloat16().float().numpy(),
                                  torch.tensor(wide).bfloat16().float().numpy())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # out-of-range casts warn as NumPy's do; torch's are quiet
@pytest.mark.parametrize("source", ["int64", "int32", "uint8", "bool", "float16", "float64"])
def test_casts_from_every_dtype(source):
    data = np.array([0, 1, 3, 257, 1000001, -7, 65504, 2**40], np.float64)
    if source == "bool":
        data = data != 0
    elif source == "uint8":
        data = np.abs(data) % 256
    elif source == "float16":
        data = np.clip(data, -65504, 65504)
    elif source == "int32":
        data = np.clip(data, -2**31, 2**31 - 1)
    e = ember.tensor(data).to(getattr(ember, source)).bfloat16()
    t = torch.tensor(data).to(getattr(torch, source)).bfloat16()
    assert_same(e, t)
    for target in ("int64", "int8", "bool", "float16", "float64"):
        assert_same(e.to(getattr(ember, target)), t.to(getattr(torch, target)))


# ------------------------------------------------------------------------------------------------ creation, printing
def test_creation_functions():
    assert_same(ember.zeros(3, dtype=ember.bfloat16), torch.zeros(3, dtype=torch.bfloat16))
    assert_same(ember.ones(2, 2, dtype=ember.bfloat16), torch.ones(2, 2, dtype=torch.bfloat16))
    assert_same(ember.full((3,), 1.3, dtype=ember.bfloat16), torch.full((3,), 1.3, dtype=torch.bfloat16))
    assert_same(ember.eye(3, dtype=ember.bfloat16), torch.eye(3, dtype=torch.bfloat16))
    assert_same(ember.tensor([1.3, -2.7, 1e30], dtype=ember.bfloat16),
                torch.tensor([1.3, -2.7, 1e30], dtype=torch.bfloat16))
    assert_same(ember.arange(0, 300, 7, dtype=ember.bfloat16), torch.arange(0, 300, 7, dtype=torch.bfloat16))
    assert_near(ember.linspace(-3, 7, 101, dtype=ember.bfloat16), torch.linspace(-3, 7, 101, dtype=torch.bfloat16))
    x = ember.randn(100, dtype=ember.bfloat16)
    assert x.dtype is ember.bfloat16 and abs(float(x.float().mean())) < 0.5
    u = ember.rand(10000, dtype=ember.bfloat16)
    assert 0 <= float(u.float().min()) and float(u.float().max()) < 1
    assert ember.empty(2, dtype=ember.bfloat16).dtype is ember.bfloat16
    assert ember.zeros(2).bfloat16().dtype is ember.bfloat16
    assert ember.zeros(2).to(dtype=ember.bfloat16).dtype is ember.bfloat16
    assert ember.tensor([ember.tensor(1.5).bfloat16(), ember.tensor(2.5).bfloat16()]).dtype is ember.bfloat16


def test_legacy_type():
    x = ember.BFloat16Tensor([1.5, 2.0])
    assert x.dtype is ember.bfloat16 and isinstance(x, ember.BFloat16Tensor)
    assert not isinstance(ember.ones(2), ember.BFloat16Tensor)
    assert ember.ones(2).type(ember.BFloat16Tensor).dtype is ember.bfloat16
    assert ember.ones(2).type("torch.BFloat16Tensor").dtype is ember.bfloat16
    assert ember.BFloat16Tensor(2, 3).shape == (2, 3)


@pytest.mark.parametrize("values", [[1.0, 2.5, 3.14159], [1e10, 1e-10, 3.0], [0.1], [[1.5, -2.25], [3.0, 4.0]],
                                    [float("nan"), float("inf"), -0.0]])
def test_printing_is_torchs(values):
    e, t = pair(values)
    assert repr(e).replace("ember.", "torch.") == repr(t)
    assert repr(e.sum()).replace("ember.", "torch.") == repr(t.sum())


def test_item_and_tolist():
    e, t = pair([3.14159, -1.1])
    assert e[0].item() == t[0].item() and isinstance(e[0].item(), float)
    assert e.tolist() == t.tolist()


# ------------------------------------------------------------------------------------------------ elementwise
_RNG = np.random.default_rng(0)
_X = _RNG.uniform(-3, 3, 257).astype(np.float32)
_POSITIVE = _RNG.uniform(0.1, 3, 257).astype(np.float32)
_UNIT = _RNG.uniform(-0.95, 0.95, 257).astype(np.float32)
_DOMAIN = {"log": _POSITIVE, "log2": _POSITIVE, "log10": _POSITIVE, "sqrt": _POSITIVE, "rsqrt": _POSITIVE,
           "lgamma": _POSITIVE, "digamma": _POSITIVE, "log1p": _POSITIVE, "acosh": _POSITIVE + 1,
           "asin": _UNIT, "acos": _UNIT, "atanh": _UNIT, "erfinv": _UNIT}
UNARY = [d.name for d in op.UNARY if d.surface != op.KERNEL and d.function and hasattr(torch, d.name)]
BINARY = [d.name for d in op.BINARY if d.surface != op.KERNEL and d.function and hasattr(torch, d.name)]
# torch rounds an intermediate of these to bfloat16 (xlogy: log(y) before the product)
_ROUNDED_TWICE = {"xlogy"}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_round_once_as_torch(name):
    e, t = pair(_DOMAIN.get(name, _X))
    try:
        expected = getattr(torch, name)(t)
    except (RuntimeError, NotImplementedError) as failure:
        with pytest.raises(type(failure)):
            getattr(ember, name)(e)
        return
    assert_same(getattr(ember, name)(e), expected)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("second", ["bfloat16", "number", "float16", "int64", "0d-float32", "float32"])
def test_binary_ops_as_torch(name, second):
    e, t = pair(_X)
    y = _POSITIVE

    def operand(lib):
        if second == "number":
            return 1.7
        if second == "0d-float32":
            return lib.tensor(1.7)
        if second == "bfloat16":
            return lib.tensor(y).bfloat16()
        return lib.tensor(y * 3 if second == "int64" else y).to(getattr(lib, second))
    try:
        expected = getattr(torch, name)(t, operand(torch))
    except (RuntimeError, TypeError, NotImplementedError) as failure:
        with pytest.raises(type(failure)):
            getattr(ember, name)(e, operand(ember))
        return
    got = getattr(ember, name)(e, operand(ember))
    if name in _ROUNDED_TWICE or expected.dtype == torch.float32:  # float32 results: torch's own float32 kernel
        assert_near(got, expected, rtol=1e-5 if expected.dtype == torch.float32 else 1.6e-2, atol=0)
    else:
        assert_same(got, expected)


@pytest.mark.parametrize("expr", ["x + 1.7", "x - 0.3", "x * 1.7", "1.7 * x", "x / 1.7", "1.7 / x", "3 / x", "1.7 - x", "x ** 2",
                                  "x ** 3", "x ** 0.5", "x ** -1", "x ** -2", "x ** 1.7", "2 ** x", "x // 0.7",
                                  "x % 0.7", "x > 1.7", "x == 1.0", "-x", "abs(x)"])
def test_operators_with_numbers_round_the_number_as_torch(expr):
    e, t = pair(np.abs(_X) + 0.05)
    assert_same(eval(expr, {"x": e}), eval(expr, {"x": t}))


@pytest.mark.parametrize("alpha", [0.3, -1.7, 2])
def test_add_and_sub_with_alpha(alpha):
    e, t = pair(_X)
    e2, t2 = pair(_POSITIVE)
    assert_near(ember.add(e, e2, alpha=alpha), torch.add(t, t2, alpha=alpha), rtol=8e-3, atol=0)
    assert_near(ember.sub(e, e2, alpha=alpha), torch.sub(t, t2, alpha=alpha), rtol=8e-3, atol=0)
    e3 = e.clone()
    e3.add_(e2, alpha=alpha)
    assert e3.dtype is ember.bfloat16


def test_ternary_and_selection_ops():
    e, t = pair(_X)
    assert_same(ember.where(e > 0, e, 0.3), torch.where(t > 0, t, 0.3))
    assert_same(ember.clamp(e, -0.5, 0.7), torch.clamp(t, -0.5, 0.7))
    assert_same(ember.lerp(e, e * 2, 0.3), torch.lerp(t, t * 2, 0.3))
    assert_same(ember.addcmul(e, e, e, value=0.5), torch.addcmul(t, t, t, value=0.5))
    assert_same(ember.addcdiv(e, e, e.abs() + 1, value=0.5), torch.addcdiv(t, t, t.abs() + 1, value=0.5))
    assert_same(ember.nextafter(e, ember.zeros_like(e)), torch.nextafter(t, torch.zeros_like(t)))
    assert_same(ember.round(e, decimals=1), torch.round(t, decimals=1))
    assert_same(ember.isnan(e / 0), torch.isnan(t / 0))


# ------------------------------------------------------------------------------------------------ reductions, products
_M = _RNG.standard_normal((6, 40)).astype(np.float32)


@pytest.mark.parametrize("name, args", [("sum", ()), ("sum", (1,)), ("mean", (0,)), ("amax", (1,)), ("amin", ()),
                                        ("argmax", (1,)), ("std", (1,)), ("var", ()), ("norm", ()),
                                        ("logsumexp", (1,)), ("cumsum", (1,)), ("nansum", ()), ("median", ()),
                                        ("count_nonzero", ()), ("all", ()), ("any", ())])
def test_reductions_round_once_as_torch(name, args):
    e, t = pair(_M)
    assert_same(getattr(ember, name)(e, *args), getattr(torch, name)(t, *args))


def test_sorting_and_extremes():
    e, t = pair(_M)
    assert_same(e.sort(1).values, t.sort(1).values)
    assert_same(e.max(1).values, t.max(1).values)
    assert_same(ember.topk(e, 3).values, torch.topk(t, 3).values)
    assert_same(ember.cummax(e, 1).values, torch.cummax(t, 1).values)
    assert_same(ember.histc(e, 7), torch.histc(t, 7))
    assert_near(ember.prod(e[:, :8], 1), torch.prod(t[:, :8], 1))  # torch multiplies in bfloat16 steps


@pytest.mark.parametrize("shapes", [((5, 7), (7, 3)), ((2, 5, 7), (2, 7, 3)), ((7,), (7, 3)), ((5, 7), (7,))])
def test_products_round_once_as_torch(shapes):
    a = _RNG.standard_normal(shapes[0]).astype(np.float32)
    b = _RNG.standard_normal(shapes[1]).astype(np.float32)
    (ea, ta), (eb, tb) = pair(a), pair(b)
    assert_same(ea @ eb, ta @ tb)


def test_fused_products_round_once_as_torch():
    (ea, ta), (eb, tb), (ec, tc) = [pair(_RNG.standard_normal(s)) for s in ((6, 7), (7, 5), (6, 5))]
    assert_same(ember.addmm(ec, ea, eb), torch.addmm(tc, ta, tb))
    assert_same(ember.addmm(ec, ea, eb, beta=0.5, alpha=2.0), torch.addmm(tc, ta, tb, beta=0.5, alpha=2.0))
    b1, b2 = _RNG.standard_normal((3, 4, 5)).astype(np.float32), _RNG.standard_normal((3, 5, 2)).astype(np.float32)
    (e1, t1), (e2, t2), (e0, t0) = pair(b1), pair(b2), pair(_M[:4, :2])
    assert_same(ember.baddbmm(e0, e1, e2), torch.baddbmm(t0, t1, t2))
    assert_near(ember.addbmm(e0, e1, e2), torch.addbmm(t0, t1, t2))  # torch rounds after each batch


# ------------------------------------------------------------------------------------------------ nn and autograd
def _grads(inputs):
    return [i.grad for i in inputs if i.requires_grad]


def _check_layer(fe, ft, arrays, exact: bool):
    pairs = [pair(a, grad=True) for a in arrays]
    out_e, out_t = fe(*[p[0] for p in pairs]), ft(*[p[1] for p in pairs])
    check = assert_same if exact else assert_near
    check(out_e, out_t)
    g = _RNG.standard_normal(tuple(out_t.shape)).astype(np.float32)
    out_e.backward(ember.tensor(g).bfloat16())
    out_t.backward(torch.tensor(g).bfloat16())
    for (e, t) in pairs:
        assert e.grad.dtype is ember.bfloat16
        check(e.grad, t.grad)


def test_linear_and_conv_forward_and_backward_round_once_as_torch():
    x, w, b = _RNG.standard_normal((8, 16)), _RNG.standard_normal((12, 16)) * 0.3, _RNG.standard_normal(12)
    _check_layer(F.linear, TF.linear, [x, w, b], exact=True)
    xi, wc, bc = _RNG.standard_normal((2, 3, 8, 8)), _RNG.standard_normal((4, 3, 3, 3)) * 0.3, _RNG.standard_normal(4)
    _check_layer(lambda a, k, c: F.conv2d(a, k, c, padding=1), lambda a, k, c: TF.conv2d(a, k, c, padding=1),
                 [xi, wc, bc], exact=True)


@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "sigmoid", "tanh", "softplus", "elu", "leaky_relu"])
def test_activations(name):
    _check_layer(getattr(F, name), getattr(TF, name), [_X[:64]], exact=False)


@pytest.mark.parametrize("layer", ["softmax", "log_softmax", "layer_norm", "group_norm", "batch_norm", "rms_norm",
                                   "cross_entropy", "mse_loss", "nll_loss", "bce_logits", "max_pool2d", "avg_pool2d"])
def test_layers_within_bfloat16_tolerance(layer):
    x2, x4 = _RNG.standard_normal((8, 16)), _RNG.standard_normal((2, 4, 6, 6))
    target = _RNG.integers(0, 16, 8)
    y = _RNG.standard_normal((8, 16)).astype(np.float32)
    cases = {
        "softmax": (lambda lib: lambda a: lib.nn.functional.softmax(a, -1), [x2]),
        "log_softmax": (lambda lib: lambda a: lib.nn.functional.log_softmax(a, -1), [x2]),
        "layer_norm": (lambda lib: lambda a, w, b: lib.nn.functional.layer_norm(a, (16,), w, b),
                       [x2, _RNG.standard_normal(16), _RNG.standard_normal(16)]),
        "group_norm": (lambda lib: lambda a: lib.nn.functional.group_norm(a, 2), [x4]),
        "batch_norm": (lambda lib: lambda a: lib.nn.functional.batch_norm(a, None, None, training=True), [x4]),
        "rms_norm": (lambda lib: lambda a: lib.nn.functional.rms_norm(a, (16,)), [x2]),
        "cross_entropy": (lambda lib: lambda a: lib.nn.functional.cross_entropy(a, lib.tensor(target)), [x2]),
        "mse_loss": (lambda lib: lambda a: lib.nn.functional.mse_loss(a, lib.tensor(y).bfloat16()), [x2]),
        "nll_loss": (lambda lib: lambda a: lib.nn.functional.nll_loss(a, lib.tensor(target)), [x2]),
        "bce_logits": (lambda lib: lambda a: lib.nn.functional.binary_cross_entropy_with_logits(
            a, lib.tensor(y).sigmoid().bfloat16()), [x2]),
        "max_pool2d": (lambda lib: lambda a: lib.nn.functional.max_pool2d(a, 2), [x4]),
        "avg_pool2d": (lambda lib: lambda a: lib.nn.functional.avg_pool2d(a, 2), [x4]),
    }
    make, arrays = cases[layer]
    _check_layer(make(ember), make(torch), arrays, exact=False)


def _mlp(lib, seed: int = 0):
    torch.manual_seed(seed)
    ref = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    if lib is torch:
        return ref
    model = ember.nn.Sequential(ember.nn.Linear(16, 32), ember.nn.ReLU(), ember.nn.Linear(32, 4))
    model.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return model


def test_a_bfloat16_model_trains_as_torch():
    me, mt = _mlp(ember).bfloat16(), _mlp(torch).bfloat16()
    assert all(p.dtype is ember.bfloat16 for p in me.parameters())
    oe, ot = ember.optim.SGD(me.parameters(), lr=0.125), torch.optim.SGD(mt.parameters(), lr=0.125)
    x, target = _RNG.standard_normal((8, 16)).astype(np.float32), _RNG.integers(0, 4, 8)
    for _ in range(3):
        le = F.cross_entropy(me(ember.tensor(x).bfloat16()), ember.tensor(target))
        lt = TF.cross_entropy(mt(torch.tensor(x).bfloat16()), torch.tensor(target))
        assert_near(le, lt)
        oe.zero_grad(), ot.zero_grad()
        le.backward(), lt.backward()
        for pe, pt in zip(me.parameters(), mt.parameters()):
            assert pe.grad.dtype is ember.bfloat16
            assert_near(pe.grad, pt.grad, rtol=3e-2)
        oe.step(), ot.step()
    for pe, pt in zip(me.parameters(), mt.parameters()):
        assert_near(pe, pt, rtol=3e-2)


def test_gradients_accumulate_in_bfloat16():
    big = ember.ones(70000, dtype=ember.bfloat16, requires_grad=True)  # past the parallel threshold
    (big * 3 + big * 5).sum().backward()
    assert big.grad.dtype is ember.bfloat16 and float(big.grad[0]) == 8.0


# ------------------------------------------------------------------------------------------------ checkpoints
def test_checkpoints_both_ways_with_torch(tmp_path):
    e, t = pair(_M)
    path = tmp_path / "ember.pt"
    ember.save({"w": e, "rows": [e[1:3]]}, path)
    back = torch.load(path)
    assert back["w"].dtype == torch.bfloat16 and torch.equal(back["w"], t)
    assert torch.equal(back["rows"][0], t[1:3])
    path2 = tmp_path / "torch.pt"
    torch.save({"w": t, "linear": torch.nn.Linear(3, 2).bfloat16().state_dict()}, path2)
    for weights_only in (True, False):
        loaded = ember.load(path2, weights_only=weights_only)
        assert_same(loaded["w"], t)
        assert loaded["linear"]["weight"].dtype is ember.bfloat16
    buffer = io.BytesIO()
    ember.save(e, buffer)
    buffer.seek(0)
    assert torch.equal(torch.load(buffer), t)


# ------------------------------------------------------------------------------------------------ the conversion kernels
def test_the_device_conversion_kernels_match_ml_dtypes_on_every_pattern():
    """The shared scalar definitions CUDA storage converts with, compiled for the CPU here."""
    from ember.tensor._dispatch import backend

    bits = np.arange(1 << 16, dtype=np.uint16)
    values = np.empty(bits.shape, np.float32)
    backend().unary(op.FROM_BFLOAT16_BITS, bits, values)
    want = bits.view(BF16).astype(np.float32)
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(values.view(np.uint32)[finite], want.view(np.uint32)[finite])
    assert np.isnan(values[~finite]).all()
    x = np.concatenate([want[finite], (want[finite].astype(np.float64) * (1 + 2.0 ** -9)).astype(np.float32),
                        np.float32([3.4e38, -3.4e38, 1e-45, 2.0 ** -134, math.inf, -math.inf, math.nan])])
    narrowed = np.empty(x.shape, np.uint16)
    backend().unary(op.TO_BFLOAT16_BITS, x, narrowed)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(narrowed, x.astype(BF16).view(np.uint16))
