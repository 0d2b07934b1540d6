"""CPU reduction, arg-reduction, scan and matmul kernels against NumPy, and against torch for torch's index rules
(the tensor-level reductions above them: tests/test_reductions.py).

Hypothesis draws shapes (0-d and 0-size dims included), every ember dtype, and
views that are non-contiguous, reversed, transposed or broadcast (0 strides).
"""
import ember._runtime  # noqa: F401  (threading layer and cache folder, before Numba loads)

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ember import opcodes as op
from ember.kernels.cpu.products import matmul
from ember.kernels.cpu.reductions import arg_reduce, reduce
from ember.kernels.cpu.scans import scan, scan_indices

DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
# derandomize: the same examples every run, so a warm kernel cache compiles nothing.
EXAMPLES = settings(max_examples=30, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-10}
VIEWS = ["plain", "flip", "transpose", "step", "broadcast"]

REDUCTIONS = [op.R_SUM, op.R_PROD, op.R_MAX, op.R_MIN, op.R_ALL, op.R_ANY, op.R_COUNT_NONZERO, op.R_SUMSQ,
              op.R_ABSMAX, op.R_ABSSUM]
NEEDS_ELEMENTS = {op.R_MAX, op.R_MIN, op.R_ABSMAX}
SCANS = [op.S_SUM, op.S_PROD, op.S_MAX, op.S_MIN, op.S_LOGSUMEXP]


# ------------------------------------------------------------------ inputs
def _values(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...], specials: bool) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) < 0.7
    if dtype.kind == "u":
        return rng.integers(0, 6, shape).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    x = np.round(rng.standard_normal(shape) * 2, 1)
    if specials and x.size:
        flat = x.reshape(-1)
        flat[rng.integers(0, x.size, 2)] = rng.choice([np.nan, np.inf, -np.inf], 2)
    return x.astype(dtype)


@st.composite
def arrays(draw, dtypes=DTYPES, max_dims=4, max_side=5, specials=True):
    """An array of a drawn dtype and shape, as a drawn kind of view (strides of every sign and 0)."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = tuple(draw(st.lists(st.integers(0, max_side), max_size=max_dims)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    view = draw(st.sampled_from(VIEWS)) if shape else "plain"
    with_specials = specials and draw(st.booleans())
    axis = draw(st.integers(0, len(shape) - 1)) if shape else 0
    if view == "flip":
        return np.flip(_values(rng, dtype, shape, with_specials), axis)
    if view == "transpose":
        return _values(rng, dtype, shape[::-1], with_specials).T
    if view == "step":
        wide = shape[:axis] + (2 * shape[axis],) + shape[axis + 1:]
        return _values(rng, dtype, wide, with_specials)[(slice(None),) * axis + (slice(None, None, 2),)]
    if view == "broadcast":
        narrow = shape[:axis] + (1,) + shape[axis + 1:]
        return np.broadcast_to(_values(rng, dtype, narrow, with_specials), shape)
    return _values(rng, dtype, shape, with_specials)


def _keepdim(shape: tuple[int, ...], dims) -> tuple[int, ...]:
    return tuple(1 if d in dims else n for d, n in enumerate(shape))


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64 if x.dtype.kind == "f" else np.int64)


def _assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=RTOL[got.dtype],
                                   atol=RTOL[got.dtype], equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------ reduce
def _reduce_out_dtype(code: int, dtype: np.dtype) -> np.dtype:
    """torch's result dtypes: bool for all/any, int64 for counts and for integer sums and products."""
    if code in (op.R_ALL, op.R_ANY):
        return np.dtype(np.bool_)
    if code == op.R_COUNT_NONZERO or (code in (op.R_SUM, op.R_PROD, op.R_SUMSQ, op.R_ABSSUM) and dtype.kind in "biu"):
        return np.dtype(np.int64)
    return dtype


def _reduce_reference(code: int, x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    kw = dict(axis=dims, keepdims=True)
    wide = _wide(x)
    with np.errstate(all="ignore"):
        result = {
            op.R_SUM: lambda: wide.sum(**kw),
            op.R_PROD: lambda: wide.prod(**kw),
            op.R_MAX: lambda: x.max(**kw),
            op.R_MIN: lambda: x.min(**kw),
            op.R_ALL: lambda: np.all(x, **kw),
            op.R_ANY: lambda: np.any(x, **kw),
            op.R_COUNT_NONZERO: lambda: np.count_nonzero(x, **kw),
            op.R_SUMSQ: lambda: (wide * wide).sum(**kw),
            op.R_ABSMAX: lambda: np.abs(x).max(**kw),
            op.R_ABSSUM: lambda: np.abs(wide).sum(**kw),
        }[code]()
        return np.asarray(result).astype(_reduce_out_dtype(code, x.dtype))


@pytest.mark.parametrize("code", REDUCTIONS)
@EXAMPLES
@given(x=arrays(), data=st.data())
def test_reduce_matches_numpy(code, x, data):
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, x.ndim - 1)) if x.ndim else st.just(set()))))
    out = np.empty(_keepdim(x.shape, dims), _reduce_out_dtype(code, x.dtype))
    assume(code not in NEEDS_ELEMENTS or x.size)
    reduce(code, x, dims, out)
    _assert_close(out, _reduce_reference(code, x, dims))


