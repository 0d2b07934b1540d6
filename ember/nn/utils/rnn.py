"""``torch.nn.utils.rnn``: packed variable-length batches for the recurrent layers, and padding helpers.

A ``PackedSequence`` stores a batch of sequences time-major without padding: ``data`` holds, for
each time step, the rows of the sequences still running (longest first), and ``batch_sizes[t]`` says
how many there are. Every move between padded and packed layouts is one ``index_select`` (padding
comes from an extra row appended to the source), so gradients flow through all of them.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Sequence

import numpy as np

from ...tensor import dtypes
from ...tensor.creation import full
from ...tensor.indexing import index_select
from ...tensor.joins import cat
from ...tensor.tensor import Tensor
from ...tensor.device import CPU, place

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "unpad_sequence",
           "pack_sequence", "unpack_sequence", "invert_permutation"]


def _index(values: np.ndarray, device: Any = CPU) -> Tensor:
    """An int64 index tensor of host ``values`` on ``device``."""
    return Tensor._make(place(np.ascontiguousarray(values, dtype=np.int64), device))


def _host(t: Tensor) -> np.ndarray:
    """An index tensor's values on the host (index bookkeeping is shape-sized work)."""
    return np.asarray(place(t._array, CPU), dtype=np.int64)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    perm = _host(permutation)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size, dtype=np.int64)
    return _index(inverse, permutation.device)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A packed batch of variable-length sequences, as made by ``pack_padded_sequence``; not built by hand."""

    __slots__ = ()

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if batch_sizes is None:  # torch also accepts one (data, batch_sizes) pair
            data, batch_sizes = data
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """Move or cast ``data``; the index tensors follow it to its device (staying int64) and ``batch_sizes``
        stays on the CPU, as in torch. Returns self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        indices = (None if i is None else i.to(data.device) for i in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, *indices)

    def cpu(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        return self.to("cpu")

    def cuda(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        return self.to("cuda", *args, **kwargs)

    def double(self) -> "PackedSequence":
        return self.to(dtype=dtypes.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=dtypes.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=dtypes.float16)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def _lengths_array(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return _host(lengths).reshape(-1)
    return np.asarray([int(n) for n in lengths], dtype=np.int64)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences of ``lengths``."""
    lens = _lengths_array(lengths)
    batch_dim = 0 if batch_first else 1
    if lens.size != input.shape[batch_dim]:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
            f"(batch_size={input.shape[batch_dim]})"
        )
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _index(order, input.device)
        lens = lens[order]
        input = index_select(input, batch_dim, sorted_indices)
    if lens.size and lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if lens.size and lens[0] > steps:
        raise RuntimeError(f"Expected sequence length to be at most {steps}, but got {lens[0]}")
    batch_sizes = (lens[None, :] > np.arange(lens[0] if lens.size else 0)[:, None]).sum(1)
    rows = np.concatenate([t * batch + np.arange(bs) for t, bs in enumerate(batch_sizes)]) if batch_sizes.size \
        else np.zeros(0, np.int64)
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    return PackedSequence(index_select(flat, 0, _index(rows, input.device)), _index(batch_sizes), sorted_indices,
                          None)


def _rows_with_padding(source: Tensor, positions: np.ndarray, padding_value: float) -> Tensor:
    """``source[positions]`` with position -1 meaning a row of ``padding_value``."""
    pad = full((1,) + tuple(source.shape[1:]), padding_value, dtype=source.dtype, device=source.device)
    rows = np.where(positions < 0, source.shape[0], positions)
    return index_select(cat([source, pad]), 0, _index(rows, source.device))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo ``pack_padded_sequence``: (padded batch, lengths) in the batch's original order."""
    batch_sizes = _host(sequence.batch_sizes)
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]) if batch_sizes.size else np.zeros(0, np.int64)
    positions = np.full((steps, batch), -1, dtype=np.int64)
    for t, (start, bs) in enumerate(zip(starts, batch_sizes)):
        positions[t, :bs] = start + np.arange(bs)
    data = sequence.data
    padded = _rows_with_padding(data, positions.reshape(-1), padding_value)
    padded = padded.reshape((steps, batch) + tuple(data.shape[1:]))
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    if sequence.unsorted_indices is not None:
        padded = index_select(padded, 1, sequence.unsorted_indices)
        lengths = lengths[_host(sequence.unsorted_indices)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _index(lengths)


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padding with ``padding_value``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lengths = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    longest = int(lengths.max())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    offsets = np.arange(longest)[:, None] - (longest - lengths[None, :] if padding_side == "left" else 0)
    positions = np.where((offsets >= 0) & (offsets < lengths[None, :]), starts[None, :] + offsets, -1)
    padded = _rows_with_padding(cat(sequences), positions.reshape(-1), padding_value)
    padded = padded.reshape((longest, len(sequences)) + tuple(sequences[0].shape[1:]))
    return padded.transpose(0, 1) if batch_first else padded


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences of ``lengths``."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :int(n)] for b, n in enumerate(_lengths_array(lengths))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences of shapes (L_i, *) (longest first unless ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
