"""CUDA sorting family (sort, topk, kthvalue, mode, searchsorted, bincount, histc) against the CPU kernels, and
the tensor ops built on them on ``device="cuda"`` against the same ops on the CPU.

Shapes stay tiny: the simulator runs every CUDA thread as a Python thread and pays for every barrier.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import ember  # noqa: E402
from ember.kernels.cpu import sorting as cpu  # noqa: E402
from ember.kernels.cuda import sorting as gpu  # noqa: E402
from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

RNG = np.random.default_rng(7)


def _ties_and_nans(shape, dtype=np.float64) -> np.ndarray:
    """Small integers (many ties), with two NaNs when ``dtype`` is a float."""
    x = RNG.integers(0, 4, shape).astype(dtype)
    if x.dtype.kind == "f":
        x.flat[[1, x.size // 2]] = np.nan
    return x


def _outputs_shape(x: np.ndarray, dim: int, size: int) -> tuple[int, ...]:
    shape = list(x.shape or (1,))
    shape[dim] = size
    return tuple(shape)


def _pair(device_view, run_cpu, run_gpu, x: np.ndarray, shape, dtype):
    """(cpu values, cpu indices, gpu values, gpu indices) of one selection kernel with outputs of ``shape``."""
    values, indices = np.empty(shape, dtype), np.empty(shape, np.int64)
    run_cpu(x, values, indices)
    dv, di = DeviceStorage.empty(shape, dtype), DeviceStorage.empty(shape, np.int64)
    run_gpu(device_view(x), dv, di)
    return values, indices, dv.to_numpy(), di.to_numpy()


def _assert_same(values, indices, got_values, got_indices):
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_indices, indices)


# ------------------------------------------------------------------ kernels against the CPU kernels
@pytest.mark.parametrize("descending", [False, True])
def test_sort_in_every_layout(layout_name, layouts, device_view, descending):
    x = layouts(_ties_and_nans((2, 3, 3)))[layout_name]
    for dim in (0, x.ndim - 1):
        _assert_same(*_pair(device_view, lambda a, v, i: cpu.sort(a, dim, descending, v, i),
                            lambda a, v, i: gpu.sort(a, dim, descending, v, i), x, x.shape, x.dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.uint8, np.bool_])
def test_sort_dtypes_along_the_middle_dim(device_view, dtype):
    x = _ties_and_nans((2, 5, 2), dtype)
    for descending in (False, True):
        _assert_same(*_pair(device_view, lambda a, v, i: cpu.sort(a, 1, descending, v, i),
                            lambda a, v, i: gpu.sort(a, 1, descending, v, i), x, x.shape, x.dtype))


def test_sort_long_rows_more_rows_than_blocks(device_view):
    """Rows longer than a block's threads (several pairs per thread, padding to 64) and more rows than blocks."""
    x = np.round(RNG.standard_normal((6, 37)), 1)
    x[2, [0, 5]] = np.nan
    _assert_same(*_pair(device_view, lambda a, v, i: cpu.sort(a, 1, True, v, i),
                        lambda a, v, i: gpu.sort(a, 1, True, v, i), x, x.shape, x.dtype))


