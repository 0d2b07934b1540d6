"""examples/custom_op.py on CUDA tensors: its ``cuda.jit`` kernels against NumPy and its command line run with
``--device cuda`` (tiny sizes: the simulator runs every GPU thread as Python)."""
from __future__ import annotations


import numpy as np
import pytest

import ember


@pytest.fixture(scope="module")
def example(custom_op_example):
    return custom_op_example


def test_main_runs_on_cuda(example):
    result = example.main(["--device", "cuda", "--steps", "3", "--hidden", "4", "--images", "12",
                              "--bench-rows", "6", "--bench-cols", "5", "--repeats", "1"])
    assert result["gradcheck"] is True  # the CUDA kernels, checked through device copies of CPU inputs
    assert result["losses"][-1] < result["losses"][0]
    assert result["max_difference"] < 1e-6
    assert "ScaledSquaredReLU" in result["profile"]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_kernels_match_numpy_beyond_one_grid(example, dtype):
    """More elements (and more features) than the capped grid has threads: every grid-stride loop must wrap."""
    rng = np.random.default_rng(0)
    x_np, s_np, g_np = rng.standard_normal((20, 3)).T, rng.uniform(0.5, 2, 20), rng.standard_normal((3, 20))
    x = ember.tensor(x_np, dtype=dtype, device="cuda", requires_grad=True)  # transposed: not contiguous
    scale = ember.tensor(s_np, dtype=dtype, device="cuda", requires_grad=True)
    y = example.ScaledSquaredReLU.apply(x, scale)
    y.backward(ember.tensor(g_np, dtype=dtype, device="cuda"))
    assert y.is_cuda and x.grad.is_cuda and scale.grad.is_cuda
    r = np.maximum(x_np, 0)
    tol = 1e-5 if dtype is ember.float32 else 1e-12
    np.testing.assert_allclose(y.detach().cpu().numpy(), s_np * r * r, rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * s_np * r * g_np, rtol=tol, atol=tol)
    np.testing.assert_allclose(scale.grad.cpu().numpy(), (r * r * g_np).sum(0), rtol=tol, atol=tol)


def test_mixed_devices_raise(example):
    with pytest.raises(RuntimeError, match="scaled_squared_relu.*cuda.*cpu"):
        example.ScaledSquaredReLU.apply(ember.ones(2, 3, device="cuda"), ember.ones(3))
