"""The recurrent layers: stacks of directions over a whole (packed) sequence.

Sequences are time-major and packed: step ``t`` owns rows ``start[t] : start[t] + batch_sizes[t]`` of a
2-D array (a padded batch is the special case of equal batch sizes). Each direction of each layer is the
input projection of the whole sequence (one matrix product, ``x @ W_ih^T``) followed by one ``scan``
(``ember.tensor.fused.recurrent``: the recurrence on fused gate kernels, differentiable to any order).
"""
from __future__ import annotations

from typing import Sequence

from ...tensor.fused.recurrent import scan
from ...tensor.joins import cat, stack
from ...tensor.tensor import Tensor
from .dropout import dropout as _dropout

__all__ = ["MODES", "recurrent_layers", "run_direction"]

# mode -> number of gate blocks in W_ih / W_hh
MODES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def run_direction(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, weights: Sequence[Tensor | None],
                  batch_sizes: Sequence[int], reverse: bool = False) -> tuple:
    """One direction of one layer over packed input ``x`` (N, input): the input projection, then ``scan``.

    ``weights`` is ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (absent ones None).
    """
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    return scan(x.matmul(w_ih.t()), h0, c0, w_hh, b_ih, b_hh, w_hr, mode, batch_sizes, reverse)


def recurrent_layers(mode: str, x: Tensor, batch_sizes: Sequence[int], hx: Tensor, cx: Tensor | None,
                     weights: Sequence[Sequence[Tensor | None]], num_layers: int, bidirectional: bool,
                     dropout: float, training: bool) -> tuple:
    """A stack of recurrent layers over packed input ``x`` (N, input): (out, h_n, c_n or None).

    ``weights[layer * directions + d]`` is ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (absent ones None);
    ``hx`` is (layers * directions, B, hidden or proj) and ``cx`` likewise for the LSTM.
    """
    directions = 2 if bidirectional else 1
    h_n, c_n = [], []
    layer_input = x
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            result = run_direction(mode, layer_input, hx[k], cx[k] if cx is not None else None, weights[k],
                                   batch_sizes, reverse=d == 1)
            outs.append(result[0])
            h_n.append(result[1])
            if mode == "LSTM":
                c_n.append(result[2])
        layer_input = outs[0] if directions == 1 else cat(outs, 1)
        if dropout > 0 and training and layer < num_layers - 1:
            layer_input = _dropout(layer_input, dropout, True)
    return layer_input, stack(h_n, 0), stack(c_n, 0) if mode == "LSTM" else None
