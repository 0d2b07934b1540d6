"""Shared fixtures and Hypothesis strategies for ember's tests."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings, strategies as st

import ember

# CUDA tests need Numba's simulator (or a GPU) switched on before numba is imported, so they run in their own
# pytest process (tests/test_cuda_simulator.py starts it, or `NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda`);
# the main process does not collect them.
if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and os.environ.get("EMBER_TEST_CUDA") != "1":
    collect_ignore = ["cuda"]



def pytest_collection_finish(session):
    """Start the simulator suite's process now if its test is selected to run: it overlaps the CPU tests."""
    for item in () if session.config.option.collectonly else session.items:
        if item.name == "test_cuda_suite_passes_under_the_simulator":
            item.module.start_simulator_suite()
            session.config.add_cleanup(item.module.stop_simulator_suite)


def pytest_collection_modifyitems(config, items):
    """The simulator suite's test goes last (it waits for the background process, which the CPU tests run
    beside); tests marked ``gpu`` need real hardware: skip them under the simulator (and wherever CUDA is
    missing)."""
    items.sort(key=lambda item: item.name == "test_cuda_suite_passes_under_the_simulator")  # stable: order kept
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1" and os.environ.get("EMBER_TEST_CUDA") == "1":
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (run with EMBER_TEST_CUDA=1 on one)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The same examples on every run: CI is reproducible and a warm kernel cache compiles nothing new.
settings.register_profile("ember", derandomize=True, deadline=None, database=None)
settings.load_profile("ember")


@pytest.fixture(scope="module")
def custom_op_example():
    """examples/custom_op.py imported as the module ``custom_op``. Not ``runpy.run_path``: Numba's disk cache records
    each kernel's module by name and imports it again when a later process loads the kernel (``python
    examples/custom_op.py`` can import ``custom_op`` from its own folder; it cannot import run_path's stand-in)."""
    import importlib
    import sys
    from pathlib import Path

    examples = str(Path(__file__).resolve().parents[1] / "examples")
    sys.path.insert(0, examples)
    try:
        return importlib.import_module("custom_op")
    finally:
        sys.path.remove(examples)


@pytest.fixture
def torch_ref():
    """The real PyTorch module, or skip the test cleanly when it is not installed."""
    return pytest.importorskip("torch")


def fn(name: str):
    """The public ``ember.<name>`` (tests go through the namespace a user imports)."""
    return getattr(ember, name)


def method(t, name: str, *args, **kwargs):
    """``t.<name>(*args, **kwargs)`` through the public Tensor API."""
    return getattr(t, name)(*args, **kwargs)


def get_torch():
    """Non-fixture form of ``torch_ref`` for helpers."""
    return pytest.importorskip("torch")


FLOAT_DTYPES = {"float32": ember.float32, "float64": ember.float64}
INT_DTYPES = {"int8": ember.int8, "int16": ember.int16, "int32": ember.int32, "int64": ember.int64,
              "uint8": ember.uint8}
TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-14)}

# ---- shapes ---------------------------------------------------------------------------------------------------------

small_dim = st.integers(min_value=0, max_value=4)
nonzero_dim = st.integers(min_value=1, max_value=4)
shapes = st.lists(small_dim, min_size=0, max_size=4).map(tuple)          # includes () and 0-size
nonempty_shapes = st.lists(nonzero_dim, min_size=0, max_size=4).map(tuple)


@st.composite
def broadcastable_shapes(draw, max_dims: int = 4):
    """A pair of shapes that broadcast together (dims of 1 and missing leading dims, possibly 0-size)."""
    out = draw(st.lists(small_dim, min_size=0, max_size=max_dims))
    a, b = [], []
    for n in out:
        a.append(draw(st.sampled_from([n, 1])))
        b.append(draw(st.sampled_from([n, 1])))
    a = a[draw(st.integers(0, len(a))):]
    b = b[draw(st.integers(0, len(b))):]
    return tuple(a), tuple(b)


float_dtype_names = st.sampled_from(sorted(FLOAT_DTYPES))
int_dtype_names = st.sampled_from(sorted(INT_DTYPES))


def np_array(draw, shape, dtype: str, lo=-10.0, hi=10.0):
    """A NumPy array of ``shape``/``dtype`` drawn from a seed (fast for larger shapes)."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):
        return rng.uniform(lo, hi, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, int(lo)), min(info.max, int(hi)) + 1, size=shape).astype(dtype)


# ---- non-contiguous variants ----------------------------------------------------------------------------------------

LAYOUTS = ("contiguous", "transpose", "reversed", "step2", "expand")


def make_layout(arr: np.ndarray, layout: str):
    """Return (ember tensor, numpy reference) with the same values where the tensor has the given layout.

    * transpose: a transposed view (strides permuted)
    * reversed: negative strides ([::-1] on every dim, through from_numpy)
    * step2: a [::2] slice of a twice-larger buffer
    * expand: stride-0 broadcast of size-1 dims (falls back to contiguous if there are none)
    """
    arr = np.asarray(arr)
    if layout == "contiguous" or arr.ndim == 0:
        return ember.tensor(arr.copy()), arr
    if layout == "transpose":
        base = np.ascontiguousarray(np.transpose(arr))
        t = ember.tensor(base).permute(*reversed(range(arr.ndim)))
        return t, arr
    if layout == "reversed":
        rev = tuple(slice(None, None, -1) for _ in range(arr.ndim))
        base = np.ascontiguousarray(arr[rev])
        return ember.from_numpy(base[rev]), arr
    if layout == "step2":
        big = np.repeat(arr, 2, axis=0)
        t = ember.from_numpy(big[::2])
        return t, arr
    if layout == "expand":
        if arr.ndim and arr.shape[0] >= 1:
            row = np.ascontiguousarray(arr[:1])
            t = ember.tensor(row).expand(*arr.shape)
            return t, np.broadcast_to(row, arr.shape).copy()
        return ember.tensor(arr.copy()), arr
    raise ValueError(layout)


layouts = st.sampled_from(LAYOUTS)


def to_np(t) -> np.ndarray:
    return np.asarray(t.numpy()) if t.dim() else np.asarray(t.item())


def assert_close(actual, expected, dtype_name: str | None = None, **kw):
    """Compare an ember tensor against a NumPy array by value and shape (NaNs equal)."""
    a = actual.numpy()
    e = np.asarray(expected)
    assert tuple(actual.shape) == e.shape, (tuple(actual.shape), e.shape)
    tol = dict(TOL.get(dtype_name or str(a.dtype), dict(rtol=0, atol=0)))
    tol.update(kw)
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype.kind != "b" else a,
                               e.astype(np.float64) if e.dtype.kind != "b" else e, equal_nan=True, **tol)


def check_against_torch(torch, f, shapes, rtol: float, atol: float = 0.0) -> None:
    """Run ``f(lib, method, *inputs)`` with ember and torch on the same float64 inputs; compare dtype, values,
    and the input gradients of a weighted sum (when torch's output has a graph)."""
    arrays = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate(shapes)]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours_in = [ember.tensor(a, requires_grad=True) for a in arrays]
    expected = f(torch, method, *theirs_in)
    ours = f(ember, method, *ours_in)
    assert ours.dtype.name == str(expected.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(expected.shape)
    np.testing.assert_allclose(ours.numpy(force=True).astype(np.float64),
                               expected.detach().numpy().astype(np.float64), rtol=rtol, atol=atol)
    if not expected.requires_grad:
        return
    weights = np.random.default_rng(9).standard_normal(tuple(expected.shape))
    (expected * torch.tensor(weights, dtype=expected.dtype)).sum().backward()
    (ours * ember.tensor(weights, dtype=ours.dtype)).sum().backward()
    for mine, ref in zip(ours_in, theirs_in):
        if ref.grad is None:
            assert mine.grad is None or not mine.grad.numpy().any()
        else:
            np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=rtol, atol=atol)
