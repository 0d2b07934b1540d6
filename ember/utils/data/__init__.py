"""``ember.utils.data``: datasets, samplers, collation and the DataLoader, as in ``torch.utils.data``."""
from __future__ import annotations

from ._collate import default_collate, default_convert
from .distributed import DistributedSampler
from .dataloader import DataLoader, get_worker_info
from .dataset import ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset, \
    random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, \
    WeightedRandomSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "DataLoader", "get_worker_info",
           "default_collate", "default_convert"]