def test_sort_into_strided_outputs():
    x = _ties_and_nans((3, 4))
    values = DeviceStorage.empty((4, 3), x.dtype).transpose()
    indices = DeviceStorage.empty((3, 8), np.int64).slice(1, None, None, 2)
    gpu.sort(DeviceStorage.from_numpy(x), 1, False, values, indices)
    expected_values, expected_indices = np.empty(x.shape), np.empty(x.shape, np.int64)
    cpu.sort(x, 1, False, expected_values, expected_indices)
    _assert_same(expected_values, expected_indices, values.to_numpy(), indices.to_numpy())


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_topk(device_view, largest, k):
    x = _ties_and_nans((3, 5)).T[::-1]  # (5, 3), negative and transposed strides
    _assert_same(*_pair(device_view, lambda a, v, i: cpu.topk(a, k, 0, largest, v, i),
                        lambda a, v, i: gpu.topk(a, k, 0, largest, v, i), x, _outputs_shape(x, 0, k), x.dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_kthvalue_every_k(device_view, dtype):
    x = _ties_and_nans((3, 4), dtype)
    for k in range(1, 5):
        _assert_same(*_pair(device_view, lambda a, v, i: cpu.kthvalue(a, k, 1, v, i),
                            lambda a, v, i: gpu.kthvalue(a, k, 1, v, i), x, (3, 1), dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_mode_along_each_dim(device_view, dtype):
    x = _ties_and_nans((4, 5), dtype)
    x[3] = np.array([2, 1, 2, 1, 0], dtype)  # two runs of the same length: the smaller value, its last index
    for dim in (0, 1):
        _assert_same(*_pair(device_view, lambda a, v, i: cpu.mode(a, dim, v, i),
                            lambda a, v, i: gpu.mode(a, dim, v, i), x, _outputs_shape(x, dim, 1), dtype))


def test_zero_dim_and_empty_inputs(device_view):
    x = np.array(3.5)
    for run_cpu, run_gpu in [(lambda a, v, i: cpu.sort(a, 0, False, v, i), lambda a, v, i: gpu.sort(a, 0, False, v, i)),
                             (lambda a, v, i: cpu.kthvalue(a, 1, 0, v, i), lambda a, v, i: gpu.kthvalue(a, 1, 0, v, i)),
                             (lambda a, v, i: cpu.mode(a, 0, v, i), lambda a, v, i: gpu.mode(a, 0, v, i))]:
        _assert_same(*_pair(device_view, run_cpu, run_gpu, x, (), x.dtype))
    empty = DeviceStorage.empty((0, 3), np.float32)
    gpu.sort(empty, 1, False, empty, DeviceStorage.empty((0, 3), np.int64))  # nothing to do, nothing launched
    gpu.topk(DeviceStorage.empty((2, 0), np.float32), 0, 1, True, DeviceStorage.empty((2, 0), np.float32),
             DeviceStorage.empty((2, 0), np.int64))


def test_selection_checks_outputs():
    x = DeviceStorage.from_numpy(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="sort: indices must be int64"):
        gpu.sort(x, 1, False, DeviceStorage.empty((2, 3), np.float64), DeviceStorage.empty((2, 3), np.int32))
    with pytest.raises(ValueError, match=r"topk: outputs of shape \(2, 3\)"):
        gpu.topk(x, 2, 1, True, DeviceStorage.empty((2, 3), np.float64), DeviceStorage.empty((2, 3), np.int64))


def _search_both(device_view, bounds, values, right, sorter, out_dtype=np.int64):
    expected = np.empty(values.shape, out_dtype)
    cpu.searchsorted(bounds, values, right, sorter, expected)
    out = DeviceStorage.empty((values.shape[1], values.shape[0]), out_dtype).transpose()  # a strided out
    gpu.searchsorted(device_view(bounds), device_view(values), right, None if sorter is None else device_view(sorter),
                     out)
    np.testing.assert_array_equal(out.to_numpy(), expected)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_shared_and_per_row_boundaries(device_view, right):
    bounds = np.array([[0.0, 1.0, 1.0, 2.0, 4.0]])
    values = np.array([[-1.0, 1.0, 1.5, 4.0, 9.0, np.nan], [2.0, 0.0, 1.0, 3.0, 4.0, 5.0]])
    _search_both(device_view, bounds, values, right, None)
    per_row = np.concatenate([bounds, bounds[:, ::-1] * -1])  # second row: -4 .. 0
    _search_both(device_view, per_row, values[:, ::2], right, None, np.int32)


def test_searchsorted_with_sorter_and_int_values(device_view):
    bounds = np.array([[5, 1, 3, 3], [2, 8, 0, 4]], np.int64)
    sorter = np.argsort(bounds, axis=1, kind="stable")
    values = np.array([[3, 0, 6], [4, 9, 1]], np.int64)
    for right in (False, True):
        _search_both(device_view, bounds, values, right, sorter)


def test_searchsorted_empty_boundaries(device_view):
    out = DeviceStorage.from_numpy(np.full((1, 2), 7, np.int64))
    gpu.searchsorted(DeviceStorage.empty((1, 0), np.float64), device_view(np.ones((1, 2))), False, None, out)
    np.testing.assert_array_equal(out.to_numpy(), [[0, 0]])


@pytest.mark.parametrize("weights_dtype,out_dtype", [(None, np.int64), (None, np.int16), (np.float32, np.float32),
                                                     (np.float64, np.float64)])
def test_bincount(device_view, weights_dtype, out_dtype):
    x = RNG.integers(0, 5, 24)[::2]  # strided input
    weights = None if weights_dtype is None else RNG.standard_normal(12).astype(weights_dtype)
    expected = np.full(7, 2, out_dtype)  # counts add to what out holds
    cpu.bincount(x, weights, expected)
    out = DeviceStorage.from_numpy(np.full(7, 2, out_dtype))
    gpu.bincount(device_view(x), None if weights is None else device_view(weights), out)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-6)
    assert out.dtype == out_dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_histc_edges_outside_and_nan(device_view, dtype):
    x = np.array([[-1.0, 0.0, 0.5, 1.0], [2.0, 2.9, 3.0, 7.0]], dtype if dtype != np.int64 else np.float64)
    if dtype == np.int64:
        x = x.astype(np.int64)
    else:
        x[0, 0] = np.nan
    x = x.T  # non-contiguous, any shape
    expected = np.full(4, -1, dtype)  # histc overwrites out
    cpu.histc(x, 0.0, 3.0, expected)
    out = DeviceStorage.from_numpy(np.full(4, -1, dtype))
    gpu.histc(device_view(x), 0.0, 3.0, out)
    np.testing.assert_array_equal(out.to_numpy(), expected)


# ------------------------------------------------------------------ tensor ops on device="cuda" against the CPU
def _both(array: np.ndarray, requires_grad: bool = False):
    """The same data as a CPU tensor and a CUDA tensor."""
    return (ember.tensor(array, requires_grad=requires_grad),
            ember.tensor(array, device="cuda", requires_grad=requires_grad))


def _assert_tensors_match(got, expected):
    assert got.device.type == "cuda"
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


@pytest.mark.parametrize("op", [
    lambda t: t.sort(dim=0, descending=True), lambda t: ember.sort(t, -1, stable=True),
    lambda t: ember.topk(t, 2, dim=1), lambda t: ember.topk(t, 3, dim=0, largest=False),
    lambda t: ember.kthvalue(t, 2, 1), lambda t: ember.kthvalue(t, 1, 0, keepdim=True),
    lambda t: ember.mode(t, 1), lambda t: ember.cummax(t, 1), lambda t: ember.cummin(t, 0),
])
def test_selection_ops_match_the_cpu(op):
    cpu_t, cuda_t = _both(_ties_and_nans((3, 4), np.float32))
    for got, expected in zip(op(cuda_t), op(cpu_t)):
        _assert_tensors_match(got, expected)


def test_argsort_msort_and_integer_tensors():
    cpu_t, cuda_t = _both(RNG.integers(-3, 3, (4, 3)))
    _assert_tensors_match(ember.argsort(cuda_t, 0), ember.argsort(cpu_t, 0))
    _assert_tensors_match(ember.msort(cuda_t), ember.msort(cpu_t))
    _assert_tensors_match(cuda_t.sort(stable=True).values, cpu_t.sort(stable=True).values)


@pytest.mark.parametrize("op", [
    lambda t: t.sort(1, descending=True).values, lambda t: ember.topk(t, 2, 0).values,
    lambda t: ember.kthvalue(t, 2, 1).values, lambda t: ember.mode(t, 0).values,
])
def test_gradients_of_selected_values(op):
    data = RNG.permutation(12).reshape(3, 4).astype(np.float64)  # distinct values: one answer per slice
    (cpu_t, cuda_t) = _both(data, requires_grad=True)
    for t in (cpu_t, cuda_t):
        out = op(t)
        weights = ember.arange(out.numel(), dtype=ember.float64, device=t.device).reshape(out.shape)
        (out * weights).sum().backward()
    assert cuda_t.grad.device.type == "cuda"
    np.testing.assert_array_equal(cuda_t.grad.cpu().numpy(), cpu_t.grad.numpy())


def test_double_backward_through_sort_values():
    cpu_t, cuda_t = _both(np.array([[3.0, 1.0, 2.0]]), requires_grad=True)
    grads = []
    for t in (cpu_t, cuda_t):
        (g,) = ember.autograd.grad((t.sort(1).values ** 2).sum(), t, create_graph=True)
        (gg,) = ember.autograd.grad((g * ember.tensor([[1.0, 2.0, 3.0]], device=t.device)).sum(), t)
        grads.append((g.detach().cpu().numpy(), gg.cpu().numpy()))
    np.testing.assert_array_equal(grads[1][0], grads[0][0])
    np.testing.assert_array_equal(grads[1][1], grads[0][1])


@pytest.mark.parametrize("kwargs", [{}, {"right": True}, {"side": "right", "out_int32": True}])
def test_searchsorted_and_bucketize(kwargs):
    cpu_b, cuda_b = _both(np.array([[0.0, 1.0, 1.0, 3.0], [-2.0, -1.0, 0.0, 5.0]]))
    cpu_v, cuda_v = _both(np.array([[1.0, 2.0, np.nan], [-1.0, 9.0, -3.0]]))
    _assert_tensors_match(ember.searchsorted(cuda_b, cuda_v, **kwargs), ember.searchsorted(cpu_b, cpu_v, **kwargs))
    _assert_tensors_match(ember.searchsorted(cuda_b[0], 1.0), ember.searchsorted(cpu_b[0], 1.0))
    right = kwargs.get("right", False)
    _assert_tensors_match(ember.bucketize(cuda_v, cuda_b[0], right=right),
                          ember.bucketize(cpu_v, cpu_b[0], right=right))


def test_searchsorted_with_sorter_tensor():
    cpu_b, cuda_b = _both(np.array([4.0, 1.0, 3.0, 2.0]))
    cpu_s, cuda_s = _both(np.array([1, 3, 2, 0]))
    cpu_v, cuda_v = _both(np.array([2.5, 0.0, 4.0]))
    _assert_tensors_match(ember.searchsorted(cuda_b, cuda_v, sorter=cuda_s),
                          ember.searchsorted(cpu_b, cpu_v, sorter=cpu_s))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ember.searchsorted(cuda_b, cuda_v, sorter=cuda_s + 1)


def test_bincount_and_histc():
    cpu_x, cuda_x = _both(np.array([1, 4, 1, 0, 4, 4]))
    cpu_w, cuda_w = _both(np.array([0.5, 1.0, 2.0, -1.0, 0.25, 3.0], np.float32))
    _assert_tensors_match(ember.bincount(cuda_x), ember.bincount(cpu_x))
    _assert_tensors_match(ember.bincount(cuda_x, cuda_w, minlength=8), ember.bincount(cpu_x, cpu_w, minlength=8))
    _assert_tensors_match(cuda_x.bincount(), cpu_x.bincount())
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.bincount(cuda_x - 2)
    cpu_f, cuda_f = _both(np.array([[0.5, 2.0, 2.5], [-1.0, 7.0, 3.0]], np.float32))
    _assert_tensors_match(ember.histc(cuda_f, bins=5), ember.histc(cpu_f, bins=5))
    _assert_tensors_match(cuda_f.histc(4, min=0, max=3), cpu_f.histc(4, min=0, max=3))


def test_isin_and_unique():
    cpu_e, cuda_e = _both(np.array([1.0, 2.0, np.nan, 7.0, 3.0]))
    cpu_t, cuda_t = _both(np.array([[2.0, np.nan], [7.0, 9.0]]))
    _assert_tensors_match(ember.isin(cuda_e, cuda_t), ember.isin(cpu_e, cpu_t))
    _assert_tensors_match(ember.isin(cuda_e, 7.0, invert=True), ember.isin(cpu_e, 7.0, invert=True))
    cpu_i, cuda_i = _both(np.array([3, 1, 3, 2, 1, 1]))
    for got, expected in zip(ember.unique(cuda_i, return_inverse=True, return_counts=True),
                             ember.unique(cpu_i, return_inverse=True, return_counts=True)):
        _assert_tensors_match(got, expected)
    _assert_tensors_match(ember.unique_consecutive(cuda_i), ember.unique_consecutive(cpu_i))


def test_mixed_devices_are_refused():
    cuda_b = ember.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(RuntimeError, match="same device"):
        ember.searchsorted(cuda_b, ember.tensor([1.5, 3.0]))
    with pytest.raises(RuntimeError, match="same device"):
        ember.bincount(ember.tensor([0, 1], device="cuda"), ember.tensor([1.0, 2.0]))
