"""With CUDA usable (the simulator or a GPU): ember.accelerator reports it, the default device puts new tensors and
parameters there, and the matmul precision reaches the cuBLAS path."""
from __future__ import annotations

import threading

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():
    pytest.skip("CUDA (or the simulator) is not available", allow_module_level=True)

import ember  # noqa: E402
from ember.kernels.cuda import vendor_blas  # noqa: E402


@pytest.fixture
def default_device():
    yield
    ember.set_default_device(None)


def test_the_accelerator_is_cuda():
    assert ember.accelerator.is_available() is True
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.current_accelerator(check_available=True).index is None
    assert ember.accelerator.device_count() == ember.cuda.device_count() >= 1
    assert ember.accelerator.current_device_index() == ember.cuda.current_device()
    assert ember.device(0) == "cuda:0"
    assert ember.backends.cuda.is_built() is True


def test_device_indices_streams_and_sync_delegate_to_ember_cuda():
    ember.accelerator.set_device_index(0)
    ember.accelerator.set_device_index("cuda:0")
    ember.accelerator.set_device_index(-1)  # a negative index changes nothing
    with ember.accelerator.device_index(0):
        assert ember.accelerator.current_device_index() == 0
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        ember.accelerator.set_device_index("cpu")
    with pytest.raises(ValueError, match="with a specified index"):
        ember.accelerator.set_device_index("cuda")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.accelerator.set_device_index(ember.cuda.device_count())
    x = ember.ones(4, device="cuda") * 2
    ember.accelerator.synchronize()
    ember.accelerator.synchronize("cuda:0")
    assert ember.accelerator.current_stream() == ember.cuda.current_stream()
    ember.accelerator.set_stream(ember.cuda.default_stream(0))
    assert ember.accelerator.memory_allocated() == ember.cuda.memory_allocated() > 0
    assert ember.accelerator.max_memory_allocated(0) >= ember.accelerator.memory_allocated(0)
    assert ember.accelerator.memory_stats("cuda")["allocated_bytes.all.current"] == ember.cuda.memory_allocated()
    del x
    ember.accelerator.reset_peak_memory_stats()
    ember.accelerator.empty_cache()
    assert ember.accelerator.memory_reserved() == ember.cuda.memory_reserved()


def test_set_default_device_cuda_puts_new_tensors_and_parameters_on_the_device(default_device):
    ember.set_default_device("cuda")
    assert ember.get_default_device() == "cuda:0"
    made = [ember.zeros(2), ember.ones(2, 2), ember.full((2,), 3.0), ember.rand(3), ember.randn(3),
            ember.randint(0, 5, (3,)), ember.arange(4), ember.tensor([1.0, 2.0]), ember.eye(2), ember.randperm(4),
            ember.nn.Linear(3, 2).weight]
    assert all(t.device == "cuda:0" for t in made)
    assert ember.zeros(2, device="cpu").device == "cpu"
    np.testing.assert_array_equal(np.sort(made[-2].cpu().numpy()), np.arange(4))
    out = ember.nn.Linear(3, 2)(ember.ones(4, 3))
    assert out.device == "cuda:0" and out.shape == (4, 2)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(ember.zeros(1).device))
    worker.start()
    worker.join(timeout=60)
    assert seen == ["cpu"]  # per thread, as in torch


def test_with_device_cuda_is_a_block_of_default_device(default_device):
    with ember.device("cuda"):
        assert ember.empty(3).device == "cuda:0"
        with ember.device("cpu"):
            assert ember.empty(3).device == "cpu"
    assert ember.empty(3).device == "cpu"


def test_generators_take_the_cuda_device():
    generator = ember.Generator(device="cuda")
    assert generator.device == "cuda:0"
    assert ember.Generator(device=ember.device("cuda", 0)).device == "cuda:0"
    assert ember.rand(2, device="cuda", generator=generator).device == "cuda:0"


class _FakeCuda:
    """Stands in for ``cupy.cuda`` (the simulator never loads CuPy): one cuBLAS handle whose math mode it records."""

    def __init__(self) -> None:
        self.modes = []
        self.cublas = self

    def get_cublas_handle(self) -> int:
        return 1234

    def setMathMode(self, handle: int, mode: int) -> None:  # noqa: N802 - cuBLAS's name
        self.modes.append((handle, mode))


def test_the_matmul_precision_sets_the_cublas_math_mode_when_it_changes(monkeypatch):
    fake = type("cupy", (), {"cuda": _FakeCuda()})
    monkeypatch.setattr(vendor_blas, "_tf32_by_handle", {})
    precision = ember.get_float32_matmul_precision()
    try:
        for setting in ("highest", "highest", "high", "medium", "highest"):
            ember.set_float32_matmul_precision(setting)
            vendor_blas.set_float32_compute(fake, ember.backends.cuda.matmul.allow_tf32)
    finally:
        ember.set_float32_matmul_precision(precision)
    assert fake.cuda.modes == [(1234, 0), (1234, 3), (1234, 0)]  # CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH
