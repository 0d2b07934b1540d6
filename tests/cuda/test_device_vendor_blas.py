"""The optional cuBLAS path (through CuPy): off under the simulator and with EMBER_CUDA_BLAS=0, equal to the
Numba kernel where it runs (real GPU with CuPy installed)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import ember
from ember.kernels.cuda import products, vendor_blas


def test_vendor_path_is_off_under_the_simulator_and_products_still_work():
    if ember.cuda.is_simulator():
        assert not vendor_blas.available()
    a = np.arange(12.0).reshape(1, 3, 4)
    b = np.arange(8.0).reshape(1, 4, 2)
    out = ember.empty(1, 3, 2, dtype=ember.float64, device="cuda")._array
    da, db = (ember.tensor(x, device="cuda")._array for x in (a, b))
    products.matmul(da, db, out)
    np.testing.assert_array_equal(out.to_numpy(), a @ b)


def test_switch_turns_the_vendor_path_off(monkeypatch):
    monkeypatch.setenv("EMBER_CUDA_BLAS", "0")
    vendor_blas._cupy.cache_clear()
    try:
        assert not vendor_blas.available()
        assert vendor_blas.matmul(None, None, ember.empty(1, 1, 1, device="cuda")._array) is False
    finally:
        monkeypatch.delenv("EMBER_CUDA_BLAS")
        vendor_blas._cupy.cache_clear()


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy is not installed")
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_cublas_matches_the_numba_kernel(dtype, monkeypatch):
    ember.manual_seed(0)
    a = ember.randn(3, 40, 33, dtype=dtype, device="cuda")
    b = ember.randn(3, 33, 20, dtype=dtype, device="cuda").transpose(1, 2).contiguous().transpose(1, 2)
    assert vendor_blas.available()
    fast = (a @ b).cpu().numpy()
    monkeypatch.setattr(vendor_blas, "matmul", lambda *args: False)
    own = (a @ b).cpu().numpy()
    np.testing.assert_allclose(fast, own, rtol=1e-4 if dtype is ember.float32 else 1e-12)


def test_cuda_array_interface_describes_the_view():
    base = ember.arange(12.0, dtype=ember.float32, device="cuda").reshape(3, 4)
    view = base[1:, ::2]
    interface = view._array.__cuda_array_interface__
    assert interface["shape"] == (2, 2) and interface["strides"] == (16, 8) and interface["typestr"] == "<f4"
    assert interface["data"] == (base.data_ptr() + 4 * 4, False) and interface["version"] == 3
    assert ember.empty(0, device="cuda")._array.__cuda_array_interface__["data"] == (0, False)
