"""The CUDA backend's entries of the backend contract have the contract's signatures (arrays are DeviceStorage)."""
from __future__ import annotations

import inspect

import pytest

cuda = pytest.importorskip("numba.cuda")
pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="needs a GPU or NUMBA_ENABLE_CUDASIM=1")

from ember import backend, cuda_kernels  # noqa: E402


def test_implemented_entries_follow_the_contract():
    assert set(cuda_kernels.IMPLEMENTED) <= set(backend.CONTRACT)
    for name in cuda_kernels.IMPLEMENTED:
        expected = list(inspect.signature(getattr(backend.Backend, name)).parameters)[1:]
        assert list(inspect.signature(getattr(cuda_kernels, name)).parameters) == expected, name


def test_the_whole_contract_is_implemented():
    """Every backend contract function has a CUDA kernel."""
    assert sorted(cuda_kernels.IMPLEMENTED) == sorted(backend.CONTRACT)
    assert all(callable(getattr(cuda_kernels, name)) for name in backend.CONTRACT)


@pytest.mark.parametrize("family", sorted(backend.KERNEL_FAMILIES))
def test_every_kernel_family_matches_the_cpu_signatures(family):
    """Each nn kernel family exists on the GPU with the CPU module's function names and parameters."""
    import importlib

    cpu = importlib.import_module(f"ember.cpu_kernels.{family}")
    gpu = importlib.import_module(f"ember.cuda_kernels.{family}")
    for name in backend.KERNEL_FAMILIES[family]:
        assert list(inspect.signature(getattr(gpu, name)).parameters) == \
            list(inspect.signature(getattr(cpu, name)).parameters), (family, name)
