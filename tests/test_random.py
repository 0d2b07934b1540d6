"""Tests of ember's generators and random sampling ops.

Statistical checks use 100k samples and bounds of many standard errors, so they
fail only on real bias. Where PyTorch is installed, result dtypes/shapes and
error types are compared with it (those tests skip cleanly without it).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.autograd.grad_mode import no_grad
from ember.tensor import dtypes as E
from ember.tensor import random as R
from ember.tensor import random_ops as ro
from ember.tensor.memory_format import contiguous_format
from ember.tensor.tensor import Tensor

N = 100_000


def _empty(shape, dt=E.float32) -> Tensor:
    return Tensor._make(np.zeros(shape, dt.np))


def _tensor(values, dt=E.float32) -> Tensor:
    return Tensor._make(np.asarray(values, dtype=dt.np))


@pytest.fixture(autouse=True)
def _fresh_default_generator():
    """Each test starts from a known default state and leaves no trace for the next."""
    with R.fork_rng():
        R.manual_seed(1234)
        yield


# -- generators and reproducibility ---------------------------------------------------

def test_same_seed_same_values_different_seed_different_values():
    R.manual_seed(7)
    a = [ro.rand(5).numpy().copy(), ro.randn(5).numpy().copy(), ro.randint(100, (5,)).numpy().copy()]
    R.manual_seed(7)
    b = [ro.rand(5).numpy(), ro.randn(5).numpy(), ro.randint(100, (5,)).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    R.manual_seed(8)
    assert not np.array_equal(a[0], ro.rand(5).numpy())


def test_manual_seed_returns_default_generator_and_sets_initial_seed():
    g = R.manual_seed(42)
    assert g is R.default_generator
    assert R.initial_seed() == 42


def test_generator_is_independent_of_default():
    g = R.Generator().manual_seed(3)
    R.manual_seed(3)
    expected = ro.rand(4).numpy().copy()
    R.manual_seed(3)
    ro.rand(100)  # advancing the default stream must not move g
    np.testing.assert_array_equal(ro.rand(4, generator=g).numpy(), expected)
    # and drawing from g must not move the default stream
    R.manual_seed(3)
    ro.randn(10, generator=g)
    np.testing.assert_array_equal(ro.rand(4).numpy(), expected)


def test_never_seeded_generator_uses_torchs_default_seed():
    assert R.Generator().initial_seed() == 67280421310721
    a = ro.rand(3, generator=R.Generator()).numpy()
    np.testing.assert_array_equal(a, ro.rand(3, generator=R.Generator()).numpy())


def test_fresh_processes_draw_the_same_values():
    code = "from ember.tensor.random_ops import rand; print(rand(4).tolist())"
    env = dict(os.environ)
    outs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and outs[0].strip()


def test_seed_is_random_and_becomes_initial_seed():
    g = R.Generator()
    s1, s2 = g.seed(), g.seed()
    assert s1 != s2 and g.initial_seed() == s2 and 0 <= s2 < 2**64
    assert R.seed() == R.initial_seed()


@pytest.mark.parametrize("seed, wrapped", [(-1, 2**64 - 1), (-(2**63), 2**63), (2**64 - 1, 2**64 - 1), (True, 1)])
def test_seed_wrapping(seed, wrapped):
    assert R.manual_seed(seed).initial_seed() == wrapped
    assert R.Generator().manual_seed(seed).initial_seed() == wrapped


def test_negative_seed_streams_match_their_wrapped_value():
    a = ro.rand(3, generator=R.Generator().manual_seed(-5)).numpy()
    np.testing.assert_array_equal(a, ro.rand(3, generator=R.Generator().manual_seed(2**64 - 5)).numpy())


@pytest.mark.parametrize("seed", [2**64, -(2**63) - 1])
def test_seed_out_of_range(seed):
    with pytest.raises(ValueError, match="Overflow"):
        R.manual_seed(seed)
    with pytest.raises(ValueError, match="Overflow"):
        R.Generator().manual_seed(seed)


def test_seed_types():
    assert R.manual_seed(1.9).initial_seed() == 1  # torch.manual_seed applies int()
    assert R.manual_seed("12").initial_seed() == 12
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        R.Generator().manual_seed(1.5)
    with pytest.raises(TypeError):
        R.Generator().manual_seed("12")


def test_get_set_state_round_trip():
    state = R.get_rng_state()
    assert state.dtype is E.uint8 and state.ndim == 1
    a = ro.randn(6).numpy().copy()
    R.set_rng_state(state)
    np.testing.assert_array_equal(a, ro.randn(6).numpy())
    g = R.Generator().manual_seed(99)
    ro.rand(3, generator=g)
    gstate = g.get_state()
    b = ro.randint(0, 1000, (8,), generator=g).numpy().copy()
    g2 = R.Generator().set_state(gstate)
    assert g2.initial_seed() == 99
    np.testing.assert_array_equal(b, ro.randint(0, 1000, (8,), generator=g2).numpy())


def test_state_is_a_copy():
    state = R.get_rng_state()
    ro.rand(10)
    assert not np.array_equal(state.numpy(), R.get_rng_state().numpy())


def test_set_state_errors():
    g = R.Generator()
    with pytest.raises(RuntimeError, match="size"):
        g.set_state(_empty(3, E.uint8))
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state(_empty(g.get_state().numel(), E.float32))
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state([1, 2])


def test_generator_pickles_with_its_state():
    g = R.Generator().manual_seed(5)
    ro.rand(2, generator=g)
    g2 = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(ro.rand(4, generator=g).numpy(), ro.rand(4, generator=g2).numpy())


def test_generator_device():
    assert str(R.Generator().device) == "cpu"
    assert str(R.Generator(device="cpu").device) == "cpu"
    with pytest.raises(RuntimeError):
        R.Generator("cuda")


def test_fork_rng_restores_default_state():
    before = R.get_rng_state().numpy().copy()
    with R.fork_rng():
        ro.rand(10)
        R.manual_seed(5)
    np.testing.assert_array_equal(before, R.get_rng_state().numpy())
    with pytest.raises(KeyError), R.fork_rng(devices=[]):
        ro.rand(3)
        raise KeyError
    np.testing.assert_array_equal(before, R.get_rng_state().numpy())


def test_fork_rng_disabled_does_not_restore():
    before = R.get_rng_state().numpy().copy()
    with R.fork_rng(enabled=False):
        ro.rand(10)
    assert not np.array_equal(before, R.get_rng_state().numpy())


def test_bad_generator_argument():
    with pytest.raises(TypeError, match="generator"):
        ro.rand(2, generator=3)
    with pytest.raises(TypeError, match="generator"):
        ro.multinomial(_tensor([1.0, 1.0]), 1, generator=3)


# -- distributions --------------------------------------------------------------------

def _check_moments(x: np.ndarray, mean: float, var: float) -> None:
    x = x.astype(np.float64)
    se = np.sqrt(var / x.size)
    assert abs(x.mean() - mean) < 6 * se + 1e-3, (x.mean(), mean)
    assert abs(x.var() - var) < 0.05 * var, (x.var(), var)


def test_rand_moments_and_range():
    x = ro.rand(N).numpy()
    assert x.min() >= 0 and x.max() < 1
    _check_moments(x, 0.5, 1 / 12)


def test_randn_moments():
    _check_moments(ro.randn(N).numpy(), 0.0, 1.0)


def test_normal_float_overload_moments():
    _check_moments(ro.normal(2.0, 3.0, (N,)).numpy(), 2.0, 9.0)


def test_normal_tensor_overloads():
    mean = _tensor(np.full((N // 4, 4), [-10.0, 0.0, 10.0, 20.0]))
    x = ro.normal(mean, 0.5).numpy()
    assert x.shape == (N // 4, 4)
    for j, m in enumerate([-10.0, 0.0, 10.0, 20.0]):
        _check_moments(x[:, j], m, 0.25)
    std = _tensor([[1.0], [4.0]])
    y = ro.normal(_tensor(np.zeros(N // 2)), std).numpy()  # broadcasts (N/2,) with (2, 1)
    assert y.shape == (2, N // 2)
    _check_moments(y[0], 0.0, 1.0)
    _check_moments(y[1], 0.0, 16.0)
    z = ro.normal(5.0, _tensor(np.full(N, 2.0))).numpy()
    _check_moments(z, 5.0, 4.0)


def test_normal_zero_std_is_the_mean():
    np.testing.assert_array_equal(ro.normal(_tensor([1.0, 2.0]), 0.0).numpy(), [1.0, 2.0])


@pytest.mark.parametrize("low, high", [(0, 10), (-5, 3), (2**62, 2**62 + 3)])
def test_randint_range_is_inclusive_exclusive(low, high):
    x = ro.randint(low, high, (N,)).numpy()
    assert x.dtype == np.int64
    assert x.min() == low and x.max() == high - 1
    assert set(np.unique(x).tolist()) == set(range(low, high))


def test_randint_single_bound_and_keywords():
    assert set(np.unique(ro.randint(3, (1000,)).numpy()).tolist()) == {0, 1, 2}
    assert set(np.unique(ro.randint(1, 3, size=(1000,)).numpy()).tolist()) == {1, 2}
    assert set(np.unique(ro.randint(low=4, high=6, size=(1000,)).numpy()).tolist()) == {4, 5}
    assert set(np.unique(ro.randint(2, size=[1000]).numpy()).tolist()) == {0, 1}


def test_randint_bool_and_float():
    assert set(ro.randint(0, 2, (1000,), dtype=E.bool).numpy().tolist()) == {False, True}
    x = ro.randint(-3, 3, (1000,), dtype=E.float16).numpy()
    assert x.dtype == np.float16 and set(x.tolist()) == {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0}


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000])
def test_randperm_is_a_permutation(n):
    p = ro.randperm(n).numpy()
    assert p.dtype == np.int64
    np.testing.assert_array_equal(np.sort(p), np.arange(n))


def test_randperm_is_shuffled_and_float_allowed():
    assert not np.array_equal(ro.randperm(100).numpy(), np.arange(100))
    p = ro.randperm(50, dtype=E.float32).numpy()
    assert p.dtype == np.float32
    np.testing.assert_array_equal(np.sort(p), np.arange(50))


def test_bernoulli_mean_and_dtype():
    probs = _tensor(np.full(N, 0.3), E.float64)
    x = ro.bernoulli(probs).numpy()
    assert x.dtype == np.float64 and set(np.unique(x).tolist()) <= {0.0, 1.0}
    _check_moments(x, 0.3, 0.21)
    _check_moments(ro.bernoulli(probs, 0.8).numpy(), 0.8, 0.16)
    edges = ro.bernoulli(_tensor([0.0, 1.0] * 100)).numpy()
    np.testing.assert_array_equal(edges, [0.0, 1.0] * 100)


def test_bernoulli_scalar_p_keeps_int_dtype():
    x = ro.bernoulli(_tensor(np.zeros(1000), E.int64), 0.5).numpy()
    assert x.dtype == np.int64 and set(np.unique(x).tolist()) == {0, 1}


def test_multinomial_frequencies_with_replacement():
    probs = _tensor([1.0, 0.0, 3.0, 6.0])  # unnormalised
    x = ro.multinomial(probs, N, replacement=True).numpy()
    assert x.dtype == np.int64 and x.shape == (N,)
    freq = np.bincount(x, minlength=4) / N
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.3, 0.6], atol=0.01)
    assert freq[1] == 0  # zero-probability categories are never drawn


def test_multinomial_without_replacement_draws_distinct():
    probs = _tensor(np.random.default_rng(0).random((50, 20)) + 0.01)
    x = ro.multinomial(probs, 20).numpy()
    assert x.shape == (50, 20)
    for row in x:
        np.testing.assert_array_equal(np.sort(row), np.arange(20))


def test_multinomial_without_replacement_first_draw_frequencies():
    probs = _tensor(np.tile([1.0, 2.0, 7.0], (N // 10, 1)))
    first = ro.multinomial(probs, 2).numpy()[:, 0]
    np.testing.assert_allclose(np.bincount(first, minlength=3) / first.size, [0.1, 0.2, 0.7], atol=0.02)


def test_multinomial_zero_probabilities_come_last_without_replacement():
    x = ro.multinomial(_tensor([0.0, 5.0, 0.0]), 3).numpy()
    assert x[0] == 1 and sorted(x.tolist()) == [0, 1, 2]


def test_multinomial_empty_batch():
    x = ro.multinomial(_tensor(np.ones((0, 3))), 2)
    assert tuple(x.shape) == (0, 2) and x.dtype is E.int64


def _inplace_samples(fn, *args, dt=E.float64, **kw) -> np.ndarray:
    return fn(_empty(N, dt), *args, **kw).numpy()


def test_inplace_distribution_moments():
    u = _inplace_samples(ro.uniform_, -2.0, 6.0)
    assert u.min() >= -2 and u.max() < 6
    _check_moments(u, 2.0, 64 / 12)
    _check_moments(_inplace_samples(ro.normal_, 1.0, 2.0), 1.0, 4.0)
    _check_moments(_inplace_samples(ro.exponential_, 4.0), 0.25, 1 / 16)
    g = _inplace_samples(ro.geometric_, 0.25)
    assert g.min() >= 1
    _check_moments(g, 4.0, 0.75 / 0.25**2)
    _check_moments(_inplace_samples(ro.bernoulli_, 0.25), 0.25, 0.1875)
    ln = _inplace_samples(ro.log_normal_, 1.0, 0.5)
    _check_moments(np.log(ln), 1.0, 0.25)
    c = _inplace_samples(ro.cauchy_, 3.0, 2.0)
    assert abs(np.median(c) - 3.0) < 0.05
    assert abs(np.mean(np.abs(c - 3.0) < 2.0) - 0.5) < 0.01  # half the mass within one scale


@pytest.mark.parametrize("dt, lo, hi", [
    (E.bool, 0, 1), (E.uint8, 0, 255), (E.int8, 0, 127), (E.int16, 0, 2**15 - 1),
    (E.float16, 0, 2**11), (E.float32, 0, 2**24), (E.float64, 0, 2**53),
])
def test_random_default_ranges(dt, lo, hi):
    x = ro.random_(_empty(N, dt)).numpy().astype(np.float64)
    assert x.min() >= lo and x.max() <= hi and np.all(x == np.round(x))
    if hi < 2**16:
        assert x.max() > hi - (hi - lo) * 0.01  # the top of the range is reached


def test_random_overloads():
    assert set(np.unique(ro.random_(_empty(1000, E.int64), 3).numpy()).tolist()) == {0, 1, 2}
    assert set(np.unique(ro.random_(_empty(1000, E.int64), -2, 1).numpy()).tolist()) == {-2, -1, 0}
    x = ro.random_(_empty(1000, E.int8), -5, None).numpy()
    assert x.min() >= -5 and x.max() <= 127 and x.min() < 0
    y = ro.random_(_empty(1000, E.int64), to=4).numpy()
    assert set(np.unique(y).tolist()) == {0, 1, 2, 3}


def test_random_beyond_exact_float_range_warns():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        x = ro.random_(_empty(100, E.float32), 0, 2**25).numpy()
    assert x.min() >= 0 and x.max() <= 2**25


def test_float16_sampling():
    x = ro.rand(N, dtype=E.float16).numpy()
    assert x.dtype == np.float16 and x.min() >= 0 and x.max() < 1
    _check_moments(x, 0.5, 1 / 12)
    y = ro.randn(N, dtype=E.float16).numpy()
    assert y.dtype == np.float16
    _check_moments(y, 0.0, 1.0)


# -- in-place mechanics ---------------------------------------------------------------

def test_inplace_writes_through_noncontiguous_view_and_bumps_version():
    base = _empty((6, 8), E.float64)
    view = Tensor._make(base._array[::2, 1::3], version=base._version)
    out = ro.normal_(view, 10.0, 0.1)
    assert out is view and base._version.value == 1
    mask = np.zeros((6, 8), bool)
    mask[::2, 1::3] = True
    assert np.all(base.numpy()[mask] > 5) and np.all(base.numpy()[~mask] == 0)


INPLACE_SAMPLERS = [
    (ro.uniform_, ()), (ro.normal_, ()), (ro.bernoulli_, ()), (ro.exponential_, ()), (ro.random_, ()),
    (ro.geometric_, (0.5,)), (ro.log_normal_, ()), (ro.cauchy_, ()),
]


@pytest.mark.parametrize("fn, args", INPLACE_SAMPLERS)
def test_inplace_on_leaf_requiring_grad(fn, args):
    leaf = Tensor._make(np.zeros(3, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        fn(leaf, *args)
    assert leaf._version.value == 0
    with no_grad():
        fn(leaf, *args)
    assert leaf._version.value == 1


@pytest.mark.parametrize("fn, args", INPLACE_SAMPLERS)
def test_inplace_sampler_refuses_an_expanded_view(fn, args):
    """Elements sharing memory would share one draw (found by the API sweep; torch refuses too)."""
    expanded = Tensor._make(np.zeros(2, np.float32)).expand(3, 2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        fn(expanded, *args)


def test_inplace_generator_reproducible():
    a = ro.uniform_(_empty(5), generator=R.Generator().manual_seed(1)).numpy()
    b = ro.uniform_(_empty(5), generator=R.Generator().manual_seed(1)).numpy()
    np.testing.assert_array_equal(a, b)


def test_bernoulli_inplace_with_tensor_p_broadcasts():
    x = ro.bernoulli_(_empty((1000, 2)), _tensor([0.0, 1.0])).numpy()
    np.testing.assert_array_equal(x, np.tile([0.0, 1.0], (1000, 1)))


# -- dtypes, shapes, devices, requires_grad ---------------------------------------------

@pytest.mark.parametrize("size_args", [(2, 3), ((2, 3),), ([2, 3],), (Tensor._make(np.zeros((2, 3))).shape,)])
def test_size_forms(size_args):
    for fn in (ro.rand, ro.randn):
        assert tuple(fn(*size_args).shape) == (2, 3)
    assert tuple(ro.rand(size=(2, 3)).shape) == (2, 3)


@pytest.mark.parametrize("fn", [ro.rand, ro.randn])
@pytest.mark.parametrize("dt", [E.float16, E.float32, E.float64])
def test_float_dtypes(fn, dt):
    x = fn(3, 4, dtype=dt)
    assert x.dtype is dt and tuple(x.shape) == (3, 4)


def test_default_dtype_follows_setting():
    assert ro.rand(2).dtype is E.float32 and ro.normal(0.0, 1.0, (2,)).dtype is E.float32
    E.set_default_dtype(E.float64)
    try:
        assert ro.rand(2).dtype is E.float64 and ro.randn(2).dtype is E.float64
    finally:
        E.set_default_dtype(E.float32)


def test_device_argument():
    assert str(ro.rand(2, device="cpu").device) == "cpu"
    with pytest.raises(RuntimeError):
        ro.randn(2, device="cuda")


def test_requires_grad():
    x = ro.rand(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert ro.randn_like(x, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ro.randint(0, 3, (2,), requires_grad=True)


def test_like_functions_keep_shape_dtype_and_layout():
    src = Tensor._make(np.zeros((3, 2), np.float64).T)  # Fortran-ordered (2, 3)
    for fn, args in ((ro.rand_like, ()), (ro.randn_like, ()), (ro.randint_like, (5,))):
        y = fn(src, *args)
        assert tuple(y.shape) == (2, 3) and y.dtype is E.float64 and y.stride() == src.stride()
    assert ro.rand_like(src, memory_format=contiguous_format).stride() == (3, 1)
    assert ro.rand_like(src, dtype=E.float16).dtype is E.float16
    ints = ro.randint_like(_tensor([[1, 2]], E.int32), 3, 6)
    assert ints.dtype is E.int32 and set(ints.numpy().ravel().tolist()) <= {3, 4, 5}
    assert ro.randint_like(src, high=2).numpy().max() <= 1


@pytest.mark.parametrize("fn, call", [
    ("rand", lambda: ro.rand(0, 3)), ("randn", lambda: ro.randn(4, 0)), ("randint", lambda: ro.randint(5, (0,))),
    ("normal", lambda: ro.normal(0.0, 1.0, (0, 2))), ("normal_t", lambda: ro.normal(_empty((0, 2)), 1.0)),
    ("randperm", lambda: ro.randperm(0)), ("bernoulli", lambda: ro.bernoulli(_empty((0,)))),
    ("rand_like", lambda: ro.rand_like(_empty((2, 0)))), ("uniform_", lambda: ro.uniform_(_empty((0, 5)))),
    ("random_", lambda: ro.random_(_empty((0,), E.int8))),
])
def test_empty_results(fn, call):
    x = call()
    assert x.numel() == 0


def test_scalar_shape():
    assert tuple(ro.rand(()).shape) == () and tuple(ro.normal(_tensor(0.5), _tensor(1.0)).shape) == ()


# -- errors -----------------------------------------------------------------------------
# (id, ember call, torch call, exception type torch raises, fragment of the message)

ERRORS = [
    ("rand-neg", lambda: ro.rand(-1), lambda t: t.rand(-1), RuntimeError, "negative dimension -1: [-1]"),
    ("randn-neg", lambda: ro.randn(2, -1), lambda t: t.randn(2, -1), RuntimeError, "negative dimension -1: [2, -1]"),
    ("rand-no-size", lambda: ro.rand(), lambda t: t.rand(), TypeError, "size"),
    ("rand-float-size", lambda: ro.rand(2.0), lambda t: t.rand(2.0), TypeError, "size"),
    ("rand-long", lambda: ro.rand(2, dtype=E.int64), lambda t: t.rand(2, dtype=t.int64), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("rand-bool", lambda: ro.rand(2, dtype=E.bool), lambda t: t.rand(2, dtype=t.bool), NotImplementedError, "'Bool'"),
    ("randn-int", lambda: ro.randn(2, dtype=E.int32), lambda t: t.randn(2, dtype=t.int32), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Int'"),
    ("randint-order", lambda: ro.randint(5, 3, (2,)), lambda t: t.randint(5, 3, (2,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    ("randint-zero", lambda: ro.randint(0, (2,)), lambda t: t.randint(0, (2,)), RuntimeError, "from=0 >= to=0"),
    ("randint-uint8-from", lambda: ro.randint(-3, -1, (2,), dtype=E.uint8),
     lambda t: t.randint(-3, -1, (2,), dtype=t.uint8), RuntimeError, "from is out of bounds for unsigned char"),
    ("randint-uint8-to", lambda: ro.randint(0, 300, (2,), dtype=E.uint8),
     lambda t: t.randint(0, 300, (2,), dtype=t.uint8), RuntimeError, "to - 1 is out of bounds for unsigned char"),
    ("randint-bool-to", lambda: ro.randint(0, 3, (2,), dtype=E.bool),
     lambda t: t.randint(0, 3, (2,), dtype=t.bool), RuntimeError, "to - 1 is out of bounds for bool"),
    ("randint-float-bounds", lambda: ro.randint(0.5, 3.7, (2,)), lambda t: t.randint(0.5, 3.7, (2,)), TypeError, ""),
    ("randint-int-size", lambda: ro.randint(3, 2, 2), lambda t: t.randint(3, 2, 2), TypeError, "size"),
    ("randint-no-size", lambda: ro.randint(3), lambda t: t.randint(3), TypeError, "size"),
    ("randint-overflow", lambda: ro.randint(0, 2**63, (2,)), lambda t: t.randint(0, 2**63, (2,)), ValueError,
     "Overflow"),
    ("randperm-neg", lambda: ro.randperm(-1), lambda t: t.randperm(-1), RuntimeError, "negative dimension"),
    ("randperm-bool", lambda: ro.randperm(5, dtype=E.bool), lambda t: t.randperm(5, dtype=t.bool),
     NotImplementedError, "\"randperm\" not implemented for 'Bool'"),
    ("randperm-uint8", lambda: ro.randperm(300, dtype=E.uint8), lambda t: t.randperm(300, dtype=t.uint8),
     RuntimeError, "uint8_t without overflow"),
    ("randperm-half", lambda: ro.randperm(3000, dtype=E.float16), lambda t: t.randperm(3000, dtype=t.float16),
     RuntimeError, "n cannot be greater than"),
    ("normal-no-size", lambda: ro.normal(0.0, 1.0), lambda t: t.normal(0.0, 1.0), TypeError, "size"),
    ("normal-int-size", lambda: ro.normal(0.0, 1.0, 2), lambda t: t.normal(0.0, 1.0, 2), TypeError, "size"),
    ("normal-neg-std", lambda: ro.normal(0.0, -1.0, (2,)), lambda t: t.normal(0.0, -1.0, (2,)), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    ("normal-nan-std", lambda: ro.normal(_tensor([0.0]), float("nan")),
     lambda t: t.normal(t.tensor([0.0]), float("nan")), RuntimeError, "found std nan"),
    ("normal-neg-std-tensor", lambda: ro.normal(_tensor([0.0, 1.0]), _tensor([1.0, -2.0])),
     lambda t: t.normal(t.tensor([0.0, 1.0]), t.tensor([1.0, -2.0])), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    ("normal-broadcast", lambda: ro.normal(_tensor([0.0, 1.0]), _tensor([1.0, 2.0, 3.0])),
     lambda t: t.normal(t.tensor([0.0, 1.0]), t.tensor([1.0, 2.0, 3.0])), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3)"),
    ("normal-long-mean", lambda: ro.normal(_tensor([0, 1], E.int64), 1.0),
     lambda t: t.normal(t.tensor([0, 1]), 1.0), NotImplementedError, "'Long'"),
    ("normal-long-mean-float-std", lambda: ro.normal(_tensor([0, 1], E.int64), _tensor([1.0, 1.0])),
     lambda t: t.normal(t.tensor([0, 1]), t.tensor([1.0, 1.0])), NotImplementedError, "'Long'"),
    ("normal-long-dtype", lambda: ro.normal(0.0, 1.0, (2,), dtype=E.int64),
     lambda t: t.normal(0.0, 1.0, (2,), dtype=t.int64), NotImplementedError, "'Long'"),
    ("normal-tensor-size", lambda: ro.normal(_tensor([0.0]), 1.0, (2,)),
     lambda t: t.normal(t.tensor([0.0]), 1.0, (2,)), TypeError, ""),
    ("bernoulli-p-range", lambda: ro.bernoulli(_tensor([0.2, 1.9])), lambda t: t.bernoulli(t.tensor([0.2, 1.9])),
     RuntimeError, "p_in >= 0 && p_in <= 1"),
    ("bernoulli-p-nan", lambda: ro.bernoulli(_tensor([float("nan")])),
     lambda t: t.bernoulli(t.tensor([float("nan")])), RuntimeError, "p_in >= 0 && p_in <= 1"),
    ("bernoulli-long", lambda: ro.bernoulli(_tensor([0, 1], E.int64)), lambda t: t.bernoulli(t.tensor([0, 1])),
     NotImplementedError, "'Long'"),
    ("bernoulli-scalar-p", lambda: ro.bernoulli(_tensor([0.5]), 1.5), lambda t: t.bernoulli(t.tensor([0.5]), 1.5),
     RuntimeError, "expects p to be in [0, 1], but got p=1.5"),
    ("bernoulli-not-tensor", lambda: ro.bernoulli(0.3), lambda t: t.bernoulli(0.3), TypeError, "Tensor"),
    ("multinomial-too-many", lambda: ro.multinomial(_tensor([1.0, 2.0, 3.0]), 4),
     lambda t: t.multinomial(t.tensor([1.0, 2.0, 3.0]), 4), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    ("multinomial-neg", lambda: ro.multinomial(_tensor([1.0, -2.0]), 1),
     lambda t: t.multinomial(t.tensor([1.0, -2.0]), 1), RuntimeError, "`inf`, `nan` or element < 0"),
    ("multinomial-inf", lambda: ro.multinomial(_tensor([1.0, float("inf")]), 1),
     lambda t: t.multinomial(t.tensor([1.0, float("inf")]), 1), RuntimeError, "`inf`, `nan` or element < 0"),
    ("multinomial-nan", lambda: ro.multinomial(_tensor([1.0, float("nan")]), 1),
     lambda t: t.multinomial(t.tensor([1.0, float("nan")]), 1), RuntimeError, "`inf`, `nan` or element < 0"),
    ("multinomial-zero-row", lambda: ro.multinomial(_tensor([[1.0, 1.0], [0.0, 0.0]]), 1),
     lambda t: t.multinomial(t.tensor([[1.0, 1.0], [0.0, 0.0]]), 1), RuntimeError, "sum of probabilities <= 0"),
    ("multinomial-zero-samples", lambda: ro.multinomial(_tensor([1.0]), 0),
     lambda t: t.multinomial(t.tensor([1.0]), 0), RuntimeError, "n_sample <= 0"),
    ("multinomial-3d", lambda: ro.multinomial(_tensor([[[1.0]]]), 1), lambda t: t.multinomial(t.tensor([[[1.0]]]), 1),
     RuntimeError, "prob_dist must be 1 or 2 dim"),
    ("multinomial-long", lambda: ro.multinomial(_tensor([1, 2], E.int64), 1),
     lambda t: t.multinomial(t.tensor([1, 2]), 1), RuntimeError, "floating-point dtypes"),
    ("uniform-long", lambda: ro.uniform_(_empty(2, E.int64)), lambda t: t.empty(2, dtype=t.int64).uniform_(),
     NotImplementedError, "check_uniform_bounds"),
    ("uniform-order", lambda: ro.uniform_(_empty(2), 1, 0), lambda t: t.empty(2).uniform_(1, 0), RuntimeError,
     "from=1 > to=0"),
    ("uniform-inf", lambda: ro.uniform_(_empty(2), 0, float("inf")), lambda t: t.empty(2).uniform_(0, float("inf")),
     RuntimeError, "to is out of bounds for float"),
    ("uniform-span", lambda: ro.uniform_(_empty(2), -3e38, 3e38), lambda t: t.empty(2).uniform_(-3e38, 3e38),
     RuntimeError, "to-from to exceed the limit"),
    ("normal_-neg", lambda: ro.normal_(_empty(2), 0, -1), lambda t: t.empty(2).normal_(0, -1), RuntimeError,
     "found std -1"),
    ("normal_-long", lambda: ro.normal_(_empty(2, E.int64)), lambda t: t.empty(2, dtype=t.int64).normal_(),
     NotImplementedError, "normal_kernel_cpu"),
    ("bernoulli_-p", lambda: ro.bernoulli_(_empty(2), 1.5), lambda t: t.empty(2).bernoulli_(1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    ("bernoulli_-expand", lambda: ro.bernoulli_(_empty(5), _tensor([0.1, 0.2])),
     lambda t: t.empty(5).bernoulli_(t.tensor([0.1, 0.2])), RuntimeError,
     "The expanded size of the tensor (5) must match the existing size (2) at non-singleton dimension 0"),
    ("exponential-zero", lambda: ro.exponential_(_empty(2), 0), lambda t: t.empty(2).exponential_(0), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=0"),
    ("exponential-long", lambda: ro.exponential_(_empty(2, E.int64)), lambda t: t.empty(2, dtype=t.int64).exponential_(),
     RuntimeError, "you specified Long"),
    ("random-order", lambda: ro.random_(_empty(2, E.int64), 5, 5), lambda t: t.empty(2, dtype=t.int64).random_(5, 5),
     RuntimeError, "from=5 >= to=5"),
    ("random-zero", lambda: ro.random_(_empty(2, E.int64), 0), lambda t: t.empty(2, dtype=t.int64).random_(0),
     RuntimeError, "from=0 >= to=0"),
    ("random-int8", lambda: ro.random_(_empty(2, E.int8), -5, 200), lambda t: t.empty(2, dtype=t.int8).random_(-5, 200),
     RuntimeError, "to - 1 is out of bounds for signed char"),
    ("random-int16", lambda: ro.random_(_empty(2, E.int16), -(2**20), 0),
     lambda t: t.empty(2, dtype=t.int16).random_(-(2**20), 0), RuntimeError, "from is out of bounds for short int"),
    ("geometric-p", lambda: ro.geometric_(_empty(2), 1), lambda t: t.empty(2).geometric_(1), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=1"),
    ("geometric-bool", lambda: ro.geometric_(_empty(2, E.bool), 0.5), lambda t: t.empty(2, dtype=t.bool).geometric_(0.5),
     NotImplementedError, "'Bool'"),
    ("log_normal-std", lambda: ro.log_normal_(_empty(2), 1, 0), lambda t: t.empty(2).log_normal_(1, 0), RuntimeError,
     "log_normal_ expects std > 0.0, but found std=0"),
    ("log_normal-long", lambda: ro.log_normal_(_empty(2, E.int64)), lambda t: t.empty(2, dtype=t.int64).log_normal_(),
     NotImplementedError, "log_normal_cpu"),
    ("cauchy-sigma", lambda: ro.cauchy_(_empty(2), 0, -1), lambda t: t.empty(2).cauchy_(0, -1), RuntimeError,
     "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    ("cauchy-int", lambda: ro.cauchy_(_empty(2, E.int32)), lambda t: t.empty(2, dtype=t.int32).cauchy_(),
     RuntimeError, "you specified int"),
    ("like-not-tensor", lambda: ro.rand_like([1.0]), lambda t: t.rand_like([1.0]), TypeError, "Tensor"),
    ("rand_like-long", lambda: ro.rand_like(_tensor([1, 2], E.int64)), lambda t: t.rand_like(t.tensor([1, 2])),
     NotImplementedError, "'Long'"),
    ("randint_like-order", lambda: ro.randint_like(_tensor([1, 2], E.int64), 5, 3),
     lambda t: t.randint_like(t.tensor([1, 2]), 5, 3), RuntimeError, "from=5 >= to=3"),
]


@pytest.mark.parametrize("ember_call, exc, fragment", [e[1:2] + e[3:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(ember_call, exc, fragment):
    with pytest.raises(exc) as info:
        ember_call()
    assert type(info.value) is exc
    assert fragment in str(info.value)


@pytest.mark.parametrize("torch_call, exc", [(e[2], e[3]) for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_match_torch(torch_call, exc):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as info:
        torch_call(torch)
    assert type(info.value) is exc


def test_invalid_arguments_leave_the_stream_alone():
    state = R.get_rng_state().numpy().copy()
    for call in (lambda: ro.randint(5, 3, (2,)), lambda: ro.normal(0.0, -1.0, (3,)), lambda: ro.rand(-1)):
        with pytest.raises(RuntimeError):
            call()
    np.testing.assert_array_equal(state, R.get_rng_state().numpy())


# -- differential dtype/shape checks against torch ---------------------------------------

RESULTS = [
    ("rand", lambda: ro.rand(2, 3), lambda t: t.rand(2, 3)),
    ("rand-f64", lambda: ro.rand((2,), dtype=E.float64), lambda t: t.rand((2,), dtype=t.float64)),
    ("randn-f16", lambda: ro.randn([4], dtype=E.float16), lambda t: t.randn([4], dtype=t.float16)),
    ("randint", lambda: ro.randint(5, (2, 2)), lambda t: t.randint(5, (2, 2))),
    ("randint-i8", lambda: ro.randint(-2, 5, (3,), dtype=E.int8), lambda t: t.randint(-2, 5, (3,), dtype=t.int8)),
    ("randint-f32", lambda: ro.randint(0, 3, (2,), dtype=E.float32), lambda t: t.randint(0, 3, (2,), dtype=t.float32)),
    ("randperm", lambda: ro.randperm(4), lambda t: t.randperm(4)),
    ("randperm-f32", lambda: ro.randperm(4, dtype=E.float32), lambda t: t.randperm(4, dtype=t.float32)),
    ("normal-ff", lambda: ro.normal(0, 1, (2,)), lambda t: t.normal(0, 1, (2,))),
    ("normal-tt", lambda: ro.normal(_tensor(np.zeros((2, 1)), E.float64), _tensor([1.0, 2.0, 3.0])),
     lambda t: t.normal(t.zeros(2, 1, dtype=t.float64), t.tensor([1.0, 2.0, 3.0]))),
    ("normal-mean-dtype-wins", lambda: ro.normal(_tensor([0.0, 1.0]), _tensor([1.0, 1.0], E.float64)),
     lambda t: t.normal(t.tensor([0.0, 1.0]), t.tensor([1.0, 1.0], dtype=t.float64))),
    ("normal-int-std", lambda: ro.normal(_tensor([0.0, 1.0], E.float64), _tensor([1, 1], E.int32)),
     lambda t: t.normal(t.tensor([0.0, 1.0], dtype=t.float64), t.tensor([1, 1], dtype=t.int32))),
    ("normal-ft16", lambda: ro.normal(1.0, _tensor([1.0, 2.0], E.float16)),
     lambda t: t.normal(1.0, t.tensor([1.0, 2.0], dtype=t.float16))),
    ("bernoulli-f64", lambda: ro.bernoulli(_tensor([0.5, 0.5], E.float64)),
     lambda t: t.bernoulli(t.tensor([0.5, 0.5], dtype=t.float64))),
    ("bernoulli-int-p", lambda: ro.bernoulli(_tensor([0, 1], E.int64), 0.5), lambda t: t.bernoulli(t.tensor([0, 1]), 0.5)),
    ("multinomial-2d", lambda: ro.multinomial(_tensor(np.ones((3, 4))), 2, True),
     lambda t: t.multinomial(t.ones(3, 4), 2, True)),
    ("rand_like", lambda: ro.rand_like(_tensor([[1.0, 2.0]], E.float64)),
     lambda t: t.rand_like(t.tensor([[1.0, 2.0]], dtype=t.float64))),
    ("randint_like-float", lambda: ro.randint_like(_tensor([1.0, 2.0]), 5), lambda t: t.randint_like(t.tensor([1.0, 2.0]), 5)),
    ("randint_like-bool", lambda: ro.randint_like(_tensor([True, False], E.bool), 2),
     lambda t: t.randint_like(t.tensor([True, False]), 2)),
    ("geometric-int", lambda: ro.geometric_(_empty(3, E.int32), 0.5), lambda t: t.empty(3, dtype=t.int32).geometric_(0.5)),
    ("bernoulli_-bool", lambda: ro.bernoulli_(_empty(3, E.bool)), lambda t: t.empty(3, dtype=t.bool).bernoulli_()),
]


@pytest.mark.parametrize("ember_call, torch_call", [r[1:] for r in RESULTS], ids=[r[0] for r in RESULTS])
def test_result_dtype_and_shape_match_torch(ember_call, torch_call):
    torch = pytest.importorskip("torch")
    ours, theirs = ember_call(), torch_call(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)


# -- property tests over random shapes -----------------------------------------------------

shapes = st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, seed=st.integers(-(2**63), 2**64 - 1))
def test_shapes_and_ranges_hypothesis(shape, seed):
    g = R.Generator().manual_seed(seed)
    u = ro.rand(shape, generator=g)
    assert tuple(u.shape) == shape and u.dtype is E.float32
    assert np.all((u.numpy() >= 0) & (u.numpy() < 1))
    varargs = shape if shape else ((),)  # the varargs form; a 0-d size is spelled () as in torch
    n = ro.randn(*varargs, generator=g, dtype=E.float64)
    assert tuple(n.shape) == shape and np.all(np.isfinite(n.numpy()))
    i = ro.randint(-3, 4, shape, generator=g)
    assert tuple(i.shape) == shape and np.all((i.numpy() >= -3) & (i.numpy() < 4))
    like = ro.randint_like(u, 2, generator=g)
    assert tuple(like.shape) == shape and like.dtype is E.float32 and set(like.numpy().ravel().tolist()) <= {0.0, 1.0}
    # the same seed replays the same draws
    g.manual_seed(seed)
    np.testing.assert_array_equal(ro.rand(shape, generator=g).numpy(), u.numpy())


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), step=st.integers(1, 3),
       dt=st.sampled_from([E.float16, E.float32, E.float64, E.int32, E.uint8]))
def test_inplace_on_strided_views_hypothesis(shape, step, dt):
    base = _empty(tuple(s * step for s in shape), dt)
    index = tuple(slice(None, None, step) for _ in shape)
    view = Tensor._make(base._array[index], version=base._version)
    ro.random_(view, 1, 10)
    written = np.zeros(base._array.shape, bool)
    written[index] = True
    assert np.all((base.numpy()[written] >= 1) & (base.numpy()[written] < 10))
    assert np.all(base.numpy()[~written] == 0)
    assert base._version.value == 1


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 4), cats=st.integers(1, 8), data=st.data())
def test_multinomial_hypothesis(rows, cats, data):
    probs = np.asarray(data.draw(st.lists(st.floats(0, 10), min_size=rows * cats, max_size=rows * cats)))
    probs = probs.reshape(rows, cats)
    probs[:, 0] += 0.5  # every row has some mass
    n = data.draw(st.integers(1, cats))
    x = ro.multinomial(_tensor(probs, E.float64), n).numpy()
    assert x.shape == (rows, n) and np.all((x >= 0) & (x < cats))
    for r in range(rows):
        assert len(set(x[r].tolist())) == n
        positive = int(np.count_nonzero(probs[r]))
        assert np.all(probs[r][x[r][: min(n, positive)]] > 0)  # positive categories come first
    y = ro.multinomial(_tensor(probs, E.float64), 3 * cats, replacement=True).numpy()
    assert np.all(probs[np.arange(rows)[:, None], y] > 0)
