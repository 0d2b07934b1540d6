"""logaddexp/logaddexp2, float_power, logit, sinc, heaviside, ldexp, logcumsumexp, nansum/nanmean and the in-place
function forms: values against NumPy float64, torch's dtypes and errors, gradients (first and second order)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from conftest import assert_close, broadcastable_shapes, np_array

SETTINGS = settings(max_examples=25, deadline=None)
NAN, INF = float("nan"), float("inf")
FLOATS = ("float16", "float32", "float64")
TOL = {"float16": dict(rtol=2e-3, atol=2e-3), "float32": dict(rtol=2e-6, atol=1e-6),
       "float64": dict(rtol=1e-13, atol=1e-13)}
LOGADDEXP = {"logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2}


def _t(values, dtype=ember.float64, grad=False):
    return ember.tensor(values, dtype=dtype, requires_grad=grad)


# ---- logaddexp, logaddexp2 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LOGADDEXP))
def test_logaddexp_edge_values(name):
    a = np.array([1e4, -1e4, 1e4, -INF, -INF, INF, INF, NAN, 1.0, -INF, 3.0, 0.0])
    b = np.array([1e4, -1e4, -1e4, -INF, 2.0, -INF, INF, 1.0, NAN, INF, 3.0, -0.0])
    with np.errstate(invalid="ignore"):
        expected = LOGADDEXP[name](a, b)
    got = getattr(ember, name)(_t(a), _t(b))
    assert_close(got, expected, rtol=1e-15, atol=0)
    assert np.isfinite(got.numpy()[:3]).all()  # no overflow at magnitude 1e4
    assert got.numpy()[3] == -INF and got.numpy()[6] == INF


@pytest.mark.parametrize("name", sorted(LOGADDEXP))
@SETTINGS
@given(shapes=broadcastable_shapes(), da=st.sampled_from(FLOATS), db=st.sampled_from(FLOATS), data=st.data())
def test_logaddexp_matches_numpy(name, shapes, da, db, data):
    a = np_array(data.draw, shapes[0], da, -30, 30)
    b = np_array(data.draw, shapes[1], db, -30, 30)
    ta, tb = ember.tensor(a), ember.tensor(b)
    if data.draw(st.booleans()) and ta.ndim >= 2:  # a non-contiguous operand
        ta = ember.tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1))).transpose(0, 1)
    got = getattr(ember, name)(ta, tb)
    expected_dt = ember.result_type(ta, tb)  # torch: a 0-dim operand does not widen a dimensioned one
    assert got.dtype is expected_dt
    assert_close(got, LOGADDEXP[name](a.astype(np.float64), b.astype(np.float64)), **TOL[expected_dt.name])
    method = getattr(ta, name)(tb)
    np.testing.assert_array_equal(method.numpy(), got.numpy())


@pytest.mark.parametrize("name", sorted(LOGADDEXP))
def test_logaddexp_promotion_and_errors(name):
    f = getattr(ember, name)
    # a 0-dim float64 does not widen a dimensioned float32; an integer tensor takes the float operand's dtype
    assert f(_t([1.0], ember.float32), _t(2.0)).dtype is ember.float32
    assert f(ember.tensor([1, 2]), _t(1.0, ember.float32)).dtype is ember.float32
    assert f(ember.tensor([True]), _t([1.0], ember.float16)).dtype is ember.float16
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Long\''):
        f(ember.tensor([1, 2]), ember.tensor([1, 2]))
    with pytest.raises(TypeError, match="argument 'other' \\(position 2\\) must be Tensor, not float"):
        f(_t([1.0]), 2.0)
    with pytest.raises(TypeError, match="argument 'input' \\(position 1\\) must be Tensor, not float"):
        f(2.0, _t([1.0]))
    with pytest.raises(RuntimeError):
        f(_t([1.0, 2.0]), _t([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("name", sorted(LOGADDEXP))
def test_logaddexp_out(name):
    a, b = _t([[1.0, 2.0]], ember.float32), _t([[0.5], [3.0]], ember.float32)
    out = ember.empty(2, 2, dtype=ember.float64)  # torch casts an elementwise result into a wider out
    assert getattr(ember, name)(a, b, out=out) is out
    assert_close(out, LOGADDEXP[name](a.numpy().astype(np.float64), b.numpy().astype(np.float64)), rtol=1e-6)
    with pytest.raises(RuntimeError, match="dtype"):
        getattr(ember, name)(a, b, out=ember.empty(2, 2, dtype=ember.int64))


@pytest.mark.parametrize("name", sorted(LOGADDEXP))
def test_logaddexp_gradients(name):
    rng = np.random.default_rng(3)
    a = _t(rng.normal(size=(3, 4)) * 3, grad=True)
    b = _t(rng.normal(size=(4,)) * 3, grad=True)
    f = getattr(ember, name)
    assert ember.autograd.gradcheck(f, (a, b))
    assert ember.autograd.gradgradcheck(f, (a, b))
    # far apart, the gradient goes to the larger operand alone (no overflow in exp(b - a))
    big, small = _t([1e4], grad=True), _t([-1e4], grad=True)
    f(big, small).backward()
    assert big.grad.item() == 1.0 and small.grad.item() == 0.0


# ---- float_power -----------------------------------------------------------------------------------------------------
@SETTINGS
@given(shapes=broadcastable_shapes(), da=st.sampled_from(("float32", "float64", "int64", "int32")),
       db=st.sampled_from(("float32", "float64", "int64")), data=st.data())
def test_float_power_matches_numpy_in_float64(shapes, da, db, data):
    a = np.abs(np_array(data.draw, shapes[0], da, 0, 5))
    b = np_array(data.draw, shapes[1], db, -3, 3)
    got = ember.float_power(ember.tensor(a), ember.tensor(b))
    assert got.dtype is ember.float64
    with np.errstate(divide="ignore"):
        expected = np.float_power(a.astype(np.float64), b.astype(np.float64))
    assert_close(got, expected, rtol=1e-14, atol=0)


def test_float_power_scalars_inplace_and_out():
    x = ember.tensor([1, 2, 3])
    assert_close(ember.float_power(x, 0.5), np.float_power([1.0, 2.0, 3.0], 0.5))
    assert_close(ember.float_power(2, x), [2.0, 4.0, 8.0])
    assert ember.float_power(_t([-8.0]), 1 / 3).isnan().item()
    assert_close(ember.float_power(_t([0.0]), -1), [INF])
    with pytest.raises(TypeError):
        ember.float_power(2, 3)
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but the operation's "
                                           "result requires dtype Double"):
        _t([1.0], ember.float32).float_power_(2)
    y = _t([2.0, 3.0])
    assert y.float_power_(ember.tensor([2], dtype=ember.int32)) is y
    assert_close(y, [4.0, 9.0])
    with pytest.raises(RuntimeError, match="dtype"):  # float_power's out must be float64
        ember.float_power(x, 2, out=ember.empty(3))
    out = ember.empty(3, dtype=ember.float64)
    assert ember.float_power(x, 2, out=out) is out and out.tolist() == [1.0, 4.0, 9.0]


def test_float_power_gradients():
    a = _t([0.5, 1.5, 2.5], grad=True)
    b = _t([1.5, -0.5, 2.0], grad=True)
    assert ember.autograd.gradcheck(ember.float_power, (a, b))
    assert ember.autograd.gradgradcheck(ember.float_power, (a, b))
    x32 = _t([1.5, 2.0], ember.float32, grad=True)
    ember.float_power(x32, 3).sum().backward()
    assert x32.grad.dtype is ember.float32
    assert_close(x32.grad, [6.75, 12.0])


# ---- logit, sinc, heaviside, ldexp -----------------------------------------------------------------------------------
def test_logit_values_eps_and_gradients():
    p = np.array([0.0, 0.05, 0.3, 0.5, 0.97, 1.0])
    with np.errstate(divide="ignore"):
        assert_close(ember.logit(_t(p)), np.log(p / (1 - p)))
    q = np.clip(p, 0.1, 0.9)
    assert_close(ember.logit(_t(p), eps=0.1), np.log(q / (1 - q)))
    assert ember.logit(_t(p), eps=-1.0).isinf().tolist() == [True, False, False, False, False, True]  # no clamp
    assert ember.logit(ember.tensor([1, 0])).dtype is ember.float32
    x = _t([0.05, 0.3, 0.5, 0.97], grad=True)
    assert ember.autograd.gradcheck(ember.logit, (x,))
    assert ember.autograd.gradgradcheck(ember.logit, (x,))
    ember.logit(x, eps=0.1).sum().backward()
    assert x.grad[0].item() == 0.0 and x.grad[3].item() == 0.0  # clamped away: no gradient
    y = _t([0.25]).logit_()
    assert_close(y, [np.log(1 / 3)])
    with pytest.raises(RuntimeError):
        ember.tensor([1]).logit_()  # a float result cannot go into an integer tensor


def test_sinc_values_and_gradient_at_zero():
    x = np.array([-2.5, -1.0, -0.3, 0.0, 0.3, 1.0, 4.0])
    assert_close(ember.sinc(_t(x)), np.sinc(x), rtol=1e-14, atol=1e-16)
    assert ember.sinc(ember.tensor([0, 1, 2])).dtype is ember.float32
    t = _t(x, grad=True)
    assert ember.autograd.gradcheck(ember.sinc, (t,))
    # at 0 the gradient is the constant 0 of a removable singularity (as in torch), so its own derivative is 0 there
    # rather than sinc''(0): the second derivative is checked away from 0
    assert ember.autograd.gradgradcheck(ember.sinc, (_t(x[x != 0], grad=True),))
    g, = ember.autograd.grad(ember.sinc(t).sum(), t)
    assert g[3].item() == 0.0 and not g.isnan().any()
    assert_close(_t(x).sinc_(), np.sinc(x), rtol=1e-14, atol=1e-16)


def test_heaviside():
    x = _t([-1.5, 0.0, 2.0, -0.0, NAN])
    assert ember.heaviside(x, _t([0.5])).tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]  # torch's NaN gives 0 (NumPy's NaN)
    assert ember.heaviside(ember.tensor([0, -1, 2]), ember.tensor([7])).tolist() == [7, 0, 1]
    with pytest.raises(RuntimeError, match="different dtypes"):
        ember.heaviside(x, ember.tensor([1]))
    with pytest.raises(TypeError):
        ember.heaviside(x, 0.5)
    leaf = _t([1.0, 0.0], grad=True)
    with pytest.raises(RuntimeError, match="derivative for 'heaviside' is not implemented"):
        ember.heaviside(leaf, _t([0.5])).sum().backward()
    y = _t([-2.0, 0.0, 3.0])
    assert y.heaviside_(_t([9.0])).tolist() == [0.0, 9.0, 1.0]


def test_ldexp_dtypes_values_and_gradient():
    m, e = np.array([0.75, -1.5, 3.0]), np.array([3, -2, 1000])
    assert_close(ember.ldexp(_t(m), ember.tensor(e)), np.ldexp(m, e), rtol=1e-15)
    assert ember.ldexp(_t([1.0], ember.float16), ember.tensor([3])).dtype is ember.float16
    assert ember.ldexp(_t([1.0], ember.float16), ember.tensor([3000])).isinf().item()
    assert ember.ldexp(ember.tensor([1], dtype=ember.int32), ember.tensor([3], dtype=ember.int8)).dtype \
        is ember.float32
    assert ember.ldexp(_t([1.0], ember.float16), _t([3.0], ember.float32)).dtype is ember.float32
    x, k = _t(m, grad=True), _t([1.0, 0.5, -2.0], grad=True)
    assert ember.autograd.gradcheck(ember.ldexp, (x, k))
    y = _t([1.0, 2.0])
    assert y.ldexp_(ember.tensor([2])).tolist() == [4.0, 8.0]


# ---- logcumsumexp ----------------------------------------------------------------------------------------------------
@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple), dt=st.sampled_from(FLOATS),
       data=st.data())
def test_logcumsumexp_matches_numpy(shape, dt, data):
    x = np_array(data.draw, shape, dt, -50, 50)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    got = ember.logcumsumexp(ember.tensor(x), dim)
    assert got.dtype.name == dt
    assert_close(got, np.logaddexp.accumulate(x.astype(np.float64), axis=dim), **TOL[dt])


def test_logcumsumexp_edges_errors_and_gradients():
    x = np.array([1e4, -INF, 1e4, NAN, 2.0])
    with np.errstate(invalid="ignore"):
        assert_close(ember.logcumsumexp(_t(x), 0), np.logaddexp.accumulate(x))
    assert ember.logcumsumexp(_t(1.5), 0).item() == 1.5
    with pytest.raises(NotImplementedError, match="'Long'"):
        ember.logcumsumexp(ember.tensor([1, 2]), 0)
    with pytest.raises(IndexError):
        ember.logcumsumexp(_t([1.0]), 1)
    t = _t(np.random.default_rng(0).normal(size=(3, 4)) * 20, grad=True)
    for dim in (0, 1):
        assert ember.autograd.gradcheck(lambda a: a.logcumsumexp(dim), (t,))
        assert ember.autograd.gradgradcheck(lambda a: a.logcumsumexp(dim), (t,))


# ---- nansum, nanmean -------------------------------------------------------------------------------------------------
@SETTINGS
@given(shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), data=st.data())
def test_nansum_nanmean_match_numpy(shape, data):
    x = np_array(data.draw, shape, "float64")
    x[np.random.default_rng(len(shape)).random(shape) < 0.3] = NAN
    dim = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)) if shape else None
    keep = data.draw(st.booleans())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
        assert_close(ember.nansum(ember.tensor(x), dim, keep), np.nansum(x, axis=dim, keepdims=keep))
        assert_close(ember.nanmean(ember.tensor(x), dim, keep), np.nanmean(x, axis=dim, keepdims=keep))


def test_nansum_nanmean_dtypes_errors_gradient():
    assert ember.nansum(ember.tensor([1, 2], dtype=ember.int32)).dtype is ember.int64
    assert ember.nansum(_t([1.0, NAN], ember.float32), dtype=ember.float64).dtype is ember.float64
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point"):
        ember.nanmean(ember.tensor([1, 2]))
    x = _t([[1.0, NAN], [2.0, 3.0]], grad=True)
    x.nanmean().backward()
    assert_close(x.grad, [[1 / 3, 0.0], [1 / 3, 1 / 3]])


# ---- in-place forms and aliases --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,args", [("relu_", ()), ("square_", ()), ("sigmoid_", ()), ("exp_", ()),
                                       ("clamp_", (-0.5, 0.5)), ("clamp_min_", (0.0,)), ("clamp_max_", (0.0,)),
                                       ("nan_to_num_", ()), ("negative_", ()), ("arctan_", ()), ("fix_", ()),
                                       ("deg2rad_", ()), ("xlogy_", (2.0,))])
def test_namespace_inplace_functions(name, args):
    data = np.array([-1.25, 0.5, 2.0])
    x = _t(data)
    assert getattr(ember, name)(x, *args) is x
    expected = getattr(_t(data), name.rstrip("_"))(*args)
    assert_close(x, expected.numpy())


def test_tensor_inplace_aliases():
    x = _t([-1.0, 4.0])
    x.absolute_().true_divide_(2).multiply_(3).subtract_(0.5)
    assert x.tolist() == [1.0, 5.5]
    assert _t([1.0, 3.0]).greater_(2.0).tolist() == [0.0, 1.0]
    assert _t([[1.0, 2.0]]).cumsum_(1).tolist() == [[1.0, 3.0]]
    assert _t([0.0, 2.0]).logical_not_().tolist() == [1.0, 0.0]
    assert ember.clamp_min(_t([-1.0, 1.0]), 0).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError):
        ember.tensor([1, 2]).cumsum_(0, dtype=ember.float32)  # float cannot go into int64 in place
