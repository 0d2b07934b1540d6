"""NumPy functions that CUDA device storage implements (``ember.kernels.cuda.ndarray``) against NumPy itself,
on every memory layout; the ops built on them are in ``test_device_tensor_ops.py``."""
from __future__ import annotations

import numpy as np
import pytest


def _base():
    """A 3-d float64 array with zeros in it (so nonzero has something to skip), values distinct otherwise."""
    values = np.random.default_rng(3).uniform(-2, 2, (3, 4, 5))
    values[np.abs(values) < 0.7] = 0.0
    return values


ARRAY_FUNCTIONS = [
    ("tile", lambda a: np.tile(a, (2, 1, 2))),
    ("tile_short_reps", lambda a: np.tile(a[0], 3)),
    ("repeat_scalar", lambda a: np.repeat(a, 2, axis=1)),
    ("repeat_counts", lambda a: np.repeat(a, np.arange(a.shape[0]) % 3, axis=0)),
    ("repeat_flat", lambda a: np.repeat(a[:, 0], 2)),
    ("roll", lambda a: np.roll(a, (1, -7), (0, -1))),
    ("roll_flat", lambda a: np.roll(a, 11)),
    ("tril", lambda a: np.tril(a, -1)),
    ("triu", lambda a: np.triu(a, 2)),
    ("argwhere", lambda a: np.argwhere(a)),
    ("nonzero", lambda a: np.stack(np.nonzero(a))),
    ("flatnonzero", lambda a: np.flatnonzero(a)),
    ("cumsum", lambda a: np.cumsum(a, axis=1)),
    ("cumsum_flat_bool", lambda a: np.cumsum(a > 0)),
    ("cumprod", lambda a: np.cumprod(a, axis=-1)),
    ("isneginf_isposinf", lambda a: np.isneginf(a / 0) ^ np.isposinf(a * 0 + 1)),
    ("any_axes", lambda a: np.any(a > 1, axis=(0, -1))),
    ("all_keepdims", lambda a: (a > -1).all(1, keepdims=True)),
    ("max_axis", lambda a: np.max(a, axis=1)),
    ("min_keepdims", lambda a: a.min(-1, keepdims=True)),
]


@pytest.mark.parametrize("name, fn", ARRAY_FUNCTIONS, ids=[row[0] for row in ARRAY_FUNCTIONS])
def test_array_function_matches_numpy(name, fn, layouts, layout_name, device_view):
    view = layouts(_base())[layout_name]
    expected = fn(view)
    with np.errstate(divide="ignore", invalid="ignore"):
        got = fn(device_view(view))
    assert type(got).__name__ == "DeviceStorage"
    np.testing.assert_array_equal(got.to_numpy(), expected)
    assert got.to_numpy().dtype == expected.dtype


def test_nonzero_spans_many_chunks(device_view):
    from ember.kernels.cuda.indexing import NONZERO_CHUNK

    flags = np.zeros(5 * NONZERO_CHUNK + 3, bool)
    flags[[0, 1, NONZERO_CHUNK - 1, NONZERO_CHUNK, 3 * NONZERO_CHUNK + 2, flags.size - 1]] = True
    np.testing.assert_array_equal(np.flatnonzero(device_view(flags)).to_numpy(), np.flatnonzero(flags))
    assert np.flatnonzero(device_view(np.zeros(7, bool))).to_numpy().shape == (0,)


def test_check_reductions_give_host_scalars(device_view):
    a = device_view(_base()[:, ::2])
    assert a.max() == _base()[:, ::2].max() and a.min() == _base()[:, ::2].min()
    assert isinstance((a > 1).any(), np.bool_) and (a > 1).any() and not (a > 5).any() and np.all(a > -3)
    assert np.array_equiv(a, a) and not np.array_equiv(a, a + 1)
    with pytest.raises(ValueError, match="zero-size array"):
        device_view(np.zeros((0, 3))).max()


def test_truth_value_of_device_storage(device_view):
    assert bool(device_view(np.array([2.0]))) and not device_view(np.array(0.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(device_view(np.ones(3)))


def test_put_along_axis_writes_in_place(device_view):
    out = device_view(np.zeros((3, 4)))
    index = np.array([[1], [0], [3]])
    np.put_along_axis(out, index, 1.5, axis=-1)
    expected = np.zeros((3, 4))
    np.put_along_axis(expected, index, 1.5, axis=-1)
    np.testing.assert_array_equal(out.to_numpy(), expected)
