"""DeviceStorage: transfers, views sharing the buffer, bounds checks and strided copies."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

from ember.kernels.cuda.storage import DeviceStorage  # noqa: E402

BASE = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_round_trip_keeps_c_layout():
    s = DeviceStorage.from_numpy(BASE.transpose(1, 0, 2))
    assert s.shape == (3, 2, 4) and s.strides == (8, 4, 1) and s.offset == 0 and s.is_contiguous
    np.testing.assert_array_equal(s.to_numpy(), BASE.transpose(1, 0, 2))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.int64, np.float64])
def test_dtypes_round_trip(dtype):
    a = (np.arange(6) % 3).astype(dtype)
    s = DeviceStorage.from_numpy(a)
    assert s.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(s.to_numpy(), a)


def test_unsupported_dtype_is_refused():
    with pytest.raises(TypeError):
        DeviceStorage.from_numpy(np.zeros(3, np.complex64))


def test_empty_and_zero_dim():
    e = DeviceStorage.empty((2, 0, 3), np.float32)
    assert e.numel == 0 and e.to_numpy().shape == (2, 0, 3)
    z = DeviceStorage.from_numpy(np.array(5.0))
    assert z.shape == () and z.numel == 1 and z.to_numpy() == 5.0


def test_to_numpy_any_layout(layout_name, layouts, device_view):
    view = layouts(BASE)[layout_name]
    np.testing.assert_array_equal(device_view(view).to_numpy(), view)


def test_views_match_numpy_and_share_buffer():
    s = DeviceStorage.from_numpy(BASE)
    cases = [
        (s.permute((2, 0, 1)), BASE.transpose(2, 0, 1)),
        (s.select(1, -1), BASE[:, -1]),
        (s.slice(2, 1, None, 2), BASE[:, :, 1::2]),
        (s.slice(2, None, None, -2), BASE[:, :, ::-2]),
        (s.slice(1, 5, 7), BASE[:, 5:7]),
        (s.flip((0, 2)), BASE[::-1, :, ::-1]),
        (s.select(1, 0).expand((3, 2, 4)), np.broadcast_to(BASE[:, 0], (3, 2, 4))),
        (s.reshape_view((4, -1)), BASE.reshape(4, 6)),
        (s.as_strided((3, 3), (1, 4), 2), np.lib.stride_tricks.as_strided(BASE.reshape(-1)[2:], (3, 3), (4, 16))),
    ]
    for view, expected in cases:
        assert view.buffer is s.buffer
        np.testing.assert_array_equal(view.to_numpy(), expected)
    assert not s.permute((1, 0, 2)).is_contiguous and s.select(0, 1).is_contiguous


def test_bad_views_raise():
    s = DeviceStorage.from_numpy(BASE)
    with pytest.raises(ValueError):
        s.as_strided((5, 5), (5, 1), 0)  # past the end
    with pytest.raises(ValueError):
        s.as_strided((2,), (-1,), 0)  # before the start
    with pytest.raises(ValueError):
        s.permute((0, 0, 1))
    with pytest.raises(IndexError):
        s.select(0, 2)
    with pytest.raises(ValueError):
        s.expand((2, 5, 4))
    with pytest.raises(ValueError):
        s.permute((1, 0, 2)).reshape_view((24,))


def test_copy_from_into_strided_destination(layout_name, layouts, device_view):
    src = layouts(BASE)[layout_name]
    dst_host = np.zeros((src.shape[-1],) + src.shape[:-1], np.float64)  # written through a permuted view
    dst = DeviceStorage.from_numpy(dst_host).permute(tuple(range(1, src.ndim)) + (0,))
    dst.copy_from(device_view(src))
    np.testing.assert_array_equal(dst.to_numpy(), src.astype(np.float64))


def test_copy_from_broadcasts_and_contiguous():
    dst = DeviceStorage.empty((3, 4), np.int32)
    dst.copy_from(DeviceStorage.from_numpy(np.array([1.9, -2.5, 3.0, 4.0])))
    np.testing.assert_array_equal(dst.to_numpy(), np.broadcast_to(np.array([1, -2, 3, 4]), (3, 4)))
    t = DeviceStorage.from_numpy(BASE).permute((2, 1, 0)).contiguous()
    assert t.is_contiguous
    np.testing.assert_array_equal(t.to_numpy(), BASE.transpose(2, 1, 0))
