"""What ``iter(loader)`` returns: the state one pass shares whatever does the loading, and the in-process pass.

Each pass draws a base seed for worker processes from the loader's ``generator`` (ember's default generator when
None), as torch does for ``num_workers=0`` too, so the default generator's sequence of draws is the same whatever
the worker count. ``_MultiProcessingDataLoaderIter`` (in ``_worker_pool``) builds on the same base.
"""
from __future__ import annotations

import warnings
from typing import Any

from ...tensor import dtypes
from ...tensor.creation import empty
from ._fetch import make_fetcher
from ._pin_memory import pin_batch, pinning_enabled


def iterable_length(length: int, batch_size: int | None, drop_last: bool) -> int:
    """Batches in a pass over an IterableDataset of ``length`` samples (samples, with no batching)."""
    if batch_size is None:
        return length
    full, rest = divmod(length, batch_size)
    return full if drop_last or not rest else full + 1


class _BaseDataLoaderIter:
    """One pass's indices, base seed and collation settings, taken from the loader when the pass starts; a subclass
    defines ``_next_data``, how the next batch is had."""

    def __init__(self, loader: Any) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._batch_size = loader.batch_size
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._pin_memory = pinning_enabled(loader.pin_memory)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def _reset(self, loader: Any) -> None:
        """Start another pass (persistent workers keep their iterator): fresh indices, nothing yielded yet."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def __iter__(self) -> "_BaseDataLoaderIter":
        return self

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._IterableDataset_len_called is not None \
                and self._num_yielded > self._IterableDataset_len_called:
            self._warn_past_length()
        return data

    def _warn_past_length(self) -> None:
        message = (f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
        if self._num_workers > 0:
            message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
        warnings.warn(message, stacklevel=3)

    def __len__(self) -> int:
        if self._iterable:
            return iterable_length(len(self._dataset), self._batch_size, self._drop_last)
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """``num_workers=0``: every batch is read and collated in the calling process, when asked for."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = make_fetcher(self._iterable, self._dataset, self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def _next_data(self) -> Any:
        data = self._fetcher.fetch(next(self._sampler_iter))
        return pin_batch(data) if self._pin_memory else data


__all__ = ["_BaseDataLoaderIter", "_SingleProcessDataLoaderIter", "iterable_length"]
