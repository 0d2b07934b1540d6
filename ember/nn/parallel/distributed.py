"""``nn.parallel.DistributedDataParallel``: one model replica per process, gradients averaged during backward.

At construction rank 0's parameters and buffers are broadcast so every replica starts equal. The parameters that
need gradients are grouped into buckets in reverse registration order (the order backward usually produces their
gradients), the first bucket small (at most 1 MiB, as torch) so communication starts early, the others up to
``bucket_cap_mb``. A post-accumulate-grad hook on each parameter marks it ready; when a bucket is complete its
gradients, pre-divided by the world size, are copied into one flat buffer and all-reduced asynchronously while
backward goes on. Buckets are launched strictly in order, so every rank issues the same collectives in the same
order. When the last bucket has been launched, the hook waits for all of them and writes the averages back into
``.grad``, so ``loss.backward()`` returns with synchronised gradients, as torch's.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional, Sequence

from ... import distributed as dist
from ...distributed.collectives import all_reduce_agreed
from ...autograd.function import AccumulateGrad
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import dtypes
from ...tensor.creation import zeros
from ...tensor.device import device as Device
from ...tensor.joins import cat
from ...tensor.tensor import Tensor
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_MiB = 1024 * 1024
_FIRST_BUCKET_BYTES = _MiB  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES
_DEFAULT_BUCKET_CAP_MB = 25


def _tensors_in(obj: Any) -> Iterator[Any]:
    """Every tensor inside a (possibly nested) forward output."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors_in(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors_in(item)


def _moved(obj: Any, target: Device) -> Any:
    """``obj`` with its tensors moved to ``target`` (inputs of a single-device module with ``device_ids``)."""
    if isinstance(obj, Tensor):
        return obj.to(target)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_moved(o, target) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_moved(o, target) for o in obj)
    if isinstance(obj, dict):
        return {k: _moved(v, target) for k, v in obj.items()}
    return obj


def _reached_leaves(outputs: Any) -> set[int]:
    """ids of the leaf tensors the autograd graph of ``outputs`` leads to (the parameters backward will reach)."""
    seen: set[int] = set()
    leaves: set[int] = set()
    stack = []
    for t in _tensors_in(outputs):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
            continue
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return leaves


def _broadcast_coalesced(tensors: Sequence[Any], group: Any, src: int = 0) -> None:
    """Overwrite ``tensors`` with ``src``'s values: one broadcast per dtype and device, not one per tensor."""
    groups: dict[tuple, list] = {}
    for t in tensors:
        groups.setdefault((t.dtype, t.device), []).append(t)
    with no_grad():
        for same in groups.values():
            flat = cat([t.detach().reshape(-1) for t in same])
            dist.broadcast(flat, src=dist.get_global_rank(group, src) if group is not None else src, group=group)
            offset = 0
            for t in same:
                n = t.numel()
                t.copy_(flat[offset:offset + n].view(t.shape))
                offset += n


class _Bucket:
    """Parameters whose gradients travel together in one flat all-reduce."""

    def __init__(self, params: list, index: int) -> None:
        self.index = index
        self.params = params
        self.offsets: list[int] = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.flat = zeros(total, dtype=params[0].dtype, device=params[0].device)
        self.views = [self.flat[o:o + p.numel()].view(p.shape) for o, p in zip(self.offsets, params)]
        self.pending = len(params)
        self.work: Any = None


