"""``DataLoader``: batches from a dataset, in sampler order, through a collate function.

The loader only wires the pieces: a sampler chooses indices (or, for iterable
datasets, an endless sampler stands for "next sample"), a batch sampler groups
them, a fetcher reads the samples, and ``collate_fn`` turns them into a batch.
Loading runs in the calling process: ``num_workers`` is accepted and checked as
torch checks it, but samples are read in-process whatever its value, so
``get_worker_info()`` is always None.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator

from ...tensor import dtypes
from ...tensor.creation import empty
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ._collate import default_collate, default_convert
from ._pin_memory import pin_batch, pinning_enabled


class _InfiniteConstantSampler(Sampler):
    """Stands in for indices of an iterable dataset: each None means "take the next sample"."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


def get_worker_info() -> None:
    """Information about the current loader worker: None, as ember loads in the main process."""
    return None


_FROZEN_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class DataLoader:
    """Iterate over ``dataset`` in batches, with torch's arguments, defaults and argument checks."""

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.persistent_workers = persistent_workers
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.__initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__dict__.get("_DataLoader__initialized") and attr in _FROZEN_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> "_LoaderIterator":
        indices = iter(self._index_sampler)
        # torch draws a base seed for workers at the start of every pass; drawing it keeps the default
        # generator's stream in step with torch's sequence of draws.
        empty((), dtype=dtypes.int64).random_(generator=self.generator)
        batches = self._iterate_stream(indices) if self._iterable else self._iterate_map(indices)
        return _LoaderIterator(self, batches)

    def _iterate_map(self, indices: Iterator) -> Iterator:
        dataset = self.dataset
        for index in indices:
            if not self._auto_collation:
                yield self.collate_fn(dataset[index])
                continue
            getitems = getattr(dataset, "__getitems__", None)
            samples = getitems(index) if callable(getitems) else [dataset[i] for i in index]
            yield self.collate_fn(samples)

    def _iterate_stream(self, indices: Iterator) -> Iterator:
        stream = iter(self.dataset)
        for index in indices:
            if not self._auto_collation:
                try:
                    sample = next(stream)
                except StopIteration:
                    return
                yield self.collate_fn(sample)
                continue
            samples = list(itertools.islice(stream, len(index)))
            if not samples or (self.drop_last and len(samples) < len(index)):
                return
            yield self.collate_fn(samples)
            if len(samples) < len(index):
                return

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                full, rest = divmod(length, self.batch_size)
                length = full if self.drop_last or not rest else full + 1
            return length
        return len(self._index_sampler)


class _LoaderIterator:
    """What ``iter(loader)`` returns: the batches of one pass, with the loader's ``len``."""

    def __init__(self, loader: DataLoader, batches: Iterator) -> None:
        self._loader = loader
        self._batches = batches
        self._pin = pinning_enabled(loader.pin_memory)

    def __iter__(self) -> "_LoaderIterator":
        return self

    def __next__(self) -> Any:
        batch = next(self._batches)
        return pin_batch(batch) if self._pin else batch

    def __len__(self) -> int:
        return len(self._loader)


__all__ = ["DataLoader", "get_worker_info"]
