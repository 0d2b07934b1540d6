"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and the single-step ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Parameters carry torch's names, shapes, gate order and initialisation, so state dicts move between the
two. The sequence work happens in ``functional._recurrent`` (one input projection per layer and
direction, then a fused recurrence); this file handles arguments, layouts and packed input.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ...tensor import autocast_policy
from ...tensor.creation import empty, zeros
from ...tensor.indexing import index_select
from ...tensor.tensor import Tensor
from .. import init
from ..functional._recurrent import MODES, recurrent_layers, run_direction
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _check_sizes(input_size: Any, hidden_size: Any) -> None:
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")


def _uniform_init(module: Module) -> None:
    bound = 1.0 / math.sqrt(module.hidden_size)
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


class RNNBase(Module):
    """The shared body of ``RNN``, ``LSTM`` and ``GRU``: parameters, argument checks, layouts, packing."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        _check_sizes(input_size, hidden_size)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        directions = 2 if bidirectional else 1
        gate_size = MODES[mode] * hidden_size
        out_size = proj_size or hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for d in range(directions):
                layer_input = input_size if layer == 0 else out_size * directions
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{'_reverse' if d else ''}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        _uniform_init(self)

    def flatten_parameters(self) -> None:
        """No-op: there is no cuDNN weight buffer to compact."""

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _direction_weights(self) -> list[tuple]:
        """(w_ih, w_hh, b_ih, b_hh, w_hr) for every layer and direction, absent ones None."""
        found = []
        for names in self._all_weights:
            suffix = names[0][len("weight_ih"):]
            found.append(tuple(getattr(self, kind + suffix, None)
                               for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")))
        return found

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward --------------------------------------------------------------------------------------------------
    def _state_shapes(self, batch: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        layers = self.num_layers * (2 if self.bidirectional else 1)
        return (layers, batch, self.proj_size or self.hidden_size), (layers, batch, self.hidden_size)

    def _check_state(self, state: Tensor, expected: tuple[int, ...], label: str) -> None:
        if tuple(state.shape) != expected:
            raise RuntimeError(f"Expected {label} size {expected}, got {list(state.shape)}")

    def _input_dim_error(self, input: Tensor) -> ValueError:
        return ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple:
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = [int(n) for n in batch_sizes_t.tolist()]
            batch, batched = batch_sizes[0], True
        else:
            if input.dim() not in (2, 3):
                raise self._input_dim_error(input)
            batched = input.dim() == 3
            seq = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                seq = seq.transpose(0, 1)
            steps, batch = seq.shape[0], seq.shape[1]
            batch_sizes, sorted_indices, unsorted_indices = [batch] * steps, None, None
        given = data if packed else input
        if given.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {given.shape[-1]}"
            )
        weight_dtype = self.weight_ih_l0.dtype
        if given.dtype is not weight_dtype:
            raise ValueError(
                f"RNN input dtype ({given.dtype}) does not match weight dtype ({weight_dtype}). Convert input: "
                f"input.to({weight_dtype}), or convert model: model.to({given.dtype})"
            )
        h0, c0 = self._initial_state(hx, batched, batch, weight_dtype, given.device, sorted_indices)
        if not packed:
            data = seq.reshape(steps * batch, self.input_size)
        out, h_n, c_n = recurrent_layers(self.mode, data, batch_sizes, h0, c0, self._direction_weights(),
                                         self.num_layers, self.bidirectional, self.dropout, self.training)
        if packed:
            output = PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = index_select(h_n, 1, unsorted_indices)
                c_n = index_select(c_n, 1, unsorted_indices) if is_lstm else None
        else:
            output = out.reshape(steps, batch, out.shape[-1])
            if not batched:
                output, h_n = output.squeeze(1), h_n.squeeze(1)
                c_n = c_n.squeeze(1) if is_lstm else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, ((h_n, c_n) if is_lstm else h_n)

    def _initial_state(self, hx: Any, batched: bool, batch: int, dtype: Any, device: Any,
                       sorted_indices: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """(h0, c0) as (layers * directions, batch, size) tensors in the packed batch order."""
        h_shape, c_shape = self._state_shapes(batch)
        is_lstm = self.mode == "LSTM"
        if hx is None:
            return zeros(h_shape, dtype=dtype, device=device), zeros(c_shape, dtype=dtype, device=device) if is_lstm \
                else None
        states = tuple(hx) if is_lstm else (hx,)
        want = 3 if batched else 2
        if any(s.dim() != want for s in states):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if is_lstm:
                dims = ", ".join(f"{s.dim()}-D" for s in states)
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got ({dims}) tensors")
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {states[0].dim()}-D tensor")
        if not batched:
            states = tuple(s.unsqueeze(1) for s in states)
        if sorted_indices is not None:
            states = tuple(index_select(s, 1, sorted_indices) for s in states)
        if is_lstm:
            self._check_state(states[0], h_shape, "hidden[0]")
            self._check_state(states[1], c_shape, "hidden[1]")
            return states
        self._check_state(states[0], h_shape, "hidden")
        return states[0], None


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)

    def _input_dim_error(self, input: Tensor) -> ValueError:
        return ValueError(f"RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")


class LSTM(RNNBase):
    """Long short-term memory, gates (i, f, g, o); ``proj_size`` > 0 projects h with ``weight_hr``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit, gates (r, z, n) with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


# ---- single steps ---------------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """The shared body of the cells: ``weight_ih`` (chunks * hidden, input), ``weight_hh``, optional biases."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_sizes(input_size, hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        _uniform_init(self)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _step(self, mode: str, input: Tensor, states: tuple) -> tuple:
        """One step: checks and batches ``input`` and the states (None: zeros), returns the new states."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        batch = x.shape[0]
        full = []
        for i, s in enumerate(states):
            if s is None:
                full.append(zeros((batch, self.hidden_size), dtype=input.dtype, device=input.device))
                continue
            if s.dim() not in (1, 2):
                label = f"hx[{i}]" if len(states) > 1 else "hidden"
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {s.dim()}D instead")
            s = s if batched else s.unsqueeze(0)
            if s.shape[0] != batch:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{i} batch size {s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.shape[1]}, expected "
                                   f"{self.hidden_size}")
            full.append(s)
        weights = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, None)
        args = (mode, x, full[0], full[1] if mode == "LSTM" else None, weights, (batch,))
        op = _CELL_OPS[mode]  # torch's name of the step, for autocast
        if autocast_policy.ACTIVE and autocast_policy.covers(op, x):
            result = autocast_policy.run(op, run_direction, *args)
        else:
            result = run_direction(*args)
        new = result[1:]
        return new if batched else tuple(s.squeeze(0) for s in new)


_CELL_OPS = {"LSTM": "lstm_cell", "GRU": "gru_cell", "RNN_TANH": "rnn_tanh_cell", "RNN_RELU": "rnn_relu_cell"}


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input, (hx,))[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; ``hx`` is ``(h, c)`` and so is the result."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        return self._step("LSTM", input, (None, None) if hx is None else tuple(hx))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step("GRU", input, (hx,))[0]