@pytest.mark.parametrize("code, dtype", [(op.R_SUM, np.float32), (op.R_SUM, np.int32), (op.R_MAX, np.float64),
                                         (op.R_ALL, np.bool_), (op.R_COUNT_NONZERO, np.int8)])
@pytest.mark.parametrize("dims", [(0, 1), (1,), (0,)])
def test_reduce_large_parallel_paths(code, dtype, dims):
    """Above PARALLEL_MIN elements the full and row reductions run in parallel blocks."""
    x = _values(np.random.default_rng(1), np.dtype(dtype), (300, 1000), specials=True)
    out = np.empty(_keepdim(x.shape, dims), _reduce_out_dtype(code, x.dtype))
    reduce(code, x, dims, out)
    _assert_close(out, _reduce_reference(code, x, dims))


def test_reduce_float32_sum_accumulates_in_float64():
    x = np.full(1 << 20, 0.1, np.float32)
    out = np.empty(1, np.float32)
    reduce(op.R_SUM, x, (0,), out)
    assert out[0] == np.float32(x.astype(np.float64).sum())


@pytest.mark.parametrize("code, expected", [(op.R_SUM, 0), (op.R_PROD, 1), (op.R_ALL, True), (op.R_ANY, False),
                                            (op.R_COUNT_NONZERO, 0), (op.R_SUMSQ, 0), (op.R_ABSSUM, 0)])
def test_reduce_of_empty_set_is_identity(code, expected):
    x = np.empty((3, 0), np.float32)
    out = np.empty((3, 1), _reduce_out_dtype(code, x.dtype))
    reduce(code, x, (1,), out)
    assert (out == expected).all()


# ------------------------------------------------------------------ arg_reduce
@pytest.mark.parametrize("code", [op.A_MAX, op.A_MIN])
@EXAMPLES
@given(x=arrays(), data=st.data())
def test_arg_reduce_matches_numpy(code, x, data):
    dim = data.draw(st.integers(0, max(x.ndim - 1, 0)))
    assume(x.ndim == 0 or x.shape[dim])
    values = np.empty(_keepdim(x.shape, (dim,)), x.dtype)
    indices = np.empty(values.shape, np.int64)
    arg_reduce(code, x, dim, values, indices)
    if x.ndim == 0:
        expected = np.zeros((), np.int64)
    else:
        # NumPy's argmax/argmin also return the first extreme, and the first NaN as the extreme.
        expected = (np.argmax if code == op.A_MAX else np.argmin)(x, axis=dim, keepdims=True)
    np.testing.assert_array_equal(indices, expected)
    _assert_close(values, np.take_along_axis(x, expected, dim) if x.ndim else x)


def test_arg_reduce_matches_torch_ties_and_nans():
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 3.0, np.nan, 3.0, np.nan], [2.0, 2.0, -1.0, -1.0, 0.0]], np.float32)
    for code, fn in ((op.A_MAX, torch.max), (op.A_MIN, torch.min)):
        for xx, dim in ((x, 1), (x.T, 0), (x[:, ::-1], 1)):
            values = np.empty(_keepdim(xx.shape, (dim,)), xx.dtype)
            indices = np.empty(values.shape, np.int64)
            arg_reduce(code, xx, dim, values, indices)
            want = fn(torch.from_numpy(xx.copy()), dim, keepdim=True)
            np.testing.assert_array_equal(indices, want.indices.numpy())
            np.testing.assert_array_equal(values, want.values.numpy())


# ------------------------------------------------------------------ scan
def _scan_out_dtype(code: int, dtype: np.dtype) -> np.dtype:
    if code in (op.S_SUM, op.S_PROD) and dtype.kind in "biu":
        return np.dtype(np.int64)
    if code == op.S_LOGSUMEXP and dtype.kind != "f":
        return np.dtype(np.float64)
    return dtype


