"""Numerics at the edges: huge logits, float16, constant inputs, huge and tiny norms, integer overflow, division by
zero, NaN propagation and empty reductions. Values are checked against float64 NumPy references; torch (when
installed) is the oracle for exact behaviour (dtypes, wrap-around, which errors are raised)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

NAN, INF = float("nan"), float("inf")
LOGITS = np.array([[1e4, -1e4, 0.0, 5e3], [-1e4, -1e4, -1e4, -1e4], [1e4, 1e4, -3.0, 2.0]])
TARGETS = [1, 2, 0]


def _values(t) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float64).reshape(tuple(t.shape))


def _torch_values(t) -> np.ndarray:
    return t.detach().double().numpy()


def _assert_same(actual, expected) -> None:
    """Equal values (NaN where NaN), equal dtypes: torch's exact results."""
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(_values(actual), _torch_values(expected))


# ---- float64 references, written in their stable forms ------------------------------------------------------------

def _log_softmax_ref(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _softplus_ref(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


STABLE_OPS = {
    "softmax": (lambda x: F.softmax(x, 1), lambda x: np.exp(_log_softmax_ref(x))),
    "log_softmax": (lambda x: F.log_softmax(x, 1), _log_softmax_ref),
    "logsumexp": (lambda x: ember.logsumexp(x, 1), lambda x: np.logaddexp.reduce(x, axis=1)),
    "sigmoid": (ember.sigmoid, lambda x: np.exp(-_softplus_ref(-x))),
    "softplus": (F.softplus, _softplus_ref),
    "logsigmoid": (F.logsigmoid, lambda x: -_softplus_ref(-x)),
    "cross_entropy": (lambda x: F.cross_entropy(x, ember.tensor(TARGETS)),
                      lambda x: -_log_softmax_ref(x)[np.arange(3), TARGETS].mean()),
    "bce_with_logits": (lambda x: F.binary_cross_entropy_with_logits(x, ember.full_like(x, 0.25)),
                        lambda x: (_softplus_ref(x) - 0.25 * x).mean()),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(STABLE_OPS))
def test_logits_of_magnitude_1e4_are_stable(name, dtype):
    op, reference = STABLE_OPS[name]
    got = _values(op(ember.tensor(LOGITS, dtype=getattr(ember, dtype))))
    expected = reference(LOGITS)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "cross_entropy", "bce_with_logits", "softplus"])
def test_gradients_at_1e4_logits_are_finite(name):
    x = ember.tensor(LOGITS, requires_grad=True)
    STABLE_OPS[name][0](x).sum().backward()
    assert np.isfinite(_values(x.grad)).all()


def test_log1p_expm1_keep_tiny_arguments():
    x = np.array([1e-10, -1e-10, 1e-5, -0.9, 0.5])
    for dtype, rtol in (("float32", 1e-6), ("float64", 1e-15)):
        t = ember.tensor(x, dtype=getattr(ember, dtype))
        exact = x.astype(dtype).astype(np.float64)
        np.testing.assert_allclose(_values(ember.log1p(t)), np.log1p(exact), rtol=rtol)
        np.testing.assert_allclose(_values(ember.expm1(t)), np.expm1(exact), rtol=rtol)


# ---- float16: computed in float32 and rounded once, as torch does ------------------------------------------------

