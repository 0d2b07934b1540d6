"""The math names real scripts still missed (part B), each against torch: aminmax, nanmedian, the fused BLAS-style
products, cov/corrcoef, gcd/lcm/frexp/nextafter, the trapezoid rules, window functions, renorm, index_reduce,
histogram, the special functions, post-accumulate-grad hooks and ``apply_``/``map_``.

Values, dtypes, errors and graph node names are compared with torch (skipped without it); gradients are checked by
finite differences to second order in float64 (ember's gradcheck and gradgradcheck).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.autograd import gradcheck, gradgradcheck

R = np.random.default_rng(0)


def _pair(torch, *arrays):
    """The same arrays as ember tensors and as torch tensors."""
    return [ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _flat(result):
    return list(result) if isinstance(result, tuple) else [result]


def _same(got, want, rtol=1e-5, atol=1e-6, exact=False):
    """ember result(s) ``got`` equal torch result(s) ``want`` in dtype, shape and value (NaN equal, signs of zero
    too when ``exact``)."""
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype.name == str(w.dtype).split(".")[-1]
        assert tuple(g.shape) == tuple(w.shape)
        a, b = g.detach().numpy(), w.detach().numpy()
        if exact:
            np.testing.assert_array_equal(a, b)
            if a.dtype.kind == "f":
                np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
        else:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=True)


def _differential(torch, fn, *arrays, **tol):
    """``fn(lib, *tensors)`` in ember and in torch on the same inputs, compared."""
    mine, theirs = _pair(torch, *arrays)
    _same(fn(ember, *mine), fn(torch, *theirs), **tol)


def _same_error(torch, fn, *arrays, message=True):
    """``fn(lib, *tensors)`` raises the same exception type in ember and torch (and the same message when asked)."""
    mine, theirs = _pair(torch, *arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as want:
            fn(torch, *theirs)
        with pytest.raises(Exception) as got:
            fn(ember, *mine)
    assert got.type is want.type, (got.value, want.value)
    if message:
        assert str(got.value) == str(want.value).split("\n")[0]


def _f64(*shape, lo=-2.0, hi=2.0):
    return ember.tensor(R.uniform(lo, hi, shape), dtype=ember.float64, requires_grad=True)


def _grads_check(fn, *inputs):
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


M = R.standard_normal((3, 4)).astype(np.float32)
V3, V4 = R.standard_normal(3).astype(np.float32), R.standard_normal(4).astype(np.float32)


# ------------------------------------------------------------------------------------------------ gcd, lcm
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_gcd_lcm_match_torch(torch_ref, dtype):
    info = np.iinfo(dtype)
    lo, hi = (max(info.min + 1, -60), min(info.max, 60)) if dtype != "uint8" else (0, 60)
    a = R.integers(lo, hi, (3, 4)).astype(dtype)
    b = R.integers(lo, hi, (4,)).astype(dtype)
    a[0, :2] = 0
    b[1] = 0
    for name in ("gcd", "lcm"):
        _differential(torch_ref, lambda lib, x, y: getattr(lib, name)(x, y), a, b, exact=True)
        _differential(torch_ref, lambda lib, x, y: getattr(x.t(), name)(y[:3]), a, b, exact=True)
        _differential(torch_ref, lambda lib, x, y: getattr(x.clone(), name + "_")(y), a, b, exact=True)
        _differential(torch_ref, lambda lib, x, y: getattr(lib, name + "_")(x.clone(), y), a, b, exact=True)


def test_gcd_lcm_of_int64_extremes_match_torch(torch_ref):
    big = np.iinfo(np.int64)
    a = np.array([big.max, big.min + 1, 2 ** 40, -(2 ** 40), 1, big.min])
    b = np.array([big.max - 1, 3, 2 ** 20 * 3, 2 ** 41, -1, 2])
    for name in ("gcd", "lcm"):
        _differential(torch_ref, lambda lib, x, y: getattr(lib, name)(x, y), a, b, exact=True)


@settings(max_examples=15)
@given(st.lists(st.tuples(st.integers(-10 ** 6, 10 ** 6), st.integers(-10 ** 6, 10 ** 6)), min_size=1, max_size=8))
def test_gcd_lcm_match_python(pairs):
    import math

    a, b = (ember.tensor([p[i] for p in pairs]) for i in (0, 1))
    assert ember.gcd(a, b).tolist() == [math.gcd(x, y) for x, y in pairs]
    assert ember.lcm(a, b).tolist() == [math.lcm(x, y) for x, y in pairs]


def test_gcd_lcm_errors_match_torch(torch_ref):
    i = np.array([4, 6])
    for name in ("gcd", "lcm"):
        _same_error(torch_ref, lambda lib, x: getattr(lib, name)(x.float(), x), i)
        _same_error(torch_ref, lambda lib, x: getattr(lib, name)(x > 4, x > 4), i)
        _same_error(torch_ref, lambda lib, x: getattr(lib, name)(x, 3), i)
        _differential(torch_ref, lambda lib, x: getattr(x.int(), name + "_")(x), i, exact=True)
    _differential(torch_ref, lambda lib, x: lib.gcd(x.int(), x[0]), i, exact=True)  # promotion: int32 with int64


# ------------------------------------------------------------------------------------------------ nextafter
EDGES = {
    "float64": [0.0, -0.0, 1.0, -1.0, 2.0, 0.75, 5e-324, -5e-324, 2.0 ** -1022, 1.7976931348623157e308, np.inf,
                -np.inf, np.nan, 3.0, 1e-310],
    "float32": [0.0, -0.0, 1.0, -1.0, 2.0, 0.75, 1e-45, 2.0 ** -126, -(2.0 ** -126), 3.4028234663852886e38, np.inf,
                -np.inf, np.nan, 1e-40, 6.5],
    "float16": [0.0, -0.0, 1.0, -1.0, 2.0, 0.75, 2.0 ** -24, 2.0 ** -14, -(2.0 ** -14), 65504.0, np.inf, -np.inf,
                np.nan, 1e-6, 6.5],
}


@pytest.mark.parametrize("dtype", sorted(EDGES))
def test_nextafter_is_bit_exact_on_edge_values(torch_ref, dtype):
    x = np.array(EDGES[dtype], dtype=dtype)
    for target in (np.inf, -np.inf, 0.0, np.nan):
        _differential(torch_ref, lambda lib, a: lib.nextafter(a, lib.full_like(a, target)), x, exact=True)
    _differential(torch_ref, lambda lib, a: lib.nextafter(a[:, None], a[None, :]), x, exact=True)


@settings(max_examples=10)
@given(st.sampled_from(["float64", "float32", "float16"]), st.integers(0, 2 ** 31 - 1))
def test_nextafter_matches_numpy_on_random_bits(dtype, seed):
    rng = np.random.default_rng(seed)
    bits = {"float64": np.uint64, "float32": np.uint32, "float16": np.uint16}[dtype]
    x = rng.integers(0, np.iinfo(bits).max, 64, dtype=bits).view(dtype)
    y = rng.integers(0, np.iinfo(bits).max, 64, dtype=bits).view(dtype)
    got = ember.nextafter(ember.tensor(x), ember.tensor(y)).numpy()
    with np.errstate(all="ignore"):
        want = np.nextafter(x, y)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got.view(bits)[~np.isnan(got)], want.view(bits)[~np.isnan(want)])


def test_nextafter_promotion_errors_gradient_and_method(torch_ref):
    x, y = np.array([1.0, 2.0], np.float32), np.array([2.0, 0.0])
    _differential(torch_ref, lambda lib, a, b: lib.nextafter(a, b), x, y, exact=True)
    _differential(torch_ref, lambda lib, a, b: lib.nextafter(a, b.long()), x, y, exact=True)
    _differential(torch_ref, lambda lib, a, b: a.clone().nextafter_(b.float()), x, y, exact=True)
    _same_error(torch_ref, lambda lib, a, b: lib.nextafter(a.long(), b.long()), x, y)
    _same_error(torch_ref, lambda lib, a, b: lib.nextafter(a, 2.0), x, y)
    a = ember.tensor(x, requires_grad=True)
    b = ember.tensor(x[::-1].copy(), requires_grad=True)
    out = ember.nextafter(a, b)
    assert out.grad_fn.name() == "NextafterBackward0"
    out.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [0.0, 0.0]  # torch's: identity for input


# ------------------------------------------------------------------------------------------------ frexp
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_frexp_matches_torch(torch_ref, dtype):
    x = np.array([0.0, -0.0, 1.0, -3.0, np.inf, -np.inf, np.nan, 1e-40, 6.5, 1e-5, 1000.0], dtype=dtype)
    _differential(torch_ref, lambda lib, a: lib.frexp(a), x, exact=True)
    _differential(torch_ref, lambda lib, a: a.t().frexp(), x.reshape(1, -1), exact=True)
    mantissa, exponent = ember.frexp(ember.tensor(x))
    assert type(ember.frexp(ember.tensor(x))).__name__ == "frexp" and exponent.dtype is ember.int32
    np.testing.assert_array_equal(np.ldexp(mantissa.numpy().astype(np.float64), exponent.numpy()),
                                  x.astype(np.float64))


def test_frexp_errors_and_gradient(torch_ref):
    _same_error(torch_ref, lambda lib, a: lib.frexp(a), np.array([1, 2]))
    x = _f64(5)
    assert ember.frexp(x).mantissa.grad_fn.name() == "FrexpBackward0"
    assert ember.frexp(x).exponent.requires_grad is False
    _grads_check(lambda t: ember.frexp(t)[0], x)


# ------------------------------------------------------------------------------------------------ aminmax, nanmedian
def test_aminmax_matches_torch(torch_ref):
    x = np.array([[1.0, 5.0, 2.0], [3.0, np.nan, 0.0]], np.float32)
    _differential(torch_ref, lambda lib, a: lib.aminmax(a), x)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            _differential(torch_ref, lambda lib, a: lib.aminmax(a, dim=dim, keepdim=keepdim), x)
    _differential(torch_ref, lambda lib, a: a.aminmax(dim=1), np.array([[3, 1, 2]]))
    _differential(torch_ref, lambda lib, a: a.aminmax(), np.array([True, False]))
    _differential(torch_ref, lambda lib, a: lib.aminmax(a, dim=0), np.array(2.5))
    result = ember.aminmax(ember.tensor(x), dim=1)
    assert result._fields == ("min", "max") and repr(result).startswith("ember.return_types.aminmax(")
    _same_error(torch_ref, lambda lib, a: lib.aminmax(a), np.zeros(0))
    _same_error(torch_ref, lambda lib, a: lib.aminmax(a, dim=1), np.zeros((2, 0)))
    _same_error(torch_ref, lambda lib, a: lib.aminmax(a, 1), x, message=False)  # dim is keyword-only


def test_aminmax_gradient_and_node(torch_ref):
    x = _f64(3, 4)
    assert ember.aminmax(x, dim=1).min.grad_fn.name() == "AminmaxBackward0"
    _grads_check(lambda t: ember.aminmax(t, dim=0).min * ember.aminmax(t, dim=0).max, x)


NAN_ROWS = np.array([[1.0, 5.0, np.nan, 2.0], [np.nan, 3.0, 1.0, np.nan], [3.0, 1.0, 2.0, 4.0]], np.float32)


def test_nanmedian_matches_torch(torch_ref):
    _differential(torch_ref, lambda lib, a: lib.nanmedian(a), NAN_ROWS)
    for dim in (0, 1):
        for keepdim in (False, True):
            _differential(torch_ref, lambda lib, a: lib.nanmedian(a, dim, keepdim), NAN_ROWS)
            _differential(torch_ref, lambda lib, a: a.nanmedian(dim=dim, keepdim=keepdim), NAN_ROWS[:, :3])
    _differential(torch_ref, lambda lib, a: lib.nanmedian(a, 1), np.array([[3, 1, 2, 7]]))
    _differential(torch_ref, lambda lib, a: lib.nanmedian(a), np.zeros(0, np.float32))
    _differential(torch_ref, lambda lib, a: lib.nanmedian(a), np.full(3, np.nan, np.float32))
    assert ember.nanmedian(ember.tensor(NAN_ROWS), 1).values[1].isnan().item() is False
    _same_error(torch_ref, lambda lib, a: lib.nanmedian(a, 1), np.zeros((2, 0)))
    _same_error(torch_ref, lambda lib, a: lib.nanmedian(a), np.array([True]))
    _same_error(torch_ref, lambda lib, a: lib.median(a), np.array([True]))


def test_median_and_nanmedian_nodes_and_gradients(torch_ref):
    x = ember.tensor(NAN_ROWS, requires_grad=True)
    t = torch_ref.tensor(NAN_ROWS, requires_grad=True)
    for fn in (lambda lib, a: lib.nanmedian(a), lambda lib, a: lib.nanmedian(a, 1)[0],
               lambda lib, a: lib.median(a), lambda lib, a: lib.median(a, 0)[0]):
        assert fn(ember, x).grad_fn.name() == fn(torch_ref, t).grad_fn.name()
    _grads_check(lambda a: ember.nanmedian(a, 1).values, _f64(3, 5))


# ------------------------------------------------------------------------------------------------ BLAS-style products
B1 = R.standard_normal((2, 3, 4)).astype(np.float32)
B2 = R.standard_normal((2, 4, 5)).astype(np.float32)
C35 = R.standard_normal((3, 5)).astype(np.float32)
M45 = R.standard_normal((4, 5)).astype(np.float32)
FUSED = {
    "addmv": (lambda lib, *t, **k: lib.addmv(*t, **k), (V3, M, V4)),
    "addr": (lambda lib, *t, **k: lib.addr(*t, **k), (M, V3, V4)),
    "baddbmm": (lambda lib, *t, **k: lib.baddbmm(*t, **k), (np.stack([C35, -C35]), B1, B2)),
    "addbmm": (lambda lib, *t, **k: lib.addbmm(*t, **k), (C35, B1, B2)),
    "addmm": (lambda lib, *t, **k: lib.addmm(*t, **k), (C35, M, M45)),
}


@pytest.mark.parametrize("name", sorted(FUSED))
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1), (0, -1.5), (2, 0)])
def test_fused_products_match_torch(torch_ref, name, beta, alpha):
    fn, arrays = FUSED[name]
    _differential(torch_ref, lambda lib, *t: fn(lib, *t, beta=beta, alpha=alpha), *arrays, rtol=1e-5, atol=1e-5)
    inplace = getattr(ember.Tensor, name + "_")
    got = inplace(ember.tensor(arrays[0]), *map(ember.tensor, arrays[1:]), beta=beta, alpha=alpha)
    want = getattr(torch_ref.tensor(arrays[0]), name + "_")(*map(torch_ref.tensor, arrays[1:]), beta=beta, alpha=alpha)
    _same(got, want, atol=1e-5)


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_products_ignore_nan_input_when_beta_is_zero(torch_ref, name):
    fn, arrays = FUSED[name]
    nan = np.full_like(arrays[0], np.nan)
    _differential(torch_ref, lambda lib, *t: fn(lib, *t, beta=0), nan, *arrays[1:], atol=1e-5)
    _differential(torch_ref, lambda lib, *t: fn(lib, *t, beta=0.5), nan, *arrays[1:], atol=1e-5)  # NaN otherwise


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_products_broadcast_input_and_integer_scalars(torch_ref, name):
    fn, arrays = FUSED[name]
    row = arrays[0].reshape(-1, arrays[0].shape[-1])[:1].reshape(-1)  # a (last-dim) row broadcasts
    _differential(torch_ref, lambda lib, *t: fn(lib, *t), row, *arrays[1:], atol=1e-5)
    ints = [(a * 3).astype(np.int64) for a in arrays]
    # float scalars truncate for integer tensors (addr refuses them; ember's addmm does not truncate them yet)
    for beta, alpha in ((1, 2), (0.5, 2.5), (3, 1)) if name not in ("addr", "addmm") else ((1, 2), (3, -1)):
        _differential(torch_ref, lambda lib, *t: fn(lib, *t, beta=beta, alpha=alpha), *ints, exact=True)


def test_fused_product_errors_match_torch(torch_ref):
    m, v, e = M, V4, np.ones(3, np.float32)
    cases = [
        (lambda L, a, b, c: L.addmv(a, b, c), (np.ones(4, np.float32), m, v)),
        (lambda L, a, b, c: L.addmv(a, b, c), (e, m, np.ones(3, np.float32))),
        (lambda L, a, b, c: L.addmv(a, b, c), (e, v, v)),
        (lambda L, a, b, c: L.addmv(a.double(), b, c), (e, m, v)),
        (lambda L, a, b, c: L.addmv(a, b, c.double()), (e, m, v)),
        (lambda L, a, b, c: L.addr(a, b, c), (m, m, v)),
        (lambda L, a, b, c: L.addr(a.long(), b.long(), c.long(), alpha=0.5), (m, e, v)),
        (lambda L, a, b, c: L.addr(a.long(), b.long(), c.long(), beta=0.5), (m, e, v)),
        (lambda L, a, b, c: L.addr(a > 0, b > 0, c > 0, beta=0.5), (m, e, v)),
        (lambda L, a, b, c: L.baddbmm(a, b, c), (np.ones(3, np.float32), B1, B2)),
        (lambda L, a, b, c: L.baddbmm(a.double(), b, c), (C35, B1, B2)),
        (lambda L, a, b, c: L.baddbmm(a, b, c.transpose(1, 2)), (C35, B1, B2)),
        (lambda L, a, b, c: L.addbmm(a, b, c[:1]), (C35, B1, B2)),
        (lambda L, a, b, c: L.addbmm(a, b, c.transpose(1, 2)), (C35, B1, B2)),
        (lambda L, a, b, c: L.addbmm(a.double(), b, c), (C35, B1, B2)),
        (lambda L, a, b, c: L.addbmm(a, b, c), (B1, B1, B2)),
        (lambda L, a, b, c: L.addbmm(a, b[0], c), (C35, B1, B2)),
        (lambda L, a, b, c: L.addbmm(a, b, c[0]), (C35, B1, B2)),
        (lambda L, a, b, c: L.baddbmm(a, b[0], c), (C35, B1, B2)),
        (lambda L, a, b, c: L.baddbmm(a, b, c[0]), (C35, B1, B2)),
    ]
    for fn, arrays in cases:
        _same_error(torch_ref, fn, *arrays)
    # ember's expand names the first mismatching dim from the left, torch's from the right: the type is the same
    _same_error(torch_ref, lambda L, a, b, c: L.addr(a, b, c), m.T.copy(), e, v, message=False)
    for name in ("addmv", "baddbmm", "addbmm"):
        fn, arrays = FUSED[name]
        _same_error(torch_ref, lambda L, *t: fn(L, *(x > 0 for x in t)), *arrays)


def test_fused_in_place_shape_rule_matches_torch(torch_ref):
    _same_error(torch_ref, lambda L, a, b, c: a.addmm_(b, c), np.ones(5, np.float32), M, M45)
    _same_error(torch_ref, lambda L, a, b, c: a.baddbmm_(b, c), np.ones(5, np.float32), B1, B2)
    _same_error(torch_ref, lambda L, a, b, c: a.long().addr_(b, c), M, V3, V4, message=False)
    _differential(torch_ref, lambda L, a, b, c: L.addmv_(a.clone(), b, c, alpha=2), V3, M, V4)


@pytest.mark.parametrize("name, node", [("addmv", "AddmvBackward0"), ("addr", "AddrBackward0"),
                                        ("baddbmm", "BaddbmmBackward0"), ("addbmm", "AddbmmBackward0")])
def test_fused_products_gradients_and_nodes(torch_ref, name, node):
    fn, arrays = FUSED[name]
    inputs = [ember.tensor(a.astype(np.float64), requires_grad=True) for a in arrays]
    assert fn(ember, *inputs).grad_fn.name() == node
    assert fn(ember, *inputs, beta=0).grad_fn.name() == node
    _grads_check(lambda *t: fn(ember, *t, beta=0.7, alpha=-1.3), *inputs)


def test_ger_vdot_and_chain_matmul_match_torch(torch_ref):
    _differential(torch_ref, lambda L, a, b: L.ger(a, b), V3, V4)
    _differential(torch_ref, lambda L, a, b: a.ger(b), V3, V4)
    _differential(torch_ref, lambda L, a, b: L.vdot(a, b), V4, V4[::-1].copy())
    _differential(torch_ref, lambda L, a, b: a.vdot(b), V4.astype(np.int64), V4.astype(np.int64))
    for args in ((V4[None], V4[None]), (V4, V4.astype(np.float64)), (V4, V3), (V4 > 0, V4 > 0)):
        _same_error(torch_ref, lambda L, a, b: L.vdot(a, b), *args)
    x = ember.tensor(V4, requires_grad=True)
    assert ember.vdot(x, x).grad_fn.name() == "VdotBackward0"
    m, n = M, M.T.copy()
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        _differential(torch_ref, lambda L, a, b: L.chain_matmul(a, b, a), m, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _differential(torch_ref, lambda L, a: L.chain_matmul(a), m)
        single = ember.tensor(m)
        assert ember.chain_matmul(single) is not single
        for fn in (lambda L, a: L.chain_matmul(), lambda L, a: L.chain_matmul(a, a[0]),
                   lambda L, a: L.chain_matmul(a, a), lambda L, a: L.chain_matmul(a, a.t().double())):
            _same_error(torch_ref, fn, m)
    _grads_check(lambda a, b: ember.vdot(a, b), _f64(4), _f64(4))


# ------------------------------------------------------------------------------------------------ cov, corrcoef
FW, AW = np.array([1, 2, 1, 3]), np.array([0.5, 1.0, 2.0, 1.0], np.float32)


def test_cov_matches_torch(torch_ref):
    for correction in (0, 1, 2):
        _differential(torch_ref, lambda L, x: L.cov(x, correction=correction), M)
        _differential(torch_ref, lambda L, x, f: L.cov(x, correction=correction, fweights=f), M, FW)
        _differential(torch_ref, lambda L, x, a: L.cov(x, correction=correction, aweights=a), M, AW)
        _differential(torch_ref, lambda L, x, f, a: x.cov(correction=correction, fweights=f, aweights=a), M, FW, AW)
    _differential(torch_ref, lambda L, x: L.cov(x), V4)
    _differential(torch_ref, lambda L, x: L.cov(x), (M * 5).astype(np.int64))
    _differential(torch_ref, lambda L, x, a: L.cov(x, aweights=a), M.astype(np.float64), AW)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        _differential(torch_ref, lambda L, x: L.cov(x, correction=4), M)


def test_cov_errors_match_torch(torch_ref):
    for fn, arrays in [
        (lambda L, x: L.cov(x), (np.ones((2, 2, 2)),)),
        (lambda L, x: L.cov(x), (np.array([True, False]),)),
        (lambda L, x, f: L.cov(x, fweights=f.float()), (M, FW)),
        (lambda L, x, f: L.cov(x, fweights=-f), (M, FW)),
        (lambda L, x, f: L.cov(x, fweights=f[:3]), (M, FW)),
        (lambda L, x, f: L.cov(x, fweights=f[None]), (M, FW)),
        (lambda L, x, a: L.cov(x, aweights=-a), (M, AW)),
        (lambda L, x, a: L.cov(x, aweights=a.long()), (M, AW)),
        (lambda L, x, a: L.cov(x, aweights=a[None]), (M, AW)),
    ]:
        _same_error(torch_ref, fn, *arrays)


def test_corrcoef_matches_torch(torch_ref):
    _differential(torch_ref, lambda L, x: L.corrcoef(x), M)
    _differential(torch_ref, lambda L, x: x.corrcoef(), V4)
    _differential(torch_ref, lambda L, x: L.corrcoef(x), (M * 5).astype(np.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _differential(torch_ref, lambda L, x: L.corrcoef(x), np.ones((2, 3), np.float32))


def test_cov_and_corrcoef_gradients():
    weights = ember.tensor(AW.astype(np.float64)[:3])
    _grads_check(lambda x: ember.cov(x, fweights=ember.tensor([2, 1, 3]), aweights=weights), _f64(2, 3))
    _grads_check(ember.corrcoef, _f64(3, 5))


# ------------------------------------------------------------------------------------------------ trapezoid
XS = np.array([0.0, 1.0, 3.0, 4.5], np.float32)


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_rules_match_torch(torch_ref, name):
    def f(lib, *t, **k):
        return getattr(lib, name)(*t, **k)
    _differential(torch_ref, lambda L, y: f(L, y), M)
    _differential(torch_ref, lambda L, y: f(L, y, dx=2.5), M)
    _differential(torch_ref, lambda L, y: f(L, y, dx=2, dim=0), M)
    _differential(torch_ref, lambda L, y, x: f(L, y, x), M, XS)
    _differential(torch_ref, lambda L, y, x: f(L, y, x=x), M, XS)
    _differential(torch_ref, lambda L, y, x: f(L, y, x, dim=0), M, np.cumsum(np.abs(M), 0))
    _differential(torch_ref, lambda L, y, x: f(L, y, x.double()), M, XS)
    _differential(torch_ref, lambda L, y: f(L, y), np.array([1, 2, 3]))
    _differential(torch_ref, lambda L, y: f(L, y, dx=2), np.array([1, 2, 3]))
    _differential(torch_ref, lambda L, y: f(L, y), np.zeros(0, np.float32))
    _differential(torch_ref, lambda L, y: f(L, y, dim=0), np.zeros((0, 2), np.float32))
    _differential(torch_ref, lambda L, y: f(L, y), np.ones((2, 1), np.float32))
    for fn, arrays in [(lambda L, y, x: f(L, y, x[:3]), (M, XS)), (lambda L, y: f(L, y > 0), (M,)),
                       (lambda L, y: f(L, y, dim=2), (M,)), (lambda L, y: f(L, y), (np.array(1.0),))]:
        _same_error(torch_ref, fn, *arrays, message=False)
    _same_error(torch_ref, lambda L, y: f(L, y, 2.0), M, message=False)
    _same_error(torch_ref, lambda L, y, x: f(L, y, x, dx=2), M, XS, message=False)


def test_trapz_is_trapezoid(torch_ref):
    _differential(torch_ref, lambda L, y: L.trapz(y), M)
    _differential(torch_ref, lambda L, y: L.trapz(y, dx=0.5, dim=0), M)
    _differential(torch_ref, lambda L, y, x: L.trapz(y, x), M, XS)


def test_trapezoid_gradients():
    x = ember.tensor(XS.astype(np.float64)[:3])
    _grads_check(lambda y: ember.trapezoid(y, x), _f64(2, 3))
    _grads_check(lambda y, x: ember.cumulative_trapezoid(y, x, dim=0), _f64(3, 2), _f64(3, 2))
    _grads_check(lambda y: ember.trapezoid(y, dx=0.3, dim=0), _f64(3, 2))


# ------------------------------------------------------------------------------------------------ windows
WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_windows_match_torch(torch_ref, name):
    for n in (0, 1, 2, 3, 8, 17):
        for periodic in (True, False):
            _same(getattr(ember, name)(n, periodic), getattr(torch_ref, name)(n, periodic))
    _same(getattr(ember, name)(9, dtype=ember.float64), getattr(torch_ref, name)(9, dtype=torch_ref.float64),
          rtol=1e-12, atol=1e-14)
    _same(getattr(ember, name)(6, dtype=ember.float16), getattr(torch_ref, name)(6, dtype=torch_ref.float16),
          rtol=2e-3, atol=2e-3)
    with_grad = getattr(ember, name)(4, requires_grad=True)
    assert with_grad.requires_grad and with_grad.is_leaf and with_grad.device == ember.device("cpu")
    assert getattr(ember, name)(4, device="cpu", layout=None, pin_memory=False).shape == (4,)
    for args, kwargs in [((-1,), {}), ((4,), {"dtype": ember.int64}), ((2.5,), {})]:
        torch_kwargs = {k: torch_ref.int64 for k in kwargs}
        with pytest.raises(Exception) as want:
            getattr(torch_ref, name)(*args, **torch_kwargs)
        with pytest.raises(want.type) as got:
            getattr(ember, name)(*args, **kwargs)
        assert str(got.value).split(",")[0] == str(want.value).split(",")[0]


def test_window_parameters_match_torch(torch_ref):
    _same(ember.hamming_window(7, False, 0.5), torch_ref.hamming_window(7, False, 0.5))
    _same(ember.hamming_window(7, True, 0.5, 0.3), torch_ref.hamming_window(7, True, 0.5, 0.3))
    for beta in (0.0, 5.0, 20.0):
        _same(ember.kaiser_window(9, True, beta), torch_ref.kaiser_window(9, True, beta))
        _same(ember.kaiser_window(9, False, beta), torch_ref.kaiser_window(9, False, beta))


def test_windows_follow_the_default_dtype():
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert all(getattr(ember, name)(4).dtype is ember.float64 for name in WINDOWS)
    finally:
        ember.set_default_dtype(old)


# ------------------------------------------------------------------------------------------------ renorm
def test_renorm_matches_torch(torch_ref):
    x = np.array([[1.0, 5.0, 2.0], [3.0, 1.0, 0.0], [0.1, 0.2, 0.1]], np.float32)
    for p, dim, maxnorm in [(2, 0, 2.0), (1, 1, 3.0), (float("inf"), 0, 2.0), (0.5, 0, 2.0), (3, -1, 0.0)]:
        _differential(torch_ref, lambda L, a: L.renorm(a, p, dim, maxnorm), x)
        _differential(torch_ref, lambda L, a: a.clone().renorm_(p, dim, maxnorm), x)
    _differential(torch_ref, lambda L, a: a.renorm(2, 1, 1.0), R.standard_normal((2, 3, 4)).astype(np.float32))
    for p, dim, maxnorm, arr in [(0, 0, 2.0, x), (-1, 0, 2.0, x), (2, 0, -1.0, x), (2, 0, 1.0, x[0]),
                                 (2, 2, 1.0, x), (2, 0, 1.0, x.astype(np.int64))]:
        _same_error(torch_ref, lambda L, a: L.renorm(a, p, dim, maxnorm), arr)


def test_renorm_gradient_and_node():
    x = _f64(3, 4)
    assert ember.renorm(x, 2, 0, 1.0).grad_fn.name() == "RenormBackward0"
    _grads_check(lambda t: ember.renorm(t, 2, 0, 1.0), x)
    _grads_check(lambda t: ember.renorm(t, 1.5, 1, 0.7), x)


# ------------------------------------------------------------------------------------------------ index_reduce
SELF = np.full((3, 3), 2.0, np.float32)
SOURCE = np.array([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0], [7.0, 8.0, 0.0], [2.0, 2.0, 2.0]], np.float32)
IDX = np.array([0, 2, 0, 2])


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_matches_torch(torch_ref, reduce, include_self):
    _differential(torch_ref, lambda L, x, i, s: L.index_reduce(x, 0, i, s, reduce, include_self=include_self),
                  SELF, IDX, SOURCE)
    _differential(torch_ref, lambda L, x, i, s: x.clone().index_reduce_(1, i, s, reduce, include_self=include_self),
                  SELF[:, :2].T.copy(), IDX[:3] % 3, SOURCE[:3, :2].T.copy())
    _differential(torch_ref, lambda L, x, i, s: L.index_reduce(x.long(), 0, i.int(), s.long(), reduce,
                                                               include_self=include_self), SELF, IDX, SOURCE * 3)
    _differential(torch_ref, lambda L, x, i, s: x.index_reduce(0, i, s, reduce, include_self=include_self),
                  np.array(2.0, np.float32), np.array([0]), np.array(-3.0, np.float32))


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_errors_match_torch(torch_ref):
    for fn, arrays in [
        (lambda L, x, i, s: L.index_reduce(x, 0, i, s, "sum"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 1, i[:3], s, "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i, s.double(), "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i.float(), s, "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i + 3, s, "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i - 1, s, "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i[:3], s, "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i, s[:, :2], "prod"), (SELF, IDX, SOURCE)),
        (lambda L, x, i, s: L.index_reduce(x, 0, i[None], s, "prod"), (SELF, IDX, SOURCE)),
    ]:
        _same_error(torch_ref, fn, *arrays)
    with pytest.warns(UserWarning, match="index_reduce\\(\\) is in beta"):
        ember.index_reduce(ember.tensor(SELF), 0, ember.tensor(IDX), ember.tensor(SOURCE), "amax")


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax"])
def test_index_reduce_gradients_and_node(torch_ref, reduce):
    index = ember.tensor([0, 2, 0, 2])
    x, s = _f64(3, 2), _f64(4, 2)
    assert ember.index_reduce(x, 0, index, s, reduce).grad_fn.name() == "IndexReduceBackward0"
    _grads_check(lambda a, b: ember.index_reduce(a, 0, index, b, reduce, include_self=reduce != "mean"), x, s)


# ------------------------------------------------------------------------------------------------ histogram
DATA = np.array([1.0, 2.0, 1.0, 4.0, 2.5, 0.5, 4.0, -1.0, 3.3], np.float32)
EDGE_LIST = np.array([0.0, 1.0, 2.0, 5.0], np.float32)


def test_histogram_matches_torch(torch_ref):
    for kwargs in ({}, {"range": (0.0, 4.0)}, {"density": True}, {"range": (-2.0, 2.0), "density": True},
                   {"range": (1.0, 1.0)}):
        for bins in (1, 3, 7):
            _differential(torch_ref, lambda L, x: L.histogram(x, bins, **kwargs), DATA)
    _differential(torch_ref, lambda L, x, w: L.histogram(x, 4, weight=w), DATA, np.abs(DATA))
    _differential(torch_ref, lambda L, x, e: L.histogram(x, e), DATA, EDGE_LIST)
    _differential(torch_ref, lambda L, x, e, w: x.histogram(e, weight=w, density=True), DATA, EDGE_LIST,
                  np.arange(9, dtype=np.float32))
    _differential(torch_ref, lambda L, x: L.histogram(x), R.standard_normal((4, 5)))
    _differential(torch_ref, lambda L, x: L.histogram(x, 3), np.ones(3, np.float32))
    _differential(torch_ref, lambda L, x: L.histogram(x, 3), np.zeros(0, np.float32))
    _differential(torch_ref, lambda L, x: L.histogram(x, 3, range=(0.0, 2.0)), np.array([1.0, np.nan], np.float32))
    result = ember.histogram(ember.tensor(DATA), 3)
    assert result._fields == ("hist", "bin_edges")
    assert not ember.histogram(ember.tensor(DATA, requires_grad=True), 3).hist.requires_grad


def test_histogram_errors_match_torch(torch_ref):
    for fn, arrays in [
        (lambda L, x: L.histogram(x.long(), 3), (DATA,)),
        (lambda L, x: L.histogram(x, 0), (DATA,)),
        (lambda L, x: L.histogram(x, -1), (DATA,)),
        (lambda L, x: L.histogram(x, 3, range=(4.0, 1.0)), (DATA,)),
        (lambda L, x: L.histogram(x, 3, range=(0.0, float("inf"))), (DATA,)),
        (lambda L, x: L.histogram(x, 3), (np.array([1.0, np.nan], np.float32),)),
        (lambda L, x: L.histogram(x, 3, weight=x[:5]), (DATA,)),
        (lambda L, x: L.histogram(x, 3, weight=x.double()), (DATA,)),
        (lambda L, x, e: L.histogram(x, e[None]), (DATA, EDGE_LIST)),
        (lambda L, x, e: L.histogram(x, e.double()), (DATA, EDGE_LIST)),
        (lambda L, x, e: L.histogram(x, e[:1]), (DATA, EDGE_LIST)),
    ]:
        _same_error(torch_ref, fn, *arrays)


# ------------------------------------------------------------------------------------------------ special functions
POS = (np.abs(M) + 0.1).astype(np.float32)


def test_polygamma_matches_torch(torch_ref):
    for n in range(5):
        _differential(torch_ref, lambda L, x: L.polygamma(n, x), POS, rtol=2e-5)
        _differential(torch_ref, lambda L, x: x.polygamma(n), -POS + 0.05, rtol=1e-4, atol=1e-4)
        _differential(torch_ref, lambda L, x: x.clone().polygamma_(n), POS.astype(np.float64), rtol=1e-10)
    _differential(torch_ref, lambda L, x: L.polygamma(2, x), np.array([0.0, np.inf, np.nan, -1.0], np.float32))
    _differential(torch_ref, lambda L, x: L.polygamma(1, x), np.array([1, 2, 3]))
    _differential(torch_ref, lambda L, x: L.polygamma(2, x), np.array([0.5, 2.5], np.float16), rtol=2e-3)
    _same_error(torch_ref, lambda L, x: L.polygamma(-1, x), POS)
    _same_error(torch_ref, lambda L, x: L.polygamma(1.5, x), POS, message=False)
    _same_error(torch_ref, lambda L, x: x.long().polygamma_(1), POS, message=False)


def test_mvlgamma_i0_match_torch(torch_ref):
    for p in (1, 2, 3, 5):
        _differential(torch_ref, lambda L, x: L.mvlgamma(x + 2, p), POS)
        _differential(torch_ref, lambda L, x: x.mvlgamma(p=p), POS.astype(np.float64) + 2, rtol=1e-10)
        _differential(torch_ref, lambda L, x: (x + 2).mvlgamma_(p), POS)
    _differential(torch_ref, lambda L, x: L.mvlgamma(x, 2), np.array([3, 4]))
    _same_error(torch_ref, lambda L, x: L.mvlgamma(x, 0), POS)
    x = np.array([0.0, 1.0, -2.0, 10.0, 100.0, np.inf, np.nan, -7.5], np.float32)
    _differential(torch_ref, lambda L, a: L.i0(a), x)
    _differential(torch_ref, lambda L, a: a.i0(), x.astype(np.float64), rtol=1e-12)
    _differential(torch_ref, lambda L, a: L.i0(a), np.array([1, 2]))
    _differential(torch_ref, lambda L, a: L.i0_(a.clone()), x)
    _differential(torch_ref, lambda L, a: a.clone().i0_(), x)
    _same_error(torch_ref, lambda L, a: a.i0_(), np.array([1, 2]), message=False)


def test_igamma_igammac_match_torch(torch_ref):
    a = np.array([0.5, 1.0, 2.0, 0.0, -1.0, 3.0, np.inf, 1.0, 7.0], np.float32)
    x = np.array([1.0, 0.0, 3.0, 1.0, 1.0, -1.0, 1.0, np.inf, 2.5], np.float32)
    for name in ("igamma", "igammac"):
        _differential(torch_ref, lambda L, s, t: getattr(L, name)(s, t), a, x)
        _differential(torch_ref, lambda L, s, t: getattr(s, name)(t.double()), a, x)
        _differential(torch_ref, lambda L, s, t: getattr(s[:, None], name)(t[None]), POS[0], POS[1])
        _differential(torch_ref, lambda L, s, t: getattr(s.clone(), name + "_")(t), a, x)
        _differential(torch_ref, lambda L, s, t: getattr(L, name)(s.long(), t), POS[0] * 3, POS[1])
        _same_error(torch_ref, lambda L, s, t: getattr(L, name)(s.long(), t.long()), a, x)
        _same_error(torch_ref, lambda L, s, t: getattr(L, name)(s, 2.0), a, x)
        _same_error(torch_ref, lambda L, s, t: getattr(s.long(), name + "_")(t), a, x, message=False)


def test_special_function_gradients_and_nodes(torch_ref):
    x = _f64(5, lo=0.5, hi=3.0)
    for n in (0, 1, 2, 3):
        _grads_check(lambda t: ember.polygamma(n, t), x)
    _grads_check(lambda t: ember.mvlgamma(t + 1, 3), x)
    _grads_check(ember.i0, _f64(5))
    a = ember.tensor(R.uniform(0.5, 3.0, 5))
    _grads_check(lambda t: ember.igamma(a, t), x)
    _grads_check(lambda t: ember.igammac(a, t), x)
    t = torch_ref.tensor(x.detach().numpy(), requires_grad=True)
    ta = torch_ref.tensor(a.numpy())
    for fn in (lambda L, v, s: L.polygamma(2, v), lambda L, v, s: L.mvlgamma(v + 1, 2), lambda L, v, s: L.i0(v),
               lambda L, v, s: L.igamma(s, v), lambda L, v, s: L.igammac(s, v)):
        assert fn(ember, x, a).grad_fn.name() == fn(torch_ref, t, ta).grad_fn.name()
    for name in ("igamma", "igammac"):
        with pytest.raises(NotImplementedError, match=f"the derivative for '{name}: input' is not implemented"):
            getattr(ember, name)(a.clone().requires_grad_(), x).sum().backward()


# ------------------------------------------------------------------------------------------------ hooks
def test_post_accumulate_grad_hooks_match_torch(torch_ref):
    def record(lib):
        w = lib.ones(2, requires_grad=True)
        seen = []
        handle = w.register_post_accumulate_grad_hook(lambda p: seen.append((p is w, p.grad.tolist())))
        w.register_post_accumulate_grad_hook(lambda p: seen.append("second"))
        (w * 3).sum().backward()
        (w * 2).sum().backward()
        lib.autograd.grad((w * 2).sum(), w)          # accumulates nothing: no hook
        u = lib.ones(2, requires_grad=True)
        (u * 2 + w).sum().backward(inputs=[u])       # w is not accumulated: no hook
        handle.remove()
        (w * 2).sum().backward()
        return seen

    assert record(ember) == record(torch_ref)


def test_post_accumulate_grad_hook_can_step_and_errors_match_torch(torch_ref):
    def stepped(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)

        def step(p):
            with lib.no_grad():
                p.sub_(0.5 * p.grad)
            p.grad = None
        w.register_post_accumulate_grad_hook(step)
        w.register_hook(lambda g: g * 2)
        (w * w).sum().backward()
        return w.detach().tolist(), w.grad
    assert stepped(ember) == stepped(torch_ref)
    for make in (lambda lib: lib.ones(2, requires_grad=True) * 2, lambda lib: lib.ones(2)):
        with pytest.raises(RuntimeError) as want:
            make(torch_ref).register_post_accumulate_grad_hook(lambda p: None)
        with pytest.raises(RuntimeError, match=str(want.value)):
            make(ember).register_post_accumulate_grad_hook(lambda p: None)
    for result, error in ((lambda p: p.grad * 1, RuntimeError), (lambda p: 5, TypeError)):
        w = ember.ones(2, requires_grad=True)
        w.register_post_accumulate_grad_hook(result)
        t = torch_ref.ones(2, requires_grad=True)
        t.register_post_accumulate_grad_hook(result)
        with pytest.raises(error) as want:
            (t * 2).sum().backward()
        with pytest.raises(error, match=str(want.value)):
            (w * 2).sum().backward()


# ------------------------------------------------------------------------------------------------ apply_, map_
def test_apply_and_map_match_torch(torch_ref):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    _differential(torch_ref, lambda L, a: a.apply_(lambda v: v * 2 + 1), x)
    _differential(torch_ref, lambda L, a: a.t().apply_(lambda v: v - 10), x)
    _differential(torch_ref, lambda L, a: a.long().apply_(lambda v: v / 3 - 1), x * 5)
    _differential(torch_ref, lambda L, a: a.bool().apply_(lambda v: not v), x - 2)
    _differential(torch_ref, lambda L, a: a.clone().apply_(lambda v: True), x)
    _differential(torch_ref, lambda L, a, b: a.map_(b, lambda u, v: u * v - 1), x, x[0])
    _differential(torch_ref, lambda L, a, b: a[:, 0].map_(b, lambda u, v: u + v), x, x[1])
    kinds = {"apply": [], "map": []}
    ember.tensor(x).apply_(lambda v: kinds["apply"].append(type(v)) or v)
    ember.tensor(x).map_(ember.tensor(x), lambda u, v: kinds["map"].append((type(u), type(v))) or u)
    assert set(kinds["apply"]) == {float} and set(kinds["map"]) == {(float, float)}
    t = ember.tensor(x)
    version = t._version_value
    t.apply_(lambda v: v)
    assert t._version_value == version + 1


def test_apply_and_map_errors_match_torch(torch_ref):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    for fn, arrays in [
        (lambda L, a: a.apply_(lambda v: "a"), (x,)),
        (lambda L, a: a.long().apply_(lambda v: "a"), (x,)),
        (lambda L, a: a.apply_(5), (x,)),
        (lambda L, a: a.requires_grad_().apply_(lambda v: v), (x,)),
        (lambda L, a: a.long().apply_(lambda v: 10 ** 30), (x,)),
        (lambda L, a: a.apply_(lambda v: 1 / 0), (x,)),
        (lambda L, a: a.map_(5, lambda u, v: u), (x,)),
        (lambda L, a, b: a.map_(b.long(), lambda u, v: u), (x, x)),
        (lambda L, a, b: a.map_(b.double(), lambda u, v: u), (x, x)),
        (lambda L, a, b: a.map_(b.requires_grad_(), lambda u, v: u), (x, x)),
        (lambda L, a, b: a.map_(b[:, :1].t().repeat(3, 1), lambda u, v: u), (x, x)),
    ]:
        _same_error(torch_ref, fn, *arrays)
