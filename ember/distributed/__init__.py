"""``ember.distributed``: torch.distributed on existing engines: collectives on MPI, RPC on Ray.

Process groups and collectives (``init_process_group``, ``all_reduce``, ...) run on MPI through mpi4py, which
loads when a group is first formed. The subpackages ``rpc``, ``autograd``, ``optim`` and ``nn`` (torch's RPC
framework, on Ray) load on first attribute access, so ``import ember`` never imports Ray or MPI.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .collectives import Work, all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single, \
    barrier, broadcast, gather, irecv, isend, recv, reduce, reduce_scatter, reduce_scatter_tensor, scatter, send
from .object_collectives import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .process_group import Backend, GroupMember, ProcessGroup, ReduceOp, default_pg_timeout, \
    destroy_process_group, get_backend, get_global_rank, get_group_rank, get_process_group_ranks, get_rank, \
    get_world_size, group, init_process_group, is_available, is_gloo_available, is_initialized, \
    is_mpi_available, is_nccl_available, is_torchelastic_launched, new_group
from .store import FileStore, PrefixStore, Store, TCPStore

_LAZY_SUBPACKAGES = ("rpc", "autograd", "optim", "nn")


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY_SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Backend", "FileStore", "GroupMember", "PrefixStore", "ProcessGroup", "ReduceOp", "Store", "TCPStore",
           "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
           "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "default_pg_timeout",
           "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank", "get_group_rank",
           "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "irecv",
           "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "new_group", "recv", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "scatter_object_list", "send"]
