"""examples/custom_op.py, the extension guide's example: its Numba-kernel layer against NumPy and the plain-ops
layer, its gradients, its errors, and its command line run end to end (small sizes)."""
from __future__ import annotations


import numpy as np
import pytest

import ember

SMALL_RUN = ["--steps", "8", "--hidden", "8", "--images", "64", "--bench-rows", "16", "--bench-cols", "8",
             "--repeats", "1"]


@pytest.fixture(scope="module")
def example(custom_op_example):
    return custom_op_example


@pytest.fixture(scope="module")
def run(example) -> dict:
    """One run of ``main`` on the CPU at a small size."""
    return example.main(["--device", "cpu", *SMALL_RUN])


def _reference(x: np.ndarray, scale: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y, dL/dx and dL/dscale of y = scale * relu(x)**2 in NumPy (float64)."""
    r = np.maximum(x, 0)
    rows = tuple(range(x.ndim - 1))
    return scale * r * r, 2 * scale * r * g, (r * r * g).sum(axis=rows)


def test_main_passes_gradcheck_trains_and_matches_plain_ops(run):
    assert run["gradcheck"] is True
    assert run["losses"][-1] < run["losses"][0]
    assert run["max_difference"] < 1e-6
    assert run["speedup"] > 0
    assert "ScaledSquaredReLU" in run["profile"] and "squared_relu_step" in run["profile"]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "3-d"])
def test_kernels_match_numpy(example, dtype, layout):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((6, 5, 4) if layout == "3-d" else (7, 9))
    x = ember.tensor(base, dtype=dtype)
    if layout == "transposed":
        x = x.t()  # non-contiguous: the layer makes a contiguous copy before its kernels run
    cols = x.shape[-1]
    scale = ember.tensor(rng.uniform(0.5, 2, cols), dtype=dtype, requires_grad=True)
    x.requires_grad_()
    g = rng.standard_normal(tuple(x.shape))
    y = example.ScaledSquaredReLU.apply(x, scale)
    y.backward(ember.tensor(g, dtype=dtype))
    want_y, want_gx, want_gs = _reference(x.detach().numpy().astype(np.float64), scale.detach().numpy(), g)
    tol = 1e-5 if dtype is ember.float32 else 1e-12
    np.testing.assert_allclose(y.detach().numpy(), want_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.numpy(), want_gx, rtol=tol, atol=tol)
    np.testing.assert_allclose(scale.grad.numpy(), want_gs, rtol=tol, atol=tol)
    assert y.dtype == dtype and y.shape == x.shape


def test_only_the_needed_gradient_is_returned(example):
    x = ember.randn(3, 4, requires_grad=True)
    scale = ember.ones(4)
    example.ScaledSquaredReLU.apply(x, scale).sum().backward()
    assert scale.grad is None
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.maximum(x.detach().numpy(), 0), rtol=1e-6)


def test_module_trains_its_scale(example):
    layer = example.SquaredReLU(3, scale=0.5)
    x = ember.tensor([[1.0, -2.0, 3.0]])
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.scale.grad.numpy(), [1.0, 0.0, 9.0])
    assert [name for name, _ in layer.named_parameters()] == ["scale"]


def test_empty_input(example):
    x = ember.zeros(0, 3, requires_grad=True)
    scale = ember.ones(3, requires_grad=True)
    y = example.ScaledSquaredReLU.apply(x, scale)
    y.sum().backward()
    assert y.shape == (0, 3) and x.grad.shape == (0, 3)
    np.testing.assert_array_equal(scale.grad.numpy(), np.zeros(3))


def test_bad_inputs_raise_before_any_kernel(example):
    apply = example.ScaledSquaredReLU.apply
    with pytest.raises(RuntimeError, match=r"scaled_squared_relu.*\[3\].*\[2, 4\]"):
        apply(ember.ones(2, 4), ember.ones(3))
    with pytest.raises(TypeError, match="scaled_squared_relu.*float64"):
        apply(ember.ones(2, 4), ember.ones(4, dtype=ember.float64))
    with pytest.raises(TypeError, match="scaled_squared_relu.*int64"):
        apply(ember.ones(2, 4, dtype=ember.int64), ember.ones(4, dtype=ember.int64))


def test_second_derivative_raises_instead_of_being_wrong(example):
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    scale = ember.ones(3, dtype=ember.float64, requires_grad=True)
    (gx,) = ember.autograd.grad(example.ScaledSquaredReLU.apply(x, scale).sum(), [x], create_graph=True)
    with pytest.raises(NotImplementedError, match="backward"):
        gx.sum().backward()


def test_matches_torch(example):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x_np, s_np = rng.standard_normal((5, 6)), rng.uniform(0.1, 1, 6)
    x, s = ember.tensor(x_np, requires_grad=True), ember.tensor(s_np, requires_grad=True)
    tx, ts = torch.tensor(x_np, requires_grad=True), torch.tensor(s_np, requires_grad=True)
    example.ScaledSquaredReLU.apply(x, s).pow(3).sum().backward()
    (ts * torch.relu(tx) ** 2).pow(3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-12, atol=1e-12)
