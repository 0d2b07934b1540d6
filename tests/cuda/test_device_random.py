"""Philox device RNG: known-answer vectors, reproducibility, ranges and moments, against NumPy statistics."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():
    pytest.skip("CUDA (or the simulator) is not available", allow_module_level=True)

import ember.cuda  # noqa: E402
from ember.cuda.random import generator_state  # noqa: E402
from ember.kernels.cuda.random import bernoulli_, normal_, philox4x32_10, random_bits_, uniform_  # noqa: E402


@cuda.jit
def _philox_once(words, out):
    a, b, c, d = philox4x32_10(words[0], words[1], words[2], words[3], words[4], words[5])
    out[0], out[1], out[2], out[3] = a, b, c, d


# Random123's kat_vectors for philox4x32_10: counter (4 words), key (2 words) -> output (4 words)
KAT = [
    ([0, 0, 0, 0, 0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 6, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


@pytest.mark.parametrize("words,expected", KAT)
def test_philox_matches_random123_known_answers(words, expected):
    out = cuda.device_array(4, np.uint64)
    _philox_once[1, 1](cuda.to_device(np.array(words, np.uint64)), out)
    assert out.copy_to_host().tolist() == expected


def _draw(fill, dtype, n, seed, offset, *args, length=None):
    buf = cuda.to_device(np.full(length or n, 7, dtype=dtype))
    fill(buf, n, seed, offset, *args)
    return buf.copy_to_host()


def test_bits_are_philox_of_the_block_counter_and_seed_key():
    bits = _draw(random_bits_, np.uint32, 6, 0, 0)
    assert bits[:4].tolist() == KAT[0][1]  # seed 0, offset 0, block 0 -> all-zero key and counter
    assert bits[4] != bits[0]
    high_seed = _draw(random_bits_, np.uint32, 4, (0x299F31D0 << 32) | 0xA4093822, 0)
    assert high_seed.tolist() != bits[:4].tolist()


@pytest.mark.parametrize("fill,dtype,args", [
    (uniform_, np.float32, (0.0, 1.0)), (uniform_, np.float64, (-2.0, 3.0)),
    (normal_, np.float32, (0.0, 1.0)), (normal_, np.float64, (1.0, 2.0)),
    (bernoulli_, np.uint8, (0.5,)), (random_bits_, np.uint32, ()),
])
def test_same_seed_and_offset_reproduce_and_a_new_offset_differs(fill, dtype, args):
    a = _draw(fill, dtype, 37, 1234, 5, *args)
    b = _draw(fill, dtype, 37, 1234, 5, *args)
    c = _draw(fill, dtype, 37, 1234, 6, *args)
    d = _draw(fill, dtype, 37, 4321, 5, *args)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, d)


def test_only_the_first_n_elements_are_written():
    out = _draw(uniform_, np.float32, 5, 1, 0, 0.0, 1.0, length=9)
    assert np.all(out[5:] == 7) and np.all(out[:5] < 1)
    assert np.all(_draw(normal_, np.float64, 0, 1, 0, length=3) == 7)
    # a prefix of a longer draw: element i depends only on (seed, offset, i)
    np.testing.assert_array_equal(_draw(normal_, np.float32, 6, 3, 2), _draw(normal_, np.float32, 11, 3, 2)[:6])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("low,high", [(0.0, 1.0), (-3.0, 5.0)])
def test_uniform_range_and_moments(dtype, low, high):
    x = _draw(uniform_, dtype, 4096, 42, 0, low, high).astype(np.float64)
    span = high - low
    assert x.min() >= low and x.max() < high
    assert abs(x.mean() - (low + high) / 2) < 0.03 * span
    assert abs(x.var() / (span * span / 12) - 1) < 0.1
    hist = np.histogram(x, bins=8, range=(low, high))[0]
    assert hist.min() > 4096 / 8 * 0.8


def test_uniform_on_an_empty_range_gives_low():
    assert np.all(_draw(uniform_, np.float32, 8, 1, 0, 2.0, 2.0) == 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_moments(dtype):
    x = _draw(normal_, dtype, 4096, 7, 3, 2.0, 0.5).astype(np.float64)
    assert np.all(np.isfinite(x))
    assert abs(x.mean() - 2.0) < 0.05
    assert abs(x.std() - 0.5) < 0.05
    z = (x - x.mean()) / x.std()
    assert abs(np.mean(z ** 3)) < 0.15 and abs(np.mean(z ** 4) - 3.0) < 0.3
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.03


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.float32])
def test_bernoulli_scalar_p(dtype):
    x = _draw(bernoulli_, dtype, 4096, 11, 0, 0.3).astype(np.float64)
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 0.03
    assert np.all(_draw(bernoulli_, dtype, 64, 11, 1, 0.0) == 0)
    assert np.all(_draw(bernoulli_, dtype, 64, 11, 1, 1.0) == 1)


def test_bernoulli_per_element_probabilities():
    p = np.tile([0.0, 1.0, 0.5, 0.0], 64)
    x = cuda.device_array(p.size, np.float32)
    bernoulli_(x, p.size, 5, 0, cuda.to_device(p))
    x = x.copy_to_host()
    assert np.all(x[p == 0.0] == 0) and np.all(x[p == 1.0] == 1)
    assert 0.3 < x[p == 0.5].mean() < 0.7


def test_generator_offsets_advance_and_reseeding_replays():
    def two_draws():
        state = generator_state(ember.cuda.current_device())
        return [_draw(uniform_, np.float32, 16, *state.next_seed_offset(), 0.0, 1.0) for _ in range(2)]

    ember.cuda.manual_seed(2024)
    first, second = two_draws()
    assert not np.array_equal(first, second)
    ember.cuda.manual_seed(2024)
    again = two_draws()
    np.testing.assert_array_equal(first, again[0])
    np.testing.assert_array_equal(second, again[1])
    assert ember.cuda.initial_seed() == 2024


def test_rng_state_round_trip():
    ember.cuda.manual_seed(9)
    generator_state(0).next_seed_offset()
    saved = ember.cuda.get_rng_state()
    assert saved.dtype == ember.uint8 and tuple(saved.shape) == (16,)
    expected = generator_state(0).next_seed_offset()
    ember.cuda.set_rng_state(saved)
    assert generator_state(0).next_seed_offset() == expected == (9, 1)
    with pytest.raises(RuntimeError, match="16 bytes"):
        ember.cuda.set_rng_state(ember.zeros(3, dtype=ember.uint8))


def test_bad_arguments_are_rejected_before_launch():
    buf = cuda.device_array(4, np.float32)
    with pytest.raises(ValueError, match="outside"):
        uniform_(buf, 5, 0, 0)
    with pytest.raises(RuntimeError, match="from=2.0 > to=1.0"):
        uniform_(buf, 4, 0, 0, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        normal_(buf, 4, 0, 0, 0.0, -1.0)
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        bernoulli_(buf, 4, 0, 0, 1.5)
    with pytest.raises(TypeError):
        uniform_(cuda.device_array(4, np.int32), 4, 0, 0)
    with pytest.raises(TypeError):
        random_bits_(cuda.device_array(4, np.uint64), 4, 0, 0)


@pytest.mark.parametrize("low,high", [(-3, 4), (0, 2 ** 63 - 1), (-2 ** 63, 2 ** 63 - 1), (-2 ** 63, 2 ** 40)])
def test_integers_stay_in_their_inclusive_range(low, high):
    from ember.kernels.cuda.random import integers_

    x = _draw(integers_, np.int64, 256, 3, 0, low, high)
    assert x.min() >= low and x.max() <= high
    if high - low < 16:
        assert set(np.unique(x)) == set(range(low, high + 1))
    else:  # wide ranges use all 64 bits: values spread over the range
        assert int(x.max()) - int(x.min()) > (high - low) // 2
    with pytest.raises(RuntimeError, match="low <= high"):
        integers_(cuda.device_array(4, np.int64), 4, 0, 0, 5, 4)


def test_manual_seed_all_seeds_generators_not_created_yet():
    from ember._cuda_runtime import generators as cuda_random

    ember.cuda.manual_seed_all(31)
    assert cuda_random.generator_state(0).seed == 31
    assert cuda_random.generator_state(5).seed == 31  # created after seeding (no such device is needed)
    cuda_random._states.pop(5)
