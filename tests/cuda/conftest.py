"""Shared fixtures of the CUDA kernel tests: device storages that mirror any NumPy layout.

There is deliberately no ``tests/cuda/__init__.py``: with one, pytest imports this folder as a package named
``cuda``, which shadows NVIDIA's ``cuda`` bindings package and makes ``import numba.cuda`` fail. Test modules
therefore take these helpers as fixtures rather than importing them.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")

from ember.kernels.common.layout import element_strides, flat_buffer  # noqa: E402

LAYOUT_NAMES = ("contiguous", "permuted", "sliced", "flipped", "expanded", "selected")


def _device_view(a: np.ndarray):
    """A DeviceStorage with ``a``'s shape and element strides (0 and negative too) over a device copy of its span.

    The span is padded on both sides, so a kernel that strays outside the view would read or write padding.
    """
    from ember.kernels.cuda.storage import DeviceStorage
    a = np.asarray(a)
    if a.size == 0:
        return DeviceStorage.empty(a.shape, a.dtype)
    buf, offset = flat_buffer(a)
    padded = np.concatenate([np.zeros(2, a.dtype), np.ascontiguousarray(buf), np.zeros(1, a.dtype)])
    return DeviceStorage(cuda.to_device(padded), a.shape, element_strides(a), offset + 2)


def _layouts(base: np.ndarray) -> dict[str, np.ndarray]:
    """Views of a 3-d ``base`` (dims of at least 2, 3, 3) in the layouts kernels must handle."""
    return {
        "contiguous": base,
        "permuted": base.transpose(2, 0, 1),
        "sliced": base[:, 1:, ::2],
        "flipped": base[::-1, :, ::-1],
        "expanded": np.broadcast_to(base[:, :1, :], base.shape),
        "selected": base[1],
    }


def _assert_same_api(device_module, cpu_module) -> None:
    """The device module exports the CPU module's names in its order, each callable with the same parameters."""
    assert device_module.__all__ == cpu_module.__all__
    for name in cpu_module.__all__:
        if callable(getattr(cpu_module, name)):
            assert inspect.signature(getattr(device_module, name)).parameters.keys() == \
                inspect.signature(getattr(cpu_module, name)).parameters.keys(), name


@pytest.fixture(autouse=True)
def _cuda_available():
    if not cuda.is_available():
        pytest.skip("no CUDA device or simulator")


@pytest.fixture
def device_view():
    """``device_view(a)``: a DeviceStorage laid out exactly like NumPy array ``a``."""
    return _device_view


@pytest.fixture
def layouts():
    """``layouts(base)``: dict of named non-contiguous views of a 3-d array (names in ``LAYOUT_NAMES``)."""
    return _layouts


@pytest.fixture(params=LAYOUT_NAMES)
def layout_name(request) -> str:
    """Each name of ``LAYOUT_NAMES`` in turn."""
    return request.param


@pytest.fixture
def assert_same_api():
    """``assert_same_api(device_module, cpu_module)``: the kernel modules share ``__all__`` and parameter names."""
    return _assert_same_api
