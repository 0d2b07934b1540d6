"""``DistributedSampler``: each of ``num_replicas`` processes visits its own share of a dataset, as torch's.

The share is every ``num_replicas``-th index of one (optionally shuffled) order that every rank computes alike
from ``seed + epoch``. The order is padded by wrapping around (or cut, with ``drop_last``) so that all ranks
get the same number of samples and take the same number of steps. Shuffled orders come from ember's generator:
the structure (padding, striding, seeding by ``seed + epoch``) is torch's, the permutation itself is ember's
``randperm`` and differs from torch's for the same seed.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Optional

from ... import distributed as dist
from ...tensor.random import Generator
from ...tensor.random_ops import randperm
from .sampler import Sampler


def _group_default(what: str) -> int:
    """The default process group's world size or rank, when the caller gave none."""
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler):
    """Restricts loading to one rank's share of ``dataset`` (``len(dataset)`` must be fixed).

    Call ``set_epoch(epoch)`` at the start of each epoch when shuffling, or every epoch repeats one order.
    """

    def __init__(self, dataset: Any, num_replicas: Optional[int] = None, rank: Optional[int] = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _group_default("num_replicas")
        if rank is None:
            rank = _group_default("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # Cut the tail so every rank gets the same count without repeating any sample.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        share = indices[self.rank:self.total_size:self.num_replicas]
        assert len(share) == self.num_samples
        return iter(share)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the next shuffle (``seed + epoch``), so every epoch has a new order."""
        self.epoch = epoch
