"""use_deterministic_algorithms on the CPU: the flags, empty()'s fill, torch's errors, and that the kernels that
accumulate through indices give the serial loop's bits on every run."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.utils.deterministic as deterministic
from ember.nn import functional as F


@pytest.fixture(autouse=True)
def _restore_mode():
    yield
    ember.use_deterministic_algorithms(False)
    deterministic.fill_uninitialized_memory = True


@pytest.fixture
def on():
    ember.use_deterministic_algorithms(True)


# ----------------------------------------------------------------------------- flags
def test_flags_read_back():
    assert not ember.are_deterministic_algorithms_enabled()
    assert not ember.is_deterministic_algorithms_warn_only_enabled() and ember.get_deterministic_debug_mode() == 0
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled() and ember.get_deterministic_debug_mode() == 2
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.is_deterministic_algorithms_warn_only_enabled() and ember.get_deterministic_debug_mode() == 1
    ember.use_deterministic_algorithms(mode=False, warn_only=True)
    assert not ember.are_deterministic_algorithms_enabled() and ember.is_deterministic_algorithms_warn_only_enabled()


@pytest.mark.parametrize("mode,level", [("default", 0), ("warn", 1), ("error", 2), (0, 0), (1, 1), (2, 2)])
def test_debug_mode_matches_torch(torch_ref, mode, level):
    try:
        torch_ref.set_deterministic_debug_mode(mode)
        ember.set_deterministic_debug_mode(mode)
        assert ember.get_deterministic_debug_mode() == torch_ref.get_deterministic_debug_mode() == level
        assert ember.are_deterministic_algorithms_enabled() == torch_ref.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled() == \
            torch_ref.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch_ref.use_deterministic_algorithms(False)


@pytest.mark.parametrize("call", [
    lambda m: m.use_deterministic_algorithms(1), lambda m: m.use_deterministic_algorithms(None),
    lambda m: m.use_deterministic_algorithms(True, warn_only="yes"), lambda m: m.set_deterministic_debug_mode("x"),
    lambda m: m.set_deterministic_debug_mode(3), lambda m: m.set_deterministic_debug_mode(1.0),
])
def test_bad_arguments_raise_torch_error_type(torch_ref, call):
    try:
        with pytest.raises(Exception) as want:
            call(torch_ref)
    finally:
        torch_ref.use_deterministic_algorithms(False)
    with pytest.raises(type(want.value)):
        call(ember)


# ----------------------------------------------------------------------------- empty() fills memory
@pytest.mark.parametrize("dtype,value", [("float32", np.nan), ("float16", np.nan), ("float64", np.nan),
                                         ("int64", 2 ** 63 - 1), ("int8", 127), ("uint8", 255), ("bool", True)])
def test_empty_is_filled_like_torch(torch_ref, on, dtype, value):
    torch_ref.use_deterministic_algorithms(True)
    try:
        want = torch_ref.empty(3, dtype=getattr(torch_ref, dtype)).numpy()
    finally:
        torch_ref.use_deterministic_algorithms(False)
    got = ember.empty(3, dtype=getattr(ember, dtype)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.full(3, value, dtype=dtype))


def test_constructors_built_on_empty_are_filled(on):
    x = ember.zeros(2, dtype=ember.int32)
    for t in (ember.FloatTensor(2), ember.Tensor(2, 2), ember.empty_like(x), x.new_empty(3), x.new(2)):
        expected = np.nan if t.dtype.is_floating_point else np.iinfo(t.dtype.np).max
        np.testing.assert_array_equal(t.numpy(), np.full(t.shape, expected, dtype=t.dtype.np))


def test_fill_uninitialized_memory_switch(on):
    assert ember.utils.deterministic.fill_uninitialized_memory is True
    deterministic.fill_uninitialized_memory = False
    assert ember.utils.deterministic.fill_uninitialized_memory is False
    deterministic.fill_uninitialized_memory = True
    with pytest.raises(RuntimeError, match="expected a bool"):
        deterministic.fill_uninitialized_memory = 1
    ember.use_deterministic_algorithms(False)
    ember.empty(4)  # off: nothing filled, nothing checked


# ----------------------------------------------------------------------------- torch's always-nondeterministic ops
def _ops(m):
    return {
        "put_": lambda: m.zeros(5).put_(m.tensor([1, 1]), m.tensor([1.0, 2.0])),
        "put": lambda: m.zeros(5).put(m.tensor([1]), m.tensor([1.0])),
        "max_unpool1d": lambda: m.nn.functional.max_unpool1d(m.ones(1, 1, 2), m.tensor([[[0, 1]]]), 2),
        "max_unpool2d": lambda: m.nn.functional.max_unpool2d(m.ones(1, 1, 1, 2), m.tensor([[[[0, 1]]]]), 2),
        "max_unpool3d": lambda: m.nn.functional.max_unpool3d(m.ones(1, 1, 1, 1, 2), m.tensor([[[[[0, 1]]]]]), 2),
    }


@pytest.mark.parametrize("name", list(_ops(ember)))
def test_nondeterministic_ops_raise_like_torch(torch_ref, on, name):
    torch_ref.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError) as want:
            _ops(torch_ref)[name]()
    finally:
        torch_ref.use_deterministic_algorithms(False)
    with pytest.raises(RuntimeError, match="does not have a deterministic implementation") as got:
        _ops(ember)[name]()
    assert str(got.value).split()[0] == str(want.value).split()[0]  # the same op named


@pytest.mark.parametrize("name", list(_ops(ember)))
def test_warn_only_warns_and_runs(name):
    ember.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
        result = _ops(ember)[name]()
    assert isinstance(result, ember.Tensor)


def test_mode_off_raises_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for op in _ops(ember).values():
            op()


def test_accumulating_put_is_allowed(on):
    out = ember.zeros(3).put_(ember.tensor([1, 1]), ember.tensor([1.0, 2.0]), accumulate=True)
    assert out.tolist() == [0.0, 3.0, 0.0]


# ----------------------------------------------------------------------------- CPU kernels: serial-order bits
RNG = np.random.default_rng(0)
N, M = 64, 2000
SRC = RNG.standard_normal(M).astype(np.float32) * 1e3
IDX = RNG.integers(0, N, M)


def _serial_sum(size: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The reference: ``out[index[i]] += values[i]`` in index order, in the values' dtype (np.add.at is serial)."""
    out = np.zeros(size, values.dtype)
    np.add.at(out, index, values)
    return out


