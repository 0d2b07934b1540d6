"""Samplers: the order in which a DataLoader visits a map-style dataset's indices.

Random samplers draw from ember's generators, so ``ember.manual_seed`` (or a
``generator=``) fixes the order. Without a generator, ``RandomSampler`` takes a
fresh seed from the default generator at the start of each pass, as torch does:
every epoch differs, and the whole run repeats under the same global seed.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, Sequence

from ...tensor import dtypes
from ...tensor.creation import as_tensor, empty
from ...tensor.random import Generator
from ...tensor.random_ops import multinomial, randint, randperm


class Sampler:
    """Base class: an iterable of indices (or of lists of indices, for batch samplers)."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _fresh_generator() -> Generator:
    """A generator seeded by one int64 draw from the default generator."""
    seed = int(empty((), dtype=dtypes.int64).random_().item())
    return Generator().manual_seed(seed)


# Indices drawn per call when sampling with replacement, as torch does: a huge ``num_samples`` (training scripts
# pass int(1e10) for "forever") costs one chunk of memory, not an array of that length.
_REPLACEMENT_CHUNK = 32


def _draws_with_replacement(n: int, count: int, generator: Generator) -> Iterator[int]:
    """``count`` uniform draws from range(n), made lazily, ``_REPLACEMENT_CHUNK`` at a time."""
    full_chunks, rest = divmod(count, _REPLACEMENT_CHUNK)
    for size in itertools.chain(itertools.repeat(_REPLACEMENT_CHUNK, full_chunks), (rest,) if rest else ()):
        yield from randint(high=n, size=(size,), dtype=dtypes.int64, generator=generator).tolist()


class RandomSampler(Sampler):
    """Random indices: a permutation per pass over the data, or ``num_samples`` draws with replacement."""

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not _is_positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            yield from _draws_with_replacement(n, self.num_samples, generator)
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=generator).tolist()
        yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, without replacement."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices 0..len(weights)-1 drawn with probability proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=dtypes.float64)
        if weights_tensor.dim() != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        draws = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from draws.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size`` (the last one short unless ``drop_last``)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]
