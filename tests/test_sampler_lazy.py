"""RandomSampler with replacement draws its indices lazily, 32 at a time (as torch), so num_samples=int(1e10)
("forever") costs nothing up front, and len()/DataLoader work over it."""
from __future__ import annotations

import itertools

import pytest

import ember
from ember.utils.data import DataLoader, RandomSampler, TensorDataset
from ember.utils.data import sampler as sampler_module

FOREVER = int(1e10)


@pytest.fixture
def draw_sizes(monkeypatch):
    """The size of every randint call the samplers make."""
    sizes = []
    real = sampler_module.randint

    def recording(*args, size, **kwargs):
        sizes.append(size)
        return real(*args, size=size, **kwargs)

    monkeypatch.setattr(sampler_module, "randint", recording)
    return sizes


def test_huge_num_samples_is_drawn_in_chunks(draw_sizes):
    sampler = RandomSampler(range(10), replacement=True, num_samples=FOREVER)
    assert len(sampler) == FOREVER
    first = list(itertools.islice(iter(sampler), 100))
    assert len(first) == 100 and all(0 <= i < 10 for i in first)
    assert draw_sizes == [(32,)] * 4  # 128 drawn for 100 taken, never 1e10


@pytest.mark.parametrize("count", [1, 31, 32, 33, 70])
def test_exact_count_and_reproducible(count, draw_sizes):
    make = lambda: RandomSampler(range(7), replacement=True, num_samples=count,
                                 generator=ember.Generator().manual_seed(5))
    drawn = list(make())
    assert len(drawn) == count and all(0 <= i < 7 for i in drawn)
    assert list(make()) == drawn
    assert sum(size[0] for size in draw_sizes) == 2 * count and max(size[0] for size in draw_sizes) <= 32


def test_draws_are_uniform():
    n, count = 5, 32 * 250
    sampler = RandomSampler(range(n), replacement=True, num_samples=count, generator=ember.Generator().manual_seed(0))
    tallies = [0] * n
    for i in sampler:
        tallies[i] += 1
    expected = count / n
    chi2 = sum((t - expected) ** 2 / expected for t in tallies)
    assert chi2 < 20.5  # 4 degrees of freedom: p < 0.0005 for a fair sampler to exceed this


def test_default_generator_seeds_each_pass():
    sampler = RandomSampler(range(1000), replacement=True, num_samples=FOREVER)
    ember.manual_seed(3)
    first = list(itertools.islice(iter(sampler), 40))
    second = list(itertools.islice(iter(sampler), 40))
    ember.manual_seed(3)
    assert list(itertools.islice(iter(sampler), 40)) == first and first != second


def test_dataloader_over_a_forever_sampler(draw_sizes):
    data = TensorDataset(ember.arange(20.0).reshape(10, 2), ember.arange(10))
    loader = DataLoader(data, batch_size=4, sampler=RandomSampler(data, replacement=True, num_samples=FOREVER))
    assert len(loader) == FOREVER // 4
    batches = iter(loader)
    for _ in range(3):
        x, y = next(batches)
        assert x.shape == (4, 2) and y.shape == (4,)
        assert ember.equal(x[:, 0], y.float() * 2)
    assert sum(size[0] for size in draw_sizes) <= 32


def test_without_replacement_past_the_dataset_is_lazy_too():
    sampler = RandomSampler(range(6), num_samples=FOREVER)
    assert len(sampler) == FOREVER
    first = list(itertools.islice(iter(sampler), 12))
    assert sorted(first[:6]) == list(range(6)) and sorted(first[6:]) == list(range(6))


@pytest.mark.parametrize("kwargs", [dict(num_samples=0), dict(num_samples=-1), dict(num_samples=2.5),
                                    dict(replacement=1)])
def test_bad_arguments_match_torch(kwargs, torch_ref):
    def outcome(lib_sampler):
        try:
            lib_sampler(range(3), **kwargs)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None
    assert outcome(RandomSampler) == outcome(torch_ref.utils.data.RandomSampler)


def test_len_matches_torch(torch_ref):
    for kwargs in (dict(replacement=True, num_samples=FOREVER), dict(num_samples=FOREVER), {}):
        assert len(RandomSampler(range(9), **kwargs)) == len(torch_ref.utils.data.RandomSampler(range(9), **kwargs))