def _scan_reference(code: int, x: np.ndarray, dim: int) -> np.ndarray:
    flat = x.reshape(1) if x.ndim == 0 else x
    with np.errstate(all="ignore"):
        result = {
            op.S_SUM: lambda: np.cumsum(_wide(flat), axis=dim),
            op.S_PROD: lambda: np.cumprod(_wide(flat), axis=dim),
            op.S_MAX: lambda: np.maximum.accumulate(flat, axis=dim),
            op.S_MIN: lambda: np.minimum.accumulate(flat, axis=dim),
            op.S_LOGSUMEXP: lambda: np.logaddexp.accumulate(flat.astype(np.float64), axis=dim),
        }[code]()
        return result.reshape(x.shape).astype(_scan_out_dtype(code, x.dtype))


@pytest.mark.parametrize("code", SCANS)
@EXAMPLES
@given(x=arrays(), data=st.data())
def test_scan_matches_numpy(code, x, data):
    dim = data.draw(st.integers(0, max(x.ndim - 1, 0)))
    out = np.empty(x.shape, _scan_out_dtype(code, x.dtype))
    scan(code, x, dim, out)
    _assert_close(out, _scan_reference(code, x, dim))


def test_scan_indices_follow_torch_rule():
    """torch 2.13: a tie moves the index to the later element and every NaN takes the index."""
    x = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan, 1.0], np.float32)
    values = np.empty_like(x)
    indices = np.empty(x.shape, np.int64)
    scan_indices(op.S_MAX, x, 0, values, indices)
    np.testing.assert_array_equal(indices, [0, 1, 2, 2, 4, 4, 6, 6])
    np.testing.assert_array_equal(values, [1, 3, 3, 3, np.nan, np.nan, np.nan, np.nan])
    scan_indices(op.S_MIN, x, 0, values, indices)
    np.testing.assert_array_equal(indices, [0, 0, 0, 0, 4, 4, 6, 6])


@pytest.mark.parametrize("code", [op.S_MAX, op.S_MIN])
@EXAMPLES
@given(x=arrays(), data=st.data())
def test_scan_indices_match_torch(code, x, data):
    torch = pytest.importorskip("torch")
    dim = data.draw(st.integers(0, max(x.ndim - 1, 0)))
    values = np.empty(x.shape, x.dtype)
    indices = np.empty(x.shape, np.int64)
    scan_indices(code, x, dim, values, indices)
    want = (torch.cummax if code == op.S_MAX else torch.cummin)(torch.from_numpy(np.array(x)), dim)
    np.testing.assert_array_equal(indices, want.indices.numpy())
    np.testing.assert_array_equal(values, want.values.numpy())


# ------------------------------------------------------------------ matmul
@st.composite
def matmul_operands(draw):
    """(B, M, K) and (B, K, N) operands of one dtype, each plain, transposed, reversed or batch-broadcast."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    batch, m, k, n = (draw(st.integers(0, 4)) for _ in range(4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def operand(shape):
        view = draw(st.sampled_from(["plain", "transpose", "flip", "broadcast"]))
        if view == "transpose":
            return _values(rng, dtype, (shape[0], shape[2], shape[1]), False).transpose(0, 2, 1)
        if view == "flip":
            return _values(rng, dtype, shape, False)[:, ::-1, ::-1]
        if view == "broadcast":
            return np.broadcast_to(_values(rng, dtype, (1,) + shape[1:], False), shape)
        return _values(rng, dtype, shape, False)

    return operand((batch, m, k)), operand((batch, k, n))


def _matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    else:
        exact = np.matmul(a.astype(np.int64), b.astype(np.int64))
        if a.dtype == np.bool_:
            exact = exact != 0
    return exact.astype(a.dtype)


@EXAMPLES
@given(operands=matmul_operands())
def test_matmul_matches_numpy(operands):
    a, b = operands
    out = np.empty((a.shape[0], a.shape[1], b.shape[2]), a.dtype)
    matmul(a, b, out)
    _assert_close(out, _matmul_reference(a, b))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.bool_])
def test_matmul_large_parallel_and_wrapping(dtype):
    """Above PARALLEL_MIN multiply-adds the integer kernel runs in parallel; sums wrap like torch's."""
    rng = np.random.default_rng(2)
    a = rng.integers(-100, 100, (2, 40, 50)).astype(dtype)
    b = rng.integers(-100, 100, (2, 50, 60)).astype(dtype)
    out = np.empty((2, 40, 60), dtype)
    matmul(a, b.transpose(0, 2, 1).copy().transpose(0, 2, 1), out)
    _assert_close(out, _matmul_reference(a, b))


def test_matmul_int_matches_torch_wrapping():
    torch = pytest.importorskip("torch")
    a = np.array([[[1, 2]]], np.uint8)
    b = np.array([[[200], [100]]], np.uint8)
    out = np.empty((1, 1, 1), np.uint8)
    matmul(a, b, out)
    assert out[0, 0, 0] == torch.from_numpy(a[0]).matmul(torch.from_numpy(b[0])).item()