class _Reducer:
    """The per-iteration bookkeeping: which parameters are ready, which buckets are launched, when all is done."""

    def __init__(self, ddp: "DistributedDataParallel", params: list, bucket_cap_bytes: int) -> None:
        self.ddp = ddp
        self.params = params
        self.buckets = self._assign(params, bucket_cap_bytes)
        self.where = {id(p): (b, i) for b in self.buckets for i, p in enumerate(b.params)}
        self.expect_hooks = False  # set by a forward that will be followed by a synchronised backward
        self.ready: set[int] = set()
        self.locally_unused: set[int] = set()
        self.next_bucket = 0
        self.used_work: Any = None
        self.used_map: Any = None
        self.hooks = [p.register_post_accumulate_grad_hook(self._on_grad_ready) for p in params]

    @staticmethod
    def _assign(params: list, cap_bytes: int) -> list[_Bucket]:
        """Buckets in reverse parameter order, split by dtype and device; the first capped at 1 MiB."""
        open_buckets: dict[tuple, list] = {}
        sizes: dict[tuple, int] = {}
        done: list[list] = []
        for p in reversed(params):
            key = (p.dtype, p.device)
            current = open_buckets.setdefault(key, [])
            current.append(p)
            sizes[key] = sizes.get(key, 0) + p.numel() * p.element_size()
            limit = min(_FIRST_BUCKET_BYTES, cap_bytes) if not done else cap_bytes
            if sizes[key] >= limit:
                done.append(current)
                open_buckets[key], sizes[key] = [], 0
        done.extend(b for b in open_buckets.values() if b)
        return [_Bucket(b, i) for i, b in enumerate(done)]

    def prepare(self, unused: set[int]) -> None:
        """Start an iteration: parameters in ``unused`` (ids) are ready now, with a zero contribution."""
        if self.expect_hooks and (self.ready or self.next_bucket):
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.")
        self.ready = set()
        self.next_bucket = 0
        for b in self.buckets:
            b.pending, b.work = len(b.params), None
        self.locally_unused = set(unused)
        self.expect_hooks = True
        for p in self.params:
            if id(p) in self.locally_unused:
                self._mark_ready(p, contribute=False)

    def _on_grad_ready(self, param: Any) -> None:
        if not self.expect_hooks:
            return  # inside no_sync (or a backward without a synchronised forward): accumulate locally
        if id(param) in self.ready:
            raise RuntimeError(f"Expected to mark a variable ready only once (a parameter of shape "
                               f"{list(param.shape)} got its gradient twice in one DDP iteration)")
        self.locally_unused.discard(id(param))
        self._mark_ready(param, contribute=True)

    def _mark_ready(self, param: Any, contribute: bool) -> None:
        bucket, i = self.where[id(param)]
        self.ready.add(id(param))
        with no_grad():
            if contribute and param.grad is not None:
                bucket.views[i].copy_(param.grad)
                if self.ddp.gradient_as_bucket_view:
                    param.grad = bucket.views[i]
            else:
                bucket.views[i].zero_()
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            with no_grad():
                bucket.flat.div_(self.ddp._world_size)
            bucket.work = all_reduce_agreed(bucket.flat, group=self.ddp.process_group, async_op=True)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finalize()

    def _finalize(self) -> None:
        """Wait for every bucket and hand the averaged gradients to ``.grad``."""
        track_unused = self.ddp.find_unused_parameters or self.ddp.static_graph
        if track_unused:  # which parameters some rank used: the others keep their .grad untouched, as torch
            used = zeros(len(self.params), dtype=dtypes.int32)
            for k, p in enumerate(self.params):
                if id(p) not in self.locally_unused:
                    used[k] = 1
            dist.all_reduce(used, group=self.ddp.process_group)
            globally_used = used.tolist()
        for bucket in self.buckets:
            if bucket.work is not None:
                bucket.work.wait()
        # Without bucket views each .grad gets a fresh tensor (one copy of each bucket), never an in-place write:
        # the engine may have handed two leaves one gradient storage (``a + b``), which a copy_ would corrupt.
        views = {}
        with no_grad():
            for bucket in self.buckets:
                if self.ddp.gradient_as_bucket_view:
                    views[bucket.index] = bucket.views
                else:
                    fresh = bucket.flat.clone()
                    views[bucket.index] = [fresh[o:o + p.numel()].view(p.shape)
                                           for o, p in zip(bucket.offsets, bucket.params)]
            for k, p in enumerate(self.params):
                if track_unused and not globally_used[k]:
                    continue
                bucket, i = self.where[id(p)]
                p.grad = views[bucket.index][i]
        self.expect_hooks = False
        self.ready = set()
        self.next_bucket = 0

    def remove_hooks(self) -> None:
        for h in self.hooks:
            h.remove()


class DistributedDataParallel(Module):
    """Data parallelism over processes: wrap the model, train as usual; gradients are averaged in backward.

    ``find_unused_parameters`` walks the autograd graph after each forward so parameters the output does not
    depend on count as ready (zero contribution) and the reduction completes. ``static_graph`` says the set of used
    parameters is the same every iteration: it is found on the first iteration and reused without walking the
    graph again. ``gradient_as_bucket_view`` makes each ``.grad`` a view into its bucket's flat buffer (no copy back
    after the all-reduce). ``broadcast_buffers`` broadcasts rank 0's buffers at every forward.
    """

    def __init__(self, module: Module, device_ids: Optional[Sequence[Any]] = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: Optional[float] = None, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False,
                 static_graph: bool = False) -> None:
        super().__init__()
        if not dist.is_initialized() and process_group is None:
            raise RuntimeError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        devices = {p.device for p in module.parameters()}
        self.device_type = next(iter(devices)).type
        if device_ids is not None or output_device is not None:
            ids = list(device_ids or [])
            if len(devices) != 1 or self.device_type == "cpu" or len(ids) > 1:
                raise ValueError(
                    "DistributedDataParallel device_ids and output_device arguments only work with single-device "
                    f"GPU modules, but got device_ids {device_ids}, output_device {output_device}, and module "
                    f"parameters {devices}.")
        self.module = module
        self.device_ids = None if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._world_size = dist.get_world_size(process_group)
        self._static_unused: Optional[set[int]] = None
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * _MiB)
        self._verify_shapes(module)
        if init_sync:
            _broadcast_coalesced(list(module.parameters()) + list(module.buffers()), process_group)
        self.reducer = _Reducer(self, params, self.bucket_bytes_cap)

    def _verify_shapes(self, module: Module) -> None:
        """Every rank must wrap the same architecture: compare the parameter shapes once, up front."""
        shapes = [tuple(p.shape) for p in module.parameters()]
        everyone: list = [None] * self._world_size
        dist.all_gather_object(everyone, shapes, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != shapes:
                raise RuntimeError(f"DDP expects same model across all ranks, but rank {rank} has parameter shapes "
                                   f"{theirs} while this rank has {shapes}")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers and self._world_size > 1:
            buffers = list(self.module.buffers())
            if buffers:
                _broadcast_coalesced(buffers, self.process_group)
        if self.device_ids:
            target = Device(self.device_type, int(getattr(self.device_ids[0], "index", self.device_ids[0]) or 0))
            inputs, kwargs = _moved(inputs, target), _moved(kwargs, target)
        outputs = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare(self._unused_parameters(outputs))
        else:
            self.reducer.expect_hooks = False
        return outputs

    def _unused_parameters(self, outputs: Any) -> set[int]:
        """ids of the parameters this iteration's backward will not reach (empty unless asked to look)."""
        if self.static_graph and self._static_unused is not None:
            return self._static_unused
        if not (self.find_unused_parameters or self.static_graph):
            return set()
        reached = _reached_leaves(outputs)
        unused = {id(p) for p in self.reducer.params if id(p) not in reached}
        if self.static_graph:
            self._static_unused = unused
        return unused

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forwards and backwards inside accumulate gradients locally; the first synchronised backward after
        the block all-reduces the accumulated sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