HALF_INPUT = np.array([[200.0, -300.0, 0.1, 7.0], [1.0, 2.0, 3.0, 4.0], [3.7, 3.7, 3.7, 3.7]])
HALF_OPS = {
    "softmax": (lambda m, x: m.softmax(x, 1), lambda x: np.exp(_log_softmax_ref(x))),
    "log_softmax": (lambda m, x: m.log_softmax(x, 1), _log_softmax_ref),
    "logsumexp": (lambda m, x: x.logsumexp(1), lambda x: np.logaddexp.reduce(x, axis=1)),
    "sigmoid": (lambda m, x: x.sigmoid(), lambda x: np.exp(-_softplus_ref(-x))),
    "softplus": (lambda m, x: m.softplus(x), _softplus_ref),
    "log1p": (lambda m, x: (x.abs() * 1e-3).log1p(), lambda x: np.log1p(np.abs(x) * 1e-3)),
    "mean": (lambda m, x: x.mean(1), lambda x: x.mean(1)),
    "var": (lambda m, x: x.var(1), lambda x: x.var(1, ddof=1)),
    "std": (lambda m, x: x.std(1), lambda x: x.std(1, ddof=1)),
    "norm": (lambda m, x: x.norm(dim=1), lambda x: np.sqrt((x * x).sum(1))),
    "norm3": (lambda m, x: x.norm(3, dim=1), lambda x: (np.abs(x) ** 3).sum(1) ** (1 / 3)),
    "layer_norm": (lambda m, x: m.layer_norm(x, (4,)), lambda x: (x - x.mean(1, keepdims=True))
                   / np.sqrt(x.var(1, keepdims=True) + 1e-5)),
}


def _assert_within(actual: np.ndarray, expected: np.ndarray, tolerance: np.ndarray) -> None:
    assert (np.abs(actual - expected) <= tolerance).all(), (actual, expected)


def _half_ulp(x: np.ndarray) -> np.ndarray:
    return np.abs(np.spacing(np.abs(x).astype(np.float16))).astype(np.float64)


@pytest.mark.parametrize("name", sorted(HALF_OPS))
def test_float16_is_computed_in_float32(name, torch_ref):
    op, reference = HALF_OPS[name]
    half = HALF_INPUT.astype(np.float16)
    got = op(F if name != "logsumexp" else None, ember.tensor(half))
    assert got.dtype is ember.float16
    expected = reference(half.astype(np.float64))
    # within an ulp of the float64 value of the same float16 inputs (it would be far off if rounded to float16 early)
    _assert_within(_values(got), expected, 1.01 * _half_ulp(expected) + 1e-7)
    # and within two ulps, at the row's scale, of torch's float16 result (plus 1e-4: torch's own layer_norm of a
    # constant float16 row is 3e-5, not the reference's 0)
    theirs = _torch_values(op(torch_ref.nn.functional, torch_ref.tensor(half)))
    row_scale = np.abs(expected).max(axis=-1, keepdims=True) if expected.ndim == 2 else np.abs(expected)
    _assert_within(_values(got), theirs, 2.01 * _half_ulp(row_scale) + 1e-4)


def test_float16_mean_does_not_overflow_through_its_sum():
    x = ember.full((3000,), 30.0, dtype=ember.float16)
    assert x.mean().item() == 30.0 and x.var().item() == 0.0
    assert x.norm().item() == pytest.approx(30.0 * np.sqrt(3000), rel=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch overflows to inf silently
        assert x.sum().item() == INF


# ---- constant inputs: zero variance, no NaN --------------------------------------------------------------------

CONSTANT = np.full((2, 4, 3), 3.7)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_constant_input_has_zero_variance(dtype, torch_ref):
    x = ember.tensor(CONSTANT, dtype=getattr(ember, dtype))
    # the mean of n copies of 3.7 is not exactly 3.7, so the variance is a few ulps of 3.7 squared (torch's is too);
    # float16 computed in float32 rounds that to 0 (regression: it was 4e-6 from a float16 mean)
    bound = 0.0 if dtype == "float16" else 3.7 ** 2 * float(np.finfo(dtype).eps) ** 2 * 100
    for result in (x.var(), x.std(dim=1) ** 2, x.var(dim=(0, 2), correction=0), ember.var_mean(x, 1)[0]):
        assert result.dtype is x.dtype and (np.abs(_values(result)) <= bound).all()
    theirs = torch_ref.tensor(CONSTANT, dtype=getattr(torch_ref, dtype)).var()
    assert abs(x.var().item() - theirs.item()) <= bound


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("norm", ["layer_norm", "batch_norm", "group_norm", "instance_norm"])
def test_normalizing_constant_input_gives_zeros(norm, dtype):
    x = ember.tensor(CONSTANT, dtype=getattr(ember, dtype), requires_grad=dtype != "float16")
    out = {"layer_norm": lambda: F.layer_norm(x, (3,)), "batch_norm": lambda: F.batch_norm(x, None, None, training=True),
           "group_norm": lambda: F.group_norm(x, 2), "instance_norm": lambda: F.instance_norm(x)}[norm]()
    assert out.dtype is x.dtype and (_values(out) == 0).all()
    if x.requires_grad:
        (out * ember.arange(24.0, dtype=x.dtype).reshape(2, 4, 3)).sum().backward()
        assert np.isfinite(_values(x.grad)).all()


# ---- norms of huge and tiny values ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,value", [("float64", 1e200), ("float64", 1e-300), ("float64", 4e-320),
                                         ("float32", 3e37), ("float32", 1e-40)])
