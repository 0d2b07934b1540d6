"""Fetchers: one batch from the dataset for one entry of the index sampler, collated.

The same fetcher serves the main process (``num_workers=0``) and each worker process, so a batch is built the
same way wherever it is loaded. A map-style fetcher reads ``dataset[i]`` for each index (or ``__getitems__`` of
the whole list); an iterable one takes the next samples of its own iterator of the dataset and raises
StopIteration when that iterator has nothing left to give.
"""
from __future__ import annotations

from typing import Any, Callable


class MapFetcher:
    """Samples by index: a list of indices with auto-collation, one index without."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        getitems = getattr(dataset, "__getitems__", None)
        self._getitems = getitems if callable(getitems) else None

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._getitems is not None:
            return self.collate_fn(self._getitems(index))
        dataset = self.dataset
        return self.collate_fn([dataset[i] for i in index])


class IterableFetcher:
    """Samples from an iterator of the dataset, made when the fetcher is: ``len(index)`` of them per batch."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self._stream = iter(dataset)
        self._ended = False

    def fetch(self, index: Any) -> Any:
        if self._ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self._stream))
        samples = []
        for _ in index:
            try:
                samples.append(next(self._stream))
            except StopIteration:
                self._ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(index)):
            raise StopIteration
        return self.collate_fn(samples)


def make_fetcher(iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> MapFetcher | IterableFetcher:
    """The fetcher for ``dataset``'s kind."""
    kind = IterableFetcher if iterable else MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


__all__ = ["MapFetcher", "IterableFetcher", "make_fetcher"]
