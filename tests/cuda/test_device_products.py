"""CUDA matmul (tiled, shared memory) against NumPy, under the simulator or on a GPU."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember.kernels.cuda.launch import SIMULATOR  # noqa: E402
from ember.kernels.cuda.products import TILE, matmul  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture
def run(device_view):
    """``run(a, b)``: a @ b on the device, operands laid out like the NumPy arrays ``a`` and ``b``."""
    def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = DeviceStorage.empty((a.shape[0], a.shape[1], b.shape[2]), a.dtype)
        matmul(device_view(a), device_view(b), out)
        return out.to_numpy()
    return product


def _transposed(a: np.ndarray) -> np.ndarray:
    """``a`` with its last two dims swapped in memory (same values)."""
    return np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_odd_shapes_batched(run, dtype):
    m, k, n = TILE + 1, 2 * TILE + 3, TILE - 1  # none a multiple of the tile
    a = RNG.standard_normal((2, m, k)).astype(dtype)
    b = RNG.standard_normal((2, k, n)).astype(dtype)
    got = run(a, b)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("layout", ["transposed a", "transposed b", "flipped a, transposed b", "sliced"])
def test_strided_operands(run, layout):
    a = RNG.standard_normal((2, 5, 6))
    b = RNG.standard_normal((2, 6, 7))
    if layout == "transposed a":
        a = _transposed(a)
    elif layout == "transposed b":
        b = _transposed(b)
    elif layout == "sliced":
        a, b = a[::-1, 1:, ::2], b[:, ::2, 2:]
    else:
        a, b = np.ascontiguousarray(a[:, :, ::-1])[:, :, ::-1], _transposed(b)
    np.testing.assert_allclose(run(a, b), a @ b, rtol=1e-12)


def test_broadcast_batch_stride_zero(run):
    a = np.broadcast_to(RNG.standard_normal((1, 3, 4)), (3, 3, 4))
    b = RNG.standard_normal((3, 4, 2))
    np.testing.assert_allclose(run(a, b), a @ b, rtol=1e-12)


@pytest.mark.parametrize("dtype,high", [(np.int32, 100), (np.int64, 1000), (np.int8, 3), (np.uint8, 4)])
def test_integers(run, dtype, high):
    low = 0 if dtype == np.uint8 else -high
    a = RNG.integers(low, high, (1, 3, 7)).astype(dtype)
    b = _transposed(RNG.integers(low, high, (1, 7, 2)).astype(dtype))
    expected = a.astype(np.int64) @ b.astype(np.int64)
    assert np.abs(expected).max() > 1  # a real product, within the dtype's range
    got = run(a, b)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected.astype(dtype))


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR, reason="the simulator's NumPy stores refuse out-of-range ints; hardware wraps")
def test_int8_sums_wrap_like_int64_accumulation(run):
    a = np.full((1, 2, 5), 100, np.int8)
    b = np.full((1, 5, 2), 3, np.int8)
    np.testing.assert_array_equal(run(a, b), (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8))


def test_bool_is_or_of_ands(run):
    a = RNG.random((1, 3, 5)) < 0.3
    b = RNG.random((1, 5, 4)) < 0.3
    expected = (a.astype(np.int64) @ b.astype(np.int64)) != 0
    assert expected.any() and not expected.all()
    np.testing.assert_array_equal(run(a, b), expected)


def test_zero_depth_gives_zeros_and_empty_is_a_no_op(run):
    np.testing.assert_array_equal(run(np.ones((2, 3, 0), np.float32), np.ones((2, 0, 2), np.float32)),
                                  np.zeros((2, 3, 2), np.float32))
    assert run(np.ones((0, 3, 2)), np.ones((0, 2, 2))).shape == (0, 3, 2)
    assert run(np.ones((2, 0, 2)), np.ones((2, 2, 3))).shape == (2, 0, 3)


def test_shape_and_dtype_mismatch_raise():
    a = DeviceStorage.from_numpy(np.ones((1, 2, 3), np.float32))
    with pytest.raises(ValueError):
        matmul(a, DeviceStorage.from_numpy(np.ones((1, 2, 3), np.float32)), DeviceStorage.empty((1, 2, 3), np.float32))
    with pytest.raises(TypeError):
        matmul(a, DeviceStorage.from_numpy(np.ones((1, 3, 2))), DeviceStorage.empty((1, 2, 2), np.float32))