@pytest.mark.parametrize("ord", [2, 3, 1, INF])
def test_vector_norm_neither_overflows_nor_underflows(dtype, value, ord):
    x = ember.full((5,), value, dtype=getattr(ember, dtype))
    stored = float(np.asarray(value, dtype=dtype))
    expected = stored * (5 ** (1 / ord) if ord != INF else 1)
    assert ember.linalg.vector_norm(x, ord).item() == pytest.approx(expected, rel=1e-6 if dtype == "float32" else 1e-12)


def test_rescaled_norm_keeps_rows_apart_and_gradients_exact():
    rows = np.array([[1e200, -1e200], [3.0, 4.0], [0.0, 0.0], [1e-200, 0.0]])
    x = ember.tensor(rows, requires_grad=True, dtype=ember.float64)
    for ord in (2, 3):
        x.grad = None
        out = ember.linalg.vector_norm(x, ord, dim=1)
        scale = np.abs(rows).max(1)
        unit = rows / np.where(scale == 0, 1, scale)[:, None]
        np.testing.assert_allclose(_values(out), scale * (np.abs(unit) ** ord).sum(1) ** (1 / ord), rtol=1e-14)
        out.sum().backward()
        norms = (np.abs(unit) ** ord).sum(1, keepdims=True) ** (1 / ord)
        expected = np.sign(unit) * np.abs(unit) ** (ord - 1) / np.where(norms == 0, 1, norms) ** (ord - 1)
        np.testing.assert_allclose(_values(x.grad), expected, rtol=1e-12)  # zero row: gradient 0, not NaN


def test_norm_propagates_nan_and_inf(torch_ref):
    for values in ([1.0, INF, NAN], [1.0, INF], [NAN, 2.0], [-INF]):
        for ord in (2, 3, 1):
            ours = ember.linalg.vector_norm(ember.tensor(values, dtype=ember.float64), ord)
            theirs = torch_ref.linalg.vector_norm(torch_ref.tensor(values, dtype=torch_ref.float64), ord)
            _assert_same(ours, theirs)


def test_subnormals_are_not_flushed_to_zero():
    tiny = np.array([1e-40, 3e-39, -1e-44, 1e-45], dtype=np.float32)
    x = ember.tensor(tiny)
    np.testing.assert_array_equal(_values(x * 2), (tiny * 2).astype(np.float64))
    np.testing.assert_array_equal(_values(x.abs().sqrt()), np.sqrt(np.abs(tiny)).astype(np.float64))
    assert x.sum().item() == pytest.approx(float(tiny.astype(np.float64).sum()), rel=1e-6)
    d = ember.tensor([5e-324, 1e-310], dtype=ember.float64)
    assert (d * 1).tolist() == [5e-324, 1e-310] and d.sum().item() == 1e-310 + 5e-324


