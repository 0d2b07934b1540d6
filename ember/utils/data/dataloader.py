"""``DataLoader``: batches from a dataset, in sampler order, through a collate function, in this process or in
worker processes.

The loader only wires the pieces: a sampler chooses indices (or, for iterable datasets, an endless sampler stands
for "next sample"), a batch sampler groups them, a fetcher reads the samples, and ``collate_fn`` turns them into a
batch. ``iter(loader)`` makes the pass: with ``num_workers=0`` every batch is loaded in the calling process when
asked for (``_loader_iter``); with workers, ``num_workers`` processes (started by ``multiprocessing_context``, the
platform's default start method when None) load ``prefetch_factor`` batches each ahead of the training loop
(``_worker_pool``), and batches still come out in sampler order unless ``in_order=False``. torch's semantics
throughout: each worker is seeded from a base seed drawn per pass from ``generator`` (``get_worker_info()`` tells a
worker its id, seed and dataset copy), workers collate into shared memory so a batch reaches this process as a
handle (``ember.multiprocessing``'s reducers), not as bytes, an exception in a worker is raised here with its
traceback, a dead worker or an exceeded ``timeout`` raises RuntimeError, and leaving a loop early shuts the workers
down.
"""
from __future__ import annotations

import itertools
import multiprocessing.context
import os
import warnings
from typing import Any, Callable, Iterable, Iterator

from ... import multiprocessing as ember_multiprocessing
from ._collate import default_collate, default_convert
from ._loader_iter import _BaseDataLoaderIter, _SingleProcessDataLoaderIter, iterable_length
from ._worker import get_worker_info
from ._worker_pool import _MultiProcessingDataLoaderIter
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class _InfiniteConstantSampler(Sampler):
    """Stands in for indices of an iterable dataset: each None means "take the next sample"."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


_FROZEN_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class DataLoader:
    """Iterate over ``dataset`` in batches, with torch's arguments, defaults and argument checks.

    ``num_workers > 0`` loads in that many worker processes (``prefetch_factor`` batches each ahead, 2 by default),
    started from ``multiprocessing_context`` and seeded per pass from ``generator``; ``worker_init_fn(worker_id)``
    runs in each worker first, ``persistent_workers`` keeps them across passes, ``timeout`` bounds the wait for a
    batch, ``in_order=False`` hands batches out as they arrive, and ``pin_memory`` pins in a thread beside them.
    """

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
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
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
        self._IterableDataset_len_called: int | None = None  # set by len(loader): a pass that yields more warns
        self._iterator: _BaseDataLoaderIter | None = None  # the persistent workers' iterator, once made
        self.check_worker_number_rationality()

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__dict__.get("_DataLoader__initialized") and attr in _FROZEN_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def multiprocessing_context(self) -> Any:
        """The context workers are started from (None: ember.multiprocessing's default start method)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context: Any) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = ember_multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = ember_multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self.__multiprocessing_context = context

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> _BaseDataLoaderIter:
        """A pass over the data; with persistent workers, the same iterator (and workers) for every pass."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __len__(self) -> int:
        if self._iterable:
            self._IterableDataset_len_called = len(self.dataset)  # a pass that yields more warns
            return iterable_length(self._IterableDataset_len_called, self.batch_size, self.drop_last)
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn, as torch does, when there are more workers than CPUs this process may run on."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggested = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggested is not None and self.num_workers <= suggested:
            return
        if suggested is None:
            advice = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            unchecked = "" if cpuset_checked else " (`cpuset` is not taken into account)"
            advice = (f"Our suggested max number of worker in current system is {suggested}{unchecked}, which is "
                      "smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {advice} Please "
                      "be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                      "lower the worker number to avoid potential slowness/freeze if necessary.", stacklevel=3)


__all__ = ["DataLoader", "get_worker_info"]