ACCUMULATING = {
    "scatter_add": lambda: ember.zeros(N).scatter_add(0, ember.tensor(IDX), ember.tensor(SRC)),
    "scatter_reduce_sum": lambda: ember.zeros(N).scatter_reduce(0, ember.tensor(IDX), ember.tensor(SRC), "sum"),
    "index_add": lambda: ember.zeros(N).index_add(0, ember.tensor(IDX), ember.tensor(SRC)),
    "index_put_accumulate": lambda: ember.zeros(N).index_put((ember.tensor(IDX),), ember.tensor(SRC), True),
    "put_accumulate": lambda: ember.zeros(N).put(ember.tensor(IDX), ember.tensor(SRC), accumulate=True),
    "bincount_weights": lambda: ember.bincount(ember.tensor(IDX), ember.tensor(SRC.astype(np.float64)), N).float(),
    "gather_backward": lambda: _grad(lambda w: w.gather(0, ember.tensor(IDX)) * ember.tensor(SRC)),
    "index_select_backward": lambda: _grad(lambda w: w.index_select(0, ember.tensor(IDX)) * ember.tensor(SRC)),
    "getitem_backward": lambda: _grad(lambda w: w[ember.tensor(IDX)] * ember.tensor(SRC)),
}


def _grad(f):
    w = ember.zeros(N, requires_grad=True)
    f(w).sum().backward()
    return w.grad


@pytest.mark.parametrize("name", list(ACCUMULATING))
def test_accumulating_ops_give_serial_bits_every_run(on, name):
    want = _serial_sum(N, IDX, SRC.astype(np.float64) if name == "bincount_weights" else SRC).astype(np.float32)
    first = ACCUMULATING[name]().numpy().copy()
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(ACCUMULATING[name]().numpy(), first)


def test_embedding_backward_is_serial_order(on):
    weight = ember.zeros(N, 3, requires_grad=True)
    rows = ember.tensor(np.repeat(SRC[:, None], 3, axis=1))
    (F.embedding(ember.tensor(IDX), weight) * rows).sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy()[:, 0], _serial_sum(N, IDX, SRC))


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_pooling_backward_repeats_bit_for_bit(on, pool):
    x = ember.tensor(RNG.standard_normal((4, 8, 24, 24)).astype(np.float32), requires_grad=True)
    g = ember.tensor(RNG.standard_normal((4, 8, 22, 22)).astype(np.float32) * 1e3)
    grads = []
    for _ in range(2):
        x.grad = None
        fn = F.max_pool2d if pool == "max" else F.avg_pool2d
        (fn(x, 3, stride=1) * g).sum().backward()
        grads.append(x.grad.numpy().copy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_histc_counts_exactly(on):
    x = ember.tensor(RNG.standard_normal(5000).astype(np.float32))
    counts = ember.histc(x, bins=7, min=-2, max=2).numpy()
    edges = np.linspace(-2, 2, 8, dtype=np.float32)
    inside = x.numpy()[(x.numpy() >= -2) & (x.numpy() <= 2)]
    assert counts.sum() == inside.size
    np.testing.assert_array_equal(ember.histc(x, bins=7, min=-2, max=2).numpy(), counts)
    assert abs(int(counts[3]) - int(((inside >= edges[3]) & (inside < edges[4])).sum())) <= 1