# ---- integers: wrap-around and division by zero -----------------------------------------------------------------

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_overflow_wraps_as_torch(dtype, torch_ref):
    info = np.iinfo(dtype)
    values = [int(info.max), int(info.min), 5, 100]
    ours, theirs = ember.tensor(values, dtype=getattr(ember, dtype)), torch_ref.tensor(values, dtype=getattr(torch_ref, dtype))
    for op in (lambda x: x + 1, lambda x: x * x, lambda x: -x, lambda x: x.abs(), lambda x: x * 1000, lambda x: x ** 5,
               lambda x: x.sum(dtype=x.dtype), lambda x: x.cumsum(0, dtype=x.dtype), lambda x: x.prod(dtype=x.dtype),
               lambda x: x.sum(), lambda x: x.cumsum(0), lambda x: x // 3, lambda x: x % 7):
        _assert_same(op(ours), op(theirs))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_most_negative_integer_divided_by_minus_one_wraps(dtype, torch_ref):
    low = int(np.iinfo(dtype).min)
    x = ember.tensor([low, 7, -7], dtype=getattr(ember, dtype))
    assert (x // -1).tolist() == [low, -7, 7]  # torch wraps (regression: Numba's x // -1 gave 0)
    assert (x // ember.full_like(x, -1)).tolist() == [low, -7, 7]
    assert ember.div(x, -1, rounding_mode="trunc").tolist() == [low, -7, 7]  # torch's int32 traps (SIGFPE) here
    assert (x % -1).tolist() == [0, 0, 0]
    if dtype == "int64":
        _assert_same(x // -1, torch_ref.tensor([low, 7, -7]) // -1)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_by_zero(dtype, torch_ref):
    x = ember.tensor([5, 3, 0], dtype=getattr(ember, dtype))
    for op in (lambda a: a // 0, lambda a: a % 0, lambda a: ember.fmod(a, 0), lambda a: a % ember.zeros_like(a),
               lambda a: ember.div(a, 0, rounding_mode="trunc"), lambda a: ember.div(a, 0, rounding_mode="floor")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op(x)
    theirs = torch_ref.tensor([5, 3, 0], dtype=getattr(torch_ref, dtype)) / 0
    _assert_same(x / 0, theirs)  # true division: float inf / nan


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_division_by_zero(dtype, torch_ref):
    values = [1.0, -1.0, 0.0, INF, NAN]
    ours, theirs = ember.tensor(values, dtype=getattr(ember, dtype)), torch_ref.tensor(values, dtype=getattr(torch_ref, dtype))
    for op in (lambda a: a / 0, lambda a: a / -0.0, lambda a: a // 0, lambda a: a % 0, lambda a: a.fmod(0),
               lambda a: a.reciprocal(), lambda a: 1 / a.abs()):
        _assert_same(op(ours), op(theirs))


# ---- NaN: propagation, nan_to_num, predicates -------------------------------------------------------------------

NAN_OPS = {
    "max": lambda x: x.max(), "min": lambda x: x.min(), "amax_dim": lambda x: x.amax(1),
    "max_dim": lambda x: x.max(1).values, "max_dim_index": lambda x: x.max(1).indices,
    "argmax": lambda x: x.argmax(1), "argmin": lambda x: x.argmin(1), "argmax_all": lambda x: x.argmax(),
    "sum": lambda x: x.sum(1), "mean": lambda x: x.mean(1), "prod": lambda x: x.prod(1), "var": lambda x: x.var(1),
    "logsumexp": lambda x: x.logsumexp(1), "cumsum": lambda x: x.cumsum(1), "cumprod": lambda x: x.cumprod(1),
    "cummax": lambda x: x.cummax(1).values, "cummax_index": lambda x: x.cummax(1).indices,
    "sort": lambda x: x.sort(1).values, "sort_index": lambda x: x.sort(1).indices,
    "sort_descending": lambda x: x.sort(1, descending=True).values, "topk": lambda x: x.topk(2, 1).values,
    "median": lambda x: x.median(1).values, "maximum": lambda x: x.maximum(x.flip(1)),
    "minimum": lambda x: x.minimum(x.flip(1)), "fmax": lambda x: x.fmax(x.flip(1)), "fmin": lambda x: x.fmin(x.flip(1)),
    "clamp": lambda x: x.clamp(0, 2), "relu": lambda x: x.relu(), "softmax": lambda x: x.softmax(1),
    "isnan": lambda x: x.isnan(), "isinf": lambda x: x.isinf(), "isfinite": lambda x: x.isfinite(),
    "nan_to_num": lambda x: x.nan_to_num(), "nan_to_num_values": lambda x: x.nan_to_num(1.5, 2.5, -3.5),
}
WITH_NAN = [[1.0, NAN, 3.0, -2.0], [INF, -1.0, NAN, -INF], [0.5, 2.0, -INF, 1.0]]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_nan_and_inf_behave_as_torch(name, dtype, torch_ref):
    op = NAN_OPS[name]
    _assert_same(op(ember.tensor(WITH_NAN, dtype=getattr(ember, dtype))),
                 op(torch_ref.tensor(WITH_NAN, dtype=getattr(torch_ref, dtype))))


def test_nan_to_num_defaults_are_dtype_extremes():
    for dtype in ("float16", "float32", "float64"):
        out = ember.tensor([NAN, INF, -INF, 1.0], dtype=getattr(ember, dtype)).nan_to_num()
        info = np.finfo(dtype)
        assert out.tolist() == [0.0, float(info.max), float(info.min), 1.0]
    ints = ember.tensor([1, -2, 3])
    assert ints.nan_to_num().tolist() == [1, -2, 3] and ints.isnan().tolist() == [False] * 3


# ---- empty reductions, one-element variances, all -inf rows ------------------------------------------------------

def test_empty_reductions(torch_ref):
    for op in (lambda x: x.sum(0), lambda x: x.prod(0), lambda x: x.mean(0), lambda x: x.logsumexp(0),
               lambda x: x.sum(), lambda x: x.cumsum(0), lambda x: x.norm(dim=0), lambda x: x.amax(1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's mean/var of nothing warn, as NumPy does
            _assert_same(op(ember.zeros(0, 3)), op(torch_ref.zeros(0, 3)))
    _assert_same(ember.zeros(0, dtype=ember.int32).sum(), torch_ref.zeros(0, dtype=torch_ref.int32).sum())
    for op, error in ((lambda x: x.max(), RuntimeError), (lambda x: x.argmax(), IndexError),
                      (lambda x: x.argmin(keepdim=True), IndexError),
                      (lambda x: x.amax(0), IndexError), (lambda x: x.max(0), IndexError)):
        with pytest.raises(error) as ours:
            op(ember.zeros(0, 3))
        with pytest.raises(error) as theirs:
            op(torch_ref.zeros(0, 3))
        assert str(theirs.value).startswith(str(ours.value).split(" Specify")[0])


@pytest.mark.parametrize("name", ["var", "std"])
def test_one_element_variance_is_nan_with_torch_warning(name):
    x = ember.tensor([1.0])
    with pytest.warns(UserWarning, match=rf"{name}\(\): degrees of freedom is <= 0"):
        assert np.isnan(getattr(x, name)().item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(x, name)(correction=0).item() == 0.0


def test_all_minus_inf_rows(torch_ref):
    rows = [[-INF, -INF, -INF], [0.0, -INF, 1.0]]
    for op in (lambda m, x: m.softmax(x, 1), lambda m, x: m.log_softmax(x, 1), lambda m, x: x.logsumexp(1)):
        _assert_same(op(F, ember.tensor(rows)), op(torch_ref.nn.functional, torch_ref.tensor(rows)))
