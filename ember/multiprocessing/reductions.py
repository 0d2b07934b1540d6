"""How tensors cross process boundaries: reducers of multiprocessing's ``ForkingPickler`` (queues, pipes, the
arguments of a started process, pools, managers) that send handles to shared memory instead of bytes.

A CPU tensor is first moved into shared memory (``share_memory_``, as torch does on sending) and travels as its
segment (a descriptor or a name, ``ember.tensor.shared_memory``), its storage's size and its place in it (byte
offset, shape, strides, dtype): the receiver's tensor views the same memory, a view keeps sharing its base, and a
tensor sent back to its sender comes back on the same storage. Parameters arrive as Parameters with their
``requires_grad``; a tensor's ``grad`` travels with it (shared too, so a spawned child sees what a forked one
inherits). A CUDA tensor travels as a CUDA IPC handle of its device buffer: the receiver maps the same device
memory, and, as in torch, the sender must keep the tensor alive while any receiver uses it. Plain ``pickle``
and ``copy`` still copy: only the ``ForkingPickler`` sends handles.
"""
from __future__ import annotations

import os
import weakref
from multiprocessing import reduction
from typing import Any, Callable

import numpy as np

from ..cuda._state import _lazy_init, is_simulator, storage_type
from .._cuda_context import using
from ..nn.parameter import Buffer, Parameter
from ..tensor.shared_memory import export, receive_fd, receive_name, view_of
from ..tensor.tensor import Tensor

__all__ = ["init_reductions", "reduce_tensor"]

_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
             "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
             "before serializing (e.g., putting it on the queue).")
_SIMULATOR = ("CUDA tensors cannot be sent to another process under Numba's CUDA simulator: it has no CUDA IPC "
              "(every process simulates a device of its own). Send t.cpu() instead, or run on a real GPU.")

# CUDA buffers this process sent, by id: a process cannot open its own IPC handle, so a tensor it receives back
# is found here (while the sender keeps it alive, as torch requires anyway)
_sent_buffers: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def reduce_tensor(t: Tensor) -> tuple[Callable, tuple]:
    """The ``ForkingPickler`` reduction of a tensor: shared memory handles, never a copy of the data."""
    if t._requires_grad and t._grad_fn is not None:
        raise RuntimeError(_NON_LEAF)
    meta = (type(t), t._requires_grad, t._grad, getattr(t, "persistent", True))
    if type(t._array) is not np.ndarray:
        return _reduce_cuda(t, meta)
    t.share_memory_()
    array = t._array
    segment, nbytes, offset = export(array)
    where = segment.name if segment.name is not None else (segment.key, reduction.DupFd(segment.fd))
    return rebuild_cpu_tensor, (where, nbytes, offset, array.shape, array.strides, array.dtype.str, meta)


def rebuild_cpu_tensor(where: Any, nbytes: int, offset: int, shape: tuple, strides: tuple, dtype: str,
                       meta: tuple) -> Tensor:
    """The receiving side of ``reduce_tensor`` for a CPU tensor: ``where`` is a segment name, or a memfd's key
    and ``DupFd``."""
    if isinstance(where, str):
        storage = receive_name(where, nbytes)
    else:
        key, dupfd = where
        try:
            storage = receive_fd(key, dupfd.detach, nbytes)
        except (OSError, EOFError) as exc:
            raise RuntimeError("could not receive a shared tensor's memory: the process that sent it exited before "
                               "it was received; keep the sender alive until then") from exc
    return _tensor(view_of(storage, offset, shape, strides, dtype), meta)


def _tensor(array: Any, meta: tuple) -> Tensor:
    """A tensor of the sent class over ``array``, with the sent ``requires_grad``, ``grad`` (and persistence)."""
    cls, requires_grad, grad, persistent = meta
    if issubclass(cls, Parameter):
        t = cls(Tensor._make(array), requires_grad)
    elif issubclass(cls, Buffer):
        t = cls(Tensor._make(array, requires_grad=requires_grad), persistent=persistent)
    else:
        t = Tensor._make(array, requires_grad=requires_grad)
    if grad is not None:
        t.grad = grad
    return t


def _reduce_cuda(t: Tensor, meta: tuple) -> tuple[Callable, tuple]:
    if is_simulator():
        raise RuntimeError(_SIMULATOR)
    storage = t._array
    _sent_buffers[id(storage.buffer)] = storage.buffer
    with using(storage.device_index):
        handle = storage.buffer.get_ipc_handle()
    layout = (storage.shape, storage.strides, storage.offset, storage.device_index)
    return rebuild_cuda_tensor, (handle, layout, (os.getpid(), id(storage.buffer)), meta)


def rebuild_cuda_tensor(handle: Any, layout: tuple, sender: tuple, meta: tuple) -> Tensor:
    """The receiving side of ``reduce_tensor`` for a CUDA tensor: open the IPC handle (closed when the last view
    of the device buffer is gone); in the sending process itself, its own buffer."""
    shape, strides, offset, device_index = layout
    pid, buffer_id = sender
    if pid == os.getpid():
        buffer = _sent_buffers.get(buffer_id)
        if buffer is None:
            raise RuntimeError("a CUDA tensor sent by this process was freed before it came back; the sender must "
                               "keep a CUDA tensor alive while others use it")
    else:
        _lazy_init()
        with using(device_index):
            buffer = handle.open()
        weakref.finalize(buffer, handle.close)
    return _tensor(storage_type()(buffer, shape, strides, offset, device_index), meta)


def init_reductions() -> None:
    """Register the tensor reducers with ``ForkingPickler`` (by exact class, as pickle looks them up)."""
    for cls in (Tensor, Parameter, Buffer):
        reduction.ForkingPickler.register(cls, reduce_tensor)
