"""use_deterministic_algorithms on CUDA (runs under NUMBA_ENABLE_CUDASIM=1): the ops built on atomic float
scatter-add give the CPU's serial-order bits in deterministic mode, torch's always-nondeterministic ops raise,
cuBLAS is avoided without a fixed workspace, empty() is filled."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import ember  # noqa: E402
from ember.kernels.cuda import indexing as dev_indexing, vendor_blas  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402
from ember.nn import functional as F  # noqa: E402

N, M = 6, 40
RNG = np.random.default_rng(3)
SRC = (RNG.standard_normal(M) * 1e3).astype(np.float32)  # large, mixed signs: the order of the adds shows
IDX = RNG.integers(0, N, M)
WEIGHTS = RNG.standard_normal(M) * 10.0 ** RNG.integers(-8, 9, M)  # float64 sums that depend on the order too


@pytest.fixture(autouse=True)
def _deterministic():
    ember.use_deterministic_algorithms(True)
    yield
    ember.use_deterministic_algorithms(False)


def _on(device: str):
    return lambda a, **kw: ember.tensor(a, device=device, **kw)


def _grad_of(device: str, build):
    t = _on(device)
    w = ember.zeros(N, device=device, requires_grad=True)
    (build(w, t) * t(SRC)).sum().backward()
    return w.grad


OPS = {
    "scatter_add": lambda d: ember.zeros(N, device=d).scatter_add(0, _on(d)(IDX), _on(d)(SRC)),
    "scatter_reduce_mean": lambda d: ember.zeros(N, device=d).scatter_reduce(0, _on(d)(IDX), _on(d)(SRC), "mean"),
    "index_add": lambda d: ember.zeros(N, device=d).index_add(0, _on(d)(IDX), _on(d)(SRC)),
    "index_put_accumulate": lambda d: ember.zeros(N, device=d).index_put((_on(d)(IDX),), _on(d)(SRC), True),
    "put_accumulate": lambda d: ember.zeros(N, device=d).put_(_on(d)(IDX), _on(d)(SRC), accumulate=True),
    "gather_backward": lambda d: _grad_of(d, lambda w, t: w.gather(0, t(IDX))),
    "index_select_backward": lambda d: _grad_of(d, lambda w, t: w.index_select(0, t(IDX))),
    "getitem_backward": lambda d: _grad_of(d, lambda w, t: w[t(IDX)]),
    "bincount_weights": lambda d: ember.bincount(_on(d)(IDX), _on(d)(WEIGHTS), N),
    "bincount_float32_weights": lambda d: ember.bincount(_on(d)(IDX), _on(d)(WEIGHTS.astype(np.float32)), N),
}


@pytest.mark.parametrize("name", list(OPS))
def test_matches_cpu_bits_every_run(name):
    want = OPS[name]("cpu").numpy()
    first = OPS[name]("cuda").cpu().numpy()
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(OPS[name]("cuda").cpu().numpy(), first)


def test_embedding_backward_matches_cpu_bits():
    grads = {}
    for d in ("cpu", "cuda"):
        weight = ember.zeros(N, 2, device=d, requires_grad=True)
        rows = ember.tensor(np.repeat(SRC[:, None], 2, axis=1), device=d)
        (F.embedding(ember.tensor(IDX, device=d), weight) * rows).sum().backward()
        grads[d] = weight.grad.cpu().numpy()
    np.testing.assert_array_equal(grads["cuda"], grads["cpu"])


def test_max_pool_backward_matches_cpu_bits():
    # a plateau of equal maxima: one position is the arg-max of many overlapping windows
    x = np.zeros((1, 2, 5, 5), np.float32)
    x[:, :, 2, 2] = 1.0
    g = (RNG.standard_normal((1, 2, 3, 3)) * 1e3).astype(np.float32)
    grads = {}
    for d in ("cpu", "cuda"):
        xt = ember.tensor(x, device=d, requires_grad=True)
        (F.max_pool2d(xt, 3, stride=1) * ember.tensor(g, device=d)).sum().backward()
        grads[d] = xt.grad.cpu().numpy()
    np.testing.assert_array_equal(grads["cuda"], grads["cpu"])


def test_kernel_takes_a_device_index_too():
    out = DeviceStorage.from_numpy(np.zeros(N, np.float32))
    dev_indexing.scatter("sum", out, DeviceStorage.from_numpy(IDX.astype(np.int64)), DeviceStorage.from_numpy(SRC))
    want = np.zeros(N, np.float32)
    np.add.at(want, IDX, SRC)
    np.testing.assert_array_equal(out.to_numpy(), want)


def test_mode_off_keeps_the_atomic_kernels_correct():
    ember.use_deterministic_algorithms(False)
    got = ember.zeros(N, device="cuda").scatter_add(0, _on("cuda")(IDX), _on("cuda")(SRC)).cpu().numpy()
    np.testing.assert_allclose(got, OPS["scatter_add"]("cpu").numpy(), rtol=1e-5, atol=1e-2)


@pytest.mark.parametrize("op", [
    lambda: ember.zeros(4, device="cuda").put_(ember.tensor([1], device="cuda"), ember.tensor([1.0], device="cuda")),
    lambda: F.max_unpool1d(ember.ones(1, 1, 2, device="cuda"), ember.tensor([[[0, 1]]], device="cuda"), 2),
])
def test_always_nondeterministic_ops_raise_and_warn(op):
    with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
        op()
    ember.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
        op()


def test_empty_on_the_device_is_filled():
    np.testing.assert_array_equal(ember.empty(3, device="cuda").cpu().numpy(), np.full(3, np.nan, np.float32))
    np.testing.assert_array_equal(ember.empty(2, dtype=ember.int32, device="cuda").cpu().numpy(),
                                  np.full(2, 2 ** 31 - 1, np.int32))


def test_cublas_needs_a_fixed_workspace_in_deterministic_mode(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert not vendor_blas._reproducible()
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    assert vendor_blas._reproducible()
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")
    ember.use_deterministic_algorithms(False)
    assert vendor_blas._reproducible()


def test_legacy_cuda_types():
    x = ember.cuda.FloatTensor([1.0, 2.0])
    assert x.is_cuda and x.type() == "torch.cuda.FloatTensor" and isinstance(x, ember.cuda.FloatTensor)
    assert not isinstance(x, ember.FloatTensor)
    assert ember.cuda.LongTensor(2, 3).shape == (2, 3)
    assert x.type(ember.DoubleTensor).device.type == "cpu"
    assert ember.zeros(2).type("torch.cuda.LongTensor").is_cuda
    with pytest.raises(RuntimeError, match="expects device type: cuda"):
        ember.cuda.FloatTensor(2, device="cpu")


def test_set_default_tensor_type_to_a_cuda_type():
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.cuda.DoubleTensor)
        x = ember.zeros(2)
        assert x.is_cuda and x.dtype is ember.float64
    finally:
        with pytest.warns(UserWarning):
            ember.set_default_tensor_type(ember.FloatTensor)
    assert not ember.zeros(1).is_cuda and ember.get_default_dtype() is ember.float32
