"""The CUDA backend against the whole backend contract: the checks of ``tests/test_backend_contract.py``.

The same test (``kernel_contract``'s checks, parametrized over the contract's parts) on the CUDA backend, whose
arrays are ``DeviceStorage``: under the simulator in the CUDA suite's process, and on a real GPU when there is one.
Beside it, the device's NumPy protocols (``ember.kernels.cuda.ndarray``) serve exactly the declared array surface.
"""
from __future__ import annotations

import pytest

cuda = pytest.importorskip("numba.cuda")
pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="needs a GPU or NUMBA_ENABLE_CUDASIM=1")

import kernel_contract  # noqa: E402
from ember.kernels import contract, cuda as cuda_kernels  # noqa: E402
from ember.kernels.cuda import ndarray, storage  # noqa: E402
from ember.kernels.cuda.launch import SIMULATOR  # noqa: E402

CUDA = kernel_contract.ArrayBackend("cuda", cuda_kernels, storage.DeviceStorage, storage.DeviceStorage.from_numpy,
                                    storage.DeviceStorage.to_numpy)
BACKENDS = [pytest.param(CUDA, id="cuda-simulator" if SIMULATOR else "cuda")]


@pytest.mark.parametrize("check", kernel_contract.contract_checks())
@pytest.mark.parametrize("backend", BACKENDS)
def test_backend_meets_the_contract(backend, check):
    check(backend)


def test_the_device_serves_exactly_the_declared_array_surface():
    """Nothing the device array protocols serve is missing from the contract, and nothing declared is unserved."""
    assert sorted(f.__name__ for f in ndarray._FUNCTIONS) == sorted(contract.ARRAY_FUNCTIONS)
    served_ufuncs = {*ndarray._UNARY_UFUNCS, *ndarray._BINARY_UFUNCS, "matmul"}
    assert sorted(served_ufuncs) == sorted(contract.ARRAY_UFUNCS)
    members = {n for n in vars(ndarray.NdarrayProtocol) if not n.startswith("_") or n in contract.ARRAY_METHODS}
    storage_api = {"data_ptr"}  # device storage's own, beside the NumPy names
    storage_members = {"shape", "dtype", "ndim"}  # DeviceStorage's own slots and properties
    assert sorted(members - storage_api) == sorted(set(contract.ARRAY_METHODS) - storage_members)
    assert all(hasattr(storage.DeviceStorage, name) for name in contract.ARRAY_METHODS)
