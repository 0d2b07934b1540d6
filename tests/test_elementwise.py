"""Elementwise ops: declared once for the op harness (values against NumPy on every shape, layout and backend,
gradcheck and gradgradcheck), then torch's promotion, sign and error rules and differential checks against torch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from op_harness import LAYOUTS, Case, Input, op_tests

try:
    from scipy import special as _sp  # noqa: F401
except Exception:  # pragma: no cover
    _sp = None

FLOATS = ("float32", "float64")
SIGNED = FLOATS + ("int8", "int32", "int64")
F64 = ("float64",)  # one dtype where a second would only compile more kernels of the same loops
TOL = {"float32": (2e-5, 1e-6), "float64": (1e-11, 1e-13)}

# name -> (numpy reference, lo, hi) on a safe domain
UNARY = {
    "neg": (np.negative, -5, 5), "abs": (np.abs, -5, 5), "exp": (np.exp, -5, 5), "exp2": (np.exp2, -5, 5),
    "expm1": (np.expm1, -3, 3), "log": (np.log, 0.1, 10), "log2": (np.log2, 0.1, 10), "log10": (np.log10, 0.1, 10),
    "log1p": (np.log1p, -0.5, 5), "sin": (np.sin, -5, 5), "cos": (np.cos, -5, 5), "tan": (np.tan, -1.2, 1.2),
    "asin": (np.arcsin, -0.9, 0.9), "acos": (np.arccos, -0.9, 0.9), "atan": (np.arctan, -5, 5),
    "sinh": (np.sinh, -3, 3), "cosh": (np.cosh, -3, 3), "tanh": (np.tanh, -3, 3), "asinh": (np.arcsinh, -5, 5),
    "acosh": (np.arccosh, 1.1, 5), "atanh": (np.arctanh, -0.9, 0.9), "sqrt": (np.sqrt, 0.01, 10),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.1, 10), "square": (np.square, -5, 5),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -6, 6), "sign": (np.sign, -5, 5), "floor": (np.floor, -5, 5),
    "ceil": (np.ceil, -5, 5), "round": (np.round, -5, 5), "trunc": (np.trunc, -5, 5),
    "frac": (lambda x: x - np.trunc(x), -5, 5), "reciprocal": (lambda x: 1 / x, 0.5, 5),
    "relu": (lambda x: np.maximum(x, 0), -5, 5),
}
if _sp is not None:
    UNARY.update({"erf": (_sp.erf, -2, 2), "erfc": (_sp.erfc, -2, 2), "erfinv": (_sp.erfinv, -0.9, 0.9),
                  "lgamma": (_sp.gammaln, 0.1, 5), "digamma": (_sp.digamma, 0.5, 5)})
else:
    UNARY.update({"erf": (np.vectorize(math.erf), -2, 2), "erfc": (np.vectorize(math.erfc), -2, 2),
                  "lgamma": (np.vectorize(math.lgamma), 0.1, 5)})
SAME_DTYPE_FOR_INTEGERS = {"neg", "abs", "square", "sign"}
# non-contiguous inputs for a sample: the unary ops share one strided loop skeleton, and each op's strided kernel
# is one more compile on a cold kernel cache (tanh, expm1, log1p and sqrt run NumPy's loops: see the SIMD test)
STRIDED_SAMPLE = {"neg", "exp", "sigmoid", "erf"}
NO_SECOND_DERIVATIVE = {"digamma"}  # trigamma's own derivative is not implemented (torch has polygamma(2, x))

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
    "minimum": np.minimum, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "fmax": np.fmax, "fmin": np.fmin, "pow": np.power, "remainder": np.remainder, "fmod": np.fmod,
    "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
}
INTEGER_BINARY = {"add", "sub", "mul", "maximum"}
FLOAT64_BINARY = {"pow", "remainder", "fmod", "logaddexp", "logaddexp2"}
# empty, 0-d and broadcast operands: (the first input's shape, the second's)
BINARY_SHAPES = (((3, 4), (3, 4)), ((3, 1), (1, 4)), ((2, 1, 3), (4, 1)), ((0, 3), (3,)), ((), (2, 3)),
                 ((2, 3), ()), ((), ()), ((), (2, 0)))
COMPARED = (np.array([[1.0, 2.0, np.nan], [3.0, -1.0, 0.0]]), np.array([2.0, 2.0, np.nan]))


def _unary(name: str) -> Case:
    ref, lo, hi = UNARY[name]
    return Case(name, lambda m, x: getattr(m, name)(x), [Input((3, 4), lo, hi)], ref, tol=TOL,
                dtypes=SIGNED if name in SAME_DTYPE_FOR_INTEGERS else FLOATS, shapes=(((0, 3),), ((),), ((2, 1, 3),)),
                layouts=LAYOUTS if name in STRIDED_SAMPLE else ("contiguous",),
                gradgrad=name not in NO_SECOND_DERIVATIVE)


def _binary(name: str) -> Case:
    # the second operand stays positive (divisors, pow's exponent), pow's base too
    a, b = (Input((2, 3), 0.5, 2), Input((3,), 0.5, 2)) if name == "pow" else (Input((2, 3), -10, 10), Input(
        (3,), 0.5, 5))
    return Case(name, lambda m, a, b: getattr(m, name)(a, b), [a, b], BINARY[name], shapes=BINARY_SHAPES,
                dtypes=FLOATS + ("int32", "int64") if name in INTEGER_BINARY else
                F64 if name in FLOAT64_BINARY else FLOATS)


ELEMENTWISE = [_unary(name) for name in UNARY] + [_binary(name) for name in BINARY] + [
    *(Case(name, lambda m, a, b, name=name: getattr(m, name)(a, b), [Input((4, 3), -50, 50), Input((3,), -50, 50)],
           ref, dtypes=("int32", "int64"), grad=False)
      for name, ref in (("bitwise_and", np.bitwise_and), ("bitwise_xor", np.bitwise_xor))),
    *(Case(name, lambda m, a, b, name=name: getattr(m, name)(a, b), [Input(values=COMPARED[0]),
           Input(values=COMPARED[1])], ref, dtypes=F64, grad=False)
      for name, ref in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                        ("gt", np.greater), ("ge", np.greater_equal))),
    Case("pow_scalar", lambda m, x: x ** 2.5, [Input((3, 4), 0.1, 3)], lambda x: x ** 2.5, dtypes=F64),
    Case("clamp", lambda m, x: m.clamp(x, -0.5, 0.7), [Input((3, 4))], lambda x: np.clip(x, -0.5, 0.7), dtypes=F64),
    Case("clamp_tensors", lambda m, x, lo, hi: m.clamp(x, lo, hi), [Input((2, 3)), Input((3,), -1.5, -0.5),
         Input((2, 1), 0.5, 1.5)], lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), dtypes=F64),
    Case("where", lambda m, c, a, b: m.where(c, a, b), [Input((2, 3), dtype="bool"), Input((2, 3)), Input((3,))],
         np.where, dtypes=F64),
    Case("lerp", lambda m, a, b, w: m.lerp(a, b, w), [Input((2, 3)), Input((3,)), Input((2, 1), 0, 1)],
         lambda a, b, w: a + w * (b - a), dtypes=F64),
    Case("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), [Input((2, 3)), Input((3,)), Input((2, 1))],
         lambda a, b, c: a + 0.5 * b * c, dtypes=F64),
    Case("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=2), [Input((2, 3)), Input((3,)),
         Input((2, 1), 0.5, 2)], lambda a, b, c: a + 2 * b / c, dtypes=F64),
    Case("xlogy", lambda m, a, b: m.xlogy(a, b), [Input((2, 3), 0.1, 3), Input((3,), 0.5, 3)],
         lambda a, b: a * np.log(b), dtypes=F64),
]
test_forward, test_gradcheck, test_gradgradcheck = op_tests(ELEMENTWISE)


def test_method_forms_equal_the_functions():
    a = np.random.default_rng(0).uniform(1.1, 1.9, (3, 4))  # inside every unary op's domain
    for name in UNARY:
        np.testing.assert_array_equal(getattr(ember.tensor(a), name)().numpy(), getattr(ember, name)(
            ember.tensor(a)).numpy(), err_msg=name)


def test_int_unary_float_kind_promotes_to_default_float():
    out = ember.tensor([1, 4, 9]).sqrt()
    assert out.dtype is ember.float32
    np.testing.assert_allclose(out.numpy(), [1, 2, 3])


def test_rounding_on_ints_is_identity():
    a = ember.tensor([-3, 2, 5])
    for name in ("floor", "ceil", "round", "trunc"):
        out = getattr(a, name)()
        assert out.dtype is ember.int64
        assert out.tolist() == [-3, 2, 5]


def test_round_half_to_even():
    assert ember.tensor([0.5, 1.5, 2.5, -0.5, -1.5]).round().tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]


def test_neg_bool_raises():
    with pytest.raises(RuntimeError):
        -ember.tensor([True, False])


# ---- binary ---------------------------------------------------------------------------------------------------------

def test_operators_and_reflected():
    a = ember.tensor([1.0, 2.0, 4.0])
    np.testing.assert_allclose((2 - a).numpy(), [1, 0, -2])
    np.testing.assert_allclose((2 / a).numpy(), [2, 1, 0.5])
    np.testing.assert_allclose((2 ** a).numpy(), [2, 4, 16])
    np.testing.assert_allclose((a ** 2).numpy(), [1, 4, 16])
    np.testing.assert_allclose((3 * a + 1).numpy(), [4, 7, 13])
    np.testing.assert_allclose(ember.add(a, a, alpha=2).numpy(), [3, 6, 12])
    np.testing.assert_allclose(ember.sub(a, a, alpha=3).numpy(), [-2, -4, -8])


def test_broadcast_mismatch_raises():
    with pytest.raises(RuntimeError):
        ember.tensor(np.ones((2, 3))) + ember.tensor(np.ones((4,)))


# ---- type promotion -------------------------------------------------------------------------------------------------

def test_promotion_rules():
    i64 = ember.tensor([1, 2])
    assert (i64 + 2.5).dtype is ember.float32
    assert (ember.tensor([1], dtype=ember.uint8) + ember.tensor([1], dtype=ember.int8)).dtype is ember.int16
    assert (ember.tensor(5) + ember.tensor([1, 2], dtype=ember.int8)).dtype is ember.int8
    b = ember.tensor([True, False]) + ember.tensor([True, True])
    assert b.dtype is ember.bool and b.tolist() == [True, True]
    q = ember.tensor([1, 2]) / ember.tensor([2, 2])
    assert q.dtype is ember.float32 and q.tolist() == [0.5, 1.0]
    assert (ember.tensor([1.0], dtype=ember.float32) + ember.tensor([1.0], dtype=ember.float64)).dtype \
        is ember.float64
    assert (ember.tensor([1], dtype=ember.int32) + ember.tensor(1.5, dtype=ember.float64)).dtype is ember.float64
    assert (ember.tensor([1.0], dtype=ember.float32) + ember.tensor(1.5, dtype=ember.float64)).dtype \
        is ember.float32
    assert (ember.tensor([1], dtype=ember.int8) * 1000).dtype is ember.int8
    assert (ember.tensor([True]) + 1).dtype is ember.int64


def test_result_type():
    assert ember.result_type(ember.tensor([1, 2]), 2.5) is ember.float32
    assert ember.result_type(ember.tensor([1], dtype=ember.uint8), ember.tensor([1], dtype=ember.int8)) is ember.int16
    assert ember.result_type(ember.tensor(1), ember.tensor([1], dtype=ember.int8)) is ember.int8
    assert ember.result_type(ember.tensor([1.0], dtype=ember.float64), 1) is ember.float64
    assert ember.result_type(ember.tensor([True]), False) is ember.bool
    assert ember.promote_types(ember.uint8, ember.int8) is ember.int16
    assert ember.promote_types(ember.int32, ember.float16) is ember.float16


# ---- integer division and remainder ---------------------------------------------------------------------------------

INT_PAIRS = (np.array([7, -7, 7, -7, 0, 5, -5]), np.array([2, 2, -2, -2, 3, -3, 3]))


def test_int_floordiv_mod_python_signs():
    a, b = INT_PAIRS
    ta, tb = ember.tensor(a), ember.tensor(b)
    assert (ta // tb).tolist() == [x // y for x, y in zip(a.tolist(), b.tolist())]
    assert (ta % tb).tolist() == [x % y for x, y in zip(a.tolist(), b.tolist())]
    assert (ta // tb).dtype is ember.int64
    assert ember.remainder(ta, tb).tolist() == [x % y for x, y in zip(a.tolist(), b.tolist())]
    assert ember.fmod(ta, tb).tolist() == [int(math.fmod(x, y)) for x, y in zip(a.tolist(), b.tolist())]


def test_float_remainder_fmod_signs():
    a = np.array([5.5, -5.5, 5.5, -5.5])
    b = np.array([2.0, 2.0, -2.0, -2.0])
    np.testing.assert_allclose(ember.remainder(ember.tensor(a), ember.tensor(b)).numpy(), np.remainder(a, b))
    np.testing.assert_allclose(ember.fmod(ember.tensor(a), ember.tensor(b)).numpy(), np.fmod(a, b))
    np.testing.assert_allclose((ember.tensor(a) // ember.tensor(b)).numpy(), np.floor_divide(a, b))


def test_div_rounding_modes():
    a, b = INT_PAIRS
    ta, tb = ember.tensor(a), ember.tensor(b)
    t = ember.div(ta, tb, rounding_mode="trunc")
    assert t.dtype is ember.int64 and t.tolist() == [int(x / y) for x, y in zip(a.tolist(), b.tolist())]
    f = ember.div(ta, tb, rounding_mode="floor")
    assert f.dtype is ember.int64 and f.tolist() == [x // y for x, y in zip(a.tolist(), b.tolist())]
    n = ember.div(ta, tb)
    assert n.dtype is ember.float32
    np.testing.assert_allclose(n.numpy(), a / b, rtol=1e-6)


def test_div_rounding_modes_float():
    fa = ember.tensor([-7.5, 7.5])
    assert ember.div(fa, 2.0, rounding_mode="trunc").tolist() == [-3.0, 3.0]
    assert ember.div(fa, 2.0, rounding_mode="floor").tolist() == [-4.0, 3.0]
    with pytest.raises((ValueError, RuntimeError)):
        ember.div(fa, 2.0, rounding_mode="bogus")


@pytest.mark.parametrize("op", [lambda a, b: a // b, lambda a, b: a % b,
                                lambda a, b: ember.div(a, b, rounding_mode="trunc"),
                                lambda a, b: ember.div(a, b, rounding_mode="floor")])
def test_int_division_by_zero_raises(op):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(ember.tensor([1, 2]), ember.tensor([1, 0]))


def test_float_division_by_zero_is_ieee():
    out = ember.tensor([1.0, -1.0, 0.0]) / ember.tensor([0.0, 0.0, 0.0])
    r = out.numpy()
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2])


def test_int_pow_negative_number_exponent_raises():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        ember.tensor([2, 3]) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        ember.tensor([True, False]).pow(-2)
    assert (ember.tensor([2, 3]) ** ember.tensor([1, -1])).tolist() == [2, 0]  # a tensor exponent: torch truncates
    assert ember.pow(ember.tensor([2, 4]), -1.0).tolist() == [0.5, 0.25]
    assert (ember.tensor([2, 3]) ** 2).tolist() == [4, 9]
    assert (ember.tensor([2, 3]) ** 2).dtype is ember.int64
    assert (ember.tensor([2, 3]) ** 0.5).dtype is ember.float32


# ---- where / clamp / nan_to_num / predicates ------------------------------------------------------------------------

def test_where():
    c = np.array([[True, False, True]])
    a = np.arange(6.0).reshape(2, 3)
    b = np.array([-1.0])
    out = ember.where(ember.tensor(c), ember.tensor(a), ember.tensor(b))
    np.testing.assert_array_equal(out.numpy(), np.where(c, a, b))
    out2 = ember.where(ember.tensor(c), ember.tensor([1, 2, 3]), 0.5)
    assert out2.dtype is ember.float32
    np.testing.assert_allclose(out2.numpy(), [[1, 0.5, 3]])


def test_clamp_scalar_and_tensor_bounds():
    a = np.linspace(-3, 3, 7)
    t = ember.tensor(a)
    np.testing.assert_array_equal(ember.clamp(t, -1, 2).numpy(), np.clip(a, -1, 2))
    np.testing.assert_array_equal(t.clamp(min=0).numpy(), np.maximum(a, 0))
    np.testing.assert_array_equal(t.clamp(max=0).numpy(), np.minimum(a, 0))
    lo = np.linspace(-2, 0, 7)
    hi = np.array([1.0])
    np.testing.assert_array_equal(ember.clamp(t, ember.tensor(lo), ember.tensor(hi)).numpy(),
                                  np.minimum(np.maximum(a, lo), hi))
    ti = ember.tensor([-5, 0, 5])
    ci = ti.clamp(-1, 1)
    assert ci.dtype is ember.int64 and ci.tolist() == [-1, 0, 1]
    # min > max: torch sets everything to max
    assert ember.tensor([0.0, 5.0]).clamp(3.0, 1.0).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError):
        ember.clamp(t)


def test_nan_to_num_and_predicates():
    a = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0])
    t = ember.tensor(a)
    np.testing.assert_array_equal(ember.isnan(t).numpy(), np.isnan(a))
    np.testing.assert_array_equal(ember.isinf(t).numpy(), np.isinf(a))
    np.testing.assert_array_equal(ember.isfinite(t).numpy(), np.isfinite(a))
    np.testing.assert_array_equal(ember.isposinf(t).numpy(), np.isposinf(a))
    np.testing.assert_array_equal(ember.isneginf(t).numpy(), np.isneginf(a))
    assert ember.isnan(t).dtype is ember.bool
    np.testing.assert_array_equal(ember.nan_to_num(t).numpy(), np.nan_to_num(a))
    np.testing.assert_array_equal(ember.nan_to_num(t, nan=7.0, posinf=8.0, neginf=-9.0).numpy(),
                                  [7.0, 8.0, -9.0, 1.5, -0.0])
    f32 = ember.tensor(a.astype(np.float32)).nan_to_num()
    assert f32.numpy()[1] == np.finfo(np.float32).max
    ti = ember.tensor([1, 2])
    assert ember.isnan(ti).tolist() == [False, False]
    assert ember.isfinite(ti).tolist() == [True, True]


# ---- in place -------------------------------------------------------------------------------------------------------

def test_inplace_ops_values_identity_and_version():
    t = ember.tensor([1.0, 2.0, 3.0])
    v0 = t._version_value
    r = t.add_(1.0)
    assert r is t
    assert t.tolist() == [2.0, 3.0, 4.0]
    assert t._version_value > v0
    v1 = t._version_value
    t.mul_(ember.tensor([2.0, 2.0, 2.0]))
    assert t.tolist() == [4.0, 6.0, 8.0] and t._version_value > v1
    alias = t
    t += 1
    assert alias is t and t.tolist() == [5.0, 7.0, 9.0]
    t -= 1
    t *= 2
    t /= 4
    assert t.tolist() == [2.0, 3.0, 4.0]


def test_inplace_seen_through_views_and_shared_version():
    base = ember.tensor(np.arange(6.0).reshape(2, 3))
    row = base.select(0, 1)
    col = base.t()
    vb = base._version_value
    row.add_(10.0)
    np.testing.assert_array_equal(base.numpy(), [[0, 1, 2], [13, 14, 15]])
    np.testing.assert_array_equal(col.numpy(), [[0, 13], [1, 14], [2, 15]])
    assert base._version_value > vb and row._version_value == base._version_value
    base.mul_(0.0)
    assert row.tolist() == [0.0, 0.0, 0.0]


def test_inplace_on_noncontiguous_view():
    base = ember.tensor(np.arange(12.0).reshape(3, 4))
    tv = base.t()
    tv.add_(ember.tensor([100.0, 200.0, 300.0]))  # broadcasts over rows of the transpose (= columns of base)
    expected = np.arange(12.0).reshape(3, 4) + np.array([[100.0], [200.0], [300.0]])
    np.testing.assert_array_equal(base.numpy(), expected)


def test_inplace_dtype_rules():
    t = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError):
        t.add_(1.5)  # result float can't be cast to int64 in place
    f = ember.tensor([1.0, 2.0])
    f.add_(ember.tensor([1, 1]))
    assert f.dtype is ember.float32 and f.tolist() == [2.0, 3.0]
    with pytest.raises(RuntimeError):
        ember.tensor([1.0]).add_(ember.tensor([1.0, 2.0]))  # would need to resize self


def test_inplace_unary_and_clamp():
    t = ember.tensor([0.25, 4.0])
    t.sqrt_()
    assert t.tolist() == [0.5, 2.0]
    t.clamp_(max=1.0)
    assert t.tolist() == [0.5, 1.0]


def test_inplace_on_expanded_raises():
    e = ember.tensor([1.0, 2.0]).expand(3, 2)
    with pytest.raises(RuntimeError):
        e.add_(1.0)


def test_bitwise_shift_and_logical():
    a = ember.tensor([1, 2, -8])
    assert (a << 2).tolist() == [4, 8, -32]
    assert (a >> 1).tolist() == [0, 1, -4]
    assert (~a).tolist() == [-2, -3, 7]
    b = ember.tensor([True, False, True])
    assert (~b).tolist() == [False, True, False]
    assert ember.logical_xor(b, ember.tensor([1.0, 0.0, 0.0])).tolist() == [False, False, True]
    assert ember.logical_not(ember.tensor([0.0, 2.0])).tolist() == [True, False]
    with pytest.raises(RuntimeError):
        ember.tensor([1.0]) & ember.tensor([1.0])


# ---- differential against torch -------------------------------------------------------------------------------------

def _dn(dt):
    return str(dt).split(".")[-1]


DIFF_UNARY = ["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "abs", "neg", "floor", "ceil", "round",
              "trunc", "frac", "reciprocal", "rsqrt", "relu", "erf", "sign", "expm1", "log1p", "atan"]
DIFF_BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "remainder", "fmod", "floor_divide",
               "eq", "lt", "hypot"]


FLOAT_KINDS = {"float32", "float64", "scalar_float"}


def _unary_params():
    out = []
    for dt in ("float32", "int64"):
        for name in DIFF_UNARY:
            out.append(pytest.param(name, dt, id=f"{dt}-{name}"))
    return out


def _binary_params():
    out = []
    for dts in DIFF_OPERANDS:
        for name in DIFF_BINARY:
            out.append(pytest.param(name, dts, id=f"{'-'.join(dts)}-{name}"))
    return out


@pytest.mark.parametrize("name,dt", _unary_params())
def test_diff_unary_vs_torch(torch_ref, name, dt):
    rng = np.random.default_rng(3)
    if dt == "float32":
        a = rng.uniform(0.2, 4.0, size=(2, 3, 4)).astype(dt)
        a[0] *= -1
    else:
        a = rng.integers(1, 9, size=(2, 3, 4)).astype(dt)
    if name in ("log", "sqrt", "rsqrt", "log1p"):
        a = np.abs(a)
    try:
        expected = getattr(torch_ref, name)(torch_ref.from_numpy(a))
    except (RuntimeError, NotImplementedError):
        with pytest.raises(RuntimeError):
            getattr(ember, name)(ember.tensor(a))
        return
    out = getattr(ember, name)(ember.tensor(a))
    assert _dn(out.dtype) == _dn(expected.dtype)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=2e-6, atol=1e-6)


DIFF_OPERANDS = [
    ("float32", "float32"), ("int64", "int64"), ("int32", "float64"), ("uint8", "int8"), ("int64", "scalar_float"),
    ("float32", "scalar_int"), ("int16", "zerodim_int64"),
]


def _operand(np_dt, rng, shape, positive):
    if np_dt == "scalar_float":
        return 2.5, 2.5
    if np_dt == "scalar_int":
        return 3, 3
    if np_dt == "zerodim_int64":
        return np.array(3, dtype=np.int64), None
    if np.dtype(np_dt).kind == "f":
        arr = rng.uniform(0.5, 4.0, size=shape).astype(np_dt)
    else:
        arr = rng.integers(1, 6, size=shape).astype(np_dt)
    if not positive and np.dtype(np_dt).kind in "fi" and np_dt != "uint8":
        arr.flat[::2] *= -1
    return arr, None


@pytest.mark.parametrize("name,dts", _binary_params())
def test_diff_binary_vs_torch(torch_ref, name, dts):
    rng = np.random.default_rng(4)
    positive = name == "pow"
    a, _ = _operand(dts[0], rng, (3, 1, 4), positive)
    b, scalar = _operand(dts[1], rng, (2, 4), positive)

    def conv(x, mod):
        if isinstance(x, (int, float)):
            return x
        return mod.tensor(x) if mod is ember else mod.from_numpy(np.array(x, copy=True))

    try:
        expected = getattr(torch_ref, name)(conv(a, torch_ref), conv(b, torch_ref))
    except TypeError:
        pytest.skip("torch does not take a Python scalar here")
    except (RuntimeError, NotImplementedError):
        with pytest.raises(RuntimeError):
            getattr(ember, name)(conv(a, ember), conv(b, ember))
        return
    out = getattr(ember, name)(conv(a, ember), conv(b, ember))
    assert _dn(out.dtype) == _dn(expected.dtype), (out.dtype, expected.dtype)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=3e-6, atol=1e-6)


def test_diff_where_clamp_nan_to_num_vs_torch(torch_ref):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    a[0, 0], a[1, 1], a[2, 2] = np.nan, np.inf, -np.inf
    ta, ea = torch_ref.from_numpy(a), ember.tensor(a)
    np.testing.assert_array_equal(ember.nan_to_num(ea).numpy(), torch_ref.nan_to_num(ta).numpy())
    np.testing.assert_array_equal(ember.clamp(ea, -0.5, 0.5).numpy(), torch_ref.clamp(ta, -0.5, 0.5).numpy())
    c = a > 0
    np.testing.assert_array_equal(ember.where(ember.tensor(c), ea, 0.0).numpy(),
                                  torch_ref.where(torch_ref.from_numpy(c), ta, 0.0).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rounding_keeps_nan_inf_and_huge_values(dtype):
    """Regression (fuzz): floor/ceil/round went through an int64 and gave -9.2e18 for inf, NaN and |x| >= 2**63;
    pow took a huge even exponent for a non-integer one (NaN instead of inf); floor_divide(inf, y) was -9.2e18."""
    a = np.array([np.inf, -np.inf, np.nan, 1e30, -1e30, -2.5, -0.5, 2.5], dtype=dtype)
    t = ember.tensor(a)
    for name, ref in (("floor", np.floor), ("ceil", np.ceil), ("round", np.round)):
        np.testing.assert_array_equal(getattr(ember, name)(t).numpy(), ref(a))
    np.testing.assert_array_equal(ember.pow(ember.tensor(np.array([-9.5], dtype=dtype)), 1e20).numpy(),
                                  np.array([np.inf], dtype=dtype))
    assert np.isnan(ember.floor_divide(ember.tensor(np.array([np.inf], dtype=dtype)), 8.0).numpy()).all()


@pytest.mark.parametrize("name", ["tanh", "expm1", "log1p", "sqrt"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_simd_unary_ops_equal_numpy_on_any_layout_and_size(name, dtype):
    """These run NumPy's SIMD loops (split over threads when large): the same values as NumPy, NaN and inf as
    results (no warnings), any layout."""
    rng = np.random.default_rng(0)
    big = rng.uniform(-3, 3, (700, 300)).astype(dtype)
    big[0, :3] = [np.nan, np.inf, -1.5]
    for x in (big, big.T, big[::2, 1::3], big[:1, :5]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = getattr(ember, name)(ember.from_numpy(x)).numpy()
        with np.errstate(all="ignore"):
            want = getattr(np, name)(x)
        np.testing.assert_array_equal(got, want)


# ---- argument checks agreeing with torch (issue 8) -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["maximum", "minimum", "atan2", "hypot", "logical_and", "fmax"])
def test_tensor_only_binaries_refuse_numbers(name):
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        getattr(ember, name)(x, 2)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        getattr(ember, name)(2.0, x)
    assert getattr(ember, name)(x, ember.tensor(1.5)).shape == (2,)


@pytest.mark.parametrize("a, b", [("bool", 1), ("float", True), ("float", "bool"), ("bool", "float")])
def test_sub_refuses_any_bool_operand(a, b):
    make = {"bool": ember.tensor([True, False]), "float": ember.tensor([1.0, 2.0])}
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool tensor is not supported"):
        ember.sub(make.get(a, a), make.get(b, b) if isinstance(b, str) else b)
    with pytest.raises(RuntimeError, match="with a bool tensor"):
        ember.sub(ember.tensor([1.0]), ember.tensor([True]), alpha=2)


def test_clamp_bool_only_against_one_tensor_bound():
    b = ember.tensor([True, False])
    assert ember.clamp(b, min=ember.tensor(True)).tolist() == [True, True]
    for kw, kernel in (({"min": True}, "clamp_min_scalar_cpu"), ({"max": True}, "clamp_max_scalar_cpu"),
                       ({"min": False, "max": True}, "clamp_scalar_cpu"), ({"min": b, "max": b}, "clamp_cpu")):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
            ember.clamp(b, **kw)
    with pytest.raises(TypeError, match="clamp"):
        ember.clamp(b, min=b, max=True)
    assert ember.clamp(b, min=1).dtype is ember.int64


def test_lerp_needs_end_and_weight_in_input_dtype():
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="lerp: expected dtype float for `end` but got dtype double"):
        ember.lerp(x, x.double(), 0.5)
    with pytest.raises(RuntimeError, match="lerp: expected dtype float for `weight` but got dtype double"):
        ember.lerp(x, x, ember.tensor([0.5, 0.5], dtype=ember.float64))
    assert ember.lerp(x, x * 3, ember.tensor(0.5, dtype=ember.float64)).tolist() == [2.0, 4.0]


# ---- wrong values found by the long fuzz run (issue 8), torch as the oracle ------------------------------------------
def _same_as_torch(ours, theirs) -> None:
    """Same dtype and the same values, NaN where NaN and the sign of zero included."""
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    got, want = ours.numpy(), theirs.numpy()
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


def test_square_of_bool_is_int64(torch_ref):
    for values in ([True, False], [[True], [True]]):
        _same_as_torch(ember.square(ember.tensor(values)), torch_ref.square(torch_ref.tensor(values)))


NAN, INF = math.nan, math.inf
HUGE_AND_SPECIAL = [1e20, -1e20, 9.3e18, -9.3e18, 2.5, -2.5, -0.3, -0.0, 0.0, INF, -INF, NAN, 4503599627370497.0]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", ["trunc", "fix", "frac", "floor", "ceil", "round"])
def test_rounding_of_huge_values_and_signed_zeros_match_torch(torch_ref, name, dt):
    a = np.array(HUGE_AND_SPECIAL, dtype=dt)
    _same_as_torch(getattr(ember, name)(ember.tensor(a)), getattr(torch_ref, name)(torch_ref.tensor(a)))


@pytest.mark.parametrize("decimals", [-2, 2])
def test_round_with_decimals_keeps_huge_values(torch_ref, decimals):
    a = np.array([1e20, -1e20, 1.2345e300, 2.555, INF, NAN, 1e-300])
    _same_as_torch(ember.round(ember.tensor(a), decimals=decimals),
                   torch_ref.round(torch_ref.tensor(a), decimals=decimals))


@pytest.mark.parametrize("name, kwargs", [("floor_divide", {}), ("remainder", {}), ("fmod", {}),
                                          ("div", {"rounding_mode": "trunc"}), ("div", {"rounding_mode": "floor"})])
def test_rounded_division_of_huge_values_and_infinities_matches_torch(torch_ref, name, kwargs):
    x = np.array([1e20, -1e20, 3.0, -3.0, INF, -INF, NAN, 5.5, 1e17 + 2])
    y = np.array([3.0, 7.0, 1e20, -1e20, 2.0, INF, 1.0, -INF, 3.0])
    for a, b in ((x, y), (y, x)):  # fewer than 8 elements per call: torch's scalar (not SIMD) loop is the reference
        for lo in (0, 5):
            ours = getattr(ember, name)(ember.tensor(a[lo:lo + 5]), ember.tensor(b[lo:lo + 5]), **kwargs)
            _same_as_torch(ours, getattr(torch_ref, name)(torch_ref.tensor(a[lo:lo + 5]),
                                                         torch_ref.tensor(b[lo:lo + 5]), **kwargs))


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float16", "float16"), ("float32", "float16"),
                                    ("int64", "int32"), ("int32", "float16")])
@pytest.mark.parametrize("value", [1, 0.5, 2])
def test_addcmul_and_addcdiv_compute_in_the_promoted_dtype(torch_ref, dtypes, value):
    rng = np.random.default_rng(3)
    a, b, c = (rng.uniform(1, 10, 16).round(2) for _ in range(3))
    inputs = [a.astype(dtypes[0]), b.astype(dtypes[1]), c.astype(dtypes[1])]
    ops = ["addcmul"] + (["addcdiv"] if "float" in dtypes[1] else [])
    for name in ops:
        ours = getattr(ember, name)(*map(ember.tensor, inputs), value=value)
        theirs = getattr(torch_ref, name)(*map(torch_ref.tensor, inputs), value=value)
        assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
        # torch fuses addcmul's multiply-add; ember rounds the product first: at most an ulp apart
        np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64),
                                   rtol=4 * float(np.finfo(ours.numpy().dtype).eps) if ours.dtype.is_floating_point
                                   else 0)


def test_addcmul_of_float64_input_keeps_float32_factors_exact(torch_ref):
    """The fuzz case: float32 factors of a float64 input are multiplied in float64, not rounded to float32 first."""
    x, t = torch_ref.tensor(2.739233746, dtype=torch_ref.float64), torch_ref.tensor(2.7392337)
    expected = torch_ref.addcmul(x, t, t, value=2).item()
    got = ember.addcmul(ember.tensor(2.739233746, dtype=ember.float64), ember.tensor(2.7392337),
                        ember.tensor(2.7392337), value=2).item()
    assert got == pytest.approx(expected, rel=1e-15)


def test_addcmul_refuses_bool_and_casts_value_to_integers(torch_ref):
    b = ember.tensor([True])
    with pytest.raises(NotImplementedError, match='"addcmul_cpu_out" not implemented for \'Bool\''):
        ember.addcmul(b, b, b)
    ours = ember.addcmul(ember.tensor([1, 2]), ember.tensor([1, 2]), ember.tensor([3, 4]), value=0.5)
    _same_as_torch(ours, torch_ref.addcmul(torch_ref.tensor([1, 2]), torch_ref.tensor([1, 2]),
                                           torch_ref.tensor([3, 4]), value=0.5))


@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("int8", "int8"), ("uint8", "int8"), ("int32", "int64")])
def test_integer_pow_with_negative_tensor_exponents_matches_torch(torch_ref, dtypes):
    base = np.array([2, -1, 1, 0, 3, -2, 5, -1, 7]).astype(dtypes[0])  # -1 wraps to 255 in uint8
    exponent = np.array([-1, -1, -3, -1, -2, -3, 0, -2, 2], dtype=dtypes[1])
    _same_as_torch(ember.pow(ember.tensor(base), ember.tensor(exponent)),
                   torch_ref.pow(torch_ref.tensor(base), torch_ref.tensor(exponent)))
    _same_as_torch(ember.pow(ember.tensor(base), ember.tensor(-1)), torch_ref.pow(torch_ref.tensor(base),
                                                                                   torch_ref.tensor(-1)))
    _same_as_torch(ember.pow(2, ember.tensor(exponent)), torch_ref.pow(2, torch_ref.tensor(exponent)))



@pytest.mark.parametrize("name", ["sgn", "deg2rad", "rad2deg", "positive", "angle"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_composite_elementwise_functions_match_torch(torch_ref, name, dtype):
    """sgn, deg2rad, rad2deg, positive and angle on real tensors: values, result dtype, and torch's error for bool."""
    values = [-1.5, 0.0, -0.0, 2.0, float("nan"), float("inf"), -float("inf")] if dtype.startswith("float") else \
        ([True, False] if dtype == "bool" else [0, 3, 7])
    ours, theirs = ember.tensor(values, dtype=getattr(ember, dtype)), torch_ref.tensor(values,
                                                                                      dtype=getattr(torch_ref, dtype))
    try:
        expected = getattr(torch_ref, name)(theirs)
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=str(error)[:30].replace("`", ".").replace("+", ".")):
            getattr(ember, name)(ours)
        return
    for result in (getattr(ember, name)(ours), getattr(ours, name)()):
        assert str(result.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
        np.testing.assert_allclose(result.numpy().astype(np.float64), expected.numpy().astype(np.float64),
                                   rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("call", [
    lambda: ember.tensor([1, 2], dtype=ember.int8).clamp(min=300),
    lambda: ember.tensor([1, 2], dtype=ember.int8).clamp_max(2 ** 62),
    lambda: ember.tensor([1, 2], dtype=ember.int32).pow_(2 ** 62),
    lambda: ember.tensor([1, 2], dtype=ember.int8) ** 300,
])
def test_a_python_int_too_big_for_the_integer_dtype_raises_in_clamp_and_pow(call):
    with pytest.raises(RuntimeError, match="without overflow"):  # torch's check; other ops wrap, as torch's do
        call()
    assert ember.tensor([1, 2], dtype=ember.uint8).clamp(min=-1).tolist() == [255, 255]  # c10 wraps negatives


def test_alpha_follows_torch_rules():
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        ember.add(ember.tensor([1]), ember.tensor([1]), alpha=0.5)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        ember.sub(ember.tensor([True]), ember.tensor([True]), alpha=1.0)
    both = ember.add(ember.tensor([True, False]), ember.tensor([False, True]), alpha=2)  # alpha taken as a bool
    assert both.dtype is ember.bool and both.tolist() == [True, True]
    assert ember.add(ember.tensor([1.0]), ember.tensor([1]), alpha=0.5).tolist() == [1.5]


def test_relu_rejects_bool():
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(ember.tensor([True, False]))
